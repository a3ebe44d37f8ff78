// Our shipped models (models/) run in the WebAssembly engine exactly as PyTorch ran them when they
// were trained: logits within 1e-4, attention weights within 1e-5, greedy outputs identical
// (references exported by models/train/export_*.py into tests/fixtures/models/). The date normalizer
// also reaches ≥ 99% exact match on its held-out set, and its cross-attention aligns each output
// digit with the source characters that spell it. Every output on those sets is a date that exists,
// and numeric dates follow the convention of models/README.md (09/14/1990 → 1990-09-14).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { loadModel } from '../../web/src/index.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const fixture = (name) => JSON.parse(readFileSync(join(root, 'tests/fixtures/models', name), 'utf8'));

function maxDiff(a, b, what) {
  assert.equal(a.length, b.length, `${what}: length`);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

// attentions.get(l, h) [query][key] against a nested [head][query][key] reference.
function attentionDiff(att, layer, ref, kind) {
  let m = 0;
  ref.forEach((head, h) => {
    const got = att.get(layer, h, kind);
    const keys = head[0].length;
    head.forEach((row, q) => row.forEach((w, k) => { m = Math.max(m, Math.abs(got[q * keys + k] - w)); }));
  });
  return m;
}

describe('kjv-gpt2 equals PyTorch', () => {
  const ref = fixture('kjv-gpt2.json');
  let model;
  before(async () => { model = await loadModel(join(root, ref.model_dir)); });
  after(() => model.dispose());

  test('tokenization, logits and attention weights', async () => {
    for (const c of ref.cases) {
      const { ids } = await model.tokenize(c.prompt);
      assert.deepEqual(ids, c.input_ids, `ids of ${JSON.stringify(c.prompt)}`);
      const out = await model.forward(c.input_ids, { attentions: !!c.attentions });
      const V = ref.vocab_size, n = c.input_ids.length;
      const rows = { ...c.position_logits, [n - 1]: c.last_logits };
      for (const [pos, want] of Object.entries(rows)) {
        const got = out.logits.subarray(Number(pos) * V, (Number(pos) + 1) * V);
        assert.ok(maxDiff(got, want, `logits@${pos}`) <= 1e-4, `${c.prompt}: logits at position ${pos}`);
      }
      if (c.attentions) {
        c.attentions.forEach((layer, l) => {
          const d = attentionDiff(out.attentions, l, layer, 'self');
          assert.ok(d <= 1e-5, `layer ${l} attention differs by ${d}`);
        });
      }
    }
  });

  test('greedy generation gives PyTorch\'s tokens and text', async () => {
    for (const c of ref.cases) {
      const r = await model.generate(c.prompt, { temperature: 0, maxNewTokens: c.greedy_new_ids.length });
      assert.deepEqual(r.tokens.slice(c.input_ids.length), c.greedy_new_ids, c.prompt);
      assert.equal(r.text, c.greedy_text, c.prompt);
    }
  });
});

describe('date-normalizer equals PyTorch', () => {
  const ref = fixture('date-normalizer.json');
  let model;
  before(async () => { model = await loadModel(join(root, ref.model_dir)); });
  after(() => model.dispose());

  test('outputs, logits and the three kinds of attention', async () => {
    for (const c of ref.cases) {
      const r = await model.generate(c.source, { temperature: 0, maxNewTokens: 32 });
      assert.deepEqual(r.source, c.source_ids, `source ids of ${c.source}`);
      assert.deepEqual(r.tokens.slice(1), c.output_ids, c.source);
      assert.equal(r.text, c.output_text, c.source);
      const out = await model.forward({ source: c.source_ids, target: c.decoder_input_ids }, { attentions: !!c.attentions });
      const V = ref.vocab_size;
      c.logits.forEach((want, pos) => {
        assert.ok(maxDiff(out.logits.subarray(pos * V, (pos + 1) * V), want, 'logits') <= 1e-4, `${c.source}: logits at ${pos}`);
      });
      if (c.attentions) {
        for (const [kind, key] of [['encoder', 'encoder_self'], ['self', 'decoder_self'], ['cross', 'cross']]) {
          c.attentions[key].forEach((layer, l) => {
            const d = attentionDiff(out.attentions, l, layer, kind);
            assert.ok(d <= 1e-5, `${kind} layer ${l} attention differs by ${d}`);
          });
        }
      }
    }
  });

  test('text that is not a date still gets an answer, no crash', async () => {
    const r = await model.generate('hello world', { temperature: 0, maxNewTokens: 32 });
    assert.equal(typeof r.text, 'string');
    assert.ok(['eos', 'length'].includes(r.finishReason));
  });
});

// A model output is a date when it is YYYY-MM-DD naming a day that exists (Date.UTC rolls
// 1990-02-30 over to March, so the round trip catches impossible days, leap years included).
function isValidIsoDate(text) {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(text);
  if (!m) return false;
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  const t = new Date(Date.UTC(2000, mo - 1, d));
  t.setUTCFullYear(y, mo - 1, d);
  return mo >= 1 && mo <= 12 && t.getUTCFullYear() === y && t.getUTCMonth() === mo - 1 && t.getUTCDate() === d;
}

// Greedy outputs for `pairs` through the engine: exact-match share, and every output that is not a date.
async function score(model, pairs) {
  let right = 0;
  const wrong = [], invalid = [];
  for (const [source, target] of pairs) {
    const r = await model.generate(source, { temperature: 0, maxNewTokens: 16 });
    if (r.text === target) right++;
    else wrong.push(`${source} → ${r.text} (want ${target})`);
    if (!isValidIsoDate(r.text)) invalid.push(`${source} → ${JSON.stringify(r.text)}`);
  }
  return { right, share: right / pairs.length, wrong, invalid };
}

// US/EU-style numeric dates made here, independently of the Python generator, with the convention
// of models/README.md (python-dateutil's default reading): month-first unless the first number
// cannot be a month (> 12); the day-first order is only written for days 13–31.
function numericDates(n, seed) {
  let s = seed >>> 0;
  const rand = () => {  // mulberry32
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const pick = (xs) => xs[Math.floor(rand() * xs.length)];
  const from = Date.UTC(1900, 0, 1), days = (Date.UTC(2099, 11, 31) - from) / 86400000 + 1;
  const out = [];
  while (out.length < n) {
    const date = new Date(from + Math.floor(rand() * days) * 86400000);
    const [y, m, d] = [date.getUTCFullYear(), date.getUTCMonth() + 1, date.getUTCDate()];
    const dayFirst = d > 12 && rand() < 0.5;
    const pad = rand() < 0.5 ? (x) => String(x).padStart(2, '0') : String;
    const sep = pick(['/', '/', '-', '.']);
    const [a, b] = dayFirst ? [d, m] : [m, d];
    out.push([`${pad(a)}${sep}${pad(b)}${sep}${y}`, date.toISOString().slice(0, 10)]);
  }
  return out;
}

describe('date-normalizer quality in the engine', () => {
  const evalSet = fixture('date-normalizer-eval.json');
  let model;
  before(async () => { model = await loadModel(join(root, 'models/date-normalizer')); });
  after(() => model.dispose());

  test('the validity check itself', () => {
    for (const t of ['1990-09-14', '2000-02-29', '2024-02-29', '1999-12-31']) assert.ok(isValidIsoDate(t), t);
    for (const t of ['1990-14-09', '1900-02-29', '2001-02-29', '2021-04-31', '2021-00-10', '2021-01-00', '2021-1-10', '21-01-10', '']) {
      assert.ok(!isValidIsoDate(t), t);
    }
  });

  test('≥ 99% exact match on the held-out set, every output a valid date', async () => {
    const { right, share, wrong, invalid } = await score(model, evalSet.pairs);
    console.log(`# exact match ${right}/${evalSet.pairs.length} = ${(100 * share).toFixed(2)}%`);
    assert.ok(share >= 0.99, `exact match ${share}; wrong: ${wrong.slice(0, 5).join('; ')}`);
    assert.deepEqual(invalid, [], 'outputs that are not dates');
  });

  test('US-style dates read month-first, day-first only when the first number cannot be a month', async () => {
    for (const [source, want] of [['09/14/1990', '1990-09-14'], ['14/09/1990', '1990-09-14'], ['03/04/2001', '2001-03-04']]) {
      assert.equal((await model.generate(source, { temperature: 0, maxNewTokens: 16 })).text, want, source);
    }
    const canonical = await score(model, evalSet.canonical_pairs);
    assert.deepEqual(canonical.wrong, [], 'canonical numeric cases');
    const held = await score(model, evalSet.numeric_pairs);
    console.log(`# US/EU numeric held-out: exact match ${held.right}/${evalSet.numeric_pairs.length} = ${(100 * held.share).toFixed(2)}%`);
    assert.ok(held.share >= 0.99, `exact match ${held.share}; wrong: ${held.wrong.slice(0, 5).join('; ')}`);
    assert.deepEqual(held.invalid, [], 'outputs that are not dates');
    const made = numericDates(300, 20261123);
    const fresh = await score(model, made);
    console.log(`# US/EU numeric made in JS (any date 1900–2099): exact match ${fresh.right}/${made.length} = ${(100 * fresh.share).toFixed(2)}%`);
    assert.ok(fresh.share >= 0.99, `exact match ${fresh.share}; wrong: ${fresh.wrong.slice(0, 5).join('; ')}`);
    assert.deepEqual(fresh.invalid, [], 'outputs that are not dates');
  });

  // Each output digit is predicted by the query one position before it (the decoder input is <s>
  // followed by the output); its cross-attention in the last layer, summed over heads, should fall
  // mostly on the source characters that spell that field.
  test('cross-attention aligns year, month and day digits with their source spans', async () => {
    const MONTHS = ['january', 'february', 'march', 'april', 'may', 'june', 'july', 'august', 'september', 'october', 'november', 'december'];
    const layer = model.info.layers - 1;
    const totals = { year: [0, 0, 0, 0], month: [0, 0], day: [0, 0] };
    let cases = 0;
    for (const [source, target] of evalSet.pairs) {
      const [y, m, d] = target.split('-');
      const lower = source.toLowerCase();
      // Unambiguous spans only: the 4-digit year once, the month as a name, the day as a number once.
      const yearAt = lower.indexOf(y);
      if (yearAt < 0 || lower.indexOf(y, yearAt + 1) >= 0) continue;
      const name = MONTHS[Number(m) - 1];
      const monthMatch = [name, name.slice(0, 3)].map((s) => lower.match(new RegExp(`\\b${s}[a-z]*`))).find(Boolean);
      const dayRe = new RegExp(`(?<![0-9])0?${Number(d)}(st|nd|rd|th)?(?![0-9])`, 'g');
      const dayMatches = [...lower.slice(0, yearAt).concat(' '.repeat(4), lower.slice(yearAt + 4)).matchAll(dayRe)];
      if (!monthMatch || dayMatches.length !== 1) continue;
      const spans = {
        year: [yearAt, yearAt + 4],
        month: [monthMatch.index, monthMatch.index + monthMatch[0].length],
        day: [dayMatches[0].index, dayMatches[0].index + dayMatches[0][0].length],
      };
      const r = await model.generate(source, { temperature: 0, maxNewTokens: 16 });
      if (r.text !== target) continue;
      const f = await model.forward({ source: r.source, target: r.tokens }, { attentions: { layers: [layer] } });
      const rec = f.attentions.layer(layer, 'cross');
      const mass = (query, [from, to]) => {  // fraction of the heads' summed weight on [from, to)
        let on = 0;
        for (let h = 0; h < rec.heads; h++) {
          const row = f.attentions.row(layer, h, query, 'cross');
          for (let k = from; k < to; k++) on += row[k];  // one source token per character
        }
        return on / rec.heads;
      };
      // Output characters: y0 y1 y2 y3 - m0 m1 - d0 d1, predicted by queries 0..3, 5..6, 8..9.
      [0, 1, 2, 3].forEach((i) => { totals.year[i] += mass(i, spans.year); });
      [0, 1].forEach((i) => { totals.month[i] += mass(5 + i, spans.month); });
      [0, 1].forEach((i) => { totals.day[i] += mass(8 + i, spans.day); });
      if (++cases === 60) break;
    }
    assert.ok(cases >= 30, `only ${cases} cases with unambiguous spans`);
    for (const [field, sums] of Object.entries(totals)) {
      sums.forEach((s, i) => {
        const share = s / cases;
        console.log(`# ${field} digit ${i}: ${(100 * share).toFixed(1)}% of the last layer's cross-attention on the ${field}'s characters`);
        assert.ok(share > 0.5, `${field} digit ${i}: only ${share} of the mass on its source span`);
      });
    }
  });
});
