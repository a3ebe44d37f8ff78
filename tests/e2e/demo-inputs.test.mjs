// The attention explorer with bad input (every case gets a visible, specific message and the page
// keeps working with the previous model), with the encoder–decoder model (source, target and
// cross-attention checked against an independent forward pass), and at 400 px wide.
import assert from 'node:assert/strict';
import { closeSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { closeDemo, demoMessage, demoSetup, drawn, openDemo, screenshot } from './helpers.mjs';

const { skip, manifest } = await demoSetup();
const DEFAULT = manifest.default;
const SEQ2SEQ = manifest.models.find((m) => m.architecture !== 'GPT2LMHeadModel' && /seq2seq|date/i.test(`${m.architecture} ${m.name}`))?.name;


describe('attention explorer: bad input, encoder–decoder, narrow screens', { skip, timeout: 600_000 }, () => {
  let server;
  let browser;
  let page;
  let tmp;

  before(async () => {
    tmp = mkdtempSync(join(tmpdir(), 'attnlens-demo-'));
    ({ server, browser, page } = await openDemo({ query: '', viewport: { width: 1280, height: 800 }, ignoreConsole: [/404/, /Failed to load resource/] }));
  });

  after(async () => {
    await closeDemo({ server, browser });
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  const message = (sel) => demoMessage(page, sel);
  const modelName = () => page.evaluate(() => window.attnlens.state.model?.name);

  async function generate(maxNewTokens = 8) {
    await page.fill('#max-tokens', String(maxNewTokens));
    await page.click('#generate');
    await page.waitForFunction(() => ['done', 'stopped', 'error'].includes(document.querySelector('#stats').dataset.status), null, { timeout: 120_000 });
    return page.evaluate(() => ({ status: window.attnlens.state.run?.status, generated: window.attnlens.state.run?.stats.generated }));
  }

  /** After a failure: the previous model is still loaded and still generates. */
  async function stillWorks() {
    assert.equal(await modelName(), DEFAULT);
    await page.fill('#prompt', manifest.models.find((m) => m.name === DEFAULT).example_prompts[1]);
    const run = await generate(5);
    assert.equal(run.status, 'done');
    assert.ok(run.generated >= 1);
  }

  test('an empty prompt', async () => {
    await page.fill('#prompt', '   ');
    await page.click('#generate');
    assert.match(await message('#run-message'), /prompt is empty/i);
    await stillWorks();
    assert.equal(await message('#run-message'), '');
  });

  test('a sampling value out of range', async () => {
    await page.fill('#top-p', '0');
    await page.click('#generate');
    assert.match(await message('#run-message'), /Top-p must be a number from 0\.001 to 1, not “0”/);
    await page.fill('#top-p', '1');
  });

  test('a dropped file that is not a model (by name, then by content)', async () => {
    await page.setInputFiles('#file-input', { name: 'notes.txt', mimeType: 'text/plain', buffer: Buffer.from('hello, not a model') });
    assert.match(await message('#model-message'), /notes\.txt: not a model file/);
    await page.setInputFiles('#file-input', { name: 'weights.bin', mimeType: 'application/octet-stream', buffer: Buffer.alloc(4096, 7) });
    await page.waitForFunction(() => !document.body.dataset.loading && !document.querySelector('#model-message').hidden, null, { timeout: 30_000 });
    assert.match(await message('#model-message'), /weights\.bin: not a model file AttnLens recognises/);
    await stillWorks();
  });

  test('a model file without its tokenizer', async () => {
    await page.setInputFiles('#file-input', join(new URL('../fixtures/models_torch/', import.meta.url).pathname, 'llama2c_cls.bin'));
    await page.waitForFunction(() => !document.body.dataset.loading && !document.querySelector('#model-message').hidden, null, { timeout: 30_000 });
    assert.match(await message('#model-message'), /has no tokenizer/);
    await stillWorks();
  });

  test('a URL that fails', async () => {
    await page.fill('#model-url', `${server.url}/models/no-such-model/model.gguf`);
    await page.click('#url-form button[type="submit"]');
    await page.waitForFunction(() => !document.body.dataset.loading && !document.querySelector('#model-message').hidden, null, { timeout: 30_000 });
    const text = await message('#model-message');
    assert.match(text, /404/);
    assert.match(text, /no-such-model\/model\.gguf/);
    await page.fill('#model-url', 'not a url at all');
    await page.click('#url-form button[type="submit"]');
    await page.waitForFunction(() => !document.body.dataset.loading, null, { timeout: 30_000 });
    assert.notEqual(await message('#model-message'), '');
    await stillWorks();
  });

  test('a model from a URL, and a model from dropped files, load and generate', async () => {
    const folder = join(new URL('../../models/', import.meta.url).pathname, DEFAULT);
    await page.fill('#model-url', `${server.url}/models/${DEFAULT}/`);
    await page.click('#url-form button[type="submit"]');
    await page.waitForFunction(() => !document.body.dataset.loading, null, { timeout: 60_000 });
    assert.equal(await message('#model-message'), '');
    assert.equal(await page.evaluate(() => window.attnlens.state.model.builtin), false);
    const entry = manifest.models.find((m) => m.name === DEFAULT);
    const files = entry.files.map((f) => join(folder, '..', f.path));
    await page.setInputFiles('#file-input', files);
    await page.waitForFunction(() => !document.body.dataset.loading, null, { timeout: 60_000 });
    assert.equal(await message('#model-message'), '');
    const info = await page.evaluate(() => window.attnlens.state.model.info);
    assert.equal(info.params, entry.params);
    const run = await generate(5);
    assert.equal(run.status, 'done');
    await page.selectOption('#model-select', DEFAULT);
    await page.waitForFunction((name) => window.attnlens.state.model?.builtin && window.attnlens.state.model.name === name, DEFAULT, { timeout: 60_000 });
  });

  test('a model too large for WebAssembly memory', async () => {
    // a sparse 5 GiB file: the browser sees its size without anyone reading 5 GiB
    const big = join(tmp, 'huge-model.gguf');
    const fd = openSync(big, 'w');
    writeSync(fd, Buffer.from('GGUF'), 0, 4, 5 * 1024 ** 3 - 4);
    closeSync(fd);
    await page.setInputFiles('#file-input', big);
    assert.match(await message('#model-message'), /too large for the browser: its files hold 5\.00 GiB, and WebAssembly memory is limited to 4 GiB/);
    await stillWorks();
  });

  test('encoder–decoder: source, target and cross-attention equal the engine’s', { skip: !SEQ2SEQ && 'no encoder–decoder model in models/manifest.json' }, async (t) => {
    await page.selectOption('#model-select', SEQ2SEQ);
    await page.waitForFunction((name) => window.attnlens.state.model?.name === name, SEQ2SEQ, { timeout: 60_000 });
    const entry = manifest.models.find((m) => m.name === SEQ2SEQ);
    assert.equal(await page.$eval('#prompt', (e) => e.value), entry.example_prompts[0], 'the model’s first example prompt');
    const run = await generate(16);
    assert.equal(run.status, 'done');
    assert.equal(await page.$eval('#kind-select', (e) => e.value), 'cross', 'cross-attention is shown first');
    assert.equal(await page.$eval('#kind-tool', (e) => e.hidden), false);
    const kinds = await page.$$eval('#kind-select option', (os) => os.map((o) => o.value));
    assert.deepEqual(kinds.sort(), ['cross', 'encoder', 'self']);
    const { source, target } = await page.evaluate(() => ({ source: window.attnlens.state.run.source.ids, target: window.attnlens.state.run.target.ids }));
    assert.equal(await page.$$eval('#text-view .seq[data-axis="source"] li', (e) => e.length), source.length);
    assert.equal(await page.$$eval('#text-view .seq[data-axis="target"] li', (e) => e.length), target.length);

    // independent forward pass on the page's main thread
    await page.evaluate(async (name) => {
      const { loadModel } = await import('/web/src/index.mjs');
      const { fetchManifest, builtinSource } = await import('/web/demo/catalog.mjs');
      const entry = (await fetchManifest()).models.find((m) => m.name === name);
      const model = await loadModel(builtinSource(entry).load);
      const run = window.attnlens.state.run;
      const n = Math.min(run.target.ids.length, model.info.contextLength);
      window.__ref = (await model.forward({ source: run.source.ids, target: run.target.ids.slice(0, n) }, { attentions: true })).attentions;
      await model.dispose();
    }, SEQ2SEQ);
    const layers = await page.evaluate(() => window.attnlens.state.model.info.layers);
    let worst = 0;
    for (const [kind, layer, head, q] of [['cross', layers - 1, 0, 2], ['cross', 0, -1, 1], ['self', 1, 1, 3], ['encoder', 0, 2, 4]]) {
      await page.selectOption('#kind-select', kind);
      await page.selectOption('#layer-select', String(layer));
      await page.selectOption('#head-select', String(head));
      const qAxis = kind === 'encoder' ? 'source' : 'target';
      const kAxis = kind === 'self' ? 'target' : 'source';
      await page.hover(`#text-view .seq[data-axis="${qAxis}"] li[data-i="${q}"]`);
      await drawn(page);
      const shown = await page.$$eval(`#text-view .seq[data-axis="${kAxis}"] li`, (els) => els.map((e) => Number(e.dataset.weight)));
      const lines = await page.$$eval('#view-tokens .col-k li', (els) => els.map((e) => Number(e.dataset.weight)));
      const want = await page.evaluate(({ kind, layer, head, q }) => {
        const a = window.__ref;
        const r = a.layer(layer, kind);
        return Array.from(head < 0 ? a.mean(layer, kind).subarray(q * r.keys, (q + 1) * r.keys) : a.row(layer, head, q, kind));
      }, { kind, layer, head, q });
      assert.equal(shown.length, want.length, `${kind}: one chip per key`);
      for (let k = 0; k < want.length; k++) {
        const w = kind === 'self' && k > q ? 0 : want[k];
        worst = Math.max(worst, Math.abs(shown[k] - w), Math.abs(lines[k] - w));
        assert.ok(Math.abs(shown[k] - w) <= 1e-6 && Math.abs(lines[k] - w) <= 1e-6, `${kind} L${layer} H${head} q${q} k${k}: ${shown[k]} / ${lines[k]} vs ${w}`);
      }
    }
    t.diagnostic(`largest |shown − forward| (encoder–decoder): ${worst.toExponential(2)}`);
    await page.selectOption('#kind-select', 'cross');
    await page.selectOption('#layer-select', String(layers - 1));
    await page.selectOption('#head-select', '-1');
    await page.click('#tab-matrix');
    await page.mouse.move(5, 5);
    await drawn(page);
    await screenshot(page, 'demo-1280-seq2seq-cross-matrix.png', { fullPage: true });
    await page.click('#tab-tokens');
    await page.hover('#text-view .seq[data-axis="target"] li[data-i="3"]');
    await drawn(page);
    await screenshot(page, 'demo-1280-seq2seq-cross-tokens.png', { fullPage: true });
    await page.selectOption('#model-select', DEFAULT);
    await page.waitForFunction((name) => window.attnlens.state.model?.name === name, DEFAULT, { timeout: 60_000 });
  });

  test('the root URL keeps its query when it redirects: /?model=NAME opens that model (README)', { skip: !SEQ2SEQ && 'no second built-in model' }, async () => {
    await page.goto(`${server.url}/?model=${SEQ2SEQ}`);
    const url = new URL(page.url());
    assert.equal(url.pathname, '/web/demo/');
    assert.equal(url.searchParams.get('model'), SEQ2SEQ);
    await page.waitForFunction((name) => window.attnlens?.state.model?.name === name, SEQ2SEQ, { timeout: 60_000 });
    assert.equal(await page.$eval('#model-select', (s) => s.value), SEQ2SEQ);
    await page.goto(`${server.url}/web/demo/`);  // back to the default for the tests that follow
    await page.waitForFunction((name) => window.attnlens?.state.model?.name === name, DEFAULT, { timeout: 60_000 });
  });

  test('400 px wide: one column, nothing wider than the screen', async () => {
    await page.setViewportSize({ width: 400, height: 860 });
    await page.fill('#prompt', manifest.models.find((m) => m.name === DEFAULT).example_prompts[0]);
    const run = await generate(30);
    assert.equal(run.status, 'done');
    await page.hover('#text-view .seq[data-axis="target"] li[data-i="4"]');
    await drawn(page);
    const overflow = await page.evaluate(() => document.documentElement.scrollWidth);
    assert.ok(overflow <= 400, `page is ${overflow}px wide at a 400px viewport`);
    await screenshot(page, 'demo-400-tokens.png', { fullPage: true });
    await page.click('#tab-matrix');
    await drawn(page);
    assert.ok((await page.evaluate(() => document.documentElement.scrollWidth)) <= 400);
    await screenshot(page, 'demo-400-matrix.png', { fullPage: true });
    assert.deepEqual(browser.errors, []);
  });

  test('dark colour scheme', async () => {
    await page.setViewportSize({ width: 1280, height: 800 });
    await page.emulateMedia({ colorScheme: 'dark' });
    await page.click('#tab-tokens');
    await page.hover('#text-view .seq[data-axis="target"] li[data-i="6"]');
    await drawn(page);
    const bg = await page.evaluate(() => getComputedStyle(document.body).backgroundColor);
    assert.equal(bg, 'rgb(13, 15, 20)', 'the dark palette applies');
    await screenshot(page, 'demo-1280-dark-tokens.png');
    await page.click('#tab-matrix');
    await page.mouse.move(5, 5);
    await drawn(page);
    await screenshot(page, 'demo-1280-dark-matrix.png', { fullPage: true });
    await page.emulateMedia({ colorScheme: 'light' });
  });
});
