#!/usr/bin/env node
// Time to first token in a real browser: headless Chromium (Debian's, driven by playwright-core) loads
// each built-in model from models/manifest.json through the package's own API, served by
// tools/serve.mjs with the strict CSP, and streams a generation. Reported per model, in a Web Worker
// (as the demo runs it) and in the page's thread:
//   cold   a fresh browser profile: fetch the files, compile the wasm, load the model, first token
//   warm   the same page again: the wasm module is compiled, the files come from the HTTP cache
// and the decode speed of the rest of the generation. These rows run in Chromium with no DevTools
// client attached (rawChromium below): Playwright's attached DevTools made the first large fetch of a
// page up to 2× slower (8.9 MB: 527 ms against 244, bench/README.md), which no user's page pays. The
// page is cross-origin isolated (tools/serve.mjs sends COOP/COEP), so it runs the pthreads build with
// its default threads, as the demo does.
// Then a ~100 MB Q4_K_M GGUF (random weights, 150M parameters: dim 1024, 9 layers; made once in the
// bench cache with the peers' mkgguf.py and llama.cpp's quantizer) is fetched into an ArrayBuffer
// first, and the clock starts only then: loadModel(buffer) → first streamed token (issue 14 item 5:
// < 1.5 s). Then streaming in the demo page beside stream() in Node (issue 15: the page's rate should be
// ≥ 90% of Node's on the same machine): the page (web/demo, engine in its Web Worker, attention
// capture and top-5 predictions on, every row drawn; framed in a page of the bench in Chromium
// without DevTools, driven through its own controls) generates N tokens; its rate is taken as the
// tokens arrive in the page; Node runs model.stream() with the same options in this process, in
// the calling thread, before and after the page (the mean of both runs is the reference); both engines'
// own decode rates are printed too (result.timings), and the page's rate against its engine's. After
// each page run the same generation goes through the API straight on the demo's model (its worker):
// the demo's engine rate against that one, both in one page, is what the demo itself costs the
// engine, without the drift between two processes (Node's rate moved ±10 points between
// invocations). The target is judged on both ratios, page / Node as the tokens arrive and the engine
// in the page / in Node: a page whose main thread is busy when the first token comes in receives it
// late and the next ones together, which raises its arrival rate above its engine's (kjv-gpt2's 100
// tokens take ~0.1 s: 103-119% of its engine), so a costlier first frame scored better on arrival
// alone. Models: kjv-gpt2 (built in) and, when the llama.cpp peers are set up, their 42M q8_0 GGUF
// loaded by URL.
// A benchmark, not a test: nothing fails.
//   node bench/browser.mjs [--json FILE] [--only start|stream] [--repeat N] [--warm-s S]
import { execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readlinkSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { cacheDir, findPeers, peersDir } from './peers.mjs';
import { median } from './stats.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const shared = process.env.ATTNLENS_SHARED ?? join(root, '..', 'shared');
const { CHROMIUM, CHROMIUM_ARGS, STRICT_CSP, browserUnavailable, launchBrowser, startServer } = await import('../tests/e2e/helpers.mjs');
const { staticHandler } = await import('../tools/serve.mjs');

// The repository as tools/serve.mjs serves it, and files from outside it (the bench cache, the
// peers' models) under /bench-cache/NAME, from the same origin (the page is cross-origin isolated).
// page.route() handed a 97 MB file to Chromium through the DevTools protocol, which closed the page.
// The demo's CSP says frame-ancestors 'none'; here it is 'self', so that the streaming rows can frame
// it in a page of the bench (demoStreams). Nothing else of the policy changes.
async function startBenchServer(files = {}) {
  const csp = STRICT_CSP.replace("frame-ancestors 'none'", "frame-ancestors 'self'");
  if (csp === STRICT_CSP) throw new Error("tools/serve.mjs's CSP has no frame-ancestors 'none' to relax for the bench");
  const server = await startServer({ port: 0, headers: { 'Content-Security-Policy': csp } });
  const repo = server.server.listeners('request')[0];
  const outside = new Map(Object.entries(files).map(([name, path]) => [name, staticHandler({ root: dirname(path), index: '/' })]));
  server.server.removeAllListeners('request');
  server.rawRuns = new Map();  // run id → { script, done, call } (rawChromium)
  server.server.on('request', (req, res) => {
    const raw = /^\/bench-raw\/(\d+)\/(page\.html|page\.mjs|report|call)$/.exec(req.url);
    if (raw) return rawRoute(server, raw[1], raw[2], req, res);
    const m = /^\/bench-cache\/([^/?]+)/.exec(req.url);
    const name = m && decodeURIComponent(m[1]);
    if (!outside.has(name)) return repo(req, res);
    req.url = '/' + basename(files[name]);
    return outside.get(name)(req, res);
  });
  return server;
}

// ---- Chromium without DevTools: a page of the bench server runs a function and POSTs its result ----
const RAW_HEADERS = {
  'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp',
  'Cross-Origin-Resource-Policy': 'same-origin', 'Cache-Control': 'no-store',
};

function rawRoute(server, id, what, req, res) {
  const run = server.rawRuns.get(id);
  if (!run) {
    res.writeHead(404);
    return res.end();
  }
  if (what === 'page.html') {
    res.writeHead(200, { ...RAW_HEADERS, 'Content-Type': 'text/html; charset=utf-8' });
    return res.end(`<!doctype html><script type="module" src="/bench-raw/${id}/page.mjs"></script>`);
  }
  if (what === 'page.mjs') {
    res.writeHead(200, { ...RAW_HEADERS, 'Content-Type': 'text/javascript; charset=utf-8' });
    return res.end(run.script);
  }
  let body = '';
  req.on('data', (d) => { body += d; });
  req.on('end', async () => {
    if (what === 'report') {
      res.writeHead(204, RAW_HEADERS);
      res.end();
      return run.done(JSON.parse(body));
    }
    // call: the page asks this process to run run.call(arg) and waits for its result
    let out;
    try {
      out = await run.call(JSON.parse(body));
    } catch (e) {
      out = { error: String(e?.stack ?? e) };
    }
    res.writeHead(200, { ...RAW_HEADERS, 'Content-Type': 'application/json' });
    res.end(JSON.stringify(out));
  });
}

let rawIds = 0;
// Runs `fn(arg, call)` for each arg in turn in one page of a fresh Chromium profile with no DevTools
// client (Chromium as a user starts it, headless, 1280 × 800), and resolves with their results. A
// failure in the page comes back as { error }. `call(x)` in the page resolves with this process's
// `call(x)` (a POST to the bench server), so a page can alternate its runs with runs in Node.
function rawChromium(server, fn, args, { timeoutMs = 120_000, call = null } = {}) {
  const id = String(++rawIds);
  const script = `const fn = ${fn.toString()};\n` +
    `const call = async (x) => (await fetch('/bench-raw/${id}/call', { method: 'POST', body: JSON.stringify(x) })).json();\n` +
    `const out = [];\ntry {\n  for (const a of ${JSON.stringify(args)}) out.push(await fn(a, call));\n} catch (e) {\n  out.push({ error: String(e && e.stack || e) });\n}\n` +
    `await fetch('/bench-raw/${id}/report', { method: 'POST', body: JSON.stringify(out) });\n`;
  const profile = mkdtempSync(join(tmpdir(), 'attnlens-bench-chromium-'));
  let child, timer;
  return new Promise((resolve, reject) => {
    server.rawRuns.set(id, { script, done: resolve, call });
    child = spawn(CHROMIUM, [...CHROMIUM_ARGS, '--window-size=1280,800', `--user-data-dir=${profile}`, `${server.url}/bench-raw/${id}/page.html`], { stdio: 'ignore', detached: true });
    child.on('error', reject);
    timer = setTimeout(() => reject(new Error(`the page did not report within ${timeoutMs / 1000} s`)), timeoutMs);
  }).finally(async () => {
    clearTimeout(timer);
    server.rawRuns.delete(id);
    await stopChromium(child, profile);
  });
}

// Stops a Chromium started on `profile` (detached: its own process group, helpers included) and
// removes the profile, and the folder of its singleton socket too (Chromium makes it in the system's
// temporary folder, linked from the profile, and leaves it there when it is killed). What is left of
// the group after 3 s is killed, so that nothing writes into the profile while it is removed.
async function stopChromium(child, profile) {
  const signal = (sig) => {
    try {
      process.kill(-child.pid, sig);
    } catch {}  // already gone
  };
  if (child?.pid && child.exitCode === null && child.signalCode === null) {
    const exited = new Promise((r) => child.once('exit', r));
    signal('SIGTERM');
    await Promise.race([exited, new Promise((r) => setTimeout(r, 3000))]);
    signal('SIGKILL');  // what is left of the group: helpers, or a browser still shutting down
    await Promise.race([exited, new Promise((r) => setTimeout(r, 1000))]);
  }
  try {
    const socketDir = dirname(readlinkSync(join(profile, 'SingletonSocket')));
    if (basename(socketDir).startsWith('org.chromium.Chromium.')) rmSync(socketDir, { recursive: true, force: true });
  } catch {}  // no socket: Chromium did not get that far
  try {
    rmSync(profile, { recursive: true, force: true, maxRetries: 20, retryDelay: 100 });
  } catch (e) {
    console.warn(`[bench] could not remove the profile ${profile}: ${e.message}`);
  }
}

if (!['attnlens.wasm', 'attnlens-mt.wasm'].every((f) => existsSync(join(root, 'dist/wasm', f)))) (await import('../tools/build.mjs')).buildModules();
const why = await browserUnavailable();
if (why) {
  console.log(`browser benchmark skipped: ${why}`);
  process.exit(0);
}
const manifest = JSON.parse(readFileSync(join(root, 'models/manifest.json'), 'utf8'));
const onlyAt = process.argv.indexOf('--only');
const only = onlyAt > 0 ? process.argv[onlyAt + 1] : null;
const repeatAt = process.argv.indexOf('--repeat');
const repeat = repeatAt > 0 ? Number(process.argv[repeatAt + 1]) : 2;
const warmAt = process.argv.indexOf('--warm-s');
const WARM_S = warmAt > 0 ? Number(process.argv[warmAt + 1]) : 10;  // untimed streaming before the streaming rows

// Runs in the page: load, stream 32 tokens, time each phase.
async function measure({ url, prompt, worker }) {
  const t0 = performance.now();
  const { loadModel } = await import('/web/src/index.mjs');
  const tImported = performance.now();
  const model = await loadModel(url, { worker });
  const tLoaded = performance.now();
  let tFirst;
  let n = 0;
  for await (const step of model.stream(prompt, { maxNewTokens: 32, temperature: 0 })) {
    if (tFirst === undefined) tFirst = performance.now();
    n += step.text !== undefined;
  }
  const tEnd = performance.now();
  // Asked only now: engineInfo() waits for threads still starting, which the model does not.
  const { engineInfo } = await import('/web/src/index.mjs');
  const engine = worker ? await model.engineInfo() : await engineInfo();
  await model.dispose();
  return {
    importMs: tImported - t0,
    loadMs: tLoaded - t0,
    firstTokenMs: tFirst - t0,
    decodeTokPerS: n > 1 ? ((n - 1) * 1000) / (tEnd - tFirst) : 0,
    build: engine.build,
    threads: model.info.threads,
  };
}

// Runs in the page: the file's bytes first (not timed), then loadModel(bytes) → first token.
async function fromBytes({ url, worker }) {
  const bytes = await (await fetch(url)).arrayBuffer();
  const size = bytes.byteLength;  // (a worker load transfers the buffer: it is empty afterwards)
  const { loadModel } = await import('/web/src/index.mjs');
  const t0 = performance.now();
  const model = await loadModel([{ name: 'model.gguf', data: bytes }], { worker });
  const tLoaded = performance.now();
  let tFirst;
  for await (const step of model.stream([1, 9038, 2501, 263, 931], { maxNewTokens: 8, temperature: 0 })) {
    if (tFirst === undefined) tFirst = performance.now();
    void step;
  }
  const threads = model.info.threads;
  await model.dispose();
  return { bytes: size, loadMs: tLoaded - t0, firstTokenMs: tFirst - t0, threads };
}

// ~100 MB of Q4_K_M: the 150M-parameter shape below, random weights, in the bench cache (once).
function bigModel() {
  const out = join(cacheDir, 'rand150M-q4_k_m.gguf');
  if (existsSync(out)) return { path: out };
  const peers = findPeers({ shared, log: (m) => console.error(m) });
  if (peers.missing) return { missing: `llama.cpp peers not found (${peers.missing})` };
  mkdirSync(cacheDir, { recursive: true });
  const bin = join(cacheDir, 'rand150M.bin'), f32 = join(cacheDir, 'rand150M-f32.gguf');
  console.error(`[bench] making ${out} (once)`);
  if (!existsSync(bin)) {
    execFileSync('/usr/bin/python3', [join(shared, 'anchors', 'mkrand_unique.py'), bin + '.tmp', '1024', '2816', '9', '16', '16', '32000', '2048'], { stdio: 'inherit' });
    renameSync(bin + '.tmp', bin);
  }
  execFileSync('/usr/bin/python3', [join(peers.dir, 'mkgguf.py'), bin, join(shared, 'models', 'llama2-tokenizer', 'tokenizer.bin'), f32, 'f32'], { stdio: 'inherit' });
  execFileSync(join(peers.dir, 'quantize'), [f32, out, 'q4_k_m'], { stdio: ['ignore', 'ignore', 'inherit'] });
  return { path: out };
}

// ---- streaming: the demo page beside stream() in Node ---------------------------------------------

// Node: model.stream() with the demo's options, rate as the tokens arrive (first → last). The model
// is loaded once per case and kept, as the page keeps its own: a fresh model's first generation ran
// 5-10% slower (kjv-gpt2, 12 alternations, bench/README.md), which flattered the page.
async function nodeStream(model, { prompt, maxNewTokens, seed }) {
  let tFirst, tLast;
  let n = 0;
  const stream = model.stream(prompt, { attentions: true, predictions: 5, maxNewTokens, temperature: 0.8, topK: 40, topP: 1, seed });
  for await (const step of stream) {
    tLast = performance.now();
    if (tFirst === undefined) tFirst = tLast;
    n += step.token >= 0;
  }
  return { tokens: n, tokPerS: ((n - 1) * 1000) / (tLast - tFirst), engineTokPerS: stream.result.timings.tokensPerSecond, threads: model.info.threads };
}

// Runs in a page of rawChromium: the demo in a same-origin iframe filling the window (1280 × 800, as
// the e2e tests' viewport), driven through its own controls as a user would; Node's runs through
// `call`, alternated with the page's. The page's figures are the demo's own (run.stats): its rate as
// the tokens arrive, and the engine's.
async function demoStreams({ query, settings, warmS, repeat }, call) {
  const frame = document.createElement('iframe');
  frame.style.cssText = 'position:fixed;inset:0;width:100%;height:100%;border:0';
  document.body.style.margin = '0';
  document.body.append(frame);
  await new Promise((resolve) => { frame.onload = resolve; frame.src = `/web/demo/?${query}`; });
  const win = frame.contentWindow, doc = frame.contentDocument;
  const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
  for (const t0 = performance.now(); !(win.attnlens?.state.model && !doc.querySelector('#generate').disabled); await sleep(100)) {
    if (performance.now() - t0 > 600_000) throw new Error('the demo did not load its model in 600 s');
  }
  // A field is set (with the events a user's typing sends) only when its value changes, as a user
  // clicks Generate again without retyping: Chromium's autofill answers each change with a task that
  // forces a layout (2-4 ms on 2 cores, traced) some 20 ms later, inside a 100-token kjv-gpt2 run, on
  // a core the engine's threads need.
  const fill = (sel, value) => {
    const el = doc.querySelector(sel);
    if (el.value === value) return;
    el.value = value;
    el.dispatchEvent(new win.Event('input', { bubbles: true }));
    el.dispatchEvent(new win.Event('change', { bubbles: true }));
  };
  const { prompt, maxNewTokens, seed } = settings;
  async function pageRun() {
    fill('#prompt', prompt);
    fill('#max-tokens', String(maxNewTokens));
    fill('#seed', String(seed));
    fill('#temperature', '0.8');
    fill('#top-k', '40');
    fill('#top-p', '1');
    doc.querySelector('#generate').click();
    // polled every 100 ms: the status of the run, as the demo shows it
    while (!['done', 'stopped', 'error'].includes(doc.querySelector('#stats').dataset.status)) await sleep(100);
    const r = win.attnlens.state.run;
    if (r.status !== 'done') throw new Error(`the page's run ended ${r.status}: ${r.error?.message ?? r.finishReason}`);
    return { tokens: r.stats.generated, tokPerS: r.stats.tokensPerSecond, engineTokPerS: r.stats.engineTokensPerSecond, threads: win.attnlens.state.model.info.threads };
  }
  const nodeRun = async () => {
    const r = await call('node');
    if (r.error) throw new Error(r.error);
    return r;
  };
  // the same generation through the API, straight on the demo's model (its worker): what the engine
  // does in this page without the demo around it
  async function apiRun() {
    const api = win.attnlens.state.model.api;
    const { ids } = await api.encodePrompt(prompt);
    const stream = api.stream(ids, { attentions: true, predictions: 5, maxNewTokens, temperature: 0.8, topK: 40, topP: 1, seed });
    let n = 0;
    for await (const step of stream) n += step.token >= 0;
    return { tokens: n, engineTokPerS: stream.result.timings.tokensPerSecond };
  }
  // warm-ups (see streamRows), then alternated runs
  const firstPage = await pageRun();
  for (let t0 = performance.now(), i = 1; i < 3 || performance.now() - t0 < warmS * 1000; i++) await pageRun();
  const firstNode = await nodeRun();
  for (let t0 = performance.now(); performance.now() - t0 < warmS * 1000; ) await nodeRun();
  await apiRun();
  const node = [], page = [], api = [];
  for (let i = 0; i < repeat; i++) {
    node.push(await nodeRun());
    page.push(await pageRun());
    api.push(await apiRun());
  }
  node.push(await nodeRun());
  return { node, page, api, cold: { page: firstPage.tokPerS, node: firstNode.tokPerS } };
}

async function streamRows() {
  const out = [];
  const cases = [{ name: 'kjv-gpt2', node: join(root, 'models/kjv-gpt2'), query: 'model=kjv-gpt2', prompt: 'And God said', maxNewTokens: 100 }];
  const peers = peersDir(['models']);
  const q8 = peers && join(peers, 'models', 'rand42M-q8_0.gguf');
  if (q8 && existsSync(q8)) cases.push({ name: '42M q8_0 GGUF (by URL)', node: q8, file: q8, query: 'url=/bench-cache/rand42M-q8_0.gguf', prompt: 'Once upon a time', maxNewTokens: 64 });
  else out.push({ skipped: '42M q8_0 GGUF: the llama.cpp peers are not set up ($ATTNLENS_PEERS, ../shared/peers)' });
  const server = await startBenchServer(Object.fromEntries(cases.filter((c) => c.file).map((c) => [basename(c.file), c.file])));
  const { loadModel } = await import('../web/src/index.mjs');
  try {
    for (const c of cases) {
      const settings = { prompt: c.prompt, maxNewTokens: c.maxNewTokens, seed: 1 };
      // Warm-ups: V8 runs wasm in its baseline tier (Liftoff) first and tiers hot functions up in
      // the background, and the JS around it climbs its tiers too; in a worker that takes many
      // generations (kjv-gpt2 through model.stream() in a Node worker_threads Worker, 100 tokens
      // each: 502, 746, 682, 711, 779, 820, 1007, 984, 1173, 946, 1074, 1447 tok/s; in Chromium's
      // workers the same climb), in the calling thread fewer. As bench_models does, each side
      // generates untimed for WARM_S seconds (at least 3 runs in the page, 1 in Node) and the
      // table compares the engines warm; the first run of each is printed too.
      const model = await loadModel(c.node);
      let r;
      try {
        [r] = await rawChromium(server, demoStreams, [{ query: c.query, settings, warmS: WARM_S, repeat }],
          { timeoutMs: 1_800_000, call: () => nodeStream(model, settings) });
      } finally {
        await model.dispose();
      }
      if (r.error) throw new Error(`${c.name}: ${r.error}`);
      const { node, page, api } = r;
      c.cold = r.cold;
      out.push({ model: c.name, node, page, api, cold: c.cold });
    }
  } finally {
    await server.close();
  }
  return out;
}

const mean = (xs) => xs.reduce((a, b) => a + b, 0) / xs.length;
function printStream(rows) {
  console.log(`\nStreaming in the demo page (headless Chromium, engine in its Web Worker, attention + top-5 predictions) beside model.stream() in Node (same options, this thread); after ${WARM_S} s of untimed warm-up generations on each side, ${repeat} page runs alternated with ${repeat + 1} Node runs`);
  console.log('| model | tokens | threads (Node, page) | first run: Node, page | Node tok/s (runs) | page tok/s (runs) | engine tok/s: Node, page, API in the page | page / its engine | each page run / its two Node runs: median (range) | engine: demo / API in the page | page / Node | engine: page / Node | target: both ≥ 90% |');
  console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |');
  for (const r of rows) {
    if (r.skipped) {
      console.log(`| ${r.skipped} | | | | | | | | | | | | SKIPPED |`);
      continue;
    }
    // page run i ran between Node runs i and i + 1: its ratio to their mean follows the machine's drift
    const pairs = r.page.map((x, i) => x.tokPerS / mean([r.node[i].tokPerS, r.node[i + 1].tokPerS]));
    const pct = (x) => `${(100 * x).toFixed(0)}%`;
    const n = mean(r.node.map((x) => x.tokPerS)), p = mean(r.page.map((x) => x.tokPerS));
    const ne = mean(r.node.map((x) => x.engineTokPerS)), pe = mean(r.page.map((x) => x.engineTokPerS)), ae = mean(r.api.map((x) => x.engineTokPerS));
    console.log(`| ${r.model} | ${r.page[0].tokens} | ${r.node[0].threads}, ${r.page[0].threads} | ${r.cold.node.toFixed(0)}, ${r.cold.page.toFixed(0)} | ${n.toFixed(0)} (${r.node.map((x) => x.tokPerS.toFixed(0)).join(', ')}) | ` +
                `${p.toFixed(0)} (${r.page.map((x) => x.tokPerS.toFixed(0)).join(', ')}) | ` +
                `${ne.toFixed(0)}, ${pe.toFixed(0)}, ${ae.toFixed(0)} | ${pct(p / pe)} | ` +
                `${pct(median(pairs))} (${pct(Math.min(...pairs))}–${pct(Math.max(...pairs))}) | ${pct(pe / ae)} | ` +
                `${pct(p / n)} | ${pct(pe / ne)} | ${p >= 0.9 * n && pe >= 0.9 * ne ? 'PASS' : 'MISS'} |`);
  }
}

const rows = [];
const bigRows = [];
let stream = [];
if (only !== 'start') stream = await streamRows();
if (only !== 'stream') {
  const big = bigModel();
  const server = await startBenchServer(big.missing ? {} : { 'model.gguf': big.path });
  try {
    for (const m of manifest.models) {
      const url = `/models/${m.name}/`;
      const prompt = m.example_prompts?.[0] ?? 'Hello';
      for (const worker of [true, false]) {
        const [cold, warm] = await rawChromium(server, measure, [{ url, prompt, worker }, { url, prompt, worker }]);
        for (const r of [cold, warm]) if (r?.error) throw new Error(`${m.name} in the ${worker ? 'worker' : 'page'}: ${r.error}`);
        rows.push({ model: m.name, bytes: m.files.reduce((a, f) => a + f.bytes, 0), thread: worker ? 'worker' : 'page', cold, warm });
      }
    }
    if (big.missing) bigRows.push({ skipped: big.missing });
    else {
      for (const worker of [true, false]) {
        const browser = await launchBrowser();
        try {
          await browser.page.goto(`${server.url}/models/manifest.json`);
          const first = await browser.page.evaluate(fromBytes, { url: '/bench-cache/model.gguf', worker });
          const again = await browser.page.evaluate(fromBytes, { url: '/bench-cache/model.gguf', worker });
          bigRows.push({ thread: worker ? 'worker' : 'page', first, again });
        } catch (e) {
          bigRows.push({ thread: worker ? 'worker' : 'page', error: String(e.message ?? e).split('\n')[0] });
        } finally {
          await browser.close();
        }
      }
    }
  } finally {
    await server.close();
  }
}

const f = (x) => x.toFixed(0).padStart(6);
if (only !== 'stream') {
  console.log('\nTime to first token in headless Chromium, no DevTools attached (ms from the page\'s first import of the package to the first streamed token; fresh profile = cold)');
  console.log('| model | MB | thread | build, threads | cold: load | cold: first token | warm: load | warm: first token | decode tok/s |');
  console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- |');
  for (const r of rows)
    console.log(`| ${r.model} | ${(r.bytes / 1e6).toFixed(1)} | ${r.thread} | ${r.cold.build}, ${r.cold.threads} | ${f(r.cold.loadMs)} | ${f(r.cold.firstTokenMs)} | ${f(r.warm.loadMs)} | ${f(r.warm.firstTokenMs)} | ${f(r.warm.decodeTokPerS)} |`);
  const slowest = Math.max(...rows.map((r) => r.cold.firstTokenMs));
  console.log(`target (issue 14): the built-in models start generating < 0.5 s after the page's first import on a cold profile: slowest ${slowest.toFixed(0)} ms → ${slowest < 500 ? 'PASS' : 'MISS'}`);
  for (const r of bigRows) {
    if (r.skipped) console.log(`~100 MB Q4_K_M from bytes in memory: SKIPPED (${r.skipped})`);
    else if (r.error) console.log(`~100 MB Q4_K_M from bytes in memory (${r.thread}): ERROR ${r.error}`);
    else
      console.log(`~100 MB Q4_K_M (${(r.first.bytes / 1e6).toFixed(1)} MB) from bytes in memory, ${r.thread}, ${r.first.threads} thread(s): ` +
                  `loadModel ${f(r.first.loadMs)} ms, first token ${f(r.first.firstTokenMs)} ms (again: ${f(r.again.firstTokenMs)} ms) → ` +
                  `${r.first.firstTokenMs < 1500 ? 'PASS' : 'MISS'} (< 1.5 s)`);
  }
}
if (stream.length) printStream(stream);
const jsonAt = process.argv.indexOf('--json');
if (jsonAt > 0) writeFileSync(process.argv[jsonAt + 1], JSON.stringify({ rows, bigRows, stream }, null, 2));
