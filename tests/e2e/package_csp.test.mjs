// The package in headless Chromium under a strict Content-Security-Policy, from a page in a nested
// path (the wasm is found next to its glue, whatever the page's URL):
//   default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; object-src 'none'; base-uri 'none'
// on every response (page, modules, worker, wasm). The page loads a model in its thread AND in
// worker mode, generates, streams with attention, forwards, and renders a chat template with the
// package's bundled @huggingface/jinja (served from the package's own node_modules, as installed);
// no CSP violation may happen (the
// policy's report-uri collects reports from the page and from workers; a control page proves the
// reporting works). Then cache: true — a second load with the browser offline comes from Cache
// Storage.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { appResult, chromiumMissing, launch } from '../js/fixtures/chromium.mjs';
import { kjv, noKjv, noStories, root, stories } from '../js/fixtures/models.mjs';
import { serve, unexpectedConsoleErrors } from '../js/fixtures/server.mjs';

const missing = (await chromiumMissing()) || (noStories && noKjv && 'no model: neither ../shared stories260K nor models/kjv-gpt2');
if (missing) console.log(`SKIPPED: ${missing}`);

const CSP = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; object-src 'none'; base-uri 'none'; report-uri /__csp-report";
const PAGE = '/deep/nested/path/app/';
// What the page loads: stories260K's two files, else the kjv-gpt2 folder.
const MODEL = noStories ? { src: '/models/kjv-gpt2/', prompt: 'And God said' }
  : { src: ['/models/stories260K/stories260K.bin', '/models/stories260K/tok512.bin'], prompt: 'Once upon a time' };

const html = (script) => `<!doctype html><html><head><meta charset="utf-8"><link rel="icon" href="/favicon.ico">
<title>attnlens package under CSP</title><script type="module" src="${script}"></script></head><body></body></html>`;

// The page's script: everything it does is in this external module (inline scripts are blocked).
const APP = `
import { loadModel, engineInfo, Attentions } from '../../../../vendor/attnlens/web/src/index.mjs';
const MODEL = ${JSON.stringify(MODEL)};
async function exercise(model) {
  const t = await model.tokenize(MODEL.prompt);
  const g = await model.generate(MODEL.prompt, { maxNewTokens: 12, temperature: 0 });
  const f = await model.forward(t.ids, { attentions: true });
  const steps = [];
  for await (const s of model.stream(MODEL.prompt, { maxNewTokens: 4, temperature: 0, attentions: { layers: [0] } }))
    steps.push({ token: s.token, queries: s.attentions.layer(0).queries, keys: s.attentions.layer(0).keys });
  const controller = new AbortController();
  let n = 0;
  const aborted = await model.generate(MODEL.prompt, { maxNewTokens: 400, temperature: 0, signal: controller.signal,
    onToken: () => { if (++n === 3) controller.abort(); } });
  const row = f.attentions.row(0, 0, t.ids.length - 1);
  return {
    info: { architecture: model.info.architecture, layers: model.info.layers, heads: model.info.heads },
    ids: t.ids, text: g.text, tokens: g.tokens,
    logits: f.shape, isAttentions: f.attentions instanceof Attentions, kinds: f.attentions.kinds,
    rowSum: row.reduce((a, b) => a + b, 0), row: Array.from(row),
    steps, aborted: { reason: aborted.finishReason, tokens: aborted.tokens.length - aborted.promptTokens },
  };
}
// A chat model (tests/fixtures/chat/tiny-chat.gguf): the template rendered by @huggingface/jinja,
// which must need no eval under this policy.
async function chat(m) {
  const conv = [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'Hi' }];
  const text = await m.applyChatTemplate(conv, { addGenerationPrompt: true });
  const g = await m.generate(conv, { maxNewTokens: 4, temperature: 0 });
  let raised = null;
  try { await m.applyChatTemplate(conv, { template: '{{ raise_exception("roles must alternate") }}' }); } catch (e) { raised = e.message; }
  return { text, tokens: g.tokens, promptTokens: g.promptTokens, reason: g.finishReason, raised };
}
const out = { progress: [] };
try {
  out.engine = await engineInfo();
  const here = await loadModel(MODEL.src, { onProgress: (p) => out.progress.push(p) });
  out.thread = await exercise(here);
  await here.dispose();
  let workerProgress = 0;
  const inWorker = await loadModel(MODEL.src, { worker: true, onProgress: () => workerProgress++ });
  out.worker = await exercise(inWorker);
  out.worker.progressEvents = workerProgress;
  out.worker.engine = await inWorker.engineInfo();
  await inWorker.dispose();
  out.worker.disposed = inWorker.disposed;
  for (const worker of [false, true]) {
    const m = await loadModel('/fixtures/chat/tiny-chat.gguf', { worker });
    out[worker ? 'chatWorker' : 'chatThread'] = await chat(m);
    await m.dispose();
  }
} catch (e) {
  out.error = String(e && e.stack || e);
}
window.__result = out;

// Cache Storage: the first load stores the files, the second (with the browser offline) reads them.
window.__cacheLoad = async () => {
  try {
    const events = [];
    const m = await loadModel(MODEL.src, { cache: true, onProgress: (p) => events.push(p) });
    const g = await m.generate(MODEL.prompt, { maxNewTokens: 12, temperature: 0 });
    await m.dispose();
    const cached = await (await caches.open('attnlens-models-v1')).keys();
    return { text: g.text, events: events.length, last: events.at(-1), cached: cached.map((r) => new URL(r.url).pathname) };
  } catch (e) {
    return { error: String(e && e.stack || e) };
  }
};
`;

