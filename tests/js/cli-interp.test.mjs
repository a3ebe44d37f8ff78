// attnlens analyze / heads: the JSON shapes the CLI documents, and the same numbers as the API.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { test } from 'node:test';
import { promisify } from 'node:util';

import { kjv, noDates, noKjv, reportSkips, root, web } from './fixtures/models.mjs';

const run = promisify(execFile);
const cli = join(root, 'bin', 'attnlens.mjs');
reportSkips(noKjv, noDates);

async function attnlens(...args) {
  const { stdout } = await run('node', [cli, ...args], { maxBuffer: 64 << 20 });
  return JSON.parse(stdout);
}

const TABLES = ['previousToken', 'induction', 'duplicateToken', 'entropy', 'sink'];

function checkHeads(heads, layers, nHeads) {
  assert.deepEqual(Object.keys(heads), TABLES);
  for (const t of TABLES) {
    assert.equal(heads[t].length, layers, t);
    for (const row of heads[t]) {
      assert.equal(row.length, nHeads, t);
      assert.ok(row.every((v) => typeof v === 'number' && Number.isFinite(v)), t);
    }
  }
}

test('analyze --json: tokens, pieces, topk [pos][k], logitLens [layer][pos][k], heads [layer][head]', { skip: noKjv }, async () => {
  const out = await attnlens('analyze', '--model', 'kjv-gpt2', '--prompt', 'And God said, Let there be light', '--top-k', '3', '--json');
  assert.deepEqual(Object.keys(out), ['tokens', 'pieces', 'topk', 'logitLens', 'heads']);
  const n = out.tokens.length;
  assert.equal(out.pieces.length, n);
  assert.equal(out.topk.length, n);
  for (const row of out.topk) {
    assert.equal(row.length, 3);
    for (const e of row) assert.deepEqual(Object.keys(e), ['id', 'piece', 'prob']);
  }
  assert.equal(out.logitLens.length, 4);
  assert.ok(out.logitLens.every((l) => l.length === n && l.every((row) => row.length === 3)));
  checkHeads(out.heads, 4, 6);
  // The numbers are the API's.
  const { loadModel } = await import(web);
  const m = await loadModel(kjv.dir);
  try {
    const f = await m.forward(out.tokens, { topK: 3, logitLens: { topK: 3 }, heads: true });
    assert.deepEqual(out.topk, f.topk.map((r) => r.map(({ id, piece, prob }) => ({ id, piece, prob }))));
    assert.deepEqual(out.heads.induction, f.heads.induction);
    assert.deepEqual(out.tokens, (await m.encodePrompt('And God said, Let there be light')).ids);
  } finally {
    await m.dispose();
  }
});

test('analyze --json on an encoder-decoder model: the source and its greedy output', { skip: noDates }, async () => {
  const out = await attnlens('analyze', '--model', 'date-normalizer', '--prompt', '3rd of March 2021', '--json');
  assert.equal(out.text, '2021-03-03');
  assert.equal(out.topk[0].length, 5);
  assert.equal(out.topk.length, out.tokens.length);
  assert.ok(out.source_pieces.length === out.source.length);
  checkHeads(out.heads, 3, 4);
});

test('heads --json: the detectors on the standard probe', { skip: noKjv }, async () => {
  const out = await attnlens('heads', '--model', 'kjv-gpt2', '--batch', '2', '--json');
  assert.deepEqual(Object.keys(out), ['heads', 'kind', 'probe', 'loss']);
  checkHeads(out.heads, 4, 6);
  assert.equal(out.kind, 'self');
  assert.deepEqual([out.probe.length, out.probe.batch, out.probe.seed], [50, 2, 0]);
  assert.equal(out.probe.sequences.length, 2);
  assert.ok(out.loss.first_copy > 0 && out.loss.second_copy > 0);
});

test('analyze / heads: usage errors exit with 2', { skip: noKjv }, async () => {
  await assert.rejects(run('node', [cli, 'analyze', '--model', 'kjv-gpt2', '--prompt', 'x']), (e) => e.code === 2 && /add --json/.test(e.stderr));
  await assert.rejects(run('node', [cli, 'analyze', '--model', 'kjv-gpt2', '--prompt', 'x', '--top-k', '0', '--json']), (e) => e.code === 2 && /--top-k/.test(e.stderr));
  await assert.rejects(run('node', [cli, 'heads', '--model', 'kjv-gpt2', '--length', '500', '--json']), (e) => e.code === 1 && /length 500/.test(e.stderr));
});
