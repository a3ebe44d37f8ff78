// The JavaScript API in this thread (web/src/index.mjs): every function on real models.
//   stories260K (llama2.c, ../shared)  — loading from every kind of source, tokenize, forward with
//   attention, generate, stream; kjv-gpt2 and date-normalizer (models/) when they are there.
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { Attentions, FetchError, Model, engineInfo, loadModel } from '../../web/src/index.mjs';
import { dates, kjv, noDates, noKjv, noSmall, noStories, reportSkips, root, small, stories } from './fixtures/models.mjs';
import { serve } from './fixtures/server.mjs';

reportSkips(noStories, noKjv, noDates);

// Splits a .safetensors file into `n` shards plus model.safetensors.index.json in `dir`, the way
// Hugging Face's save_pretrained(max_shard_size=…) lays them out.
function writeShards(bytes, dir, n) {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const headerLen = Number(view.getBigUint64(0, true));
  const header = JSON.parse(new TextDecoder().decode(bytes.subarray(8, 8 + headerLen)));
  const data = bytes.subarray(8 + headerLen);
  const names = Object.keys(header).filter((k) => k !== '__metadata__');
  const weightMap = {};
  for (let s = 0; s < n; s++) {
    const file = `model-${String(s + 1).padStart(5, '0')}-of-${String(n).padStart(5, '0')}.safetensors`;
    const mine = names.filter((_, i) => i % n === s);
    const h = {};
    const parts = [];
    let at = 0;
    for (const name of mine) {
      const [b, e] = header[name].data_offsets;
      h[name] = { ...header[name], data_offsets: [at, at + e - b] };
      parts.push(data.subarray(b, e));
      at += e - b;
      weightMap[name] = file;
    }
    const json = Buffer.from(JSON.stringify(h));
    const len = Buffer.alloc(8);
    len.writeBigUInt64LE(BigInt(json.length));
    writeFileSync(join(dir, file), Buffer.concat([len, json, ...parts]));
  }
  writeFileSync(join(dir, 'model.safetensors.index.json'), JSON.stringify({ metadata: {}, weight_map: weightMap }));
}

const close = (a, b, tol = 1e-5) => assert.ok(Math.abs(a - b) <= tol, `${a} ≉ ${b}`);
const argmax = (a) => a.reduce((best, v, i) => (v > a[best] ? i : best), 0);

function checkRowsAreDistributions(att, causal) {
  for (const r of att.records) {
    for (let h = 0; h < r.heads; h++) {
      for (let q = 0; q < r.queries; q++) {
        const row = att.row(r.layer, h, q, r.kind);
        assert.equal(row.length, r.keys);
        close(row.reduce((a, b) => a + b, 0), 1, 1e-4);
        if (causal && r.kind !== 'cross' && r.kind !== 'encoder')
          for (let k = r.queryStart + q + 1; k < r.keys; k++) assert.equal(row[k], 0, `causal: ${r.kind} layer ${r.layer} head ${h} query ${q} key ${k}`);
      }
    }
  }
}

test('engineInfo(): SIMD arch and wasm memory', async () => {
  const e = await engineInfo();
  assert.equal(typeof e.simd, 'string');
  assert.ok(e.simd.length > 0);
  for (const k of ['allocatedBytes', 'heapBytes', 'heapMaxBytes']) assert.ok(Number.isFinite(e[k]) && e[k] >= 0, k);
  assert.ok(e.heapBytes <= e.heapMaxBytes);
});

