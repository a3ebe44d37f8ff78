// Worker mode (loadModel(…, { worker: true })): the same API with the model in a worker_threads
// Worker — same results as in this thread, buffers transferred, progress forwarded, streams with
// flow control, abort within one token, errors that keep their name, message and status, and
// dispose() that terminates the worker.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { Worker } from 'node:worker_threads';
import { Attentions, FetchError, loadModel } from '../../web/src/index.mjs';
import { dates, noDates, noSmall, noStories, reportSkips, root, small } from './fixtures/models.mjs';
import { serve } from './fixtures/server.mjs';

reportSkips(noSmall, noDates);
console.log(`model: ${small.name}`);

const workerUrl = new URL('../../web/src/worker.mjs', import.meta.url);
const exited = (w) => new Promise((r) => w.once('exit', r));

describe('a model in a worker', { skip: noSmall }, () => {
  let model;    // in a worker
  let local;    // the same model here
  let server;
  before(async () => {
    [model, local] = await Promise.all([loadModel(small.paths, { worker: true }), loadModel(small.paths)]);
    server = await serve({ '/m/': small.dir });
  });
  after(async () => {
    await model?.dispose();
    await local?.dispose();
    await server?.close();
  });

  test('info and promptFormat are there at once; every method is async and gives what the model gives here', async () => {
    assert.deepEqual(model.info, local.info);
    assert.deepEqual(model.promptFormat, local.promptFormat);
    assert.ok(model.worker instanceof Worker);
    const text = small.prompt;
    assert.deepEqual(await model.tokenize(text), await local.tokenize(text));
    assert.deepEqual(await model.tokenize(text, { addSpecialTokens: false }), await local.tokenize(text, { addSpecialTokens: false }));
    assert.equal(await model.detokenize([403, 407]), await local.detokenize([403, 407]));
    assert.deepEqual(await model.encodePrompt(text), await local.encodePrompt(text));
    assert.deepEqual(await model.pieces(new Int32Array([403, 407])), await local.pieces([403, 407]));
    const opts = { maxNewTokens: 20, temperature: 0.8, topK: 50, topP: 0.95, seed: 42, stop: ['zzz'] };
    const [a, b] = [await model.generate(text, opts), await local.generate(text, opts)];
    assert.deepEqual({ ...a, timings: null }, { ...b, timings: null });
    assert.ok(a.timings.tokensPerSecond > 0);
    const memory = await model.memory();
    assert.equal(memory.kvCacheBytes, local.memory().kvCacheBytes);  // the same runs: the same KV cache grown
    assert.equal(memory.modelBytes, local.memory().modelBytes);
    const info = await model.engineInfo();
    assert.equal(typeof info.simd, 'string');
  });

  test('forward: logits and attentions come back as transferred arrays, equal to this thread\'s', async () => {
    const ids = [1, 403, 407, 261, 378];
    const [w, l] = [await model.forward(ids, { attentions: true }), await local.forward(ids, { attentions: true })];
    assert.deepEqual(w.shape, l.shape);
    assert.deepEqual(w.logits, l.logits);
    assert.ok(w.attentions instanceof Attentions);
    assert.deepEqual(w.attentions.toJSON(), l.attentions.toJSON());
    // The arrays arrive moved from the worker, not as views of a heap: the logits in a buffer of their
    // own, the pass's records in one buffer holding just them.
    assert.equal(w.logits.buffer.byteLength, w.logits.byteLength);
    const [buffer] = w.attentions.buffers;
    assert.equal(w.attentions.buffers.length, 1);
    assert.equal(buffer.byteLength, w.attentions.records.reduce((n, r) => n + r.data.byteLength, 0));
    const [layer, head] = [model.info.layers - 1, model.info.heads - 1];
    const some = await model.forward(ids, { attentions: { layers: [layer], heads: [head] } });
    assert.deepEqual(some.attentions.layers(), [layer]);
  });

  test('stream: the same steps as in this thread, attention included', async () => {
    const opts = { maxNewTokens: 10, temperature: 0, attentions: { layers: [0, model.info.layers - 1] } };
    const ws = model.stream(small.prompt, opts);
    const w = [];
    for await (const s of ws) w.push(s);
    const l = [];
    for await (const s of local.stream(small.prompt, opts)) l.push(s);
    assert.equal(w.length, 10);
    assert.deepEqual(w.map((s) => [s.token, s.piece, s.text, s.position]), l.map((s) => [s.token, s.piece, s.text, s.position]));
    for (let i = 0; i < w.length; i++) {
      assert.ok(w[i].attentions instanceof Attentions);
      assert.deepEqual(w[i].attentions.toJSON(), l[i].attentions.toJSON());
    }
    assert.deepEqual(ws.result.tokens, w.at(-1).result.tokens);
  });

  // The worker runs a few steps ahead of the consumer (worker-client.mjs STREAM_WINDOW); after an
  // abort, the steps it had already sent are dropped: the consumer gets none, and the result holds
  // exactly the steps it got — what the same abort gives in this thread.
  const abortAfter = async (m, n, { delayMs = 0, options = {} } = {}) => {
    const controller = new AbortController();
    const stream = m.stream(small.prompt, { maxNewTokens: 400, temperature: 0, seed: 7, ...options, signal: controller.signal });
    const got = [];
    for await (const step of stream) {
      got.push(step);
      if (delayMs) await new Promise((r) => setTimeout(r, delayMs));  // a slow consumer: the worker's window fills
      if (got.length === n) controller.abort();
    }
    return { steps: got, result: stream.result };
  };
  const sameAbort = (w, l, n) => {
    assert.equal(w.steps.length, n, `${w.steps.length} steps after aborting at step ${n}`);
    assert.equal(w.result.finishReason, 'aborted');
    assert.equal(w.result.tokens.length, w.result.promptTokens + n);
    assert.deepEqual(w.result.tokens.slice(w.result.promptTokens), w.steps.map((s) => s.token));
    assert.equal(w.result.text, w.steps.map((s) => s.text).join(''));
    assert.deepEqual({ ...w.result, timings: null }, { ...l.result, timings: null });
    assert.deepEqual(w.steps.map((s) => [s.token, s.text, s.position]), l.steps.map((s) => [s.token, s.text, s.position]));
  };

  test('abort mid-stream: the consumer gets no step after it; the result holds exactly the steps it got', async () => {
    for (const [n, delayMs] of [[4, 0], [4, 20], [1, 20], [7, 5]]) {
      const w = await abortAfter(model, n, { delayMs });
      sameAbort(w, await abortAfter(local, n), n);
    }
    // attention rows and top-k too: the last step handed out is the last one kept
    const options = { attentions: { layers: [0] }, predictions: 3 };
    const w = await abortAfter(model, 3, { delayMs: 20, options });
    sameAbort(w, await abortAfter(local, 3, { options }), 3);
    assert.ok(w.steps.every((s) => s.attentions instanceof Attentions && s.topk.length === 3));
  });

  test('abort mid-stream without shared memory (no stop flag): the same steps and result', async () => {
    for (const [n, delayMs] of [[4, 0], [4, 20], [2, 20]]) {
      const l = await abortAfter(local, n);  // (this thread's engine, the threads build, needs shared memory)
      const saved = globalThis.SharedArrayBuffer;
      globalThis.SharedArrayBuffer = undefined;  // worker-client.mjs newStopFlag() then sends none
      let w;
      try {
        w = await abortAfter(model, n, { delayMs });
      } finally {
        globalThis.SharedArrayBuffer = saved;
      }
      sameAbort(w, l, n);
    }
  });

  test('abort from onToken: generate() calls it no more and resolves with the tokens it saw', async () => {
    const controller = new AbortController();
    const seen = [];
    const r = await model.generate(small.prompt, {
      maxNewTokens: 400, temperature: 0, signal: controller.signal,
      onToken: (s) => { seen.push(s.token); if (seen.length === 5) controller.abort(); },
    });
    assert.equal(seen.length, 5);
    assert.equal(r.finishReason, 'aborted');
    assert.deepEqual(r.tokens.slice(r.promptTokens), seen);
  });

  test('a stream that ends by itself keeps its result whole, whatever the window', async () => {
    const opts = { maxNewTokens: 12, temperature: 0, seed: 7 };
    const w = [];
    const ws = model.stream(small.prompt, opts);
    for await (const s of ws) { w.push(s); await new Promise((r) => setTimeout(r, 5)); }
    const l = local.stream(small.prompt, opts);
    for await (const _ of l);
    assert.equal(w.length, 12);
    assert.deepEqual({ ...ws.result, timings: null }, { ...l.result, timings: null });
    assert.equal(ws.result.finishReason, 'length');
  });

  test('abort generate() from a timer: it resolves with the tokens so far', async () => {
    const controller = new AbortController();
    let timer = null;
    // (minNewTokens: no end of text before the timer, whatever the machine's speed; then only the
    // context could end it, 512 tokens: ~65 ms here, against a timer of 5 ms from the first token)
    const r = await model.generate('Once', {
      maxNewTokens: 100000, minNewTokens: 100000, temperature: 1, seed: 1, signal: controller.signal,
      onToken: () => { timer ??= setTimeout(() => controller.abort(), 5); },
    });
    assert.equal(r.finishReason, 'aborted');  // neither the token limit nor the context: the abort stopped it
    assert.ok(r.tokens.length - r.promptTokens < 100000);
    await assert.rejects(model.generate('Once', { signal: AbortSignal.abort() }), { name: 'AbortError' });
  });

  test('leaving a stream early stops the generation in the worker; the model is free again', async () => {
    let n = 0;
    for await (const _ of model.stream('Once', { maxNewTokens: 400, temperature: 0 })) if (++n === 2) break;
    assert.deepEqual((await model.tokenize('x')).ids.length > 0, true);
  });

  test('errors keep their class, name, message and status', async () => {
    await assert.rejects(model.detokenize([1, 9999]), (e) => e instanceof RangeError && /ids\[1\] = 9999/.test(e.message));
    await assert.rejects(model.forward(Array(model.info.contextLength + 100).fill(5)), (e) => e.name === 'Error' && /context overflow/.test(e.message));
    await assert.rejects(model.forward('x'), TypeError);
    await assert.rejects(model.generate('x', { temperature: -1 }), RangeError);
    assert.throws(() => model.stream('', {}), RangeError);
    const url = server.url('/m/missing.bin');
    await assert.rejects(loadModel(url, { worker: true }), (e) => e instanceof FetchError && e.status === 404 && e.url === url);
    await assert.rejects(loadModel([new Uint8Array(64)], { worker: true }), /file0: not a model file/);
    await assert.rejects(loadModel(42, { worker: true }), TypeError);
    // The model still works after all that.
    const r = await model.generate('Once', { maxNewTokens: 2, temperature: 0 });
    assert.equal(r.tokens.length, r.promptTokens + 2);
  });

  test('two worker models interleaved give what each gives alone', async () => {
    const other = await loadModel(small.buffers(), { worker: true });
    try {
      const opts = (seed) => ({ maxNewTokens: 20, temperature: 0.9, seed });
      const aloneA = await model.generate('Once', opts(1));
      const aloneB = await other.generate('The dog', opts(2));
      const [a, b] = await Promise.all([model.generate('Once', opts(1)), other.generate('The dog', opts(2))]);
      assert.deepEqual(a.tokens, aloneA.tokens);
      assert.deepEqual(b.tokens, aloneB.tokens);
    } finally {
      await other.dispose();
    }
  });
});

