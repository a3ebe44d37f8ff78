// 200 load/dispose cycles leave the wasm heap where it was: allocations back to the baseline, the
// heap (which never shrinks) bounded by what two models at once need.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { engineInfo, loadModel } from '../../web/src/index.mjs';
import { noStories, reportSkips, stories } from './fixtures/models.mjs';

reportSkips(noStories);

test('200 load → use → dispose cycles: allocatedBytes back to baseline, heapBytes bounded', { skip: noStories }, async (t) => {
  const buffers = stories.buffers();
  const cycle = async (i) => {
    const m = await loadModel(buffers, { quantize: i % 3 === 0 ? 'q8_0' : 'none' });
    if (i % 2 === 0) await m.generate('Once upon a time', { maxNewTokens: 8, temperature: 0.7, seed: i });
    else await m.forward([1, 403, 407, 261], { attentions: true });
    await m.dispose();
  };
  await cycle(0);  // the first load sets up what the engine keeps for good (e.g. tokenizer tables)
  await cycle(1);
  const base = await engineInfo();
  const heapAfterWarmup = base.heapBytes;
  let peak = 0;
  for (let i = 0; i < 200; i++) {
    await cycle(i);
    const e = await engineInfo();
    peak = Math.max(peak, e.heapBytes);
    assert.ok(e.allocatedBytes <= base.allocatedBytes + 1024, `cycle ${i}: ${e.allocatedBytes} bytes allocated, baseline ${base.allocatedBytes}`);
  }
  const end = await engineInfo();
  t.diagnostic(`baseline ${base.allocatedBytes} B allocated, after 200 cycles ${end.allocatedBytes} B; heap ${heapAfterWarmup} → ${end.heapBytes} B (peak ${peak})`);
  assert.equal(end.allocatedBytes, base.allocatedBytes);
  assert.ok(end.heapBytes <= Math.max(heapAfterWarmup, 32 << 20), `heap grew to ${end.heapBytes}`);
});

test('two models alive at once, 50 times: memory returns to baseline', { skip: noStories }, async () => {
  const buffers = stories.buffers();
  const base = (await engineInfo()).allocatedBytes;
  for (let i = 0; i < 50; i++) {
    const [a, b] = await Promise.all([loadModel(buffers), loadModel(buffers)]);
    await Promise.all([a.generate('Once', { maxNewTokens: 4 }), b.generate('The', { maxNewTokens: 4 })]);
    await Promise.all([a.dispose(), b.dispose()]);
  }
  assert.equal((await engineInfo()).allocatedBytes, base);
});