describe('stories260K (llama2.c)', { skip: noStories }, () => {
  let model;
  let server;
  before(async () => {
    model = await loadModel(stories.paths);
    server = await serve({ '/m/': stories.dir });
  });
  after(async () => {
    await model?.dispose();
    await server?.close();
  });

  test('info: the model card', () => {
    assert.ok(model instanceof Model);
    const i = model.info;
    assert.equal(i.architecture, 'llama');
    assert.equal(i.kind, 'decoder-only');
    assert.equal(i.params, 260032);
    assert.equal(i.layers, 5);
    assert.equal(i.heads, 8);
    assert.equal(i.kvHeads, 4);
    assert.equal(i.vocabSize, 512);
    assert.equal(i.contextLength, 512);
    assert.ok(i.memoryBytes >= i.fileBytes && i.fileBytes > 1_000_000);
    assert.deepEqual(i.files.map((f) => f.name), ['stories260K.bin', 'tok512.bin']);
    assert.ok(Object.isFrozen(i));
  });

  test('loadModel from paths, a file: URL, buffers, {name, data}, Blobs and http URLs: the same model', async () => {
    const [bin, tok] = stories.buffers();
    const sources = {
      'file: URLs': [pathToFileURL(stories.bin), pathToFileURL(stories.tok).href],
      'Buffers': [bin, tok],
      'ArrayBuffers': [new Uint8Array(bin).buffer, new Uint8Array(tok).buffer],
      '{name, data}': [{ name: 'a.bin', data: bin }, { name: 'b.bin', data: tok }],
      'Blobs': [new Blob([bin]), new Blob([tok])],
      'http URLs': [server.url('/m/stories260K.bin'), new URL(server.url('/m/tok512.bin'))],
    };
    const expected = (await model.generate('Once upon a time', { maxNewTokens: 8, temperature: 0 })).tokens;
    for (const [what, source] of Object.entries(sources)) {
      const m = await loadModel(source);
      try {
        assert.equal(m.info.params, 260032, what);
        assert.deepEqual((await m.generate('Once upon a time', { maxNewTokens: 8, temperature: 0 })).tokens, expected, what);
      } finally {
        await m.dispose();
      }
    }
  });

  test('tokenize → ids and pieces; detokenize; pieces', async () => {
    const t = await model.tokenize('Once upon a time');
    assert.deepEqual(t.ids, [1, 403, 407, 261, 378]);
    assert.deepEqual(t.pieces, ['<s>', ' Once', ' upon', ' a', ' time']);
    const plain = await model.tokenize('Once upon a time', { addSpecialTokens: false });
    assert.deepEqual(plain.ids, [403, 407, 261, 378]);
    assert.equal(await model.detokenize(plain.ids), 'Once upon a time');
    assert.equal(await model.detokenize(new Int32Array(plain.ids)), 'Once upon a time');
    assert.equal(await model.detokenize([]), '');
    assert.deepEqual(await model.pieces([403, 407]), [' Once', ' upon']);
    assert.deepEqual(await model.pieces([]), []);
    assert.deepEqual((await model.tokenize('')).ids.length <= 1, true);
  });

  test('encodePrompt: the ids generation feeds', async () => {
    const e = await model.encodePrompt('Once upon a time');
    const g = await model.generate('Once upon a time', { maxNewTokens: 1, temperature: 0 });
    assert.deepEqual(e.ids, g.tokens.slice(0, g.promptTokens));
    assert.deepEqual(e.pieces, ['<s>', ' Once', ' upon', ' a', ' time']);
    await assert.rejects(model.encodePrompt(5), TypeError);
  });

  test('forward: logits of every position and every attention weight [query][key]', async () => {
    const { ids } = await model.tokenize('Once upon a time there');
    const n = ids.length;
    const out = await model.forward(ids, { attentions: true });
    assert.deepEqual(out.shape, [n, 512]);
    assert.ok(out.logits instanceof Float32Array);
    assert.equal(out.logits.length, n * 512);
    assert.ok(out.attentions instanceof Attentions);
    assert.deepEqual(out.attentions.kinds, ['self']);
    assert.deepEqual(out.attentions.layers(), [0, 1, 2, 3, 4]);
    for (let l = 0; l < 5; l++) {
      for (let h = 0; h < 8; h++) {
        const m = out.attentions.get(l, h);
        assert.ok(m instanceof Float32Array);
        assert.equal(m.length, n * n);
      }
    }
    checkRowsAreDistributions(out.attentions, true);
    assert.equal(out.attentions.get(0, 0)[0], 1);  // the first token attends only to itself
    // Without attention: the same logits, no arrays.
    const plain = await model.forward(ids);
    assert.equal(plain.attentions, null);
    assert.deepEqual(plain.logits, out.logits);
    // The logits are a copy: a later call does not change them.
    const copy = out.logits.slice();
    await model.forward([1, 2, 3]);
    assert.deepEqual(out.logits, copy);
    // The last position's argmax is greedy generation's first token.
    const g = await model.generate(ids, { maxNewTokens: 1, temperature: 0 });
    assert.equal(g.tokens.at(-1), argmax(out.logits.subarray((n - 1) * 512)));
  });

  test('forward: attentions for some layers and heads only', async () => {
    const out = await model.forward([1, 403, 407, 261], { attentions: { layers: [1, 3], heads: [2] } });
    assert.deepEqual(out.attentions.layers(), [1, 3]);
    assert.throws(() => out.attentions.get(0, 2), RangeError);
    const rec = out.attentions.layer(1);
    assert.equal(rec.heads, 8);  // every head's slot, unselected heads 0
    assert.ok(out.attentions.get(1, 2).some((x) => x > 0));
    assert.ok(out.attentions.get(1, 0).every((x) => x === 0));
    const full = await model.forward([1, 403, 407, 261], { attentions: true });
    assert.deepEqual(out.attentions.get(3, 2), full.attentions.get(3, 2));
    assert.equal(out.attentions.mean(1).length, 16);
    assert.equal(JSON.parse(JSON.stringify(out.attentions)).self.length, 2);
    // The records copied share one buffer holding just the layers asked for (8 heads × 4 × 4 each),
    // listed once for a transfer; every record of the full pass is in its own place of the other.
    assert.deepEqual(out.attentions.buffers.map((b) => b.byteLength), [2 * 8 * 16 * 4]);
    assert.equal(full.attentions.buffers.length, 1);
    const views = full.attentions.records.map((r) => [r.data.byteOffset, r.data.byteLength]);
    for (let i = 1; i < views.length; i++) assert.equal(views[i][0], views[i - 1][0] + views[i - 1][1], `record ${i} follows record ${i - 1}`);
    const { attentions } = structuredClone({ attentions: out.attentions.records }, { transfer: out.attentions.buffers });
    assert.deepEqual(Array.from(attentions[0].data.subarray(2 * 16, 3 * 16)), Array.from(full.attentions.get(1, 2)));
  });

  test('generate: greedy is deterministic; seeds reproduce; options are honoured', async () => {
    const a = await model.generate('Once upon a time', { maxNewTokens: 20, temperature: 0 });
    const b = await model.generate('Once upon a time', { maxNewTokens: 20, temperature: 0 });
    assert.deepEqual(a.tokens, b.tokens);
    assert.equal(a.text, ', there was a little girl named Lily. She loved to play outsid');
    assert.equal(a.promptTokens, 5);
    assert.equal(a.tokens.length, 25);
    assert.equal(a.finishReason, 'length');
    assert.equal(a.pieces.length, a.tokens.length);
    for (const k of ['prefillMs', 'decodeMs', 'tokensPerSecond']) assert.ok(Number.isFinite(a.timings[k]) && a.timings[k] >= 0, k);
    assert.equal(a.timings.decodedTokens, 19);

    const opts = { maxNewTokens: 30, temperature: 0.9, topK: 40, topP: 0.9, repetitionPenalty: 1.1, seed: 1234 };
    const s1 = await model.generate('Once upon a time', opts);
    const s2 = await model.generate('Once upon a time', opts);
    assert.deepEqual(s1.tokens, s2.tokens);
    assert.equal(s1.seed, 1234);
    const others = await Promise.all([1, 2, 3].map((seed) => model.generate('Once upon a time', { ...opts, seed })));
    assert.ok(others.some((o) => o.text !== s1.text), 'different seeds give different samples');

    const stopped = await model.generate('Once upon a time', { maxNewTokens: 50, temperature: 0, stop: 'Lily' });
    assert.equal(stopped.finishReason, 'stop');
    assert.equal(stopped.text, ', there was a little girl named ');
    const none = await model.generate('Once upon a time', { maxNewTokens: 0 });
    assert.equal(none.text, '');
    assert.equal(none.tokens.length, 5);
    const random = await model.generate('Once', { maxNewTokens: 3 });
    assert.ok(Number.isInteger(random.seed));
    const fromIds = await model.generate([1, 403, 407, 261, 378], { maxNewTokens: 20, temperature: 0 });
    assert.deepEqual(fromIds.tokens, a.tokens);
    const seen = [];
    await model.generate('Once', { maxNewTokens: 4, temperature: 0, onToken: (s) => seen.push(s.token) });
    assert.equal(seen.length, 4);
  });

  test('stream: one step per new token with its text and attention rows; the same tokens as generate', async () => {
    const g = await model.generate('Once upon a time', { maxNewTokens: 12, temperature: 0 });
    const stream = model.stream('Once upon a time', { maxNewTokens: 12, temperature: 0, attentions: true });
    const steps = [];
    for await (const step of stream) steps.push(step);
    assert.equal(steps.length, 12);
    assert.deepEqual(steps.map((s) => s.token), g.tokens.slice(5));
    assert.equal(steps.map((s) => s.text).join(''), g.text);
    assert.deepEqual(steps.map((s) => s.position), [...Array(12).keys()].map((i) => 5 + i));
    assert.deepEqual(steps.at(-1).result.tokens, g.tokens);
    assert.deepEqual(stream.result.tokens, g.tokens);
    assert.equal(steps[0].piece, ',');
    // The first step carries the prompt's rows (5 queries); later steps one row over every key so far.
    const first = steps[0].attentions.layer(0);
    assert.equal(first.queries, 5);
    assert.equal(first.keys, 5);
    for (let i = 1; i < steps.length; i++) {
      const r = steps[i].attentions.layer(4);
      assert.equal(r.queries, 1);
      assert.equal(r.keys, 5 + i);
      assert.equal(r.queryStart, 4 + i);
      checkRowsAreDistributions(steps[i].attentions, true);
    }
    // Step 1's rows equal what forward() gives for the last position of the same tokens.
    const f = await model.forward(g.tokens.slice(0, 7), { attentions: { layers: [2] } });
    const row = f.attentions.row(2, 5, 6);
    const streamed = steps[2].attentions.row(2, 5, 0);
    for (let k = 0; k < 7; k++) close(row[k], streamed[k]);
  });

  test('stream: leaving the loop stops the generation and frees the model for the next call', async () => {
    let n = 0;
    const stream = model.stream('Once', { maxNewTokens: 100, temperature: 0 });
    for await (const step of stream) if (++n === 3) break;
    assert.equal(stream.result, null);
    const t = await model.tokenize('after');
    assert.ok(t.ids.length > 0);
  });

  test('calls made at once run in order, one at a time', async () => {
    const [g, t, f, g2] = await Promise.all([
      model.generate('Once upon a time', { maxNewTokens: 10, temperature: 0 }),
      model.tokenize('Once upon a time'),
      model.forward([1, 403]),
      model.generate('Once upon a time', { maxNewTokens: 10, temperature: 0 }),
    ]);
    assert.deepEqual(g.tokens, g2.tokens);
    assert.deepEqual(t.ids, [1, 403, 407, 261, 378]);
    assert.deepEqual(f.shape, [2, 512]);
  });

  test('two models at once do not interfere: interleaved streams give what each gives alone', async () => {
    const other = await loadModel(stories.buffers(), { contextLength: 64 });
    try {
      const aloneA = await model.generate('Once upon a time', { maxNewTokens: 25, temperature: 0.8, seed: 5 });
      const aloneB = await other.generate('The little dog', { maxNewTokens: 25, temperature: 0.8, seed: 9 });
      const ia = model.stream('Once upon a time', { maxNewTokens: 25, temperature: 0.8, seed: 5 })[Symbol.asyncIterator]();
      const ib = other.stream('The little dog', { maxNewTokens: 25, temperature: 0.8, seed: 9 })[Symbol.asyncIterator]();
      const a = [];
      const b = [];
      for (;;) {
        const [ra, rb] = [await ia.next(), await ib.next()];
        if (!ra.done) a.push(ra.value.token);
        if (!rb.done) b.push(rb.value.token);
        if (ra.done && rb.done) break;
      }
      assert.deepEqual(a, aloneA.tokens.slice(aloneA.promptTokens));
      assert.deepEqual(b, aloneB.tokens.slice(aloneB.promptTokens));
      const [ga, gb] = await Promise.all([
        model.generate('Once upon a time', { maxNewTokens: 25, temperature: 0.8, seed: 5 }),
        other.generate('The little dog', { maxNewTokens: 25, temperature: 0.8, seed: 9 }),
      ]);
      assert.deepEqual(ga.tokens, aloneA.tokens);
      assert.deepEqual(gb.tokens, aloneB.tokens);
      assert.equal(other.info.kvCacheBytes * 8, model.info.kvCacheBytes);  // contextLength 64 vs 512
    } finally {
      await other.dispose();
    }
  });

  test('memory(): heap, allocations, this model', () => {
    const m = model.memory();
    assert.ok(m.allocatedBytes >= model.info.fileBytes);
    assert.ok(m.heapBytes >= m.allocatedBytes);
    assert.ok(m.kvCacheBytes <= model.info.kvCacheBytes);  // what the runs so far needed, at most a full context
    assert.equal(m.fileBytes, model.info.fileBytes);
    assert.equal(m.modelBytes, m.fileBytes + m.ownedBytes + m.kvCacheBytes + m.scratchBytes);
    assert.ok(m.ownedBytes > 0);  // the RoPE table
  });

  test('quantize: "q8_0", "q4_0", "q4_k" load smaller weights that still generate; info lists the types', async () => {
    // stories260K: 64-wide matrices (q4_k falls back to q5_0, as llama.cpp's quantizer does) and a
    // 172-wide W2 that no block type fits (it stays f32).
    for (const [quantize, type, bits] of [['q8_0', 'q8_0', 8.5], ['q4_0', 'q4_0', 4.5], ['q4_k', 'q5_0', 5.5]]) {
      const q = await loadModel(stories.paths, { quantize });
      try {
        assert.ok(q.info.weightBytes < model.info.weightBytes / 2, `${quantize}: ${q.info.weightBytes} vs ${model.info.weightBytes}`);
        assert.deepEqual(q.info.weightTypes.map((t) => t.dtype).sort(), ['f32', type].sort(), quantize);
        const t = q.info.weightTypes.find((w) => w.dtype === type);
        assert.equal((8 * t.bytes) / t.params, bits);
        assert.match(q.info.weightDtype, new RegExp(`^mixed \\(.*${type}.*\\)$`));
        const g = await q.generate('Once upon a time', { maxNewTokens: 10, temperature: 0 });
        assert.equal(g.tokens.length, 15);
      } finally {
        await q.dispose();
      }
    }
  });
});

