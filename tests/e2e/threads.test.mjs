// Threads in headless Chromium. A page served with COOP/COEP (cross-origin isolated) and the strict
// CSP of package_csp.test.mjs loads the pthreads build by itself, runs a model with 2 threads in
// its own thread and with 2 threads in worker mode (engineInfo(), asked right after the load, waits
// for the threads the model did not wait for); the same page without COOP/COEP loads the
// single-thread build (threads requested, 1 given). All three compute the same bits (logits,
// attention rows, tokens), and no CSP violation or error happens.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { appResult, chromiumMissing, launch } from '../js/fixtures/chromium.mjs';
import { kjv, noKjv, root } from '../js/fixtures/models.mjs';
import { packageRoutes, serve, unexpectedConsoleErrors, writeAppPage } from '../js/fixtures/server.mjs';

const missing = (await chromiumMissing()) || noKjv;
if (missing) console.log(`SKIPPED: ${missing}`);

const CSP = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; object-src 'none'; base-uri 'none'; report-uri /__csp-report";
const ISOLATED = {
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Embedder-Policy': 'require-corp',
};

const APP = `
import { loadModel, engineInfo } from '/vendor/attnlens/web/src/index.mjs';
const b64 = (a) => { let s = ''; const u = new Uint8Array(a.buffer, a.byteOffset, a.byteLength); for (let i = 0; i < u.length; i++) s += String.fromCharCode(u[i]); return btoa(s); };
async function exercise(model) {
  const { ids } = await model.tokenize('And God said, Let there be light');
  const f = await model.forward(ids, { attentions: true });
  const g = await model.generate(ids, { maxNewTokens: 16, temperature: 0 });
  const rows = [];
  for await (const s of model.stream(ids, { maxNewTokens: 6, temperature: 0, attentions: true }))
    rows.push(s.attentions.records.map((r) => b64(r.data)));
  return { threads: model.info.threads, logits: b64(f.logits), attention: f.attentions.records.map((r) => b64(r.data)),
           tokens: g.tokens, rows };
}
const out = {};
try {
  out.isolated = self.crossOriginIsolated;
  out.engine = await engineInfo();
  const here = await loadModel('/models/kjv-gpt2/', { threads: 2 });
  // The model does not wait for its threads' Workers (its first pass may run on fewer); engineInfo() does.
  const first = await here.forward((await here.tokenize('And God said, Let there be light')).ids);
  out.firstLogits = b64(first.logits);
  out.startedAfterLoad = (await engineInfo()).threads;
  out.thread = await exercise(here);
  await here.dispose();
  const inWorker = await loadModel('/models/kjv-gpt2/', { threads: 2, worker: true });
  out.worker = await exercise(inWorker);
  out.worker.engine = await inWorker.engineInfo();
  await inWorker.dispose();
} catch (e) {
  out.error = String(e && e.stack || e);
}
window.__result = out;
`;

let browser;
let servers = [];
let dir;
const reports = [];

async function start(headers) {
  const server = await serve({
    '/__csp-report': (req, res) => {
      let body = '';
      req.on('data', (c) => { body += c; });
      req.on('end', () => { reports.push(body); res.statusCode = 204; res.end(); });
      return true;
    },
    ...packageRoutes(dir, root),
    '/models/kjv-gpt2/': kjv.dir,
  }, { headers: { 'Content-Security-Policy': CSP, 'Cache-Control': 'no-store', ...headers } });
  servers.push(server);
  return server;
}

const run = (server) => appResult(browser, server.url('/app/index.html'));

before(async () => {
  if (missing) return;
  dir = mkdtempSync(join(tmpdir(), 'attnlens-threads-'));
  writeAppPage(dir, APP);
  browser = await launch();
});

after(async () => {
  await browser?.close();
  for (const s of servers) await s.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test('cross-origin isolated page: the pthreads build, 2 threads in the page and in worker mode; without isolation the single build; same bits', { skip: missing, timeout: 180_000 }, async (t) => {
  const isolated = await start(ISOLATED);
  const plain = await start({});
  const mt = await run(isolated);
  const st = await run(plain);
  t.diagnostic(`isolated: ${JSON.stringify(mt.engine)}; not isolated: ${JSON.stringify(st.engine)}`);

  assert.equal(mt.isolated, true);
  assert.equal(mt.engine.build, 'threads');
  assert.equal(mt.thread.threads, 2);
  assert.equal(mt.startedAfterLoad, 2);
  assert.equal(mt.worker.threads, 2);
  assert.equal(mt.worker.engine.build, 'threads');
  assert.ok(mt.worker.engine.threads >= 2);
  assert.equal(st.isolated, false);
  assert.equal(st.engine.build, 'single');
  assert.equal(st.thread.threads, 1);
  assert.equal(st.startedAfterLoad, 1);
  assert.equal(st.worker.threads, 1);
  assert.equal(st.worker.engine.build, 'single');

  assert.equal(mt.firstLogits, mt.thread.logits);
  assert.equal(st.firstLogits, mt.thread.logits);
  for (const r of [mt.worker, st.thread, st.worker]) {
    assert.equal(r.logits, mt.thread.logits);
    assert.deepEqual(r.attention, mt.thread.attention);
    assert.deepEqual(r.tokens, mt.thread.tokens);
    assert.deepEqual(r.rows, mt.thread.rows);
  }

  // Chromium runs relaxed SIMD: every build it loaded is the relaxed twin (tests/e2e/relaxed.test.mjs
  // compares it with the portable one).
  for (const e of [mt.engine, mt.worker.engine, st.engine, st.worker.engine]) assert.equal(e.relaxedSimd, true);
  // The pthread workers came from the package's folder (the glue is found by the same URL).
  const paths = servers[0].requests.map((q) => q.path);
  assert.ok(paths.includes('/vendor/attnlens/dist/wasm/attnlens-mt-relaxed.worker.js'), paths.join(' '));
  assert.ok(paths.includes('/vendor/attnlens/dist/wasm/attnlens-mt-relaxed.wasm'));
  assert.ok(!servers[1].requests.some((q) => q.path.includes('attnlens-mt')), 'the plain page fetched the threads build');

  await new Promise((r) => setTimeout(r, 500));  // CSP reports arrive asynchronously
  assert.deepEqual(reports, [], `CSP violations:\n${reports.join('\n')}`);
  assert.deepEqual(unexpectedConsoleErrors(browser.logs, ...servers.map((s) => s.requests)), []);
});
