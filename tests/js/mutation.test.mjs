// Mutations of real model files through the real API — truncation, bit flips, huge counts and
// dimensions, wrong dtypes, JSON type confusion, deep nesting (tests/js/fixtures/mutate.mjs) — in this
// thread and in a worker_threads worker (tests/e2e/mutation.test.mjs does the same in Chromium): every
// case ends in a model that works or a clean Error; never a trap (an EngineLostError), a crash or a
// hang; the module stays usable (a witness model keeps generating the same tokens) and the heap flat
// (allocations back to the baseline after every case). The cases are in tests/js/fixtures/mutation-run.mjs.
// ATTNLENS_MUTATIONS=N runs N cases in this thread (default 300) and N/3 in the worker; a failing
// case names its seed, so it can be replayed.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { EngineLostError, engineInfo, loadModel } from '../../web/src/index.mjs';
import { root, shared } from './fixtures/models.mjs';
import { readBases, runMutations } from './fixtures/mutation-run.mjs';

const CASES = Number(process.env.ATTNLENS_MUTATIONS ?? 300);

async function bases() {
  const list = await readBases((dir, name) => {
    const p = join(root, dir, name);
    return existsSync(p) ? new Uint8Array(readFileSync(p)) : null;
  });
  const s = join(shared, 'models/stories260K');
  if (existsSync(join(s, 'stories260K.bin'))) list.push(['stories260K', ['stories260K.bin', 'tok512.bin'].map((n) => ({ name: n, data: new Uint8Array(readFileSync(join(s, n))) }))]);
  return list;
}

function report(t, count, { stats, messages, problems }) {
  t.diagnostic(`${count} cases: ${stats.loaded} loaded and ran, ${stats.refused} refused cleanly, ${stats.skipped} not applicable; heap back to ${stats.baseBytes} B after every case`);
  t.diagnostic(`${messages.length} distinct messages, e.g. ${messages.slice(0, 6).join(' | ')}`);
  assert.deepEqual(problems, []);
  assert.ok(stats.loaded > 0 && stats.refused > 0, 'the mutations both break files and leave some loadable');
}

test(`mutated model files in this thread: ${CASES} cases, clean errors, no trap, heap flat`, { timeout: 1_800_000 }, async (t) => {
  const witness = await loadModel(join(root, 'models/kjv-gpt2/'));
  try {
    const r = await runMutations({ api: { EngineLostError }, bases: await bases(), load: (files) => loadModel(files),
      heap: async () => (await engineInfo()).allocatedBytes, witness, count: CASES, seed0: 1000 });
    report(t, CASES, r);
  } finally {
    await witness.dispose();
  }
});

test(`mutated model files in a worker: ${Math.ceil(CASES / 3)} cases`, { timeout: 1_800_000 }, async (t) => {
  const { Worker } = await import('node:worker_threads');
  const w = new Worker(new URL('../../web/src/worker.mjs', import.meta.url));
  try {
    const witness = await loadModel(join(root, 'models/kjv-gpt2/'), { worker: w });
    const count = Math.ceil(CASES / 3);
    const r = await runMutations({
      api: { EngineLostError },
      bases: await bases(),
      load: (files) => loadModel(files.map((f) => ({ name: f.name, data: f.data.slice() })), { worker: w }),  // buffers are transferred
      heap: async () => (await witness.engineInfo()).allocatedBytes,
      witness,
      count,
      seed0: 500000,
    });
    report(t, count, r);
    await witness.dispose();
  } finally {
    await w.terminate();
  }
});
