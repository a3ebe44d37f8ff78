// The attention explorer with the encoder–decoder and encoder fixtures (tests/fixtures/encdec,
// tests/fixtures/encoders, loaded by URL as Hugging Face folders):
//   * Marian: the model's own settings fill the form (4 beams, greedy), beam search runs, and the
//     cross-attention view reads both ways — a target token lights up the source tokens it attends
//     to, a source token lights up the target tokens that attend to it, with the engine's weights;
//   * a sentence-transformers MiniLM: two texts encoded in one batch, their similarity shown, every
//     input's [CLS]/[SEP] marked as special and the shorter one's padding shown, with exactly zero
//     attention to it.
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { browserUnavailable, closeDemo, openDemo, repoRoot, screenshot, wasmUnavailable } from './helpers.mjs';

const skip = (await browserUnavailable()) ?? wasmUnavailable() ??
  (existsSync(join(repoRoot, 'tests/fixtures/encdec/marian')) ? false : 'tests/fixtures/encdec is missing');

describe('attention explorer: encoder–decoders and encoders', { skip, timeout: 300_000 }, () => {
  let server;
  let browser;
  let page;

  before(async () => {
    ({ server, browser, page } = await openDemo({ viewport: { width: 1280, height: 900 } }));
  });

  after(() => closeDemo({ server, browser }));

  const message = (sel) => page.$eval(sel, (e) => (e.hidden ? '' : e.querySelector('.message-text')?.textContent ?? e.textContent));
  const open = async (folder) => {
    await page.goto(`${server.url}/web/demo/?url=${encodeURIComponent(`${server.url}/tests/fixtures/${folder}/`)}`);
    await page.waitForFunction(() => window.attnlens?.state.model && !document.body.dataset.loading, null, { timeout: 60_000 });
    assert.equal(await message('#model-message'), '');
  };
  const finished = () => page.waitForFunction(() => ['done', 'stopped', 'error'].includes(document.querySelector('#stats').dataset.status),
    null, { timeout: 120_000 });

  test('Marian: beam search from the model\'s settings, cross-attention hovered both ways', async () => {
    await open('encdec/marian');
    assert.equal(await page.inputValue('#num-beams'), '4');
    assert.equal(await page.inputValue('#temperature'), '0');
    await page.fill('#prompt', 'w5 w17 w23 w40 w8');
    await page.click('#generate');
    await finished();
    assert.equal(await message('#run-message'), '');
    const run = await page.evaluate(() => {
      const r = window.attnlens.state.run;
      return { kind: window.attnlens.state.kind, src: r.source.ids.length, tgt: r.target.ids.length, beam: r.beamScore,
        cross: r.store.queryCount('cross'), keys: r.store.keyCount('cross') };
    });
    assert.equal(run.kind, 'cross');
    assert.ok(run.beam !== null && Number.isFinite(run.beam), 'a beam score');
    assert.equal(run.keys, run.src);
    assert.ok(run.tgt >= 2);
    assert.match(await page.textContent('#stat-note'), /Beam search/);

    // target → source: point at a target token; the source chips carry that row's weights
    const t = 1;
    await page.hover(`#text-view .seq[data-axis="target"] li[data-i="${t}"]`);
    const forward = await page.evaluate((q) => {
      const s = window.attnlens.state;
      const row = s.run.store.row('cross', s.layer, s.head, q);
      const chips = [...document.querySelectorAll('#text-view .seq[data-axis="source"] li')].map((c) => c.dataset.weight);
      return { row: Array.from(row), chips };
    }, t);
    forward.row.forEach((w, k) => assert.equal(Number(forward.chips[k]), w));

    // source → target: point at a source token; the target chips carry its column
    const k = 2;
    await page.hover(`#text-view .seq[data-axis="source"] li[data-i="${k}"]`);
    const back = await page.evaluate((key) => {
      const s = window.attnlens.state;
      const col = [];
      for (let q = 0; q < s.run.store.queryCount('cross'); q++) col.push(s.run.store.value('cross', s.layer, s.head, q, key));
      const chips = [...document.querySelectorAll('#text-view .seq[data-axis="target"] li')].map((c) => c.dataset.weight);
      return { col, chips, key: s.key, summary: document.querySelector('#text-view .focus-summary').dataset.key };
    }, k);
    assert.equal(back.key, k);
    assert.equal(back.summary, String(k));
    back.col.forEach((w, q) => assert.equal(Number(back.chips[q]), w));
    await screenshot(page, 'demo-marian-cross');
  });

  test('Flan-T5 and BART: the cross-attention view (source × target) hovered both ways with the engine\'s weights', async () => {
    for (const folder of ['encdec/flan_t5', 'encdec/bart']) {
      await open(folder);
      await page.fill('#prompt', 'w5 w17 w23 w40 w8');
      await page.fill('#max-tokens', '5');
      await page.click('#generate');
      await finished();
      assert.equal(await message('#run-message'), '', folder);
      const run = await page.evaluate(() => {
        const s = window.attnlens.state;
        const r = s.run;
        return { kind: s.kind, src: r.source.ids.length, tgt: r.target.ids.length, keys: r.store.keyCount('cross'),
          rows: r.store.queryCount('cross'), sourceChips: document.querySelectorAll('#text-view .seq[data-axis="source"] li').length };
      });
      assert.equal(run.kind, 'cross', folder);
      assert.equal(run.keys, run.src, folder);
      assert.equal(run.sourceChips, run.src, folder);
      assert.ok(run.rows >= 1 && run.rows <= run.tgt, `${folder}: ${run.rows} cross rows for ${run.tgt} target tokens`);
      await page.hover('#text-view .seq[data-axis="target"] li[data-i="0"]');
      const forward = await page.evaluate(() => {
        const s = window.attnlens.state;
        return { row: Array.from(s.run.store.row('cross', s.layer, s.head, 0)),
          chips: [...document.querySelectorAll('#text-view .seq[data-axis="source"] li')].map((c) => c.dataset.weight) };
      });
      forward.row.forEach((w, k) => assert.equal(Number(forward.chips[k]), w, `${folder}: source chip ${k}`));
      await page.hover('#text-view .seq[data-axis="source"] li[data-i="1"]');
      const back = await page.evaluate(() => {
        const s = window.attnlens.state;
        const col = [];
        for (let q = 0; q < s.run.store.queryCount('cross'); q++) col.push(s.run.store.value('cross', s.layer, s.head, q, 1));
        return { col, chips: [...document.querySelectorAll('#text-view .seq[data-axis="target"] li')].map((c) => c.dataset.weight) };
      });
      back.col.forEach((w, q) => assert.equal(Number(back.chips[q]), w, `${folder}: target chip ${q}`));
    }
  });

  test('Marian dropped with source.spm, target.spm and separate vocabularies: the target row shows target.spm\'s pieces', async () => {
    // tests/fixtures/spm/make_marian_pair_fixture.py: 90 source ids, 70 target ids (target_vocab.json)
    const dir = mkdtempSync(join(tmpdir(), 'attnlens-marian-drop-'));
    const fx = (rel) => join(repoRoot, 'tests/fixtures', rel);
    try {
      const files = {
        'config.json': 'encdec/marian_separate/config.json', 'model.safetensors': 'encdec/marian_separate/model.safetensors',
        'generation_config.json': 'encdec/marian_separate/generation_config.json', 'source.spm': 'spm/unigram_nfkc.model',
        'target.spm': 'spm/unigram_raw.model', 'vocab.json': 'spm/marian_pair_vocab.json', 'target_vocab.json': 'spm/marian_pair_target_vocab.json',
      };
      for (const [name, rel] of Object.entries(files)) copyFileSync(fx(rel), join(dir, name));
      await page.setInputFiles('#file-input', Object.keys(files).map((f) => join(dir, f)));
      await page.waitForFunction(() => !document.body.dataset.loading && window.attnlens.state.model?.info.targetTokenizer, null, { timeout: 60_000 });
      assert.equal(await message('#model-message'), '');
      assert.equal(await page.textContent('#model-card dd[data-fact="vocabulary"]'), 'source 90 tokens · marian-unigram; target 70 tokens · marian-unigram');
      const c = JSON.parse(readFileSync(fx('spm/marian_pair_cases.json'), 'utf8')).separate[3];
      await page.fill('#prompt', c.text);
      await page.fill('#max-tokens', '6');
      await page.click('#generate');
      await finished();
      assert.equal(await message('#run-message'), '');
      const run = await page.evaluate(() => {
        const r = window.attnlens.state.run;
        const chips = (axis) => [...document.querySelectorAll(`#text-view .seq[data-axis="${axis}"] li`)].length;
        return { source: r.source.ids, target: r.target.ids, pieces: r.target.pieces, sourceChips: chips('source'), targetChips: chips('target') };
      });
      assert.deepEqual(run.source, c.source_ids);
      assert.equal(run.target[0], 69, 'the decoder starts at <pad> of the target vocabulary');
      assert.equal(run.targetChips, run.target.length);
      assert.equal(run.sourceChips, run.source.length);
      // every target piece is the target vocabulary's entry for its id ("▁" shown as a space)
      const vocab = JSON.parse(readFileSync(fx('spm/marian_pair_target_vocab.json'), 'utf8'));
      const label = new Map(Object.entries(vocab).map(([p, id]) => [id, p.replaceAll('\u2581', ' ')]));
      run.target.forEach((id, i) => { if (id !== vocab['<unk>']) assert.equal(run.pieces[i], label.get(id), `target token ${i} (id ${id})`); });
      assert.equal(run.pieces[0], '<pad>');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('MiniLM embeddings: two texts, their similarity, special tokens and padding shown plainly', async () => {
    await open('encoders/minilm');
    assert.equal(await page.textContent('#generate'), 'Encode');
    assert.equal(await page.isVisible('#compare-field'), true);
    await page.fill('#prompt', 'The cat sat on the mat.');
    await page.fill('#prompt-b', 'A dog ran!');
    await page.click('#generate');
    await finished();
    assert.equal(await message('#run-message'), '');
    assert.match(await page.textContent('#encode-result'), /Similarity of A and B: -?\d\.\d{4}/);
    // input B is the shorter: padded to A's length, its padding never attended to
    await page.selectOption('#input-select', '1');
    // the chips are redrawn on the next frame: wait until they show input B
    await page.waitForFunction(() => {
      const r = window.attnlens.state.run;
      const chips = [...document.querySelectorAll('#text-view .seq[data-axis="source"] li')];
      return r.shown === 1 && chips.length === r.source.ids.length && chips.every((c, i) => c.dataset.origin === r.source.origin[i]);
    }, null, { timeout: 10_000 });
    const b = await page.evaluate(() => {
      const s = window.attnlens.state;
      const run = s.run;
      const origins = [...document.querySelectorAll('#text-view .seq[data-axis="source"] li')].map((c) => c.dataset.origin);
      const n = run.source.ids.length;
      let padWeight = 0;
      const pads = run.source.origin.flatMap((o, i) => (o === 'pad' ? [i] : []));
      for (const l of run.store.layers('encoder'))
        for (let h = 0; h < run.store.heads('encoder'); h++)
          for (let q = 0; q < n; q++) for (const k of pads) padWeight += run.store.value('encoder', l, h, q, k);
      return { origins, pads: pads.length, padWeight, first: run.source.pieces[0], kind: s.kind };
    });
    assert.equal(b.kind, 'encoder');
    assert.equal(b.first, '[CLS]');
    assert.equal(b.origins[0], 'special');
    assert.ok(b.pads > 0, 'input B is padded');
    assert.equal(b.origins.at(-1), 'pad');
    assert.equal(b.padWeight, 0);
    await screenshot(page, 'demo-minilm-embed');
    assert.deepEqual(browser.errors, []);
  });
});
