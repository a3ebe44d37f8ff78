// Bad input gives a clear Error (TypeError / RangeError naming the argument, FetchError with the
// HTTP status, the engine's message for bad files), promptly, without breaking the wasm instance
// and without leaking its memory.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { FetchError, engineInfo, loadModel, loadTokenizer } from '../../web/src/index.mjs';
import { join } from 'node:path';
import { kjv, noKjv, noSmall, reportSkips, root, small } from './fixtures/models.mjs';
import { serve } from './fixtures/server.mjs';

reportSkips(noSmall, noKjv);
console.log(`model: ${small.name}`);

const re = (s) => new RegExp(s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));  // a literal string as a RegExp
// The small model's weights file and the files that complete it (stories260K: tok512.bin; kjv-gpt2: config.json, tokenizer.json).
const weightsName = small.files.find((f) => f.endsWith('.bin') || f.endsWith('.safetensors'));
const weights = () => readFileSync(join(small.dir, weightsName));
const rest = () => small.buffers().filter((f) => f.name !== weightsName);
const noTokenizer = () => small.buffers().filter((f) => f.name !== 'tokenizer.json' && f.name !== 'tok512.bin');

const allocated = async () => (await engineInfo()).allocatedBytes;

describe('loadModel', () => {
  let server;
  before(async () => {
    server = await serve({ '/m/': small.dir, ...(noKjv ? {} : { '/kjv/': kjv.dir }) });
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
      [['m.bin', { quantize: 'q4' }], RangeError, /quantize must be "q8_0", "q4_0", "q4_k" or "none"/],
      [['m.bin', { contextLength: -1 }], RangeError, /contextLength must be a positive integer/],
      [['m.bin', { contextLength: 1.5 }], RangeError, /contextLength/],
      [['m.bin', { cache: 'yes' }], TypeError, /cache must be true or false/],
      [['m.bin', { signal: 'stop' }], TypeError, /signal must be an AbortSignal/],
      [['m.bin', { worker: 5 }], TypeError, /worker must be/],
    ];
    for (const [args, type, message] of cases) await assert.rejects(loadModel(...args), (e) => e instanceof type && message.test(e.message), JSON.stringify(args));
    // loadTokenizer's messages name loadTokenizer.
    for (const [args, message] of [[[42], /^loadTokenizer: source must be a URL.*got number/], [[[]], /^loadTokenizer: source is an empty array/], [[''], /^loadTokenizer: source is an empty string/]])
      await assert.rejects(loadTokenizer(...args), (e) => e instanceof TypeError && message.test(e.message), JSON.stringify(args));
  });

  test('a URL that answers 404 rejects with a FetchError carrying the status and the URL', async () => {
    const url = server.url('/m/missing.bin');
    await assert.rejects(loadModel(url), (e) => e instanceof FetchError && e.status === 404 && e.url === url && /404/.test(e.message));
    await assert.rejects(loadModel([server.url(`/m/${small.files[0]}`), server.url(`/nope/${small.files[1]}`)]), (e) => e.status === 404);
    // A folder URL without model.safetensors(.index.json)
    await assert.rejects(loadModel(server.url('/empty/')), (e) => e instanceof FetchError && e.status === 404 && /model\.safetensors/.test(e.message));
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

  test('files that are not models reject with an error naming the file and the problem', { skip: noSmall }, async () => {
    const bin = weights();
    const random = new Uint8Array(4096).map((_, i) => (i * 2654435761) >>> 24);
    const cases = [
      [[random], /file0: not a model file/],
      [[new Uint8Array(0)], /file0/],
      [[{ name: 'model.gguf', data: new TextEncoder().encode('GGUF\x03\x00\x00\x00garbage') }], /model\.gguf/],
      [[{ name: 'model.safetensors', data: new Uint8Array([8, 0, 0, 0, 0, 0, 0, 0, 123, 34, 120, 34, 58, 125, 0, 0]) }], /safetensors/],
      [[{ name: 'config.json', data: new TextEncoder().encode('{"model_type": "gpt2", ') }], /config\.json/],
      [[{ name: weightsName, data: bin.subarray(0, 1000) }, ...rest()], re(weightsName)],  // truncated
      [[{ name: weightsName, data: bin.subarray(0, bin.length - 1000) }, ...rest()], re(weightsName)],
    ];
    for (const [source, message] of cases) {
      const err = await loadModel(source).then(() => null, (e) => e);
      assert.ok(err instanceof Error, `${message} should reject`);
      assert.match(err.message, message);
    }
  });

  test('a model without a tokenizer: ids work, text rejects with a clear message', { skip: noSmall }, async () => {
    const m = await loadModel(noTokenizer());
    try {
      const out = await m.forward([1, 403, 407]);
      assert.deepEqual(out.shape, [3, m.info.vocabSize]);
      assert.equal(m.info.tokenizer, null);
      await assert.rejects(m.tokenize('Once'), /tokenizer/i);
      await assert.rejects(m.generate('Once'), /tokenizer/i);
      await assert.rejects(m.detokenize([403]), /tokenizer/i);
    } finally {
      await m.dispose();
    }
  });

  test('failed loads leave no memory behind', { skip: noSmall }, async () => {
    const bin = weights();
    const named = (data) => [{ name: weightsName, data }, ...rest()];
    // Each call must fail (an engine Error naming the file), or the loop would prove nothing.
    const fails = (p, re) => assert.rejects(p, (e) => e instanceof Error && re.test(e.message));
    await fails(loadModel(named(bin.subarray(0, 5000))), re(weightsName));  // warm up whatever is allocated once
    const base = await allocated();
    for (let i = 0; i < 50; i++) {
      await fails(loadModel([new Uint8Array(3000).fill(i)]), /not a model file/);
      await fails(loadModel(named(bin.subarray(0, 5000 + i * 1000))), re(weightsName));
      await fails(loadModel(named(bin.subarray(0, bin.length - 1 - i))), re(weightsName));
      await fails(loadModel([{ name: 'config.json', data: new TextEncoder().encode('{"x":') }]), /config\.json/);
    }
    assert.equal(await allocated(), base);
  });
});

describe('model methods', { skip: noSmall }, () => {
  let model;
  let V, L, H, C;  // vocabulary, layers, heads, context length
  before(async () => {
    model = await loadModel(small.paths);
    ({ vocabSize: V, layers: L, heads: H, contextLength: C } = model.info);
  });
  after(() => model?.dispose());

  test('wrong arguments: TypeError / RangeError naming the argument, thrown before the engine runs', async () => {
    const rejects = [
      [() => model.tokenize(42), TypeError, /text must be a string, got number/],
      [() => model.tokenize(), TypeError, /text must be a string/],
      [() => model.tokenize('x', 'y'), TypeError, /tokenize: options must be an object/],
      [() => model.detokenize('abc'), TypeError, /ids must be an array of token ids/],
      [() => model.detokenize([1.5]), TypeError, /ids\[0\] must be an integer/],
      [() => model.detokenize([1, V]), RangeError, re(`ids[1] = ${V} is out of range [0, ${V})`)],
      [() => model.detokenize([-1]), RangeError, /ids\[0\] = -1/],
      [() => model.pieces(null), TypeError, /ids must be an array/],
      [() => model.forward([]), RangeError, /ids is empty/],
      [() => model.forward('Once'), TypeError, /ids must be an array of token ids, got string/],
      [() => model.forward(new Float32Array([1, 2])), TypeError, /ids must be an array/],
      [() => model.forward([1, 2], { attentions: 'yes' }), TypeError, /attentions must be true, false or \{ layers, heads \}/],
      [() => model.forward([1, 2], { attentions: { layers: [L] } }), RangeError, re(`attentions.layers: layer ${L} is out of range [0, ${L})`)],
      [() => model.forward([1, 2], { attentions: { heads: [H] } }), RangeError, re(`attentions.heads: head ${H} is out of range [0, ${H})`)],
      [() => model.forward([1, 2], { attentions: { layers: [-1] } }), TypeError, /attentions.layers must be an array of non-negative integers/],
      [() => model.generate(''), RangeError, /prompt is empty/],
      [() => model.generate(), TypeError, /prompt must be a string or an array of token ids, got undefined/],
      [() => model.generate(null), TypeError, /got null/],
      [() => model.generate({ text: 'x' }), TypeError, /prompt must be/],
      [() => model.generate([]), RangeError, /prompt is empty/],
      [() => model.generate([1, V + 88]), RangeError, re(`prompt[1] = ${V + 88} is out of range`)],
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
    assert.throws(() => model.stream('x', { attentions: { layers: [L + 4] } }), re(`layer ${L + 4}`));
  });

  test('engine errors (context overflow, a prompt too long) reject with the engine message; the model keeps working', async () => {
    await assert.rejects(model.forward(Array(C + 88).fill(5)), new RegExp(`context overflow.*${C + 88}.*${C}`));
    await assert.rejects(model.generate(Array(C + 1).fill(5)), re(`${C + 1} tokens, more than the context length of ${C}`));
    const long = `${small.prompt} `.repeat(200);
    await assert.rejects(model.generate(long), /context length/);
    const g = await model.generate(small.prompt, { maxNewTokens: 5, temperature: 0 });
    assert.equal(g.tokens.length, g.promptTokens + 5);
    if (small.name === 'stories260K') assert.equal(g.text, ', there was a little');
    const short = await loadModel(small.paths, { contextLength: 16 });
    try {
      const full = await short.generate(small.prompt, { maxNewTokens: 100, temperature: 0 });
      assert.equal(full.finishReason, 'context');
      assert.equal(full.tokens.length, 17);  // 16 positions fed, then the last token sampled
      await assert.rejects(short.forward(Array(17).fill(5)), /context length of 16/);
    } finally {
      await short.dispose();
    }
  });

  test('failing calls leak nothing', async () => {
    const run = async () => {  // every call must fail as expected, or the loop would prove nothing
      await assert.rejects(model.forward(Array(C + 88).fill(5)), /context length/);
      await assert.rejects(model.generate(Array(C + 1).fill(5)), /context length/);
      await assert.rejects(model.generate('x', { topP: 3 }), RangeError);
      await assert.rejects(model.detokenize([1, 9999]), RangeError);
      await model.tokenize(small.prompt);
    };
    await run();
    const base = await allocated();
    for (let i = 0; i < 100; i++) await run();
    assert.equal(await allocated(), base);
  });
});
