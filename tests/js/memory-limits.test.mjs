// Models at the edge of what wasm32 holds: a model whose files cannot fit in the WebAssembly heap is
// refused before anything is allocated, with how much it needs and what the limit is; so is one file
// over the 2 GiB that Emscripten's allocator gives one piece of memory; a 1.9 GB file is read in
// chunks straight into wasm memory (no ArrayBuffer of its size in JS) and, not being a model, refused
// by the parser with a clean error — and each time the engine's memory goes back to where it was.
// The files are sparse (no disk space, reads give zeros).
import assert from 'node:assert/strict';
import { closeSync, mkdtempSync, openSync, rmSync, ftruncateSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { engineInfo, loadModel } from '../../web/src/index.mjs';

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

test('one file over 2 GiB is refused up front: more than one piece of WebAssembly memory', async () => {
  const before = await engineInfo();
  const path = sparse('big.gguf', 2.2e9);
  await assert.rejects(loadModel(path, { threads: 1 }), (e) => {
    assert.match(e.message, /^big\.gguf: one file of 2200 MB \(2200000000 bytes\) is over the 2146435071 bytes that WebAssembly's allocator gives one piece of memory in this build; a model this large has to come as several files/);
    return true;
  });
  assert.equal((await engineInfo()).allocatedBytes, before.allocatedBytes);
});

test('a 1.9 GB file is read in chunks into wasm memory, then refused as not a model', { timeout: 120_000 }, async (t) => {
  const before = await engineInfo();
  const path = sparse('zeros.bin', 1.9e9);
  let last;
  await assert.rejects(loadModel(path, { threads: 1, onProgress: (p) => { last = p; } }), (e) => {
    assert.match(e.message, /zeros\.bin: not a model file AttnLens recognises \(1900000000 bytes/);
    return true;
  });
  assert.equal(last.loaded, 1.9e9, 'every byte was read');
  const end = await engineInfo();
  t.diagnostic(`heap ${before.heapBytes} → ${end.heapBytes} B; allocated ${before.allocatedBytes} → ${end.allocatedBytes} B`);
  assert.ok(end.heapBytes >= 1.9e9, 'the bytes went to the wasm heap');
  assert.equal(end.allocatedBytes, before.allocatedBytes, 'and were freed after the refusal');
});