test('load: source buffers are transferred (detached here), progress events are forwarded', { skip: noSmall }, async () => {
  // llama2.c files are told apart by their content and may come unnamed (as here); the files of a
  // Hugging Face folder need their names.
  const source = (name, data) => (noStories ? { name, data } : data);
  const files = small.buffers();
  const main = files.reduce((a, f) => (f.data.length > a.data.length ? f : a));  // the weights
  const bin = main.data;
  const ab = new Uint8Array(bin).buffer;
  const events = [];
  const m = await loadModel(files.map((f) => source(f.name, f === main ? ab : f.data)), { worker: true, onProgress: (p) => events.push(p) });
  try {
    assert.equal(ab.byteLength, 0, 'the ArrayBuffer moved to the worker');
    assert.ok(events.length >= 2);
    for (let i = 1; i < events.length; i++) assert.ok(events[i].loaded >= events[i - 1].loaded);
    assert.equal(events.at(-1).loaded, events.at(-1).total);
    // A view of part of a buffer is copied (just that part), the rest of the buffer stays.
    const big = new Uint8Array(bin.length + 100);
    big.set(bin, 100);
    const m2 = await loadModel(small.buffers().map((f) => source(f.name, f.name === main.name ? big.subarray(100) : f.data)), { worker: true });
    assert.equal(big.length, bin.length + 100);
    await m2.dispose();
    // Files keep their names on the way (Node's structured clone turns a File into a Blob).
    const m3 = await loadModel(small.buffers().map((f, i) => (i % 2 === 0 ? new File([f.data], f.name) : { name: f.name, data: new Blob([f.data]) })), { worker: true });
    assert.deepEqual(m3.info.files.map((f) => f.name), small.files);
    await m3.dispose();
  } finally {
    await m.dispose();
  }
});