test('dispose(): frees the memory; every later use throws; a second dispose is harmless', { skip: noSmall }, async () => {
  // The first load of a process starts the pthreads build's worker pool (thread stacks on the wasm
  // heap, kept for the process): load and dispose once before measuring.
  await (await loadModel(small.paths)).dispose();
  const before = (await engineInfo()).allocatedBytes;
  const m = await loadModel(small.paths);
  assert.ok((await engineInfo()).allocatedBytes > before + 1_000_000);
  await m.dispose();
  assert.equal(m.disposed, true);
  assert.equal((await engineInfo()).allocatedBytes, before);
  await m.dispose();
  const disposed = /disposed/;
  await assert.rejects(m.tokenize('x'), disposed);
  await assert.rejects(m.detokenize([1]), disposed);
  await assert.rejects(m.pieces([1]), disposed);
  await assert.rejects(m.forward([1]), disposed);
  await assert.rejects(m.generate('x'), disposed);
  assert.throws(() => m.stream('x'), disposed);
  assert.throws(() => m.memory(), disposed);
});

test('dispose() while calls wait: they reject; a running generation ends as "aborted"', { skip: noSmall }, async () => {
  const m = await loadModel(small.paths);
  let n = 0;
  const running = m.generate(small.prompt, { maxNewTokens: 400, temperature: 0, onToken: () => { if (++n === 5) m.dispose(); } });
  const waiting = m.tokenize('queued');
  const r = await running;
  assert.equal(r.finishReason, 'aborted');
  assert.equal(r.tokens.length, r.promptTokens + 5);
  await assert.rejects(waiting, /disposed/);
});

