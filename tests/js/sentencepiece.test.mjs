// SentencePiece .model files through the JS API: loadTokenizer and loadModel accept them (by content,
// whatever their name), ids equal python sentencepiece's (tests/fixtures/spm/cases.json, written by
// make_spm_fixtures.py) or, read as T5 / XLM-R / ALBERT, the family tokenizer's (family_cases.json,
// make_family_fixtures.py), a folder with a .model loads it, bad files are clear errors.
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, test } from 'node:test';
import { loadModel, loadTokenizer } from '../../web/src/index.mjs';
import { llamaHf } from './fixtures/synth.mjs';
import { reportSkips, root } from './fixtures/models.mjs';

const built = existsSync(join(root, 'dist/wasm/attnlens.wasm'));
const skip = !built && 'dist/wasm is not built';
reportSkips(skip);

const dir = join(root, 'tests/fixtures/spm');
const cases = JSON.parse(readFileSync(join(dir, 'cases.json'), 'utf8'));
const modelFile = (name) => join(dir, `${name}.model`);

describe('SentencePiece .model files', { skip }, () => {
  const tmp = mkdtempSync(join(tmpdir(), 'attnlens-spm-'));
  after(() => rmSync(tmp, { recursive: true, force: true }));

  for (const name of Object.keys(cases.models)) {
    test(`${name}: loadTokenizer gives sentencepiece's ids and text`, async () => {
      const tok = await loadTokenizer(modelFile(name));
      try {
        assert.equal(tok.vocabSize, cases.models[name].fields.pieces);
        for (const c of cases.models[name].cases) {
          assert.deepEqual(tok.tokenize(c.text, { addSpecialTokens: false }).ids, c.ids, JSON.stringify(c.text));
          if (c.ids.length) assert.equal(tok.detokenize(c.ids), c.decoded, JSON.stringify(c.text));
        }
      } finally {
        tok.dispose();
      }
    });
  }

  test('a .model under another name (bytes) loads by its content', async () => {
    const data = new Uint8Array(readFileSync(modelFile('bpe_rules')));
    const tok = await loadTokenizer([{ name: 'whatever.bin', data }]);
    try {
      const c = cases.models.bpe_rules.cases[1];
      assert.deepEqual(tok.tokenize(c.text, { addSpecialTokens: false }).ids, c.ids);
    } finally {
      tok.dispose();
    }
  });

  test('loadModel: an HF folder with spiece.model instead of tokenizer.json', async () => {
    const folder = join(tmp, 'hf-spm');
    const { mkdirSync, copyFileSync } = await import('node:fs');
    mkdirSync(folder);
    for (const f of llamaHf({ vocab: 1200 })) writeFileSync(join(folder, f.name), f.data);
    copyFileSync(modelFile('unigram_nfkc'), join(folder, 'spiece.model'));
    const model = await loadModel(folder);
    try {
      const c = cases.models.unigram_nfkc.cases.find((x) => x.text.startsWith('user <sep>'));
      assert.deepEqual((await model.tokenize(c.text, { addSpecialTokens: false })).ids, c.ids);
      assert.equal(model.info.tokenizer.kind, 'sentencepiece-unigram');
      // A folder that also has tokenizer.json loads that one (T5 folders keep both).
      copyFileSync(join(root, 'tests/fixtures/tokenizers/unigram_spm.json'), join(folder, 'tokenizer.json'));
      const again = await loadModel(folder);
      assert.equal(again.info.tokenizer.kind, 'unigram');
      again.dispose();
    } finally {
      model.dispose();
    }
  });

  // tests/fixtures/spm/make_family_fixtures.py: the .model read as T5Tokenizer, XLMRobertaTokenizer and
  // AlbertTokenizer read it (family from tokenizer_config.json's tokenizer_class or config.json's model_type)
  const family = JSON.parse(readFileSync(join(dir, 'family_cases.json'), 'utf8'));
  const familyFiles = (set) => {
    const files = [{ name: set.file, data: new Uint8Array(readFileSync(join(dir, set.model))) }];
    const text = (name, value) => ({ name, data: new TextEncoder().encode(JSON.stringify(value)) });
    if (set.config) files.push(text('config.json', set.config));
    if (set.tokenizer_config) files.push(text('tokenizer_config.json', set.tokenizer_config));
    return files;
  };
  for (const set of family.sets) {
    test(`${set.name}: the family tokenizer's ids, special tokens and decoded text`, async () => {
      const tok = await loadTokenizer(familyFiles(set));
      try {
        assert.equal(tok.vocabSize, set.vocab_size);
        assert.deepEqual(tok.pieces(Object.values(set.special)), Object.keys(set.special));
        for (const c of set.cases) {
          assert.deepEqual(tok.tokenize(c.text).ids, c.ids, JSON.stringify(c.text));
          assert.deepEqual(tok.tokenize(c.text, { addSpecialTokens: false }).ids, c.plain, JSON.stringify(c.text));
          assert.equal(tok.detokenize(c.ids), c.decoded, JSON.stringify(c.text));
        }
      } finally {
        tok.dispose();
      }
    });
  }

  test('loadTokenizer(folder): config.json\'s model_type picks the family; a wrong layout is an error naming the file', async () => {
    const folder = join(tmp, 'xlmr');
    const { mkdirSync, copyFileSync } = await import('node:fs');
    mkdirSync(folder);
    const set = family.sets.find((s) => s.name === 'xlmr_model_type');
    copyFileSync(join(dir, set.model), join(folder, 'sentencepiece.bpe.model'));
    writeFileSync(join(folder, 'config.json'), JSON.stringify(set.config));
    const tok = await loadTokenizer(folder);
    try {
      for (const c of set.cases) assert.deepEqual(tok.tokenize(c.text).ids, c.ids, JSON.stringify(c.text));
    } finally {
      tok.dispose();
    }
    copyFileSync(modelFile('unigram_raw'), join(folder, 'sentencepiece.bpe.model'));
    await assert.rejects(loadTokenizer(folder), /sentencepiece\.bpe\.model: XLM-R's tokenizer \(XLMRobertaTokenizer\) reads a SentencePiece model with <unk> <s> <\/s> at ids 0, 1, 2/);
  });

  test('bad .model files are errors naming the file', async () => {
    const bytes = new Uint8Array(readFileSync(modelFile('bpe_plain')));
    // A piece whose text is not valid UTF-8: the first piece's first byte of text.
    const broken = bytes.slice();
    const at = broken.indexOf(0x3C);  // '<' of "<unk>"
    broken[at] = 0xFF;
    await assert.rejects(loadTokenizer([{ name: 'broken.model', data: broken }]), /broken\.model: byte \d+: pieces\[0\]: piece \(5 bytes\) is not valid UTF-8/);
    // Cut inside a piece (a cut between pieces is a valid, shorter ModelProto).
    await assert.rejects(loadTokenizer([{ name: 'cut.model', data: bytes.slice(0, at + 2) }]), /cut\.model: byte 0: pieces\[0\] needs \d+ bytes but 4 remain in the file/);
  });
});