// A control page that breaks the policy on purpose: its report proves violations are seen.
const CONTROL = `try { (0, eval)('1'); } catch (e) { window.__control = e.name; } window.__control ??= 'allowed';`;

let server;
let browser;
let dir;
const reports = [];

before(async () => {
  if (missing) return;
  dir = mkdtempSync(join(tmpdir(), 'attnlens-csp-'));
  writeFileSync(join(dir, 'index.html'), html('./app.mjs'));
  writeFileSync(join(dir, 'app.mjs'), APP);
  writeFileSync(join(dir, 'control.html'), html('./control.mjs'));
  writeFileSync(join(dir, 'control.mjs'), CONTROL);
  server = await serve({
    '/__csp-report': (req, res) => {
      let body = '';
      req.on('data', (c) => { body += c; });
      req.on('end', () => { reports.push(body); res.statusCode = 204; res.end(); });
      return true;
    },
    '/favicon.ico': (req, res) => { res.statusCode = 204; res.end(); return true; },
    [PAGE]: dir,
    '/vendor/attnlens/web/src/': join(root, 'web/src'),
    '/vendor/attnlens/dist/wasm/': join(root, 'dist/wasm'),
    '/models/stories260K/': stories.dir,
    '/models/kjv-gpt2/': kjv.dir,
    // the package's bundled dependency, where an installed package has it
    '/vendor/attnlens/node_modules/@huggingface/jinja/': join(root, 'node_modules/@huggingface/jinja'),
    '/fixtures/chat/': join(root, 'tests/fixtures/chat'),
  }, { headers: { 'Content-Security-Policy': CSP, 'Cache-Control': 'no-store' } });
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await server?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test('strict CSP, nested page path: in-thread and worker mode load, generate, stream and read attention', { skip: missing, timeout: 120_000 }, async (t) => {
  const { page, logs } = browser;
  const r = await appResult(browser, server.url(`${PAGE}index.html`), { page });
  t.diagnostic(`engine: ${r.engine.simd}; thread text ${JSON.stringify(r.thread.text)}; worker text ${JSON.stringify(r.worker.text)}`);

  for (const where of ['thread', 'worker']) {
    const x = r[where];
    assert.ok(x.text.length > 0, where);
    assert.equal(x.tokens.length, x.ids.length + 12, where);
    assert.deepEqual(x.logits[0], x.ids.length, where);
    assert.ok(x.isAttentions, where);
    assert.deepEqual(x.kinds, ['self']);
    assert.ok(Math.abs(x.rowSum - 1) < 1e-4, `${where}: attention row sums to ${x.rowSum}`);
    assert.equal(x.steps.length, 4);
    assert.equal(x.steps[0].queries, x.ids.length);
    assert.equal(x.steps[1].queries, 1);
    assert.equal(x.aborted.reason, 'aborted');
    assert.ok(x.aborted.tokens >= 3 && x.aborted.tokens <= 4, `${where}: ${x.aborted.tokens} tokens after abort`);
  }
  // Chat: the template rendered in the page and in the worker, the same conversation generated from.
  for (const where of ['chatThread', 'chatWorker']) {
    const c = r[where];
    assert.equal(c.text, '<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n', where);
    assert.equal(c.reason, 'eos', where);
    assert.match(c.raised, /: roles must alternate$/, where);
  }
  assert.deepEqual(r.chatWorker.tokens, r.chatThread.tokens);
  // The worker computes exactly what the page's thread computes.
  assert.equal(r.worker.text, r.thread.text);
  assert.deepEqual(r.worker.tokens, r.thread.tokens);
  assert.deepEqual(r.worker.row, r.thread.row);
  assert.equal(r.worker.disposed, true);
  assert.ok(r.worker.progressEvents >= 1);
  if (!noStories) assert.equal(r.thread.text, ', there was a little girl named Lily. She loved to play outsid'.slice(0, r.thread.text.length));
  // Progress: monotonic, ends at the total.
  for (let i = 1; i < r.progress.length; i++) assert.ok(r.progress[i].loaded >= r.progress[i - 1].loaded);
  assert.equal(r.progress.at(-1).loaded, r.progress.at(-1).total);

  // No CSP violation anywhere (reports are sent asynchronously: give them a moment).
  await page.waitForTimeout(500);
  assert.deepEqual(reports, [], `CSP violations:\n${reports.join('\n')}`);
  assert.deepEqual(unexpectedConsoleErrors(logs, server.requests), []);
  // The wasm and the worker were fetched from where the package is, not from the page's folder.
  const paths = server.requests.map((q) => q.path);
  assert.ok(paths.includes('/vendor/attnlens/dist/wasm/attnlens-relaxed.wasm'));  // Chromium runs relaxed SIMD
  assert.ok(paths.includes('/vendor/attnlens/web/src/worker.mjs'));
  assert.ok(paths.includes('/vendor/attnlens/node_modules/@huggingface/jinja/dist/index.js'));
  assert.ok(!paths.some((p) => p.startsWith(PAGE) && /attnlens(-relaxed)?\.wasm|worker\.mjs/.test(p)));
});

test('the control page breaks the policy and is reported (the detection works)', { skip: missing, timeout: 60_000 }, async () => {
  const page = await browser.ctx.newPage();
  const before = reports.length;
  await page.goto(server.url(`${PAGE}control.html`));
  await page.waitForFunction(() => window.__control !== undefined);
  assert.equal(await page.evaluate(() => window.__control), 'EvalError');
  for (let i = 0; i < 50 && reports.length === before; i++) await page.waitForTimeout(100);
  assert.ok(reports.length > before, 'no report for an eval');
  assert.match(reports.slice(before).join('\n'), /unsafe-eval|script-src/);
  reports.length = before;  // expected, not a failure of the package
  await page.close();
});

test('cache: true — a second load works with the browser offline, from Cache Storage', { skip: missing, timeout: 90_000 }, async () => {
  const { ctx, page } = browser;
  const first = await page.evaluate(() => window.__cacheLoad());
  assert.equal(first.error, undefined, first.error);
  assert.ok(first.cached.length >= 1, 'files in Cache Storage');
  const modelRequests = () => server.requests.filter((q) => q.path.startsWith('/models/')).length;
  const before = modelRequests();
  await ctx.setOffline(true);
  try {
    const second = await page.evaluate(() => window.__cacheLoad());
    assert.equal(second.error, undefined, second.error);
    assert.equal(second.text, first.text);
    assert.equal(second.last.loaded, second.last.total, 'progress from the cache knows its total');
  } finally {
    await ctx.setOffline(false);
  }
  assert.equal(modelRequests(), before, 'the offline load did not reach the server');
  // And without cache: true, offline fails (the control).
  await ctx.setOffline(true);
  try {
    const noCache = await page.evaluate(async () => {
      const { loadModel } = await import('/vendor/attnlens/web/src/index.mjs');
      return loadModel(window.__model ?? '/models/stories260K/stories260K.bin').then(() => 'loaded', (e) => e.message);
    });
    assert.match(noCache, /failed/i);
  } finally {
    await ctx.setOffline(false);
  }
});

test('a Hugging Face folder URL (kjv-gpt2), relative to the page, in worker mode', { skip: missing || noKjv, timeout: 90_000 }, async () => {
  const { page, logs } = browser;
  const errorsBefore = logs.filter((l) => l.type === 'error').length;
  const r = await page.evaluate(async () => {
    const { loadModel } = await import('/vendor/attnlens/web/src/index.mjs');
    const m = await loadModel('../../../../models/kjv-gpt2/', { worker: true });
    try {
      const g = await m.generate('And God said', { maxNewTokens: 8, temperature: 0 });
      const f = await m.forward((await m.tokenize('In the beginning')).ids, { attentions: { layers: [0] } });
      return { arch: m.info.architecture, tokens: g.tokens.length - g.promptTokens, reason: g.finishReason, queries: f.attentions.layer(0).queries };
    } finally {
      await m.dispose();
    }
  });
  assert.equal(r.arch, 'gpt2');
  assert.ok(r.tokens >= 1 && r.tokens <= 8);
  assert.ok(r.queries >= 2);
  assert.equal(logs.filter((l) => l.type === 'error').length, errorsBefore);
  await page.waitForTimeout(300);
  assert.deepEqual(reports, []);
});