describe('kjv-gpt2 (GPT-2, Hugging Face folder)', { skip: noKjv }, () => {
  let model;
  let server;
  before(async () => {
    model = await loadModel(kjv.dir);
    server = await serve({ '/models/': `${kjv.dir}/..` });
  });
  after(async () => {
    await model?.dispose();
    await server?.close();
  });

  test('a folder path and a folder URL load the same model', async () => {
    assert.equal(model.info.architecture, 'gpt2');
    assert.equal(model.info.kind, 'decoder-only');
    const byUrl = await loadModel(server.url('/models/kjv-gpt2/'));
    try {
      const card = (i) => ({ ...i, files: [...i.files].sort((a, b) => a.name.localeCompare(b.name)) });
      assert.deepEqual(card(byUrl.info), card(model.info));
      const a = await model.generate('And God said', { maxNewTokens: 10, temperature: 0 });
      const b = await byUrl.generate('And God said', { maxNewTokens: 10, temperature: 0 });
      assert.deepEqual(a.tokens, b.tokens);
    } finally {
      await byUrl.dispose();
    }
    const files = readFileSync(`${kjv.dir}/model.safetensors`).length;
    assert.ok(model.info.fileBytes >= files);
  });

  test('a folder URL asks only for files it needs: no shard index next to model.safetensors', () => {
    const asked = server.requests.filter((q) => q.path.startsWith('/models/kjv-gpt2/')).map((q) => q.path);
    assert.ok(asked.includes('/models/kjv-gpt2/model.safetensors'), asked.join(' '));
    assert.ok(!asked.some((p) => p.endsWith('.index.json')), `asked for a shard index: ${asked.join(' ')}`);
  });

  test('a sharded folder URL (model.safetensors.index.json + shards) loads the same model', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'attnlens-shards-'));
    const shardServer = await serve({ '/sharded/': dir });
    try {
      writeShards(readFileSync(`${kjv.dir}/model.safetensors`), dir, 3);
      for (const f of ['config.json', 'tokenizer.json', 'generation_config.json']) copyFileSync(join(kjv.dir, f), join(dir, f));
      const sharded = await loadModel(shardServer.url('/sharded/'));
      try {
        assert.equal(sharded.info.params, model.info.params);
        assert.ok(model.info.params > 1e6);
        const names = sharded.info.files.map((f) => f.name).sort();
        assert.ok(names.includes('model-00003-of-00003.safetensors'), names.join(' '));
        const { ids } = await model.tokenize('And God said');
        const a = await model.forward(ids);
        const b = await sharded.forward(ids);
        assert.deepEqual(b.logits, a.logits);
      } finally {
        await sharded.dispose();
      }
    } finally {
      await shardServer.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('forward and stream with attention', async () => {
    const { ids, pieces } = await model.tokenize('In the beginning God created');
    assert.equal(ids.length, pieces.length);
    assert.equal(await model.detokenize(ids), 'In the beginning God created');
    const out = await model.forward(ids, { attentions: true });
    assert.deepEqual(out.attentions.layers(), [...Array(model.info.layers).keys()]);
    checkRowsAreDistributions(out.attentions, true);
    let steps = 0;
    for await (const s of model.stream(ids, { maxNewTokens: 5, temperature: 0, attentions: { layers: [0] } })) {
      assert.equal(s.attentions.layer(0).heads, model.info.heads);
      steps++;
    }
    assert.ok(steps >= 1 && steps <= 5);
  });
});