test('abort a load in the worker', { skip: noSmall }, async () => {
  const server = await serve({ '/m/': small.dir }, { chunkSize: 16384, chunkDelayMs: 20 });
  try {
    const controller = new AbortController();
    let events = 0;
    const load = loadModel(small.files.map((f) => server.url(`/m/${f}`)), { worker: true, signal: controller.signal, onProgress: () => { if (++events === 2) controller.abort(); } });
    await assert.rejects(load, { name: 'AbortError' });
  } finally {
    await server.close();
  }
});

test('dispose(): frees the model, terminates the worker; later calls throw', { skip: noSmall }, async () => {
  const m = await loadModel(small.paths, { worker: true });
  const gone = exited(m.worker);
  await m.dispose();
  await gone;
  assert.equal(m.disposed, true);
  await assert.rejects(m.tokenize('x'), /disposed/);
  await assert.rejects(m.memory(), /disposed/);
  assert.throws(() => m.stream('x'), /disposed/);
  await m.dispose();
});

test('dispose() during a generation: it ends as "aborted" with its tokens', { skip: noSmall }, async () => {
  const m = await loadModel(small.paths, { worker: true });
  let n = 0;
  let disposing;
  const r = await m.generate('Once', { maxNewTokens: 400, temperature: 0, onToken: () => { if (++n === 5) disposing = m.dispose(); } });
  await disposing;
  assert.equal(r.finishReason, 'aborted');
  assert.ok(r.tokens.length >= r.promptTokens + 5);
});

