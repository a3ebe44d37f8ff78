// Models at the edge of what wasm32 holds: a model whose files cannot fit in the WebAssembly heap is
// refused before anything is allocated, with how much it needs and what the limit is; a 2.2 GB file
// (over 2 GiB, more than Emscripten's allocator takes from the system at once: bindings/files.cpp)
// is read in chunks straight into one piece of wasm memory (no ArrayBuffer of its size in JS) and,
// not being a model, refused by the parser with a clean error — and each time the engine's memory
// goes back to where it was. A real 2.2 GB model (f16, 1.1B parameters) runs in bench/memory.mjs.
// The files are sparse (no disk space, reads give zeros).
import assert from 'node:assert/strict';
import { closeSync, mkdtempSync, openSync, rmSync, ftruncateSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { engineInfo, loadModel } from '../../web/src/index.mjs';
import { noSmall, small } from './fixtures/models.mjs';

let dir;
function sparse(name, bytes) {
  const path = join(dir, name);
  const fd = openSync(path, 'w');
  ftruncateSync(fd, bytes);
  closeSync(fd);
  return path;
}

before(() => {
  dir = mkdtempSync(join(tmpdir(), 'attnlens-big-'));
});
after(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test('a model whose files exceed the WebAssembly heap is refused up front, with the sizes', async () => {
  const before = await engineInfo();
  const path = sparse('huge.gguf', 5e9);
  await assert.rejects(loadModel(path, { threads: 1 }), (e) => {
    assert.match(e.message, /^huge\.gguf: 5000 MB \(5000000000 bytes\) of WebAssembly memory needed, but only \d+ MB more fit: the WebAssembly heap stops at 4295 MB \(4294\d{6} bytes\) and \d+ MB are in use$/);
    return true;
  });
  // Two files that fit one by one but not together: refused before either is allocated.
  const a = sparse('a.bin', 2.5e9), b = sparse('b.bin', 2.5e9);
  await assert.rejects(loadModel([a, b], { threads: 1 }), (e) => {
    assert.match(e.message, /^the 2 files of this model together \(a\.bin, b\.bin\): 5000 MB \(5000000000 bytes\) of WebAssembly memory needed, but only \d+ MB more fit/);
    return true;
  });
  const end = await engineInfo();
  assert.equal(end.allocatedBytes, before.allocatedBytes, 'nothing left allocated');
});

test('a 2.2 GB file (over 2 GiB: no single buffer of its size anywhere) is read in chunks into one piece of wasm memory, then refused as not a model', { timeout: 180_000 }, async (t) => {
  const before = await engineInfo();
  const path = sparse('zeros.bin', 2.2e9);
  let last;
  await assert.rejects(loadModel(path, { threads: 1, onProgress: (p) => { last = p; } }), (e) => {
    assert.match(e.message, /zeros\.bin: not a model file AttnLens recognises \(2200000000 bytes/);
    return true;
  });
  assert.equal(last.loaded, 2.2e9, 'every byte was read');
  const end = await engineInfo();
  t.diagnostic(`heap ${before.heapBytes} → ${end.heapBytes} B; allocated ${before.allocatedBytes} → ${end.allocatedBytes} B`);
  assert.ok(end.heapBytes >= 2.2e9, 'the bytes went to the wasm heap');
  assert.equal(end.allocatedBytes, before.allocatedBytes, 'and were freed after the refusal');
});

// A file over 2 GB held in memory cannot be one ArrayBuffer in every engine: { name, data: [pieces] }
// takes it as consecutive buffers and Blobs, each read straight into wasm memory.
test('one file given as consecutive pieces (typed array, ArrayBuffer, Blob) loads as the whole file does, here and in a worker', { skip: noSmall }, async () => {
  const ids = [1, 403, 407, 261];
  const whole = await loadModel(small.buffers(), { threads: 1 });
  const want = (await whole.forward(ids)).logits;
  await whole.dispose();
  const split = () => small.buffers().map(({ name, data }) => {
    const a = Math.floor(data.length / 3), b = Math.floor((2 * data.length) / 3);
    return { name, data: [data.subarray(0, a), data.buffer.slice(data.byteOffset + a, data.byteOffset + b), new Blob([data.subarray(b)])] };
  });
  for (const options of [{ threads: 1 }, { threads: 1, worker: true }]) {
    const m = await loadModel(split(), options);
    try {
      assert.deepEqual(m.info.files.map((f) => f.bytes), small.buffers().map((f) => f.data.length));
      assert.deepEqual((await m.forward(ids)).logits, want, `logits with ${JSON.stringify(options)}`);
    } finally {
      await m.dispose();
    }
  }
  await assert.rejects(loadModel({ name: 'x.gguf', data: [] }), /non-empty array/);
});
