// The expensive and trapping inputs, through the real API: sizes are checked in 64 bits
// against what wasm32 can address, the KV cache grows with use, JSON type errors and deep nesting
// name the file and the key, and the module stays usable (other models keep working) after each.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { EngineLostError, engineInfo, loadModel } from '../../web/src/index.mjs';
import { kjv, noKjv, reportSkips } from './fixtures/models.mjs';
import { G, llamaGguf, llamaHf } from './fixtures/synth.mjs';

reportSkips(noKjv);
const enc = new TextEncoder();
const allocated = async () => (await engineInfo()).allocatedBytes;
const notLost = (e) => !(e instanceof EngineLostError);

test('16 layers with max_position_embeddings 2^24: refused naming the key; the module stays usable', async () => {
  const witness = await loadModel(llamaHf());
  const before = await allocated();
  await assert.rejects(loadModel(llamaHf({ layers: 16, context: 1 << 24 })),
    (e) => notLost(e) && /config\.json/.test(e.message) && /max_position_embeddings/.test(e.message) && /16777216/.test(e.message));
  assert.equal(await allocated(), before, 'the failed load returned its memory');
  assert.ok((await witness.forward([1, 2, 3])).logits.every(Number.isFinite), 'another model keeps working');
  await witness.dispose();
});

test('head_dim 512 with a context of 2^20: loads without a KV cache, runs, grows the cache with use', async () => {
  const m = await loadModel(llamaHf({ dim: 512, heads: 1, kvHeads: 1, context: 1 << 20 }));
  try {
    assert.equal(m.info.headDim, 512);
    assert.equal(m.info.kvCacheBytes, 2 * 2 * 2 ** 20 * 512 * 4, 'the full-context figure, computed without wrapping');
    assert.equal(m.memory().kvCacheBytes, 0, 'nothing allocated for the context up front');
    const out = await m.forward([1, 2, 3, 4], { attentions: true });
    assert.ok(out.logits.every(Number.isFinite));
    assert.equal(m.memory().kvCacheBytes, 2 * 2 * 64 * 512 * 4, 'the first growth: 64 positions');
    // A pass whose buffers could not be addressed is refused before it starts; the model still works.
    await assert.rejects(m.forward(new Array(1 << 19).fill(1)), (e) => notLost(e) && /scratch/.test(e.message));
    assert.ok((await m.forward([5, 6])).logits.every(Number.isFinite));
  } finally {
    await m.dispose();
  }
  const short = await loadModel(llamaHf({ dim: 512, heads: 1, kvHeads: 1, context: 1 << 20 }), { contextLength: 64 });
  assert.equal(short.info.kvCacheBytes, 2 * 2 * 64 * 512 * 4);
  assert.ok((await short.forward([1, 2])).logits.every(Number.isFinite));
  await short.dispose();
});

test('a GGUF context of 2^20 allocates no KV cache at load', async () => {
  const before = await allocated();
  const files = llamaGguf({ context: 1 << 20 });
  const m = await loadModel(files);
  try {
    assert.equal(m.info.contextLength, 1 << 20);
    assert.equal(m.memory().kvCacheBytes, 0);
    // the file, its model and tokenizer, and a RoPE table bounded at 4 MiB (nn/positions.cpp)
    const grown = (await allocated()) - before;
    assert.ok(grown < files[0].data.length + (5 << 20), `load allocated ${grown} bytes for a ${files[0].data.length}-byte file`);
    const g = await m.generate([1, 5, 6], { maxNewTokens: 4, temperature: 0 });
    assert.equal(g.tokens.length, 7);
  } finally {
    await m.dispose();
  }
});

test('config.json and GGUF metadata of the wrong JSON type: the file and the key, not the JSON library', async () => {
  const cases = [
    [llamaHf({}, { max_position_embeddings: '64' }), /config\.json.*max_position_embeddings/],
    [llamaHf({}, { hidden_size: [16] }), /config\.json.*hidden_size/],
    [llamaHf({}, { rms_norm_eps: { a: 1 } }), /config\.json.*rms_norm_eps/],
    [llamaHf({}, { tie_word_embeddings: 'yes' }), /config\.json.*tie_word_embeddings/],
    [llamaGguf({}, [['tokenizer.ggml.add_bos_token', G.U8, 1]]), /model\.gguf.*tokenizer\.ggml\.add_bos_token/],
    [llamaGguf({}, [['tokenizer.ggml.bos_token_id', G.STRING, 'one']]), /model\.gguf.*tokenizer\.ggml\.bos_token_id/],
    [llamaGguf({}, [['tokenizer.ggml.token_type', G.ARRAY, ['x'], G.STRING]]), /model\.gguf.*tokenizer\.ggml\.token_type/],
  ];
  for (const [files, message] of cases) {
    await assert.rejects(loadModel(files), (e) => notLost(e) && message.test(e.message) && !/json\.exception/.test(e.message), String(message));
  }
});

test('deeply nested JSON (config, safetensors header): refused at parse time, no stack overflow, no leak', async () => {
  const deep = '['.repeat(200000) + ']'.repeat(200000);
  const [config, weights] = llamaHf();
  const base = await allocated();
  await assert.rejects(loadModel([{ name: 'config.json', data: enc.encode(`{"a": ${deep}}`) }, weights]),
    (e) => notLost(e) && /config\.json/.test(e.message) && /nested/.test(e.message));
  const header = enc.encode(`{"__metadata__": ${'{"a":'.repeat(100000)}1${'}'.repeat(100000)}}`);
  const st = new Uint8Array(8 + header.length);
  new DataView(st.buffer).setBigUint64(0, BigInt(header.length), true);
  st.set(header, 8);
  await assert.rejects(loadModel([config, { name: 'model.safetensors', data: st }]),
    (e) => notLost(e) && /model\.safetensors/.test(e.message) && /nested/.test(e.message));
  assert.equal(await allocated(), base);
});

test('tokenizer.json with one id near 2^24 (and one past the model): refused at once, memory returned', { skip: noKjv }, async () => {
  const files = ['config.json', 'model.safetensors'].map((f) => ({ name: f, data: readFileSync(join(kjv.dir, f)) }));
  const tok = JSON.parse(readFileSync(join(kjv.dir, 'tokenizer.json'), 'utf8'));
  const base = await allocated();
  for (const id of [2 ** 24 - 1, 2 ** 20 - 1, 2048]) {
    const t = structuredClone(tok);
    t.added_tokens.push({ id, content: '<|far|>', special: true });
    const t0 = performance.now();
    await assert.rejects(loadModel([...files, { name: 'tokenizer.json', data: enc.encode(JSON.stringify(t)) }]),
      (e) => notLost(e) && /tokenizer\.json/.test(e.message) && new RegExp(String(id)).test(e.message));
    console.log(`# id ${id}: refused in ${(performance.now() - t0).toFixed(0)} ms (the whole load: parse, model, scan)`);
    assert.equal(await allocated(), base);
  }
});