test('a Worker of your own: several models in it; dispose() leaves it running', { skip: noSmall }, async () => {
  const w = new Worker(workerUrl);
  try {
    const a = await loadModel(small.paths, { worker: w });
    const b = await loadModel(small.buffers(), { worker: w, contextLength: 32 });
    assert.equal(a.worker, w);
    const [ga, gb] = await Promise.all([a.generate('Once', { maxNewTokens: 5, temperature: 0 }), b.generate('Once', { maxNewTokens: 5, temperature: 0 })]);
    assert.deepEqual(ga.tokens, gb.tokens);
    await a.dispose();
    const gb3 = await b.generate('Once', { maxNewTokens: 3, temperature: 0 });
    assert.equal(gb3.tokens.length, gb3.promptTokens + 3);
    const mem = await b.memory();
    assert.equal(mem.kvCacheBytes, b.info.kvCacheBytes);  // 32 positions: its first growth already fills the context
    await b.dispose();
    const c = await loadModel(small.paths, { worker: w });  // still alive
    await c.dispose();
  } finally {
    await w.terminate();
  }
});

test('a Worker of your own that runs something else: loadModel rejects instead of hanging', { skip: noSmall }, async () => {
  const echo = new Worker(`const { parentPort } = require('node:worker_threads');
    parentPort.on('message', (m) => parentPort.postMessage({ id: m.id, type: 'result', value: { hello: 'not attnlens' } }));`, { eval: true });
  try {
    await assert.rejects(loadModel(small.paths, { worker: echo }), /does not run attnlens\/worker/);
  } finally {
    await echo.terminate();
  }
});

