// The package through a bundler: a tiny app that imports 'attnlens' (installed from `npm pack`'s
// tarball) is built by `vite build` with no configuration at all, served under a strict CSP, and
// run in headless Chromium: it loads a model in its thread and in worker mode (Vite bundles
// worker.mjs from `new Worker(new URL('./worker.mjs', import.meta.url), { type: 'module' })` and
// copies the wasm and its glue as assets), generates, and renders a chat template (the package's
// bundled @huggingface/jinja, imported by a relative path, bundled in the page and in the worker).
// Both builds' files are assets; the same app served with COOP/COEP runs the pthreads build with 2
// threads (its pthread Worker script an asset of its own, not inlined) and computes the same text.
// Skips when vite is not installed
// (npm install --no-save vite@7, or as a devDependency).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { appResult, chromiumMissing, launch } from '../js/fixtures/chromium.mjs';
import { kjv, noKjv, noStories, root, stories } from '../js/fixtures/models.mjs';
import { serve, unexpectedConsoleErrors } from '../js/fixtures/server.mjs';

const vite = join(root, 'node_modules', 'vite', 'bin', 'vite.js');
const missing = (!existsSync(vite) && 'vite is not installed (npm install --no-save vite@7, or add vite@7 to devDependencies)')
  || (!existsSync(join(root, 'dist/wasm/attnlens.wasm')) && 'dist/wasm is not built')
  || (await chromiumMissing())
  || (noStories && noKjv && 'no model: neither ../shared stories260K nor models/kjv-gpt2');
if (missing) console.log(`SKIPPED: ${missing}`);

const MODEL = noStories ? { src: '/models/kjv-gpt2/', prompt: 'And God said' }
  : { src: ['/models/stories260K/stories260K.bin', '/models/stories260K/tok512.bin'], prompt: 'Once upon a time' };
const CSP = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; object-src 'none'; base-uri 'none'; report-uri /__csp-report";

const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
const noWorkerExport = !pkg.exports?.['./worker'] && 'package.json has no "./worker" export (attnlens/worker) yet';

let dir;
let dir2;
let server;
let isolated;  // the same app, cross-origin isolated
let browser;
const reports = [];
const run = (cmd, args, cwd) => execFileSync(cmd, args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 180_000 });

// A Vite app in a new folder: the packed tarball installed, index.html + main.js, `vite build`.
function buildApp(tarball, main, args = []) {
  const app = mkdtempSync(join(tmpdir(), 'attnlens-vite-'));
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'vite-app', private: true, type: 'module' }));
  run('npm', ['install', '--offline', '--no-audit', '--no-fund', '--ignore-scripts', tarball], app);
  writeFileSync(join(app, 'index.html'), `<!doctype html><html><head><meta charset="utf-8"><link rel="icon" href="/favicon.ico">
<script type="module" src="./main.js"></script></head><body></body></html>`);
  writeFileSync(join(app, 'main.js'), main);
  // No vite.config: the defaults must do.
  run(process.execPath, [vite, 'build', '--logLevel', 'warn', ...args], app);
  return app;
}

