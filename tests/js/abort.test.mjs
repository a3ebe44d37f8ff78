// AbortSignal: generation stops within one token and resolves with what it has (finishReason
// "aborted"); a load stops and rejects with the signal's reason.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { loadModel } from '../../web/src/index.mjs';
import { noSmall, reportSkips, small } from './fixtures/models.mjs';
import { serve } from './fixtures/server.mjs';
import { llamaGguf } from './fixtures/synth.mjs';

reportSkips(noSmall);
console.log(`model: ${small.name}`);

describe('generation', { skip: noSmall }, () => {
  let model;
  before(async () => { model = await loadModel(small.paths); });
  after(() => model?.dispose());

  test('abort mid-generation: resolves at once with the tokens so far, finishReason "aborted"', async () => {
    const controller = new AbortController();
    let seen = 0;
    const r = await model.generate(small.prompt, {
      maxNewTokens: 400, temperature: 0, signal: controller.signal,
      onToken: () => { if (++seen === 7) controller.abort(); },
    });
    assert.equal(r.finishReason, 'aborted');
    assert.equal(r.tokens.length, r.promptTokens + 7);  // no token after the abort
    assert.equal(seen, 7);
    const alone = await model.generate(small.prompt, { maxNewTokens: 7, temperature: 0 });
    assert.equal(r.text, alone.text);
  });

  test('abort from a timer: generation of many tokens stops promptly', async () => {
    const controller = new AbortController();
    let timer = null;
    let after = -1;  // tokens seen after abort() was called
    const r = await model.generate(small.prompt, {
      // (minNewTokens: no end of text before the timer on a fast machine; then only the context
      // could end it, 512 tokens: ~70 ms here)
      maxNewTokens: 100000, minNewTokens: 100000, temperature: 1, seed: 3, signal: controller.signal,
      onToken: () => {
        if (controller.signal.aborted) after++;
        timer ??= setTimeout(() => { controller.abort(); after = 0; }, 5);  // a timer, started at the first token
      },
    });
    // The timer fires between two tokens (generation turns the event loop every few ms), and no
    // token follows it; how long that takes is for bench/, not this test.
    assert.equal(r.finishReason, 'aborted');
    assert.equal(after, 0);
    assert.ok(r.tokens.length > r.promptTokens && r.tokens.length < model.info.contextLength, `${r.tokens.length} tokens`);
    // The model is free again.
    const two = await model.generate(small.prompt, { maxNewTokens: 2, temperature: 0 });
    assert.equal(two.tokens.length, two.promptTokens + 2);
  });

  test('abort while streaming: the loop ends, stream.result says "aborted"', async () => {
    const controller = new AbortController();
    const stream = model.stream(small.prompt, { maxNewTokens: 300, temperature: 0, signal: controller.signal, attentions: true });
    let n = 0;
    for await (const step of stream) {
      assert.ok(step.attentions);
      if (++n === 3) controller.abort();
    }
    assert.equal(n, 3);
    assert.equal(stream.result.finishReason, 'aborted');
    assert.equal(stream.result.tokens.length, stream.result.promptTokens + 3);
  });

  test('an already aborted signal rejects with its reason before anything runs', async () => {
    const reason = new Error('user cancelled');
    await assert.rejects(model.generate('Once', { signal: AbortSignal.abort(reason) }), (e) => e === reason);
    await assert.rejects(model.generate('Once', { signal: AbortSignal.abort() }), { name: 'AbortError' });
    const it = model.stream('Once', { signal: AbortSignal.abort() })[Symbol.asyncIterator]();
    await assert.rejects(it.next(), { name: 'AbortError' });
    const one = await model.generate(small.prompt, { maxNewTokens: 1 });
    assert.equal(one.tokens.length, one.promptTokens + 1);
  });
});

test('abort a download: rejects with the reason, no progress after it; nothing is left loaded', { skip: noSmall }, async () => {
  const server = await serve({ '/m/': small.dir }, { chunkSize: 16384, chunkDelayMs: 20 });
  try {
    const controller = new AbortController();
    let events = 0;
    const load = loadModel(small.files.map((f) => server.url(`/m/${f}`)), {
      signal: controller.signal,
      onProgress: () => { if (++events === 3) controller.abort(); },
    });
    await assert.rejects(load, { name: 'AbortError' });
    assert.equal(events, 3);  // (how fast: a benchmark's question, not a test's)
    await assert.rejects(loadModel(server.url(`/m/${small.files[0]}`), { signal: AbortSignal.abort() }), { name: 'AbortError' });
  } finally {
    await server.close();
  }
});

// A prompt of 1000 tokens: 16 prefill chunks of 64 (web/src/model.mjs PREFILL_CHUNK).
describe('abort during a long prefill', () => {
  const files = () => llamaGguf({ context: 2048 });
  const prompt = Array.from({ length: 1000 }, (_, i) => 3 + (i * 7) % 29);

  test('in this thread: the prefill stops at the next chunk', async () => {
    const model = await loadModel(files());
    try {
      const full = await model.generate(prompt, { maxNewTokens: 2, temperature: 0 });
      assert.equal(full.timings.prefilledTokens, 1000);
      const c = new AbortController();
      const stream = model.stream(prompt, { signal: c.signal, maxNewTokens: 5 });
      const it = stream[Symbol.asyncIterator]();
      const next = it.next();
      setImmediate(() => c.abort());  // runs after the first chunk, before the second
      assert.equal((await next).done, true);
      assert.equal(stream.result.finishReason, 'aborted');
      assert.equal(stream.result.timings.prefilledTokens, 64);
      assert.equal(stream.result.tokens.length, 1000);  // no token generated
      // the model is free and whole afterwards
      assert.deepEqual((await model.generate(prompt, { maxNewTokens: 2, temperature: 0 })).tokens, full.tokens);
    } finally {
      await model.dispose();
    }
  });

  test('in a worker: abort() stops the running pass between layers (shared memory)', async () => {
    const model = await loadModel(files(), { worker: true });
    try {
      const full = await model.generate(prompt, { maxNewTokens: 2, temperature: 0 });
      const c = new AbortController();
      const stream = model.stream(prompt, { signal: c.signal, maxNewTokens: 5 });
      // A forward pass of ~0.3 s is queued ahead of the stream in the worker, so abort() sets the
      // flag before the prefill starts, and the engine reads it at its first layer: not even one
      // chunk completes. (Without it, this thread raced the worker: on a loaded machine it could be
      // descheduled between posting the stream and storing the flag for longer than a 64-token
      // chunk takes, ~4 ms, and one chunk completed.) The abort message itself arrives only after
      // the pass: nothing but the flag can stop it at 0.
      const busy = model.forward(prompt, { attentions: true });
      const it = stream[Symbol.asyncIterator]();
      const next = it.next();
      c.abort();
      await busy;
      assert.equal((await next).done, true);
      assert.equal(stream.result.finishReason, 'aborted');
      assert.equal(stream.result.timings.prefilledTokens, 0);
      assert.deepEqual((await model.generate(prompt, { maxNewTokens: 2, temperature: 0 })).tokens, full.tokens);
      // dispose() during a prefill stops it too
      const again = model.stream(prompt, { maxNewTokens: 5 })[Symbol.asyncIterator]();
      const pending = again.next();
      await model.dispose();
      assert.equal((await pending).done, true);
    } finally {
      await model.dispose();
    }
  });
});