test('a worker that dies: pending calls reject instead of hanging', { skip: noSmall }, async () => {
  const m = await loadModel(small.paths, { worker: true });
  // The worker is ended at the first token, while the generation runs (minNewTokens: no end of text;
  // the context ends it after ~65 ms here): a timer could lose to the end of the run on a fast machine.
  let terminated = null;
  const pending = m.generate('Once', {
    maxNewTokens: 100000, minNewTokens: 100000, temperature: 1,
    onToken: () => { terminated ??= m.worker.terminate(); },
  });
  await assert.rejects(pending, /worker exited/);
  await terminated;
  await m.dispose();
});

test('worker mode never runs the model in the calling thread: no WebAssembly is instantiated there', { skip: noSmall, timeout: 30_000 }, () => {
  const script = `
    let instantiated = 0;
    for (const name of ['instantiate', 'instantiateStreaming', 'compile', 'compileStreaming']) {
      const f = WebAssembly[name];
      WebAssembly[name] = (...a) => { instantiated++; return f.apply(WebAssembly, a); };
    }
    const { loadModel } = await import(${JSON.stringify(new URL('../../web/src/index.mjs', import.meta.url).href)});
    const m = await loadModel(${JSON.stringify(small.paths)}, { worker: true });
    const heads = m.info.heads;
    const g = await m.generate(${JSON.stringify(small.prompt)}, { maxNewTokens: 50, temperature: 0 });
    const f = await m.forward([1, 403, 407], { attentions: true });
    await m.dispose();
    console.log(JSON.stringify({ instantiated, newTokens: g.tokens.length - g.promptTokens, heads: f.attentions.layer(0).heads, modelHeads: heads }));`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { cwd: root, encoding: 'utf8', timeout: 20_000 });
  assert.equal(r.status, 0, r.stderr);
  const { modelHeads, ...out } = JSON.parse(r.stdout.trim());
  assert.ok(modelHeads >= 1, r.stdout);
  assert.deepEqual(out, { instantiated: 0, newTokens: 50, heads: modelHeads });  // every head of layer 0
});

test('Node exits on its own when a worker model was never disposed', { skip: noSmall, timeout: 30_000 }, () => {
  const script = `
    const { loadModel } = await import(${JSON.stringify(new URL('../../web/src/index.mjs', import.meta.url).href)});
    const m = await loadModel(${JSON.stringify(small.paths)}, { worker: true });
    const g = await m.generate('Once', { maxNewTokens: 3, temperature: 0 });
    console.log(g.tokens.length - g.promptTokens);`;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { cwd: root, encoding: 'utf8', timeout: 20_000 });
  assert.equal(r.signal, null, 'the process had to be killed');
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout.trim(), '3');
});

describe('encoder–decoder in a worker', { skip: noDates }, () => {
  test('forward with the three attention kinds, stream with the encoder at the first step', async () => {
    const [w, l] = await Promise.all([loadModel(dates.dir, { worker: true }), loadModel(dates.dir)]);
    try {
      const { ids: source } = await w.tokenize('12/05/1999');
      const input = { source, target: [w.promptFormat.decoderStartToken, 20] };
      const [fw, fl] = [await w.forward(input, { attentions: true }), await l.forward(input, { attentions: true })];
      assert.deepEqual(fw.attentions.kinds.sort(), ['cross', 'encoder', 'self']);
      assert.deepEqual(fw.attentions.toJSON(), fl.attentions.toJSON());
      const steps = [];
      for await (const s of w.stream('12/05/1999', { maxNewTokens: 12, temperature: 0, attentions: true })) steps.push(s);
      assert.ok(steps[0].attentions.kinds.includes('encoder'));
      assert.equal(steps.map((s) => s.text).join(''), (await l.generate('12/05/1999', { maxNewTokens: 12, temperature: 0 })).text);
    } finally {
      await Promise.all([w.dispose(), l.dispose()]);
    }
  });
});
