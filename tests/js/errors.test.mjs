// Bad input gives a clear Error (TypeError / RangeError naming the argument, FetchError with the
// HTTP status, the engine's message for bad files), promptly, without breaking the wasm instance
// and without leaking its memory.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { FetchError, engineInfo, loadModel } from '../../web/src/index.mjs';
import { join } from 'node:path';
import { kjv, noKjv, noStories, reportSkips, root, stories } from './fixtures/models.mjs';
import { serve } from './fixtures/server.mjs';

reportSkips(noStories, noKjv);

const allocated = async () => (await engineInfo()).allocatedBytes;

describe('loadModel', () => {
  let server;
  before(async () => {
    server = await serve({ '/m/': stories.dir, ...(noKjv ? {} : { '/kjv/': kjv.dir }) });
  });
  after(() => server.close());

  test('wrong argument types and values: TypeError / RangeError naming the argument', async () => {
    const cases = [
      [[], TypeError, /source is required/],
      [[null], TypeError, /source is required/],
      [[42], TypeError, /source must be a URL.*got number/],
      [[[]], TypeError, /empty array/],
      [[['a.bin', 7]], TypeError, /source \[1\] must be/],
      [[''], TypeError, /empty string/],
      [[{ name: 'x.bin' }], TypeError, /source must be/],
      [['m.bin', 'fast'], TypeError, /options must be an object/],
      [['m.bin', { onProgress: 'yes' }], TypeError, /onProgress must be a function/],
      [['m.bin', { quantize: 'q4' }], RangeError, /quantize must be "q8_0" or "none"/],
      [['m.bin', { contextLength: -1 }], RangeError, /contextLength must be a positive integer/],
      [['m.bin', { contextLength: 1.5 }], RangeError, /contextLength/],
      [['m.bin', { cache: 'yes' }], TypeError, /cache must be true or false/],
      [['m.bin', { signal: 'stop' }], TypeError, /signal must be an AbortSignal/],
      [['m.bin', { worker: 5 }], TypeError, /worker must be/],
    ];
    for (const [args, type, message] of cases) await assert.rejects(loadModel(...args), (e) => e instanceof type && message.test(e.message), JSON.stringify(args));
  });

  test('a URL that answers 404 rejects with a FetchError carrying the status and the URL', async () => {
    const url = server.url('/m/missing.bin');
    await assert.rejects(loadModel(url), (e) => e instanceof FetchError && e.status === 404 && e.url === url && /404/.test(e.message));
    await assert.rejects(loadModel([server.url('/m/stories260K.bin'), server.url('/nope/tok512.bin')]), (e) => e.status === 404);
    // A folder URL without model.safetensors(.index.json)
    await assert.rejects(loadModel(server.url('/m/')), (e) => e instanceof FetchError && e.status === 404 && /model\.safetensors/.test(e.message));
  });

  test('an unreachable server rejects naming the URL', async () => {
    const dead = await serve({});
    const url = dead.url('/x.bin');
    await dead.close();
    await assert.rejects(loadModel(url), (e) => e.message.includes(url));
  });

  test('a missing path rejects naming it', async () => {
    await assert.rejects(loadModel('/no/such/model.gguf'), /\/no\/such\/model\.gguf: no such file or folder/);
    // A folder without model files.
    await assert.rejects(loadModel(join(root, 'web')), /holds no model files/);
  });

  test('files that are not models reject with an error naming the file and the problem', { skip: noStories }, async () => {
    const bin = readFileSync(stories.bin);
    const random = new Uint8Array(4096).map((_, i) => (i * 2654435761) >>> 24);
    const cases = [
      [[random], /file0: not a model file/],
      [[new Uint8Array(0)], /file0/],
      [[{ name: 'model.gguf', data: new TextEncoder().encode('GGUF\x03\x00\x00\x00garbage') }], /model\.gguf/],
      [[{ name: 'model.safetensors', data: new Uint8Array([8, 0, 0, 0, 0, 0, 0, 0, 123, 34, 120, 34, 58, 125, 0, 0]) }], /safetensors/],
      [[{ name: 'config.json', data: new TextEncoder().encode('{"model_type": "gpt2", ') }], /config\.json/],
      [[{ name: 'stories260K.bin', data: bin.subarray(0, 1000) }, readFileSync(stories.tok)], /stories260K\.bin/],
    ];
    for (const [source, message] of cases) {
      const err = await loadModel(source).then(() => null, (e) => e);
      assert.ok(err instanceof Error, `${message} should reject`);
      assert.match(err.message, message);
    }
  });

  test('a model without a tokenizer: ids work, text rejects with a clear message', { skip: noStories }, async () => {
    const m = await loadModel(readFileSync(stories.bin));
    try {
      const out = await m.forward([1, 403, 407]);
      assert.deepEqual(out.shape, [3, 512]);
      await assert.rejects(m.tokenize('Once'), /tokenizer/i);
      await assert.rejects(m.generate('Once'), /tokenizer/i);
      await assert.rejects(m.detokenize([403]), /tokenizer/i);
    } finally {
      await m.dispose();
    }
  });

  test('failed loads leave no memory behind', { skip: noStories }, async () => {
    const bin = readFileSync(stories.bin);
    const tok = readFileSync(stories.tok);
    await loadModel([bin.subarray(0, 5000), tok]).catch(() => {});  // warm up whatever is allocated once
    const base = await allocated();
    for (let i = 0; i < 50; i++) {
      await loadModel([new Uint8Array(3000).fill(i)]).catch(() => {});
      await loadModel([bin.subarray(0, 5000 + i * 1000), tok]).catch(() => {});
      await loadModel([{ name: 'config.json', data: new TextEncoder().encode('{"x":') }]).catch(() => {});
    }
    assert.equal(await allocated(), base);
  });
});

