// The attention explorer with a dropped GGUF of every decoder-only architecture (the small
// random-weight fixtures of tests/fixtures/archs, made by make_arch_fixtures.py with llama.cpp's keys
// and names), in f32 and in Q4_K_M made by llama.cpp's quantizer (tests/fixtures/archs/quant, by
// make_arch_quant_fixtures.py): each loads, generates, and shows every layer's attention — rows that
// sum to 1, zeros past the query, and exact zeros outside the band of the sliding-window layers.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { browserUnavailable, closeDemo, demoMessage, drawn, openDemo, repoRoot, screenshot, wasmUnavailable } from './helpers.mjs';

const FIXTURES = join(repoRoot, 'tests', 'fixtures', 'archs');
const skip = (await browserUnavailable()) ?? wasmUnavailable() ?? (existsSync(FIXTURES) ? false : 'tests/fixtures/archs is missing');

// name → [architecture the engine reports, sliding window per layer (0 = global)]
const CASES = {
  llama3: ['llama', [0, 0]],
  mistral: ['llama', [0, 0]],  // llama.cpp's llama GGUFs carry no window
  qwen2: ['qwen2', [0, 0]],
  qwen3: ['qwen3', [0, 0]],
  gemma: ['gemma', [0, 0]],
  gemma2: ['gemma2', [8, 0]],
  gemma3: ['gemma3', [8, 8, 0, 8]],
  phi3: ['phi3', [0, 0]],
  gptneox: ['gptneox', [0, 0]],
};
// The Q4_K_M files: name → sliding window per layer (their shapes: manifest.json).
const QUANT = {
  llama3: [0], mistral: [0], qwen2: [0], qwen3: [0], gemma: [0], gemma2: [8], gemma3: [8, 0], phi3: [0], gptneox: [0],
};
const PROMPT = 'the cat sat on the mat, the cat sat on the mat';

describe('attention explorer: a dropped GGUF of every architecture', { skip, timeout: 600_000 }, () => {
  let server;
  let browser;
  let page;

  before(async () => {
    ({ server, browser, page } = await openDemo({ query: '', viewport: { width: 1280, height: 800 } }));
  });

  after(() => closeDemo({ server, browser }));

  const message = (sel) => demoMessage(page, sel);

  // Drops `file`, generates, and checks every layer's attention rows.
  async function dropAndExplore(file, { architecture, layers, heads, windows, dtype, shot }) {
    await page.setInputFiles('#file-input', file);
    await page.waitForFunction(() => !document.body.dataset.loading, null, { timeout: 60_000 });
    assert.equal(await message('#model-message'), '');
    const info = await page.evaluate(() => window.attnlens.state.model.info);
    assert.equal(info.architecture, architecture);
    assert.equal(info.layers, layers);
    if (dtype) assert.match(info.weightDtype, dtype);
    await page.fill('#prompt', PROMPT);
    await page.fill('#max-tokens', '6');
    await page.click('#generate');
    await page.waitForFunction(() => ['done', 'stopped', 'error'].includes(document.querySelector('#stats').dataset.status), null, { timeout: 120_000 });
    const r = await page.evaluate(() => {
      const run = window.attnlens.state.run;
      const store = run.store;
      const layers = store.layers('self');
      const heads = store.heads('self');
      const n = store.queryCount('self');
      // per layer: max |row sum − 1|, weights past the query, and for each query the first key with weight > 0
      const stats = layers.map((l) => {
        let sumErr = 0, future = 0;
        const first = [];
        for (let q = 0; q < n; q++) {
          let f = Infinity;
          for (let h = 0; h < heads; h++) {
            const row = store.row('self', l, h, q);
            if (!row) return { missing: q };
            let s = 0;
            for (let k = 0; k < row.length; k++) {
              s += row[k];
              if (k > q && row[k] !== 0) future++;
              if (row[k] > 0 && k < f) f = k;
            }
            sumErr = Math.max(sumErr, Math.abs(s - 1));
          }
          first.push(f);
        }
        return { sumErr, future, first };
      });
      return { status: run.status, error: run.error ?? null, generated: run.stats.generated, layers, heads, n, stats };
    });
    assert.equal(r.status, 'done', r.error);
    assert.ok(r.generated >= 1);
    assert.deepEqual(r.layers, [...Array(layers).keys()], 'every layer has its attention');
    assert.equal(r.heads, heads);
    assert.ok(r.n > 12, `${r.n} positions: more than the window`);
    r.stats.forEach((s, l) => {
      assert.equal(s.missing, undefined, `layer ${l}: row ${s.missing} missing`);
      assert.ok(s.sumErr < 1e-5, `layer ${l}: rows sum to 1 (${s.sumErr})`);
      assert.equal(s.future, 0, `layer ${l}: nothing past the query`);
      // sliding window: query q sees keys q−w+1 … q only (the first seen key is exactly that);
      // global layers see key 0 (BOS) from every query
      s.first.forEach((f, q) => assert.equal(f, windows[l] ? Math.max(0, q - windows[l] + 1) : 0, `layer ${l} query ${q}`));
    });
    await page.click('#tab-matrix');
    await drawn(page);
    await screenshot(page, shot);
    await page.click('#tab-tokens');
  }

  for (const [name, [architecture, windows]] of Object.entries(CASES)) {
    test(`${name}.gguf`, async () => {
      const ref = JSON.parse(readFileSync(join(FIXTURES, `${name}.ref.json`), 'utf8'));
      await dropAndExplore(join(FIXTURES, `${name}.gguf`), {
        architecture, layers: ref.layers, heads: ref.heads, windows, shot: `demo-arch-${name}.png`,
      });
    });
  }

  for (const [name, windows] of Object.entries(QUANT)) {
    test(`${name} in Q4_K_M (llama.cpp's quantizer)`, async () => {
      const manifest = JSON.parse(readFileSync(join(FIXTURES, 'quant', 'manifest.json'), 'utf8'));
      const [shape] = Object.values(manifest[name]).filter((e) => e.files.q4_k_m);
      await dropAndExplore(join(FIXTURES, 'quant', shape.files.q4_k_m.gguf), {
        architecture: CASES[name][0], layers: shape.layers, heads: shape.heads, windows, dtype: /q4_K/,
        shot: `demo-arch-${name}-q4_k_m.png`,
      });
    });
  }

  test('no page errors', () => {
    assert.deepEqual(browser.errors, []);
  });
});
