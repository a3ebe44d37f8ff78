// Relaxed SIMD in headless Chromium (which runs it: Chrome 114+). A cross-origin isolated page loads
// the relaxed-SIMD pthreads build by itself ("auto") and, asked for `simd: 'portable'`, the portable
// one; a model in a Worker gets the variant its load asked for, whatever the page's engine runs.
// The portable build in Chromium computes the bits it computes in Node (this process: Node 20 runs
// the portable build); the relaxed build's logits and attention are within float rounding of them,
// and its greedy tokens the same.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { appResult, chromiumMissing, launch } from '../js/fixtures/chromium.mjs';
import { kjv, noKjv, root, web } from '../js/fixtures/models.mjs';
import { packageRoutes, serve, unexpectedConsoleErrors, writeAppPage } from '../js/fixtures/server.mjs';

const missing = (await chromiumMissing()) || noKjv;
if (missing) console.log(`SKIPPED: ${missing}`);

const PROMPT = 'And God said, Let there be light: and there was light.';
const APP = `
import { loadModel, engineInfo } from '/vendor/attnlens/web/src/index.mjs';
const b64 = (a) => { let s = ''; const u = new Uint8Array(a.buffer, a.byteOffset, a.byteLength); for (let i = 0; i < u.length; i++) s += String.fromCharCode(u[i]); return btoa(s); };
const simd = new URLSearchParams(location.search).get('simd') ?? undefined;
const workerSimd = new URLSearchParams(location.search).get('worker') ?? undefined;
async function exercise(model) {
  const { ids } = await model.tokenize(${JSON.stringify(PROMPT)});
  const f = await model.forward(ids, { attentions: true });
  const g = await model.generate('And God said', { maxNewTokens: 24, temperature: 0 });
  return { logits: b64(f.logits), attention: b64(f.attentions.records.at(-1).data), tokens: g.tokens };
}
const out = {};
try {
  const here = await loadModel('/models/kjv-gpt2/', { threads: 2, simd });
  out.engine = await engineInfo();
  out.thread = await exercise(here);
  try { await loadModel('/models/kjv-gpt2/', { simd: out.engine.relaxedSimd ? 'portable' : 'relaxed' }); } catch (e) { out.refused = e.message; }
  await here.dispose();
  const inWorker = await loadModel('/models/kjv-gpt2/', { threads: 2, worker: true, simd: workerSimd });
  out.worker = await exercise(inWorker);
  out.worker.engine = await inWorker.engineInfo();
  await inWorker.dispose();
} catch (e) {
  out.error = String(e && e.stack || e);
}
window.__result = out;
`;

let browser;
let server;
let dir;

before(async () => {
  if (missing) return;
  dir = mkdtempSync(join(tmpdir(), 'attnlens-relaxed-'));
  writeAppPage(dir, APP);
  server = await serve({ ...packageRoutes(dir, root), '/models/kjv-gpt2/': kjv.dir }, { headers: { 'Cache-Control': 'no-store', 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' } });
  browser = await launch();
});

after(async () => {
  await browser?.close();
  await server?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const run = (query) => appResult(browser, server.url(`/app/index.html?${query}`));

const floats = (b64) => { const b = Buffer.from(b64, 'base64'); return new Float32Array(b.buffer, b.byteOffset, b.byteLength / 4); };

test('Chromium runs the relaxed-SIMD build by itself, the portable one when asked; portable = Node\'s bits, relaxed within float rounding', { skip: missing, timeout: 240_000 }, async (t) => {
  // The reference: the portable build in this Node process.
  const { loadModel, engineInfo } = await import(web);
  const node = await loadModel(kjv.dir, { threads: 1 });
  assert.equal((await engineInfo()).relaxedSimd, false, 'Node 20 without --experimental-wasm-relaxed-simd runs the portable build');
  const { ids } = await node.tokenize(PROMPT);
  const ref = await node.forward(ids, { attentions: true });
  const refTokens = (await node.generate('And God said', { maxNewTokens: 24, temperature: 0 })).tokens;
  const refAttention = ref.attentions.records.at(-1).data;
  await node.dispose();

  const auto = await run('worker=portable');
  const portable = await run('simd=portable&worker=relaxed');
  t.diagnostic(`auto: ${JSON.stringify(auto.engine)}; simd=portable: ${JSON.stringify(portable.engine)}`);
  assert.equal(auto.engine.relaxedSimd, true);
  assert.equal(auto.engine.simd, 'sse4.1+relaxed');
  assert.equal(auto.engine.build, 'threads');
  assert.equal(portable.engine.relaxedSimd, false);
  assert.equal(portable.engine.simd, 'sse4.1');
  // The worker's engine is the one its load asked for, not the page's.
  assert.equal(auto.worker.engine.relaxedSimd, false);
  assert.equal(portable.worker.engine.relaxedSimd, true);
  // The page's engine is decided: the other variant is refused by name.
  assert.match(auto.refused, /simd: "portable" was asked for, but this thread's engine already runs the relaxed build/);
  assert.match(portable.refused, /simd: "relaxed" was asked for, but this thread's engine already runs the portable build/);

  // Portable: the bits of Node's run, in the page and in the worker.
  for (const r of [portable.thread, auto.worker]) {
    assert.deepEqual(floats(r.logits), ref.logits);
    assert.deepEqual(floats(r.attention), refAttention);
    assert.deepEqual(r.tokens, refTokens);
  }
  // Relaxed: within float rounding (tests/js/wasm-relaxed.test.mjs has the same bounds), in the page and in the worker.
  const scale = Math.max(...ref.logits.map(Math.abs));
  for (const r of [auto.thread, portable.worker]) {
    const l = floats(r.logits), a = floats(r.attention);
    let dl = 0, same = 0, da = 0;
    l.forEach((v, i) => { dl = Math.max(dl, Math.abs(v - ref.logits[i])); if (v === ref.logits[i]) same++; });
    a.forEach((v, i) => { da = Math.max(da, Math.abs(v - refAttention[i])); });
    t.diagnostic(`relaxed: logits max |Δ| ${dl.toExponential(2)} (max |logit| ${scale.toFixed(2)}), ${same}/${l.length} bit-equal; attention max |Δ| ${da.toExponential(2)}`);
    assert.ok(dl <= 1e-5 * scale, `logits differ by ${dl}`);
    assert.ok(da <= 1e-5, `attention differs by ${da}`);
    assert.deepEqual(r.tokens, refTokens);
  }
  // Both variants of the threads build came from the package's folder.
  const paths = server.requests.map((q) => q.path);
  for (const f of ['attnlens-mt-relaxed.wasm', 'attnlens-mt-relaxed.worker.js', 'attnlens-mt.wasm', 'attnlens-mt.worker.js'])
    assert.ok(paths.includes(`/vendor/attnlens/dist/wasm/${f}`), `${f} not fetched: ${paths.join(' ')}`);
  assert.deepEqual(unexpectedConsoleErrors(browser.logs, server.requests), []);
});
