// 200 load/dispose cycles leave the wasm heap where it was: allocations back to the baseline, the
// heap (which never shrinks) bounded by what two models at once need.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { engineInfo, loadModel } from '../../web/src/index.mjs';
import { noSmall, reportSkips, small } from './fixtures/models.mjs';

reportSkips(noSmall);
console.log(`model: ${small.name}`);

test('200 load → use → dispose cycles: allocatedBytes back to baseline, heapBytes bounded', { skip: noSmall }, async (t) => {
  const buffers = small.buffers();
  const cycle = async (i) => {
    // One thread: each worker thread keeps kernel scratch buffers at its own high-water mark, which
    // depends on which tasks it happened to take (the threaded variant is the test after the next).
    const m = await loadModel(buffers, { quantize: i % 3 === 0 ? 'q8_0' : 'none', threads: 1 });
    if (i % 2 === 0) await m.generate(small.prompt, { maxNewTokens: 8, temperature: 0.7, seed: i });
    else await m.forward([1, 403, 407, 261], { attentions: true });  // ids valid in both vocabularies
    await m.dispose();
  };
  // The first cycles set up what the engine keeps for good (tokenizer tables, the kernels' scratch
  // buffers at their high-water mark): one of each of the six kinds of cycle below.
  for (let i = 0; i < 6; i++) await cycle(i);
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

test('two models alive at once, 50 times: memory returns to baseline', { skip: noSmall }, async () => {
  const buffers = small.buffers();
  const base = (await engineInfo()).allocatedBytes;
  for (let i = 0; i < 50; i++) {
    const [a, b] = await Promise.all([loadModel(buffers, { threads: 1 }), loadModel(buffers, { threads: 1 })]);
    await Promise.all([a.generate(small.prompt, { maxNewTokens: 4 }), b.generate('The', { maxNewTokens: 4 })]);
    await Promise.all([a.dispose(), b.dispose()]);
  }
  assert.equal((await engineInfo()).allocatedBytes, base);
});

test('with 2 threads: what the workers keep is bounded and stops growing', { skip: noSmall }, async (t) => {
  const buffers = small.buffers();
  const base = (await engineInfo()).allocatedBytes;
  const cycle = async (i) => {
    const m = await loadModel(buffers, { quantize: i % 3 === 0 ? 'q8_0' : 'none', threads: 2 });
    if (i % 2 === 0) await m.generate(small.prompt, { maxNewTokens: 8, temperature: 0.7, seed: i });
    else await m.forward([1, 403, 407, 261], { attentions: true });
    assert.equal(m.info.threads, 2);
    await m.dispose();
  };
  for (let i = 0; i < 60; i++) await cycle(i);
  const warm = (await engineInfo()).allocatedBytes;
  for (let i = 0; i < 60; i++) await cycle(i);
  const end = (await engineInfo()).allocatedBytes;
  t.diagnostic(`baseline ${base} B; after 60 cycles with 2 threads ${warm} B; after 120 ${end} B`);
  // The second thread's stack (256 KiB, CMakeLists.txt) and its kernel scratch (packed panels,
  // quantized activations: a few KiB for this model).
  assert.ok(warm - base < 512 << 10, `${warm - base} bytes kept by the threads`);
  assert.equal(end, warm);
});
