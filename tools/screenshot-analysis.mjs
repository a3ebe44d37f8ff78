#!/usr/bin/env node
// Takes the README's screenshots of the analysis views (docs/analysis-*.png) in headless Chromium:
// kjv-gpt2 continues "And God said"; the Predictions view with one token's logit lens, the Heads view
// (previous-token scores of that text) and the Patching view's example.
//   node tools/screenshot-analysis.mjs        (needs the wasm build and Chromium, as the e2e tests)
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';

import { launchBrowser, repoRoot, startServer } from '../tests/e2e/helpers.mjs';

const out = join(repoRoot, 'docs');
mkdirSync(out, { recursive: true });
const server = await startServer({ port: 0 });
const browser = await launchBrowser({ viewport: { width: 1240, height: 2200 } });
const page = browser.page;
try {
  await page.goto(`${server.url}/web/demo/?model=kjv-gpt2`);
  await page.waitForFunction(() => window.attnlens?.state.model, null, { timeout: 60_000 });
  await page.fill('#prompt', 'And God said');
  await page.fill('#max-tokens', '40');
  await page.fill('#temperature', '0.8');
  await page.fill('#seed', '3');
  await page.click('#generate');
  await page.waitForFunction(() => document.querySelector('#stats').dataset.status === 'done', null, { timeout: 120_000 });
  const panel = await page.$('#analysis');
  await panel.scrollIntoViewIfNeeded();

  await page.click('#atab-predictions');
  await page.waitForFunction(() => document.querySelector('#aview-predictions .view-caption').textContent.startsWith('The model'), null, { timeout: 60_000 });
  const p = await page.evaluate(() => window.attnlens.state.run.promptLength + 3);
  await page.hover(`#aview-predictions .pred-card[data-pos="${p}"]`);
  await page.waitForSelector('#aview-predictions .lens-grid');
  await panel.screenshot({ path: join(out, 'analysis-predictions.png') });

  await page.click('#atab-heads');
  await page.selectOption('#heads-source', 'text');
  await page.selectOption('#heads-score', 'previousToken');
  await page.waitForSelector('#aview-heads .heads-grid', { timeout: 60_000 });
  await panel.screenshot({ path: join(out, 'analysis-heads.png') });

  await page.click('#atab-patching');
  await page.click('#patch-run');
  await page.waitForSelector('#aview-patching .patch-resid', { timeout: 120_000 });
  await panel.screenshot({ path: join(out, 'analysis-patching.png') });
  console.log(`wrote ${['predictions', 'heads', 'patching'].map((v) => join('docs', `analysis-${v}.png`)).join(', ')}`);
} finally {
  await browser.close();
  await server.close();
}