describe('date-normalizer (encoder–decoder)', { skip: noDates }, () => {
  let model;
  before(async () => { model = await loadModel(dates.dir); });
  after(async () => { await model?.dispose(); });

  test('forward({source, target}): encoder self, decoder self and cross attention', async () => {
    assert.equal(model.info.kind, 'encoder-decoder');
    const { ids: source } = await model.tokenize('3 March 2021');
    const target = [model.promptFormat.decoderStartToken, 20, 20];
    const out = await model.forward({ source, target }, { attentions: true });
    assert.deepEqual(out.shape, [3, model.info.vocabSize]);
    assert.deepEqual(out.attentions.kinds.sort(), ['cross', 'encoder', 'self']);
    const L = model.info.layers;
    assert.deepEqual(out.attentions.layers('encoder'), [...Array(model.info.encoderLayers).keys()]);
    assert.deepEqual(out.attentions.layers('cross'), [...Array(L).keys()]);
    const enc = out.attentions.layer(0, 'encoder');
    assert.equal(enc.queries, source.length);
    assert.equal(enc.keys, source.length);
    const cross = out.attentions.layer(0, 'cross');
    assert.equal(cross.queries, 3);
    assert.equal(cross.keys, source.length);
    assert.equal(out.attentions.get(0, 0, 'cross').length, 3 * source.length);
    assert.equal(out.attentions.layer(0, 'self').keys, 3);
    checkRowsAreDistributions(out.attentions, true);
  });

  test('generate and stream: the source is encoded once; the first step has the encoder attention', async () => {
    const g = await model.generate('3 March 2021', { maxNewTokens: 12, temperature: 0 });
    assert.ok(Array.isArray(g.source) && g.source.length > 0);
    assert.deepEqual((await model.encodePrompt('3 March 2021')).ids, g.source);
    assert.equal(g.promptTokens, 1);
    const steps = [];
    for await (const s of model.stream('3 March 2021', { maxNewTokens: 12, temperature: 0, attentions: true })) steps.push(s);
    assert.deepEqual(steps.map((s) => s.token), g.tokens.slice(1));
    assert.ok(steps[0].attentions.kinds.includes('encoder'));
    for (const s of steps.slice(1)) assert.deepEqual(s.attentions.kinds.sort(), ['cross', 'self']);
    assert.equal(steps[0].attentions.layer(0, 'cross').keys, g.source.length);
  });
});

