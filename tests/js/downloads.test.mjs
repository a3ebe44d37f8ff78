// A model's downloads do not wait for the engine (web/src/model.mjs loadModelHere): while its glue,
// wasm and threads start, what arrives is held in JS memory (web/src/sources.mjs holdingSinks), then
// written where it belongs. Held chunks keep their order; a load that fails while its downloads run
// stops them and keeps nothing.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { engineInfo, loadModel } from '../../web/src/index.mjs';
import { holdingSinks } from '../../web/src/sources.mjs';
import { serve } from './fixtures/server.mjs';

const chunk = (value, length) => new Uint8Array(length).fill(value);
const turn = () => new Promise((r) => setImmediate(r));

test('holdingSinks: what arrives before open() reaches the real sinks first, in order, then the rest goes straight there', () => {
  const held = holdingSinks(2, 1000);
  const got = [[], []];
  assert.equal(held.sinks[0](chunk(1, 10), 0), undefined);
  held.sinks[1](chunk(2, 5), 0);
  held.sinks[0](chunk(3, 10), 10);
  held.open(got.map((list) => (c, at) => list.push([c[0], c.length, at])));
  assert.deepEqual(got, [[[1, 10, 0], [3, 10, 10]], [[2, 5, 0]]]);
  held.sinks[1](chunk(4, 5), 5);
  assert.deepEqual(got[1], [[2, 5, 0], [4, 5, 5]]);
});

test('holdingSinks: past its limit a write returns a promise that settles at open() (the reader waits); fail() rejects it and every later write', async () => {
  const held = holdingSinks(1, 16);
  assert.equal(held.sinks[0](chunk(1, 10), 0), undefined);
  const wait = held.sinks[0](chunk(2, 10), 10);  // 20 bytes held: over the limit
  assert.ok(wait instanceof Promise);
  let settled = false;
  wait.then(() => { settled = true; });
  await turn();
  assert.equal(settled, false, 'settles only once there is somewhere to write');
  const got = [];
  held.open([(c, at) => got.push([c[0], at])]);
  await wait;
  assert.deepEqual(got, [[1, 0], [2, 10]]);

  const failing = holdingSinks(1, 16);
  const stalled = failing.sinks[0](chunk(1, 20), 0);
  failing.fail(new Error('the engine did not start'));
  await assert.rejects(stalled, /the engine did not start/);
  assert.throws(() => failing.sinks[0](chunk(1, 1), 20), /the engine did not start/);
});

// A file announced as 5 GB (more than the wasm heap holds) that trickles in: its download starts at
// once, the size is refused once the engine is up, and the connection must then be closed. In a new
// worker the engine is still compiling when the bytes arrive: they are held, then dropped.
for (const worker of [false, true]) {
  test(`a load refused while its download runs stops the download and keeps nothing (${worker ? 'in a new worker' : 'in this thread'})`, async () => {
    let sent = 0;
    let closed;
    const connectionClosed = new Promise((r) => { closed = r; });
    const server = await serve({
      '/big/': async (req, res) => {
        res.writeHead(200, { 'Content-Length': String(5e9), 'Content-Type': 'application/octet-stream' });
        res.on('close', () => closed(sent));
        const piece = Buffer.alloc(65536, 7);
        while (!res.destroyed && sent < 256 << 20) {
          res.write(piece);
          sent += piece.length;
          await new Promise((r) => setTimeout(r, 2));
        }
        return true;
      },
    });
    try {
      const before = await engineInfo();
      await assert.rejects(loadModel(server.url('/big/model.gguf'), { worker, threads: 1 }),
        /^Error: model\.gguf: 5000 MB \(5000000000 bytes\) of WebAssembly memory needed, but only \d+ MB more fit/);
      let timer;
      const bytes = await Promise.race([connectionClosed, new Promise((r) => { timer = setTimeout(() => r('open'), 10_000); })]);
      clearTimeout(timer);
      assert.notEqual(bytes, 'open', 'the connection was still open 10 s after the load failed');
      assert.ok(bytes < 256 << 20, `the server sent ${bytes} bytes: the download was not stopped`);
      if (!worker) assert.equal((await engineInfo()).allocatedBytes, before.allocatedBytes, 'nothing left allocated');
    } finally {
      await server.close();
    }
  });
}