describe('model methods', { skip: noStories }, () => {
  let model;
  before(async () => { model = await loadModel(stories.paths); });
  after(() => model?.dispose());

  test('wrong arguments: TypeError / RangeError naming the argument, thrown before the engine runs', async () => {
    const rejects = [
      [() => model.tokenize(42), TypeError, /text must be a string, got number/],
      [() => model.tokenize(), TypeError, /text must be a string/],
      [() => model.tokenize('x', 'y'), TypeError, /tokenize: options must be an object/],
      [() => model.detokenize('abc'), TypeError, /ids must be an array of token ids/],
      [() => model.detokenize([1.5]), TypeError, /ids\[0\] must be an integer/],
      [() => model.detokenize([1, 512]), RangeError, /ids\[1\] = 512 is out of range \[0, 512\)/],
      [() => model.detokenize([-1]), RangeError, /ids\[0\] = -1/],
      [() => model.pieces(null), TypeError, /ids must be an array/],
      [() => model.forward([]), RangeError, /ids is empty/],
      [() => model.forward('Once'), TypeError, /ids must be an array of token ids, got string/],
      [() => model.forward(new Float32Array([1, 2])), TypeError, /ids must be an array/],
      [() => model.forward([1, 2], { attentions: 'yes' }), TypeError, /attentions must be true, false or \{ layers, heads \}/],
      [() => model.forward([1, 2], { attentions: { layers: [5] } }), RangeError, /attentions.layers: layer 5 is out of range \[0, 5\)/],
      [() => model.forward([1, 2], { attentions: { heads: [8] } }), RangeError, /attentions.heads: head 8 is out of range \[0, 8\)/],
      [() => model.forward([1, 2], { attentions: { layers: [-1] } }), TypeError, /attentions.layers must be an array of non-negative integers/],
      [() => model.generate(''), RangeError, /prompt is empty/],
      [() => model.generate(), TypeError, /prompt must be a string or an array of token ids, got undefined/],
      [() => model.generate(null), TypeError, /got null/],
      [() => model.generate({ text: 'x' }), TypeError, /prompt must be/],
      [() => model.generate([]), RangeError, /prompt is empty/],
      [() => model.generate([1, 600]), RangeError, /prompt\[1\] = 600 is out of range/],
      [() => model.generate('x', 'hot'), TypeError, /options must be an object/],
      [() => model.generate('x', { temperature: -0.1 }), RangeError, /temperature must be ≥ 0, got -0.1/],
      [() => model.generate('x', { temperature: 'hot' }), TypeError, /temperature must be a number, got string/],
      [() => model.generate('x', { temperature: NaN }), TypeError, /temperature must be a number, got NaN/],
      [() => model.generate('x', { temperature: Infinity }), RangeError, /temperature must be finite/],
      [() => model.generate('x', { topP: 1.5 }), RangeError, /topP must be ≤ 1, got 1.5/],
      [() => model.generate('x', { topP: 0 }), RangeError, /topP must be > 0/],
      [() => model.generate('x', { topK: 2.5 }), TypeError, /topK must be an integer/],
      [() => model.generate('x', { topK: -1 }), RangeError, /topK must be ≥ 0/],
      [() => model.generate('x', { maxNewTokens: -1 }), RangeError, /maxNewTokens must be ≥ 0/],
      [() => model.generate('x', { maxNewTokens: 1e9 }), RangeError, /maxNewTokens must be ≤/],
      [() => model.generate('x', { repetitionPenalty: 0 }), RangeError, /repetitionPenalty must be > 0/],
      [() => model.generate('x', { seed: -3 }), RangeError, /seed must be ≥ 0/],
      [() => model.generate('x', { seed: 1.5 }), TypeError, /seed must be an integer/],
      [() => model.generate('x', { stop: 5 }), TypeError, /stop must be a string or an array of strings/],
      [() => model.generate('x', { signal: {} }), TypeError, /signal must be an AbortSignal/],
      [() => model.generate('x', { onToken: 'log' }), TypeError, /onToken must be a function/],
    ];
    for (const [call, type, message] of rejects) await assert.rejects(call(), (e) => e instanceof type && message.test(e.message), call.toString());
    // stream() checks at once: it throws synchronously.
    assert.throws(() => model.stream(''), RangeError);
    assert.throws(() => model.stream('x', { topP: 2 }), /topP/);
    assert.throws(() => model.stream('x', { attentions: { layers: [9] } }), /layer 9/);
  });

  test('engine errors (context overflow, a prompt too long) reject with the engine message; the model keeps working', async () => {
    await assert.rejects(model.forward(Array(600).fill(5)), /context overflow.*600.*512/);
    await assert.rejects(model.generate(Array(513).fill(5)), /513 tokens, more than the context length of 512/);
    const long = 'Once upon a time '.repeat(200);
    await assert.rejects(model.generate(long), /context length/);
    const g = await model.generate('Once upon a time', { maxNewTokens: 5, temperature: 0 });
    assert.equal(g.text, ', there was a little');
    const small = await loadModel(stories.paths, { contextLength: 16 });
    try {
      const full = await small.generate('Once upon a time', { maxNewTokens: 100, temperature: 0 });
      assert.equal(full.finishReason, 'context');
      assert.equal(full.tokens.length, 17);  // 16 positions fed, then the last token sampled
      await assert.rejects(small.forward(Array(17).fill(5)), /context length of 16/);
    } finally {
      await small.dispose();
    }
  });

  test('failing calls leak nothing', async () => {
    const run = async () => {
      await model.forward(Array(600).fill(5)).catch(() => {});
      await model.generate(Array(513).fill(5)).catch(() => {});
      await model.generate('x', { topP: 3 }).catch(() => {});
      await model.detokenize([1, 9999]).catch(() => {});
      await model.tokenize('Once upon a time');
    };
    await run();
    const base = await allocated();
    for (let i = 0; i < 100; i++) await run();
    assert.equal(await allocated(), base);
  });
});