test('info.memoryBytes and memory() count everything a model holds: files, converted weight copies, KV cache, scratch', async () => {
  const dir = join(root, 'tests/fixtures/models_torch');
  // GPT-2 in f16: the weights stay f16, read in place; the Conv1D matrices are transposed in the
  // file's own bytes (the model owns its files: no copy of 2 bytes per weight); the bias/norm vectors
  // are widened to f32: nothing else is owned.
  const f16 = await loadModel([join(dir, 'gpt2/config.json'), join(dir, 'gpt2_f16/model.safetensors')]);
  try {
    const i = f16.info;
    assert.equal(i.fileBytes, statSync(join(dir, 'gpt2/config.json')).size + statSync(join(dir, 'gpt2_f16/model.safetensors')).size);
    assert.deepEqual(i.weightTypes.map((t) => t.dtype), ['f16']);
    const transposed = i.params - (i.vocabSize + i.contextLength) * i.dModel;  // all but wte and wpe
    const vectors = 4 * (i.params - transposed - (i.vocabSize + i.contextLength) * i.dModel);  // as f32
    assert.ok(i.ownedBytes >= vectors, `ownedBytes ${i.ownedBytes} < ${vectors} bytes of f32 vectors`);
    assert.ok(i.ownedBytes < transposed, `ownedBytes ${i.ownedBytes}: a copy of the ${transposed} transposed f16 weights`);
    const kv = 2 * i.layers * i.contextLength * i.kvHeads * i.headDim * 4;
    assert.equal(i.kvCacheBytes, kv);
    assert.equal(i.memoryBytes, i.fileBytes + i.ownedBytes + i.kvCacheBytes);
    const m0 = f16.memory();
    assert.equal(m0.kvCacheBytes, 0, 'the KV cache is allocated as positions fill, not at load');
    assert.equal(m0.modelBytes, m0.fileBytes + m0.ownedBytes + m0.kvCacheBytes + m0.scratchBytes);
    await f16.forward([1, 2, 3, 4, 5, 6, 7, 8], { attentions: true });
    const m1 = f16.memory();
    assert.ok(m1.scratchBytes > m0.scratchBytes, 'a forward pass leaves scratch buffers (and logits) behind');
    assert.ok(m1.kvCacheBytes > 0 && m1.kvCacheBytes <= i.kvCacheBytes, `${m1.kvCacheBytes} of ${i.kvCacheBytes}`);
    assert.equal(m1.modelBytes, m1.fileBytes + m1.ownedBytes + m1.kvCacheBytes + m1.scratchBytes);
  } finally {
    await f16.dispose();
  }
  // f32 read in place, the Conv1D matrices transposed where they are; quantized at load, the q8_0 rows
  // are written over the file's own f32 ones (each shorter than the row it replaces): no copies either way.
  const paths = [join(dir, 'gpt2/config.json'), join(dir, 'gpt2/model.safetensors')];
  const f32 = await loadModel(paths);
  const q8 = await loadModel(paths, { quantize: 'q8_0' });
  try {
    const q8Bytes = q8.info.weightTypes.find((t) => t.dtype === 'q8_0').bytes;
    assert.ok(q8Bytes > 0 && q8.info.ownedBytes < q8Bytes, `q8_0 owns ${q8.info.ownedBytes} bytes: copies of its ${q8Bytes} bytes of q8_0 matrices`);
    assert.ok(f32.info.ownedBytes < q8Bytes, `f32 owns ${f32.info.ownedBytes} bytes: copies of its matrices`);
    assert.equal(q8.info.fileBytes, f32.info.fileBytes);
    // the same quantized weights as a load that copies (tests/cpp/test_runtime.cpp compares the bits):
    // quantization changes the logits, a second quantization in place would change them again
    const ids = [1, 2, 3, 4, 5];
    const [a, b] = [await f32.forward(ids), await q8.forward(ids)];
    assert.ok(a.logits.some((x, k) => x !== b.logits[k]), 'the q8_0 model computes with quantized weights');
  } finally {
    await f32.dispose();
    await q8.dispose();
  }
});

test('FetchError is exported with its status', () => {
  const e = new FetchError('http://x/y', 404, 'Not Found');
  assert.equal(e.status, 404);
  assert.equal(e.name, 'FetchError');
  assert.ok(e instanceof Error);
});
