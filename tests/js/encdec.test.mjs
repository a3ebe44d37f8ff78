// Encoder–decoder and encoder-only models through the JS API, in this thread and in a worker, against
// the PyTorch references of tests/fixtures/encdec and tests/fixtures/encoders (made by
// make_encdec_fixtures.py / make_encoder_fixtures.py): beam search and greedy decoding token for token
// with the model's own generation settings as defaults, the returned beam's attention rows, embed()
// with sentence-transformers pooling and truncation, fillMask().
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { loadModel, loadTokenizer } from '../../web/src/index.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const fixtures = join(root, 'tests/fixtures');
const json = (rel) => JSON.parse(readFileSync(join(fixtures, rel), 'utf8'));
const array = (a) => a.data;

describe('Marian: the model\'s generation settings, beam search and its attention', () => {
  const ref = json('encdec/marian_ref.json');
  const cases = Object.fromEntries(ref.config.generation.map((g) => [g.name, g]));
  let model;
  before(async () => { model = await loadModel(join(fixtures, 'encdec/marian')); });
  after(() => model?.dispose());

  test('generation_config.json becomes the defaults: 4 beams, bad words, max length, greedy', () => {
    const g = model.promptFormat.generation;
    assert.equal(g.numBeams, 4);
    assert.deepEqual(g.badWordsIds, [[89]]);
    assert.equal(g.maxNewTokens, 23);
    assert.equal(g.forcedEosTokenId, 0);
    assert.equal(g.temperature, 0);
    assert.equal(model.promptFormat.decoderStartToken, 89);
  });

  test('generate() with no options runs the configured beam search: transformers\' tokens and score', async () => {
    const r = await model.generate(ref.config.source);
    assert.deepEqual(r.tokens, cases.config.tokens);
    assert.ok(Math.abs(r.score - cases.config.score) < 1e-4, `score ${r.score} vs ${cases.config.score}`);
    assert.deepEqual(r.hypotheses.map((h) => h.tokens), cases.config.hypotheses.map((h) => h.tokens));
    assert.equal(r.finishReason, 'eos');
    assert.deepEqual(r.source, ref.config.source);
  });

  test('numBeams 1 overrides the default: greedy; other beam options as given', async () => {
    assert.deepEqual((await model.generate(ref.config.source, { numBeams: 1 })).tokens, cases.greedy.tokens);
    const c = cases.beam4_lp_ngram2;
    const r = await model.generate(ref.config.source, { numBeams: 4, lengthPenalty: 1.5, noRepeatNgramSize: 2 });
    assert.deepEqual(r.tokens, c.tokens);
  });

  test('stream() with beams yields the returned beam\'s tokens, each with the attention of the pass that chose it', async () => {
    const beam = cases[ref.config.beam_case];
    const o = { ...beam.options, attentions: true };
    const T = beam.tokens.length - 1;
    const S = ref.config.source.length;
    const self = array(ref.beam_self_attention);
    const cross = array(ref.beam_cross_attention);
    const [layers, heads] = ref.beam_self_attention.shape;
    const steps = [];
    for await (const step of model.stream(ref.config.source, o)) steps.push(step);
    assert.deepEqual(steps.map((s) => s.token), beam.tokens.slice(1));
    let worst = 0;
    steps.forEach((s, i) => {
      const kinds = s.attentions.kinds;
      assert.equal(kinds.includes('encoder'), i === 0, 'encoder weights come with the first step only');
      for (let l = 0; l < layers; l++)
        for (let h = 0; h < heads; h++) {
          const rs = s.attentions.row(l, h, 0, 'self');
          const rc = s.attentions.row(l, h, 0, 'cross');
          assert.equal(s.attentions.layer(l, 'self').queryStart, i);
          assert.equal(rs.length, i + 1);
          for (let k = 0; k <= i; k++) worst = Math.max(worst, Math.abs(rs[k] - self[((l * heads + h) * T + i) * T + k]));
          for (let k = 0; k < S; k++) worst = Math.max(worst, Math.abs(rc[k] - cross[((l * heads + h) * T + i) * S + k]));
        }
    });
    assert.ok(worst <= 1e-5, `attention of the returned beam: max |diff| ${worst}`);
  });

  test('bad options are named', async () => {
    await assert.rejects(model.generate(ref.config.source, { numBeams: 2, temperature: 0.7 }), /sampling within beams/);
    await assert.rejects(model.generate(ref.config.source, { numBeams: 2, stop: 'x' }), /stop strings are not supported with beam search/);
    await assert.rejects(model.generate(ref.config.source, { earlyStopping: 'sometimes' }), /earlyStopping must be/);
    await assert.rejects(model.generate(ref.config.source, { numBeams: 0 }), /numBeams must be ≥ 1/);
  });

  test('sampling: reproducible with a seed, every token drawn from the top-k of the teacher-forced logits', async () => {
    const o = { numBeams: 1, temperature: 0.9, topK: 3, seed: 11, maxNewTokens: 12, badWordsIds: [], forcedEosTokenId: null };
    const r = await model.generate(ref.config.source, o);
    assert.deepEqual((await model.generate(ref.config.source, o)).tokens, r.tokens);
    assert.ok(r.tokens.length > 2);
    const f = await model.forward({ source: ref.config.source, target: r.tokens });
    const V = model.info.vocabSize;
    let notGreedy = 0;
    for (let i = 1; i < r.tokens.length; i++) {
      const row = Array.from(f.logits.subarray((i - 1) * V, i * V));
      const order = row.map((x, id) => [x, id]).sort((a, b) => b[0] - a[0]).map(([, id]) => id);
      assert.ok(order.slice(0, 3).includes(r.tokens[i]), `token ${i} (${r.tokens[i]}) is in the top 3 ${order.slice(0, 3)}`);
      notGreedy += r.tokens[i] !== order[0];
    }
    const others = await Promise.all([1, 2, 3, 4, 5].map((seed) => model.generate(ref.config.source, { ...o, seed })));
    assert.ok(notGreedy > 0 || others.some((x) => x.tokens.join() !== r.tokens.join()), 'sampling is not greedy decoding');
  });

  test('a source past the encoder\'s positions is refused by name (generate, forward, stream)', async () => {
    const long = Array(41).fill(5);
    await assert.rejects(model.generate(long), /the source has 41 tokens, more than the 40 positions of marian's encoder/);
    await assert.rejects(model.forward({ source: long, target: [89] }), /more than the 40 positions/);
    await assert.rejects((async () => { for await (const _ of model.stream(long)); })(), /more than the 40 positions/);
    assert.equal((await model.generate(ref.config.source, { numBeams: 1, maxNewTokens: 2 })).tokens.length, 3, 'the model still works');
  });
});

describe('T5 and BART in a worker: greedy and beam outputs as transformers\' generate()', () => {
  for (const name of ['flan_t5', 'bart']) {
    test(name, async () => {
      const ref = json(`encdec/${name}_ref.json`);
      const model = await loadModel(join(fixtures, 'encdec', name), { worker: true });
      try {
        for (const g of ref.config.generation) {
          // every option set: the cases say exactly what the reference ran (the folders' own settings,
          // e.g. BART's no_repeat_ngram_size 3, must not leak in)
          const o = { numBeams: 1, maxNewTokens: ref.config.max_new_tokens, lengthPenalty: 1, earlyStopping: false,
            noRepeatNgramSize: 0, minNewTokens: 0, badWordsIds: [], forcedBosTokenId: null, forcedEosTokenId: null,
            repetitionPenalty: 1 };
          for (const [k, v] of Object.entries({ ...ref.config.base, ...g.options })) {
            const key = { num_beams: 'numBeams', length_penalty: 'lengthPenalty', early_stopping: 'earlyStopping',
              no_repeat_ngram_size: 'noRepeatNgramSize', bad_words_ids: 'badWordsIds', forced_bos_token_id: 'forcedBosTokenId',
              forced_eos_token_id: 'forcedEosTokenId', repetition_penalty: 'repetitionPenalty' }[k];
            if (key) o[key] = v;
            if (k === 'min_length') o.minNewTokens = v - 1;
          }
          const r = await model.generate(ref.config.source, { ...o, temperature: 0 });
          assert.deepEqual(r.tokens, g.tokens, `${name}/${g.name}`);
        }
      } finally {
        await model.dispose();
      }
    });
  }
});

describe('sentence embeddings (sentence-transformers folder) and fill-mask', () => {
  const ref = json('encoders/minilm_ref.json');
  let model;
  before(async () => { model = await loadModel(join(fixtures, 'encoders/minilm')); });
  after(() => model?.dispose());

  test('the folder\'s pooling and normalisation, truncation to max_seq_length reported', async () => {
    assert.deepEqual(model.promptFormat.embedding, { pooling: 'mean', normalize: true, maxLength: 16, from: 'sentence-transformers' });
    const r = await model.embed(ref.config.texts, { attentions: true });
    assert.deepEqual(r.tokens, ref.config.sequences);
    assert.deepEqual(r.truncated, [0, 0, 1]);
    assert.equal(r.length, 16);
    r.embeddings.forEach((e, i) => {
      const want = array(ref[`embedding_${i}`]);
      let dot = 0;
      for (let c = 0; c < want.length; c++) dot += e[c] * want[c];
      assert.ok(dot >= 0.99999, `input ${i}: cosine ${dot}`);
    });
    // input 1 is short: its padded keys get exactly zero attention, its real ones PyTorch's weights
    const att = r.attentions[1];
    const n = ref.config.sequences[1].length;
    const want = array(ref.attention_1);
    const heads = att.layer(0, 'encoder').heads;
    for (let h = 0; h < heads; h++)
      for (let q = 0; q < n; q++) {
        const row = att.row(0, h, q, 'encoder');
        assert.equal(row.length, 16);
        for (let k = n; k < 16; k++) assert.equal(row[k], 0);
        for (let k = 0; k < n; k++) assert.ok(Math.abs(row[k] - want[(h * n + q) * n + k]) <= 1e-5);
      }
  });

  test('pooling and normalize options override the folder\'s', async () => {
    const r = await model.embed(['A dog ran!'], { pooling: 'cls', normalize: false });
    assert.equal(r.pooling, 'cls');
    assert.equal(r.normalize, false);
    const f = await model.forward(r.tokens[0]);
    assert.deepEqual(Array.from(r.embeddings[0]), Array.from(f.hidden.subarray(0, model.info.dModel)));
    assert.equal(f.logits, null);  // a BertModel without the masked-LM head
    assert.equal(f.shape, null);
    await assert.rejects(model.embed(['x'], { pooling: 'sum' }), /pooling must be/);
    await assert.rejects(model.embed([Array(30).fill(5)]), /30 tokens, more than the 16/);
  });

  test('fillMask: the masked-LM head\'s likeliest fillers with their probabilities', async () => {
    const mlm = await loadModel(join(fixtures, 'encoders/bert_mlm'));
    try {
      const want = json('encoders/bert_mlm_ref.json').config;
      const r = await mlm.fillMask(want.text, { topK: 5 });
      assert.deepEqual(r.tokens, want.sequences[0]);
      assert.equal(r.masks.length, 1);
      assert.equal(r.masks[0].position, want.mask_position);
      assert.deepEqual(r.masks[0].candidates.map((c) => c.token), want.top_tokens);
      r.masks[0].candidates.forEach((c, i) => assert.ok(Math.abs(c.score - want.top_scores[i]) < 1e-5));
      assert.match(r.masks[0].candidates[0].sequence, /^the cat ?\S+ on the mat\.$/);  // a ## piece joins the word
      await assert.rejects(mlm.fillMask('no mask here'), /holds no mask token/);
    } finally {
      await mlm.dispose();
    }
  });
});

describe('CLI: beam flags, embed, fill-mask', () => {
  const cli = join(root, 'bin', 'attnlens.mjs');
  const attnlens = async (...args) => {
    const { execFile } = await import('node:child_process');
    const { promisify } = await import('node:util');
    return (await promisify(execFile)('node', [cli, ...args], { maxBuffer: 16 << 20 })).stdout;
  };

  test('generate --num-beams on the Marian folder: transformers\' beams, with their score', async () => {
    const ref = json('encdec/marian_ref.json');
    const c = ref.config.generation.find((g) => g.name === 'beam4_lp_ngram2');
    // the prompt as words of the fixture's tokenizer ("w<id>"), which closes it with </s> (id 0) as
    // Marian's tokenizer does: the same source ids
    const prompt = ref.config.source.slice(0, -1).map((id) => `w${id}`).join(' ');
    const out = JSON.parse(await attnlens('generate', '--model', join(fixtures, 'encdec/marian'), '--prompt', prompt,
      '--num-beams', '4', '--length-penalty', '1.5', '--no-repeat-ngram-size', '2', '--json'));
    assert.deepEqual(out.source, ref.config.source);
    assert.deepEqual(out.tokens, c.tokens);
    assert.equal(typeof out.score, 'number');
    assert.equal(out.tokens[0], 89);
  });

  test('embed --json and fill-mask --json', async () => {
    const ref = json('encoders/minilm_ref.json');
    const e = JSON.parse(await attnlens('embed', '--model', join(fixtures, 'encoders/minilm'), '--text', ref.config.texts[0],
      '--text', ref.config.texts[1], '--json'));
    assert.equal(e.embeddings.length, 2);
    assert.deepEqual(e.tokens, ref.config.sequences.slice(0, 2));
    e.embeddings.forEach((v, i) => {
      const want = array(ref[`embedding_${i}`]);
      assert.ok(v.reduce((s, x, c) => s + x * want[c], 0) >= 0.99999);
    });
    const want = json('encoders/bert_mlm_ref.json').config;
    const f = JSON.parse(await attnlens('fill-mask', '--model', join(fixtures, 'encoders/bert_mlm'), '--text', want.text, '--json'));
    assert.deepEqual(f.masks[0].candidates.map((x) => x.token), want.top_tokens);
  });
});

// Marian with two SentencePiece models (tests/fixtures/spm/make_marian_pair_fixture.py: source.spm =
// unigram_nfkc.model, target.spm = unigram_raw.model, ids from python sentencepiece + vocab.json as
// MarianTokenizer maps them): every decoder-side text path reads target.spm (and target_vocab.json
// when the vocabularies are separate), as transformers' tokenizer(text_target=…) does; the source
// side stays the default.
describe('Marian source.spm + target.spm: the decoder\'s text is the target side\'s', () => {
  const pair = json('spm/marian_pair_cases.json');
  const layouts = { shared: 'encdec/marian', separate: 'encdec/marian_separate' };
  const folders = {};
  before(async () => {
    const { mkdtempSync, copyFileSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    for (const [layout, rel] of Object.entries(layouts)) {
      const d = mkdtempSync(join(tmpdir(), `attnlens-marian-${layout}-`));
      for (const f of ['config.json', 'model.safetensors', 'generation_config.json']) copyFileSync(join(fixtures, rel, f), join(d, f));
      copyFileSync(join(fixtures, 'spm/unigram_nfkc.model'), join(d, 'source.spm'));
      copyFileSync(join(fixtures, 'spm/unigram_raw.model'), join(d, 'target.spm'));
      copyFileSync(join(fixtures, 'spm/marian_pair_vocab.json'), join(d, 'vocab.json'));
      if (layout === 'separate') copyFileSync(join(fixtures, 'spm/marian_pair_target_vocab.json'), join(d, 'target_vocab.json'));
      folders[layout] = d;
    }
  });
  after(async () => {
    const { rmSync } = await import('node:fs');
    for (const d of Object.values(folders)) rmSync(d, { recursive: true, force: true });
  });
  // The vocabulary's pieces as the engine shows them ("▁" as a space).
  const shown = (vocab) => new Map(Object.entries(vocab).map(([p, id]) => [id, p.replaceAll('\u2581', ' ')]));

  for (const layout of Object.keys(layouts)) {
    test(`${layout} vocabularies: tokenize / pieces / detokenize with { target: true }, generation, forward and patch text`, async () => {
      const model = await loadModel(folders[layout]);
      try {
        const separate = layout === 'separate';
        const targetVocab = json(separate ? 'spm/marian_pair_target_vocab.json' : 'spm/marian_pair_vocab.json');
        assert.equal(model.info.targetTokenizer.kind, 'marian-unigram');
        assert.equal(model.info.targetTokenizer.vocabSize, separate ? 70 : 90);
        assert.equal(model.info.targetTokenizer.eosId, 0);
        assert.equal(model.info.sourceVocabSize, 90);
        assert.equal(model.info.vocabSize, separate ? 70 : 90);
        const labels = shown(targetVocab);
        let differ = 0;
        for (const c of pair[layout]) {
          const what = `text ${JSON.stringify(c.text)}`;
          assert.deepEqual((await model.encodePrompt(c.text)).ids, c.source_ids, what);
          const t = await model.tokenize(c.text, { target: true });
          assert.deepEqual(t.ids, c.target_ids, what);
          t.ids.forEach((id, i) => { if (id !== targetVocab['<unk>']) assert.equal(t.pieces[i], labels.get(id), `${what}: piece ${i}`); });
          assert.deepEqual(await model.pieces(c.target_ids, { target: true }), t.pieces, what);
          assert.equal(await model.detokenize(c.target_ids, { target: true }), c.target_decoded, what);
          // without the option: the source side (with one vocabulary: source.spm's decoding rules; a "▁"
          // left in a piece source.spm does not know is sentencepiece's own quirk, README "Known differences")
          if (!separate && !c.source_decoded.includes('\u2581')) {
            assert.equal(await model.detokenize(c.target_ids), c.source_decoded, what);
            differ += c.source_decoded !== c.target_decoded;
          }
        }
        if (!separate) assert.ok(differ >= 2, 'the fixture tells the two sides apart');
        // source ids of the source vocabulary (90) are the default side's even past the decoder's 70
        assert.equal((await model.pieces([80])).length, 1);
        if (separate) {
          await assert.rejects(model.pieces([80], { target: true }), { name: 'RangeError', message: /ids\[0\] = 80 is out of range \[0, 70\)/ });
          await assert.rejects(model.detokenize([80], { target: true }), { name: 'RangeError', message: /out of range \[0, 70\)/ });
        }
        await assert.rejects(model.tokenize('a', { target: 'yes' }), { name: 'TypeError', message: /tokenize: target must be true or false/ });

        // generation: the tokens' pieces and text are the target side's
        const c = pair[layout][3];
        const start = model.promptFormat.decoderStartToken;
        const r = await model.generate(c.source_ids, { numBeams: 1, maxNewTokens: 8, predictions: 3 });
        assert.deepEqual(r.pieces, await model.pieces(r.tokens, { target: true }));
        assert.equal(r.text, await model.detokenize(r.tokens.slice(r.promptTokens), { target: true }));
        const steps = [];
        for await (const s of model.stream(c.source_ids, { numBeams: 1, maxNewTokens: 3, predictions: 3 })) steps.push(s);
        assert.ok(steps.length && steps.every((s) => s.topk?.length === 3));
        for (const s of steps) for (const p of s.topk) assert.equal(p.piece, (await model.pieces([p.id], { target: true }))[0]);

        // forward / analysis: { source: text, target: text } = the ids of each side; predictions are target pieces
        const body = c.target_ids.slice(0, -1);  // without </s>: the decoder's text after its start token
        const byIds = await model.forward({ source: c.source_ids, target: [start, ...body] }, { topK: 3 });
        const byText = await model.forward({ source: c.text, target: c.text }, { topK: 3 });
        assert.deepEqual(Array.from(byText.logits), Array.from(byIds.logits));
        assert.deepEqual(byText.shape, [body.length + 1, model.info.vocabSize]);
        for (const row of byText.topk) for (const p of row) assert.equal(p.piece, (await model.pieces([p.id], { target: true }))[0]);
        const plain = await model.forward({ source: c.text, target: c.text });
        assert.deepEqual(Array.from(plain.logits), Array.from(byIds.logits));

        // patching: target text and one-token metric strings are read by the target side
        const one = [];
        for (let id = 2; id < model.info.vocabSize - 1 && one.length < 2; id++) {
          const [p] = await model.pieces([id], { target: true });
          if (!p.trim() || p.includes('<')) continue;
          const ids = (await model.tokenize(p, { target: true, addSpecialTokens: false })).ids;
          const src = (await model.tokenize(p, { addSpecialTokens: false })).ids;
          if (ids.length === 1 && ids[0] === id && (src.length !== 1 || src[0] !== id)) one.push({ id, p });
        }
        assert.equal(one.length, 2, 'two target pieces that the source side reads otherwise');
        const [a, b] = pair[layout].filter((x, _, all) => all.filter((y) => y.source_ids.length === x.source_ids.length).length >= 2);
        assert.ok(a && b, 'two sources of the same length');
        const site = { kind: 'encoder', point: 'resid', layer: 0 };
        const text = await model.patch({
          clean: { source: a.text, target: c.text }, corrupted: { source: b.text, target: c.text },
          metric: { correct: one[0].p, incorrect: one[1].p }, site,
        });
        const ids = await model.patch({
          clean: { source: a.source_ids, target: [start, ...body] }, corrupted: { source: b.source_ids, target: [start, ...body] },
          metric: { correct: one[0].id, incorrect: one[1].id }, site,
        });
        assert.deepEqual([text.clean, text.corrupted, text.patched], [ids.clean, ids.corrupted, ids.patched]);
      } finally {
        await model.dispose();
      }
    });
  }

  test('in a worker and in the CLI: the same target side', async () => {
    const c = pair.separate[0];
    const w = await loadModel(folders.separate, { worker: true });
    try {
      assert.equal(w.info.targetTokenizer.vocabSize, 70);
      assert.deepEqual((await w.tokenize(c.text, { target: true })).ids, c.target_ids);
      assert.equal(await w.detokenize(c.target_ids, { target: true }), c.target_decoded);
      assert.deepEqual(await w.pieces(c.target_ids, { target: true }), (await w.tokenize(c.text, { target: true })).pieces);
      await assert.rejects(w.pieces([80], { target: true }), { name: 'RangeError' });
    } finally {
      await w.dispose();
    }
    const { execFile } = await import('node:child_process');
    const { promisify } = await import('node:util');
    const cli = (...args) => promisify(execFile)('node', [join(root, 'bin', 'attnlens.mjs'), ...args]).then((r) => r.stdout);
    const out = JSON.parse(await cli('tokenize', '--model', folders.separate, '--text', c.text, '--target', '--json'));
    assert.deepEqual(out.ids, c.target_ids);
    assert.deepEqual(JSON.parse(await cli('tokenize', '--model', folders.separate, '--text', c.text, '--json')).ids, c.source_ids);
  });

  test('an encoder-decoder without a decoder start token: generate and target text are refused by name', async () => {
    const dir = join(fixtures, 'encdec/bart');
    const config = json('encdec/bart/config.json');
    delete config.decoder_start_token_id;
    delete config.bos_token_id;
    const model = await loadModel([{ name: 'config.json', data: new TextEncoder().encode(JSON.stringify(config)) },
      join(dir, 'model.safetensors'), join(dir, 'tokenizer.json')]);
    try {
      assert.equal(model.promptFormat.decoderStartToken, -1);
      await assert.rejects(model.generate([5, 6, 2]), /no decoder start token: its config.json \(or generation_config.json\) gives no decoder_start_token_id/);
      await assert.rejects(model.forward({ source: [5, 6, 2], target: 'x' }), /target text follows the decoder start token, but this model has none/);
      assert.equal((await model.forward({ source: [5, 6, 2], target: [2, 5] })).shape[0], 2, 'target ids still run');
    } finally {
      await model.dispose();
    }
  });

  test('a T5 folder with spiece.model instead of tokenizer.json: the source ends with </s> (T5Tokenizer)', async () => {
    // tests/fixtures/spm/make_t5_spiece_fixture.py: sentencepiece's ids + </s>
    const ref = json('spm/t5_spiece_cases.json');
    const { mkdtempSync, copyFileSync, rmSync, writeFileSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const d = mkdtempSync(join(tmpdir(), 'attnlens-t5-spiece-'));
    for (const f of ['config.json', 'model.safetensors', 'generation_config.json']) copyFileSync(join(fixtures, 'encdec/t5', f), join(d, f));
    copyFileSync(join(fixtures, 'spm/t5_spiece.model'), join(d, 'spiece.model'));
    // T5Tokenizer's 100 sentinels by default (171 ids > the model's 96); tokenizer_config.json's extra_ids: 20
    await assert.rejects(loadModel(d), /the tokenizer has 171 tokens but the model only 96/);
    writeFileSync(join(d, 'tokenizer_config.json'), JSON.stringify({ extra_ids: 20 }));
    const model = await loadModel(d);
    try {
      assert.equal(model.info.tokenizer.kind, 'sentencepiece-unigram');
      assert.deepEqual((await model.tokenize('a <extra_id_0> b', { addSpecialTokens: false })).ids, [13, 90, 3, 24]);
      for (const c of ref.cases) {
        assert.deepEqual((await model.encodePrompt(c.text)).ids, c.ids, c.text);
        assert.deepEqual((await model.tokenize(c.text, { target: true })).ids, c.ids, c.text);
      }
      const r = await model.generate(ref.cases[0].text, { numBeams: 1, maxNewTokens: 3 });
      assert.deepEqual(r.source, ref.cases[0].ids);
    } finally {
      await model.dispose();
      rmSync(d, { recursive: true, force: true });
    }
  });

  test('{ target: true } on a model without a target side is a clear error', async () => {
    const bert = await loadModel(join(fixtures, 'encoders/bert_mlm'));
    try {
      const message = /\{ target: true \} asks for the decoder's text of an encoder-decoder model; bert is encoder-only/;
      await assert.rejects(bert.tokenize('hello', { target: true }), { name: 'TypeError', message });
      await assert.rejects(bert.pieces([1], { target: true }), { name: 'TypeError', message });
      await assert.rejects(bert.detokenize([1], { target: true }), { name: 'TypeError', message });
      assert.equal(bert.info.targetTokenizer, null);
      assert.equal(bert.info.sourceVocabSize, bert.info.vocabSize);
    } finally {
      await bert.dispose();
    }
    const tok = await loadTokenizer(join(fixtures, 'encoders/bert_mlm/tokenizer.json'));
    try {
      assert.throws(() => tok.tokenize('hello', { target: true }), { name: 'TypeError', message: /a tokenizer loaded alone has one side/ });
    } finally {
      tok.dispose();
    }
    // an encoder–decoder with one tokenizer: its target side is that tokenizer (transformers' text_target)
    const marian = await loadModel(join(fixtures, 'encdec/marian'));
    try {
      assert.equal(marian.info.targetTokenizer, null);
      assert.deepEqual(await marian.tokenize('w5 w6', { target: true }), await marian.tokenize('w5 w6'));
    } finally {
      await marian.dispose();
    }
  });
});
