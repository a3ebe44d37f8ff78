// The analysis panel of the attention explorer (web/demo/analysis.mjs and its views) in headless
// Chromium under the strict CSP, with the engine in its Web Worker: predictions and logit lens, head
// scores (this text and the repeated random-token probe), ablation, activation patching, rollout, the
// BertViz and CircuitsVis exports; each checked against the JS API on the same model (itself checked
// against PyTorch by tests/js/interp.test.mjs); the main thread stays free while generating.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import {
  closeDemo,
  demoSetup,
  drawn,
  longTaskClock,
  observeLongTasks,
  openDemo,
  screenshot,
  traceMainThreadTasks,
} from './helpers.mjs';
import { checkBertviz, checkCircuitsvis } from '../js/fixtures/interop-formats.mjs';

const { skip } = await demoSetup();

describe('analysis views (web/demo) in headless Chromium', { skip, timeout: 900_000 }, () => {
  let server;
  let browser;
  let page;

  before(async () => {
    ({ server, browser, page } = await openDemo({ query: '?model=kjv-gpt2', viewport: { width: 1280, height: 900 } }));
  });

  after(() => closeDemo({ server, browser }));

  async function generateOnPage({ prompt, maxNewTokens, seed = 1, temperature = 0 }) {
    await page.fill('#prompt', prompt);
    await page.fill('#max-tokens', String(maxNewTokens));
    await page.fill('#seed', String(seed));
    await page.fill('#temperature', String(temperature));
    await page.click('#generate');
    await page.waitForFunction(() => ['done', 'stopped', 'error'].includes(document.querySelector('#stats').dataset.status), null, { timeout: 120_000 });
    await page.$eval('#analysis', (el) => el.scrollIntoView());  // off screen the panel draws nothing
    return page.evaluate(() => {
      const r = window.attnlens.state.run;
      return { status: r.status, error: r.error?.message, ids: r.target.ids, promptLength: r.promptLength, generated: r.stats.generated };
    });
  }

  // Token pieces as the page shows them (visible spaces and control characters).
  const shown = (pieces) => page.evaluate(async (ps) => {
    const { visiblePiece } = await import('/web/demo/format.mjs');
    return ps.map(visiblePiece);
  }, pieces);

  // The model's own API in the page (the same Worker): what the views must show.
  const api = (fn, arg) => page.evaluate(async ([src, a]) => {
    const f = new Function('api', 'arg', `return (${src})(api, arg)`);
    return f(window.attnlens.state.model.api, a);
  }, [fn.toString(), arg]);

  test('predictions: top-5 bars for every token while and after generating; the logit lens on hover', async (t) => {
    // A page tall enough to show the analysis panel while generating: the predictions stream in live.
    await page.setViewportSize({ width: 1280, height: 2200 });
    await page.click('#atab-predictions');
    assert.equal(await page.evaluate(() => window.attnlens.analysis.onScreen), true);
    const read = await observeLongTasks(page);
    const run = await generateOnPage({ prompt: 'And God said', maxNewTokens: 60, temperature: 0.8, seed: 3 });
    const longTasks = await read();
    assert.equal(run.status, 'done', run.error);
    await page.waitForFunction(() => document.querySelector('#aview-predictions .view-caption').textContent.startsWith('The model'), null, { timeout: 60_000 });
    await drawn(page);
    const cards = await page.$$eval('#aview-predictions .pred-card', (els) => els.map((c) => ({
      tok: c.querySelector('.pred-tok').textContent,
      bars: [...c.querySelectorAll('.pred-bar')].map((b) => ({ piece: b.querySelector('.pred-piece').textContent, next: b.classList.contains('is-next') })),
    })));
    assert.equal(cards.length, run.ids.length, 'one card per token');
    const f = await api((a, ids) => a.forward(ids, { topK: 5, logitLens: { topK: 5 } }), run.ids);
    for (const [p, c] of cards.entries()) {
      assert.equal(c.bars.length, 5);
      assert.deepEqual(c.bars.map((b) => b.piece), await shown(f.topk[p].map((e) => e.piece)), `position ${p}`);
      const next = run.ids[p + 1];
      assert.equal(c.bars.filter((b) => b.next).length, f.topk[p].some((e) => e.id === next) ? 1 : 0);
    }
    // Hover a token: its logit lens, one row per layer, five ranks each, the engine's.
    const p = run.promptLength + 2;
    await page.hover(`#aview-predictions .pred-card[data-pos="${p}"]`);
    await drawn(page);
    const lens = await page.$$eval('#aview-predictions .lens-grid tbody tr', (rows) => rows.map((r) => [...r.querySelectorAll('td .lens-piece')].map((x) => x.textContent)));
    assert.equal(lens.length, 4);
    for (const [l, row] of lens.entries()) assert.deepEqual(row, await shown(f.logitLens[l][p].map((e) => e.piece)), `layer ${l}`);
    t.diagnostic(`long tasks while generating 60 tokens with the predictions view open: ${longTasks.map((x) => x.duration).join(', ') || 'none'}`);
    const { clock, why } = longTaskClock(await page.evaluate(() => window.attnlens.state.model.info.threads));
    if (clock === 'cpu') {
      const { tasks } = await traceMainThreadTasks(browser.context, page, () => generateOnPage({ prompt: 'And God said', maxNewTokens: 60, temperature: 0.8, seed: 3 }));
      const maxCpu = Math.max(...tasks.map((x) => x.cpu));
      t.diagnostic(`${why}: the 50 ms bound is checked on CPU time; the longest main-thread task used ${maxCpu.toFixed(1)} ms`);
      assert.ok(maxCpu <= 50, `a main-thread task used ${maxCpu.toFixed(1)} ms of CPU`);
    } else {
      assert.deepEqual(longTasks, [], `long tasks on the main thread: ${JSON.stringify(longTasks)}`);
    }
    await screenshot(page, 'analysis-predictions.png', { fullPage: true });
    await page.setViewportSize({ width: 1280, height: 900 });
    assert.deepEqual(browser.errors, []);
  });

  test('heads: every layer × head of this text and of the probe; a click opens the matrix', async () => {
    await page.click('#atab-heads');
    await page.selectOption('#heads-score', 'previousToken');
    await page.waitForSelector('#aview-heads .heads-grid');
    const ids = await page.evaluate(() => window.attnlens.state.run.target.ids);
    const f = await api((a, x) => a.forward(x, { heads: true }), ids);
    const cells = await page.$$eval('#aview-heads .heads-grid tbody tr', (rows) => rows.map((r) => [...r.querySelectorAll('.grid-cell')].map((c) => c.textContent)));
    assert.deepEqual(cells, f.heads.previousToken.map((row) => row.map((v) => v.toFixed(2))));
    await page.selectOption('#heads-source', 'probe');
    await page.waitForFunction(() => /repeated copy/.test(document.querySelector('#aview-heads .readout').textContent), null, { timeout: 120_000 });
    await page.selectOption('#heads-score', 'induction');
    await drawn(page);
    const probe = await api((a) => a.detectHeads({ batch: 4 }));
    const ind = await page.$$eval('#aview-heads .heads-grid tbody tr', (rows) => rows.map((r) => [...r.querySelectorAll('.grid-cell')].map((c) => c.textContent)));
    assert.deepEqual(ind, probe.heads.induction.map((row) => row.map((v) => v.toFixed(2))));
    await screenshot(page, 'analysis-heads.png', { fullPage: true });
    await page.click('#aview-heads .heads-grid .grid-cell[data-row="2"][data-col="3"]');
    const st = await page.evaluate(() => ({ view: window.attnlens.state.view, layer: window.attnlens.state.layer, head: window.attnlens.state.head }));
    assert.deepEqual(st, { view: 'matrix', layer: 2, head: 3 });
    assert.equal(await page.isVisible('#view-matrix'), true);
  });

  test('ablation: switching heads off regenerates the continuation, with a visible diff', async () => {
    const run = await generateOnPage({ prompt: 'In the beginning', maxNewTokens: 6, temperature: 0 });
    await page.click('#atab-ablation');
    for (let hd = 0; hd < 6; hd++) await page.click(`#aview-ablation .ablation-grid .grid-cell[data-row="1"][data-col="${hd}"]`);
    await page.waitForFunction(() => document.querySelectorAll('#aview-ablation .topk-diff tbody tr').length === 5, null, { timeout: 60_000 });
    const pressed = await page.$$eval('#aview-ablation .grid-cell[aria-pressed="true"]', (els) => els.length);
    assert.equal(pressed, 6);
    const ablate = [0, 1, 2, 3, 4, 5].map((head) => ({ layer: 1, head }));
    const expected = await api((a, x) => a.generate(x.ids, { maxNewTokens: 6, temperature: 0, ablate: x.ablate }), { ids: run.ids.slice(0, run.promptLength), ablate });
    const after = await page.$$eval('#aview-ablation .seq-row:nth-of-type(2) .tok', (els) => els.map((e) => e.textContent));
    assert.deepEqual(after, await shown(expected.pieces.slice(expected.promptTokens)));
    assert.ok(await page.$$eval('#aview-ablation .diff-changed', (els) => els.length) > 0, 'the changed tokens are marked');
    assert.match(await page.textContent('#aview-ablation .ablation-out'), /changes from token/);
    await screenshot(page, 'analysis-ablation.png', { fullPage: true });
    await page.click('#ablation-clear');
    await page.waitForFunction(() => /Every head is on/.test(document.querySelector('#aview-ablation .ablation-out').textContent));
  });

  test('patching: heat maps over heads and over layer × position, the engine\'s numbers', async () => {
    await page.click('#atab-patching');
    await page.click('#patch-run');
    await page.waitForSelector('#aview-patching .patch-resid', { timeout: 120_000 });
    const opts = await page.evaluate(() => ({
      clean: document.querySelector('#patch-clean').value, corrupted: document.querySelector('#patch-corrupted').value,
      metric: { correct: document.querySelector('#patch-correct').value, incorrect: document.querySelector('#patch-incorrect').value },
    }));
    const heads = await api((a, o) => a.patchSweep({ ...o, over: 'heads' }), opts);
    const resid = await api((a, o) => a.patchSweep({ ...o, over: 'resid' }), opts);
    const read = (sel) => page.$$eval(`${sel} tbody tr`, (rows) => rows.map((r) => [...r.querySelectorAll('.grid-cell')].map((c) => c.textContent)));
    assert.deepEqual(await read('#aview-patching .patch-heads'), heads.normalized.map((r) => r.map((v) => v.toFixed(2))));
    assert.deepEqual(await read('#aview-patching .patch-resid'), resid.normalized.map((r) => r.map((v) => v.toFixed(2))));
    assert.equal(resid.normalized.at(-1).at(-1).toFixed(2), '1.00', 'the last residual stream carries everything');
    await screenshot(page, 'analysis-patching.png', { fullPage: true });
    // Prompts of different lengths: an error the page shows, not a crash.
    await page.fill('#patch-corrupted', 'And God');
    await page.click('#patch-run');
    await page.waitForFunction(() => /failed/.test(document.querySelector('#aview-patching .view-caption').textContent));
    assert.match(await page.textContent('#aview-patching .view-caption'), /same length/);
  });

  test('rollout: a view of its own, through any layer', async () => {
    await page.click('#atab-rollout');
    await page.waitForFunction(() => /^Rollout through/.test(document.querySelector('#aview-rollout .view-caption').textContent), null, { timeout: 60_000 });
    assert.equal(await page.$eval('#rollout-layer', (s) => s.options.length), 4);
    const size = await page.$eval('#aview-rollout canvas.rollout-canvas', (c) => [c.width, c.height]);
    assert.ok(size[0] > 100 && size[1] > 100, `canvas ${size}`);
    await page.selectOption('#rollout-layer', '0');
    await drawn(page);
    assert.match(await page.textContent('#aview-rollout .view-caption'), /through layer 0/);
    await screenshot(page, 'analysis-rollout.png', { fullPage: true });
  });

  test('exports: BertViz head_view and CircuitsVis attention_heads arguments', async () => {
    const run = await page.evaluate(() => ({ n: window.attnlens.state.run.target.ids.length, pieces: window.attnlens.state.run.target.pieces }));
    const [bv] = await Promise.all([page.waitForEvent('download'), page.click('#export-bertviz')]);
    const doc = JSON.parse(readFileSync(await bv.path(), 'utf8'));
    assert.deepEqual(checkBertviz(doc), { layers: 4, heads: 6, n: run.n });  // what head_view accepts
    assert.deepEqual(Object.keys(doc), ['attention', 'tokens']);
    assert.deepEqual(doc.tokens, run.pieces);
    assert.equal(doc.attention.length, 4);
    assert.deepEqual([doc.attention[0].length, doc.attention[0][0].length, doc.attention[0][0][0].length, doc.attention[0][0][0][0].length], [1, 6, run.n, run.n]);
    const f = await api((a, ids) => a.forward(ids, { attentions: true }).then((r) => Array.from(r.attentions.get(2, 4))), await page.evaluate(() => window.attnlens.state.run.target.ids));
    const mine = doc.attention[2][0][4].flat();
    assert.ok(mine.every((v, i) => Math.abs(v - f[i]) < 1e-6), 'layer 2 head 4 as the engine computes it');
    const [cv] = await Promise.all([page.waitForEvent('download'), page.click('#export-circuitsvis')]);
    const layers = JSON.parse(readFileSync(await cv.path(), 'utf8'));
    assert.deepEqual(checkCircuitsvis(layers), Array(4).fill({ heads: 6, n: run.n }));  // what attention_heads accepts
    assert.deepEqual(Object.keys(layers[0]), ['attention', 'tokens', 'attention_head_names', 'mask_upper_tri']);
    assert.equal(layers[0].mask_upper_tri, true);
    assert.deepEqual(layers[3].attention_head_names, ['L3H0', 'L3H1', 'L3H2', 'L3H3', 'L3H4', 'L3H5']);
    assert.deepEqual(layers[2].attention, doc.attention[2][0]);
    assert.deepEqual(browser.errors, []);
  });

  test('encoder-decoder (date-normalizer): predictions, cross-attention patching, ablation', async () => {
    await page.selectOption('#model-select', 'date-normalizer');
    await page.waitForFunction(() => window.attnlens.state.model?.name === 'date-normalizer', null, { timeout: 60_000 });
    const run = await generateOnPage({ prompt: 'Wednesday, 3rd of March 2021', maxNewTokens: 16, temperature: 0 });
    assert.equal(run.status, 'done', run.error);
    await page.click('#atab-predictions');
    // The caption may still be the previous model's (kjv-gpt2's) while this run's cards are drawn:
    // wait for this run's cards, then check there is one per target token.
    await page.waitForFunction((n) => document.querySelector('#aview-predictions .view-caption').textContent.startsWith('The model')
      && document.querySelectorAll('#aview-predictions .pred-card').length >= n, run.ids.length, { timeout: 60_000 }).catch(() => {});
    assert.equal(await page.$$eval('#aview-predictions .pred-card', (els) => els.length), run.ids.length);
    await page.click('#atab-patching');
    await page.click('#patch-run');
    await page.waitForSelector('#aview-patching .patch-resid', { timeout: 120_000 });
    assert.match(await page.textContent('#aview-patching .patch-heads caption'), /cross-attention/);
    assert.match(await page.textContent('#aview-patching .view-caption'), /clean [0-9.]+, corrupted -/);
    await page.click('#atab-ablation');
    await page.selectOption('#ablation-kind', 'cross');
    await page.click('#aview-ablation .ablation-grid .grid-cell[data-row="2"][data-col="0"]');
    await page.waitForFunction(() => document.querySelectorAll('#aview-ablation .topk-diff tbody tr').length === 5, null, { timeout: 60_000 });
    await screenshot(page, 'analysis-date-normalizer.png', { fullPage: true });

    // Exports of an encoder–decoder run: BertViz's encoder/decoder/cross arguments; CircuitsVis (one token
    // list for both axes) refuses cross-attention and gives the encoder's unmasked.
    const info = await page.evaluate(() => ({ src: window.attnlens.state.run.source.pieces.length, tgt: window.attnlens.state.run.store.queryCount('self'), kind: window.attnlens.state.kind }));
    const [bv] = await Promise.all([page.waitForEvent('download'), page.click('#export-bertviz')]);
    const bdoc = JSON.parse(readFileSync(await bv.path(), 'utf8'));
    const shapes = checkBertviz(bdoc);
    assert.deepEqual(Object.keys(shapes), ['encoder_attention', 'decoder_attention', 'cross_attention']);
    assert.deepEqual([shapes.encoder_attention.rows, shapes.decoder_attention.rows, shapes.cross_attention.rows, shapes.cross_attention.cols], [info.src, info.tgt, info.tgt, info.src]);
    await page.selectOption('#kind-select', 'cross');
    await drawn(page);
    assert.equal(await page.$eval('#export-circuitsvis', (b) => b.disabled), true, 'CircuitsVis cannot show cross-attention');
    assert.match(await page.$eval('#export-circuitsvis', (b) => b.title), /cannot show cross-attention/);
    await page.selectOption('#kind-select', 'encoder');
    await drawn(page);
    const [cv] = await Promise.all([page.waitForEvent('download'), page.click('#export-circuitsvis')]);
    const clayers = JSON.parse(readFileSync(await cv.path(), 'utf8'));
    assert.deepEqual(checkCircuitsvis(clayers).map((x) => x.n), clayers.map(() => info.src));
    assert.ok(clayers.every((l) => l.mask_upper_tri === false));
    assert.deepEqual(clayers[0].attention, bdoc.encoder_attention[0][0]);
    assert.deepEqual(browser.errors, []);
  });
});
