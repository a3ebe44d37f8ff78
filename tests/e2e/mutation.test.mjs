// The mutation test of tests/js/mutation.test.mjs in Chromium: real model files mutated by
// tests/js/fixtures/mutate.mjs (truncation, bit flips, huge counts and dimensions, wrong dtypes, JSON
// type confusion, deep nesting), loaded through the package's API on a page and in a Web Worker.
// Every case ends in a model that works or a clean Error — no trap, no stack overflow, no hang — the
// engine's allocations return to the baseline after each case, and a witness model keeps generating
// the same tokens. ATTNLENS_MUTATIONS=N runs N cases on the page (default 150) and N/3 in the worker.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { browserUnavailable, launchBrowser, startServer, wasmUnavailable } from './helpers.mjs';

const CASES = Number(process.env.ATTNLENS_MUTATIONS ?? 150);
const skip = (await browserUnavailable()) ?? wasmUnavailable() ?? false;

describe('mutated model files in Chromium', { skip, timeout: 1_800_000 }, () => {
  let server;
  let browser;
  let page;

  before(async () => {
    server = await startServer({ port: 0 });
    browser = await launchBrowser({ ignoreConsole: [/404/, /Failed to load resource/] });
    page = browser.page;
    await page.goto(`${server.url}/tests/e2e/pages/blank.html`);
  });

  after(async () => {
    await browser?.close();
    await server?.close();
  });

  // Runs the cases on the page; inWorker: the models load in one Web Worker (and the heap is its engine's).
  const run = (count, seed0, inWorker) => page.evaluate(async ({ count, seed0, inWorker }) => {
    const api = await import('/web/src/index.mjs');
    const { readBases, runMutations } = await import('/tests/js/fixtures/mutation-run.mjs');
    const bases = await readBases(async (dir, name) => {
      const r = await fetch(`/${dir}/${name}`);
      return r.ok ? new Uint8Array(await r.arrayBuffer()) : null;
    });
    const worker = inWorker ? new Worker('/web/src/worker.mjs', { type: 'module' }) : null;
    const options = worker ? { worker } : {};
    const witness = await api.loadModel('/models/kjv-gpt2/', options);
    try {
      return await runMutations({
        api,
        bases,
        load: (files) => api.loadModel(files.map((f) => ({ name: f.name, data: f.data.slice() })), options),
        heap: async () => (worker ? await witness.engineInfo() : await api.engineInfo()).allocatedBytes,
        witness,
        count,
        seed0,
      });
    } finally {
      await witness.dispose();
      worker?.terminate();
    }
  }, { count, seed0, inWorker });

  function report(t, count, { stats, messages, problems }) {
    t.diagnostic(`${count} cases: ${stats.loaded} loaded and ran, ${stats.refused} refused cleanly, ${stats.skipped} not applicable; heap back to ${stats.baseBytes} B after every case`);
    t.diagnostic(`${messages.length} distinct messages, e.g. ${messages.slice(0, 4).join(' | ')}`);
    assert.deepEqual(problems, []);
    assert.ok(stats.loaded > 0 && stats.refused > 0, 'the mutations both break files and leave some loadable');
    assert.deepEqual(browser.errors, []);
  }

  test(`on the page: ${CASES} cases, clean errors, no trap, heap flat`, async (t) => {
    report(t, CASES, await run(CASES, 2000, false));
  });

  test(`in a Web Worker: ${Math.ceil(CASES / 3)} cases`, async (t) => {
    report(t, Math.ceil(CASES / 3), await run(Math.ceil(CASES / 3), 700000, true));
  });
});
