// AbortSignal: generation stops within one token and resolves with what it has (finishReason
// "aborted"); a load stops and rejects with the signal's reason.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { loadModel } from '../../web/src/index.mjs';
import { noSmall, reportSkips, small } from './fixtures/models.mjs';
import { serve } from './fixtures/server.mjs';

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
    const t0 = performance.now();
    setTimeout(() => controller.abort(), 30);
    const r = await model.generate(small.prompt, { maxNewTokens: 100000, temperature: 1, seed: 3, signal: controller.signal });
    const ms = performance.now() - t0;
    // Both small models fill their context (512 / 256 positions) in well under a second; stop earlier.
    assert.ok(r.finishReason === 'aborted', r.finishReason);
    assert.ok(ms < 1000, `${ms} ms`);
    assert.ok(r.tokens.length > r.promptTokens);
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

test('abort a download: rejects promptly with the reason; nothing is left loaded', { skip: noSmall }, async () => {
  const server = await serve({ '/m/': small.dir }, { chunkSize: 16384, chunkDelayMs: 20 });
  try {
    const controller = new AbortController();
    const t0 = performance.now();
    let events = 0;
    const load = loadModel(small.files.map((f) => server.url(`/m/${f}`)), {
      signal: controller.signal,
      onProgress: () => { if (++events === 3) controller.abort(); },
    });
    await assert.rejects(load, { name: 'AbortError' });
    assert.ok(performance.now() - t0 < 2000);
    assert.equal(events, 3);
    await assert.rejects(loadModel(server.url(`/m/${small.files[0]}`), { signal: AbortSignal.abort() }), { name: 'AbortError' });
  } finally {
    await server.close();
  }
});