before(async () => {
  if (missing) return;
  const packDir = mkdtempSync(join(tmpdir(), 'attnlens-pack-'));
  const out = JSON.parse(run('npm', ['pack', '--json', '--ignore-scripts', '--pack-destination', packDir], root));
  const tarball = join(packDir, out[0].filename);
  dir = buildApp(tarball, `
import { loadModel, engineInfo } from 'attnlens';
const MODEL = ${JSON.stringify(MODEL)};
const out = {};
try {
  const here = await loadModel(MODEL.src, { threads: 2 });
  out.build = (await engineInfo()).build;
  out.threads = here.info.threads;
  out.thread = (await here.generate(MODEL.prompt, { maxNewTokens: 10, temperature: 0 })).text;
  const f = await here.forward((await here.tokenize(MODEL.prompt)).ids, { attentions: true });
  out.rowSum = f.attentions.row(0, 0, 1).reduce((a, b) => a + b, 0);
  const chat = [{ role: 'user', content: 'hi' }];
  const template = '<{{ messages[0].content | upper }}>';  // rendered by the bundled @huggingface/jinja
  out.chat = [await here.applyChatTemplate(chat, { template })];
  await here.dispose();
  const w = await loadModel(MODEL.src, { worker: true, threads: 2 });
  out.workerThreads = w.info.threads;
  const steps = [];
  for await (const s of w.stream(MODEL.prompt, { maxNewTokens: 10, temperature: 0, attentions: { layers: [0] } })) steps.push(s);
  out.worker = steps.map((s) => s.text).join('');
  out.workerAttention = steps.every((s) => s.attentions.layer(0).keys >= 1);
  out.chat.push(await w.applyChatTemplate(chat, { template }));
  await w.dispose();
} catch (e) {
  out.error = String(e && e.stack || e);
}
window.__result = out;
`);
  // The other way: a Worker the app creates itself from attnlens/worker (Vite's ?worker import).
  if (!noWorkerExport) {
    dir2 = buildApp(tarball, `
import { loadModel } from 'attnlens';
import AttnLensWorker from 'attnlens/worker?worker';
const MODEL = ${JSON.stringify(MODEL)};
const out = {};
try {
  const worker = new AttnLensWorker();
  const a = await loadModel(MODEL.src, { worker });
  const b = await loadModel(MODEL.src, { worker });
  out.texts = [(await a.generate(MODEL.prompt, { maxNewTokens: 10, temperature: 0 })).text, (await b.generate(MODEL.prompt, { maxNewTokens: 10, temperature: 0 })).text];
  await a.dispose();
  await b.dispose();
  worker.terminate();
} catch (e) {
  out.error = String(e && e.stack || e);
}
window.__result = out;
`, ['--base', '/own-worker/']);
  }
  rmSync(packDir, { recursive: true, force: true });
  server = await serve({
    '/__csp-report': (req, res) => { let b = ''; req.on('data', (c) => { b += c; }); req.on('end', () => { reports.push(b); res.statusCode = 204; res.end(); }); return true; },
    '/favicon.ico': (req, res) => { res.statusCode = 204; res.end(); return true; },
    '/models/stories260K/': stories.dir,
    '/models/kjv-gpt2/': kjv.dir,
    ...(dir2 ? { '/own-worker/': join(dir2, 'dist') } : {}),
    '/': join(dir, 'dist'),
  }, { headers: { 'Content-Security-Policy': CSP } });
  isolated = await serve({
    '/__csp-report': (req, res) => { let b = ''; req.on('data', (c) => { b += c; }); req.on('end', () => { reports.push(b); res.statusCode = 204; res.end(); }); return true; },
    '/favicon.ico': (req, res) => { res.statusCode = 204; res.end(); return true; },
    '/models/stories260K/': stories.dir,
    '/models/kjv-gpt2/': kjv.dir,
    '/': join(dir, 'dist'),
  }, { headers: { 'Content-Security-Policy': CSP, 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' } });
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await server?.close();
  await isolated?.close();
  for (const d of [dir, dir2]) if (d) rmSync(d, { recursive: true, force: true });
});

test('vite build (no config) of an app importing "attnlens": runs in Chromium under a strict CSP, in-thread and in a worker', { skip: missing, timeout: 240_000 }, async (t) => {
  const assets = readdirSync(join(dir, 'dist', 'assets'));
  t.diagnostic(`dist/assets: ${assets.join(', ')}`);
  assert.equal(assets.filter((a) => a.endsWith('.wasm')).length, 4, 'a wasm asset per build (single thread, pthreads, and their relaxed-SIMD twins)');
  assert.ok(assets.some((a) => /^worker-.*\.js$/.test(a)), 'a bundled worker');
  assert.ok(assets.some((a) => /^attnlens-mt\.worker-.*\.js$/.test(a)), 'the pthread worker script, as a file');
  assert.ok(assets.some((a) => /^attnlens-mt-relaxed\.worker-.*\.js$/.test(a)), 'the relaxed twin\'s pthread worker script, as a file');
  const { page, logs } = browser;
  const r = await appResult(browser, server.url('/index.html'), { page });
  assert.ok(r.thread.length > 0);
  assert.equal(r.worker, r.thread);
  assert.ok(Math.abs(r.rowSum - 1) < 1e-4);
  assert.ok(r.workerAttention);
  assert.deepEqual(r.chat, ['<HI>', '<HI>']);
  assert.equal(r.build, 'single');  // no COOP/COEP here
  assert.equal(r.threads, 1);

  // The same build, cross-origin isolated: the pthreads build with 2 threads, here and in the worker.
  const m = await appResult(browser, isolated.url('/index.html'));
  assert.equal(m.build, 'threads');
  assert.equal(m.threads, 2);
  assert.equal(m.workerThreads, 2);
  assert.equal(m.thread, r.thread);
  assert.equal(m.worker, r.worker);
  // Chromium runs relaxed SIMD: the relaxed twin's pthread worker (tests/e2e/relaxed.test.mjs).
  assert.ok(isolated.requests.some((q) => /^\/assets\/attnlens-mt-relaxed\.worker-.*\.js$/.test(q.path)), 'the pthread worker was fetched');

  await page.waitForTimeout(300);
  assert.deepEqual(reports, [], reports.join('\n'));
  assert.deepEqual(unexpectedConsoleErrors(logs, server.requests, isolated.requests), []);
});

test('vite: a Worker the app makes itself (import W from "attnlens/worker?worker"), two models in it', { skip: missing || noWorkerExport, timeout: 240_000 }, async () => {
  const r = await appResult(browser, server.url('/own-worker/index.html'));
  assert.equal(r.texts[0], r.texts[1]);
  assert.ok(r.texts[0].length > 0);
});
