// The engine's .wasm in headless Chromium: asked for beside its glue (web/src/wasm.mjs compileBuild),
// once per load. A server that fails the first request for it (503) makes the first loadModel fail
// with a FetchError naming that URL and status — one request, not a second try behind the caller's
// back — and the next loadModel, the file back, downloads it again and runs.
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

const APP = `
import { loadModel, FetchError } from '/vendor/attnlens/web/src/index.mjs';
const out = {};
try {
  try {
    await loadModel('/models/kjv-gpt2/');
    out.first = { loaded: true };
  } catch (e) {
    out.first = { name: e.name, message: e.message, status: e.status, url: e.url, fetchError: e instanceof FetchError };
  }
  const model = await loadModel('/models/kjv-gpt2/');
  const g = await model.generate('And God said', { maxNewTokens: 4, temperature: 0 });
  out.second = g.tokens.length - g.promptTokens;
  await model.dispose();
} catch (e) {
  out.error = String(e && e.stack || e);
}
window.__result = out;
`;

let browser;
let server;
let dir;
let failed = null;  // the path of the one request answered 503

before(async () => {
  if (missing) return;
  dir = mkdtempSync(join(tmpdir(), 'attnlens-engine-download-'));
  writeAppPage(dir, APP);
  const failFirstWasm = (req, res, path) => {
    if (failed || !path.endsWith('.wasm')) return false;
    failed = path;
    res.statusCode = 503;
    res.end('busy');
    return true;
  };
  server = await serve({ ...packageRoutes(dir, root), '/vendor/attnlens/dist/wasm/attnlens': failFirstWasm, '/models/kjv-gpt2/': kjv.dir },
    { headers: { 'Cache-Control': 'no-store' } });
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await server?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test('a failed download of the engine fails that load once, by URL and status; the next load downloads it again and runs', { skip: missing, timeout: 120_000 }, async () => {
  const r = await appResult(browser, server.url('/app/index.html'));
  assert.ok(failed, 'no .wasm was requested');
  assert.equal(r.first.fetchError, true, JSON.stringify(r.first));
  assert.equal(r.first.status, 503);
  assert.ok(r.first.url.endsWith(failed), `${r.first.url} is not ${failed}`);
  assert.match(r.first.message, /503/);
  assert.equal(r.second, 4);
  // the first load asked once (and failed), the second once (and ran)
  const asked = server.requests.filter((q) => q.path === failed).map((q) => q.status);
  assert.deepEqual(asked, [503, 200]);
  const logs = unexpectedConsoleErrors(browser.logs, server.requests).filter((l) => !/status of 503/.test(l.text));
  assert.deepEqual(logs, []);
});
