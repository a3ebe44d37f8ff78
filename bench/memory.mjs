#!/usr/bin/env node
// Memory as users meet it (issue 11 item 4): a ~1B-parameter model (TinyLlama-1.1B's shape: dim
// 2048, FFN 5632, 22 layers, 32 heads / 4 KV heads, 32000 tokens, random weights) in Q4_K_M (≈ 0.63
// GB, llama.cpp's quantizer) and q8_0 (≈ 1.17 GB, mkgguf.py) loads and generates in Node and in
// headless Chromium (the file given as a Blob: read in slices straight into wasm memory). Reported:
// load time, first token, decode tok/s, model.info.memoryBytes, the wasm heap; a model that does
// not fit is refused with its sizes (the 4.1 GB f32 file). Not a test: nothing fails.
//
//   node bench/memory.mjs [--formats q4_k_m,q8_0,f32] [--no-browser] [--json FILE]
//
// The files are made once in $ATTNLENS_BENCH_CACHE/big/ from ../shared/anchors/mkrand_unique.py and
// the llama.cpp peers (bench/peers.mjs); that takes a while (4 GB of random weights).
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { findPeers } from './peers.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const shared = process.env.ATTNLENS_SHARED ?? join(root, '..', 'shared');
const cacheDir = process.env.ATTNLENS_BENCH_CACHE ?? join(homedir(), '.cache', 'attnlens-bench');
const dir = join(cacheDir, 'big');
const SHAPE = ['2048', '5632', '22', '32', '4', '32000', '2048'];
const log = (m) => process.stderr.write(m + '\n');

function files(formats) {
  const bin = join(dir, 'tinyllama-shape.bin');
  const out = {};
  const peers = findPeers({ shared, cacheDir, log });
  if (peers.missing) return { missing: `llama.cpp peers not found (${peers.missing})` };
  mkdirSync(dir, { recursive: true });
  if (!existsSync(bin)) {
    log(`[bench] making ${bin} (once, 4.1 GB)`);
    execFileSync('/usr/bin/python3', [join(shared, 'anchors', 'mkrand_unique.py'), bin + '.tmp', ...SHAPE], { stdio: 'inherit' });
    renameSync(bin + '.tmp', bin);
  }
  const tok = join(shared, 'models', 'llama2-tokenizer', 'tokenizer.bin');
  const gguf = (t) => join(dir, `tinyllama-shape-${t}.gguf`);
  for (const t of ['f32', 'q8_0']) {
    if ((formats.includes(t) || (t === 'f32' && formats.includes('q4_k_m'))) && !existsSync(gguf(t))) {
      log(`[bench] making ${gguf(t)} (once)`);
      execFileSync('/usr/bin/python3', [join(peers.dir, 'mkgguf.py'), bin, tok, gguf(t) + '.tmp', t], { stdio: 'inherit' });
      renameSync(gguf(t) + '.tmp', gguf(t));
    }
  }
  if (formats.includes('q4_k_m') && !existsSync(gguf('q4_k_m'))) {
    log(`[bench] making ${gguf('q4_k_m')} (once)`);
    execFileSync(join(peers.dir, 'quantize'), [gguf('f32'), gguf('q4_k_m'), 'q4_k_m'], { stdio: ['ignore', 'ignore', 'inherit'] });
  }
  for (const t of formats) out[t] = gguf(t);
  return { files: out };
}

// In a child process (a fresh realm, so the heap figures are this model's): load, generate, report.
async function nodeChild(path) {
  const { loadModel, engineInfo } = await import(pathToFileURL(join(root, 'web', 'src', 'index.mjs')).href);
  const t0 = performance.now();
  let model;
  try {
    model = await loadModel(path);
  } catch (e) {
    console.log(JSON.stringify({ error: e.message }));
    return;
  }
  const loadMs = performance.now() - t0;
  let tFirst, n = 0;
  const t1 = performance.now();
  for await (const s of model.stream([1, 9038, 2501, 263, 931], { maxNewTokens: 16, temperature: 0 })) {
    if (tFirst === undefined) tFirst = performance.now();
    else n++;
    void s;
  }
  const tEnd = performance.now();
  const e = await engineInfo();
  console.log(JSON.stringify({ loadMs, firstTokenMs: tFirst - t1, tokS: n / ((tEnd - tFirst) / 1000), threads: model.info.threads,
                               memoryBytes: model.info.memoryBytes, heapBytes: e.heapBytes, build: e.build }));
  await model.dispose();
}

// In the page: the file arrives as a Blob (fetched), loadModel(blob) reads it in slices into wasm memory.
async function pageRun({ url }) {
  const { loadModel, engineInfo } = await import('/web/src/index.mjs');
  const blob = await (await fetch(url)).blob();
  const t0 = performance.now();
  let model;
  try {
    model = await loadModel(new File([blob], 'model.gguf'), { worker: true });
  } catch (e) {
    return { error: e.message };
  }
  const loadMs = performance.now() - t0;
  let tFirst, n = 0;
  const t1 = performance.now();
  for await (const s of model.stream([1, 9038, 2501, 263, 931], { maxNewTokens: 16, temperature: 0 })) {
    if (tFirst === undefined) tFirst = performance.now();
    else n++;
    void s;
  }
  const tEnd = performance.now();
  const e = await model.engineInfo();
  const out = { loadMs, firstTokenMs: tFirst - t1, tokS: n / ((tEnd - tFirst) / 1000), threads: model.info.threads,
                memoryBytes: model.info.memoryBytes, heapBytes: e.heapBytes, build: e.build, blobBytes: blob.size };
  await model.dispose();
  void engineInfo;
  return out;
}

async function main() {
  if (process.argv[2] === '--node-child') return nodeChild(process.argv[3]);
  const argv = process.argv.slice(2);
  const at = (k) => (argv.includes(k) ? argv[argv.indexOf(k) + 1] : null);
  const formats = (at('--formats') ?? 'q4_k_m,q8_0,f32').split(',');
  const made = files(formats);
  const rows = [];
  if (made.missing) {
    console.log(`memory benchmark SKIPPED: ${made.missing}`);
    return;
  }
  for (const [format, path] of Object.entries(made.files)) {
    log(`[bench] Node: ${path} ...`);
    const r = spawnSync(process.execPath, [fileURLToPath(import.meta.url), '--node-child', path], { cwd: root, encoding: 'utf8' });
    const line = r.stdout.split('\n').filter((l) => l.startsWith('{')).pop();
    rows.push({ where: 'Node', format, bytes: statSync(path).size, ...(line ? JSON.parse(line) : { error: (r.stderr || '').split('\n').slice(-3).join(' ') }) });
  }
  if (!argv.includes('--no-browser')) {
    const { chromiumMissing, launch } = await import('../tests/js/fixtures/chromium.mjs');
    const { serve } = await import('../tests/js/fixtures/server.mjs');
    const why = await chromiumMissing();
    if (why) log(`[bench] Chromium skipped: ${why}`);
    else {
      // Cross-origin isolated, as the demo serves it (the pthreads build); the model file from the cache.
      const server = await serve({ '/web/src/': join(root, 'web/src'), '/dist/wasm/': join(root, 'dist/wasm'), '/big/': dir, '/': root },
        { headers: { 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' } });
      try {
        for (const [format, path] of Object.entries(made.files)) {
          log(`[bench] Chromium: ${path} ...`);
          const browser = await launch();
          try {
            await browser.page.goto(server.url('/models/manifest.json'));
            const r = await browser.page.evaluate(pageRun, { url: `/big/${path.split('/').pop()}` });
            rows.push({ where: 'Chromium (worker)', format, bytes: statSync(path).size, ...r });
          } catch (e) {
            rows.push({ where: 'Chromium (worker)', format, bytes: statSync(path).size, error: String(e.message).split('\n')[0] });
          } finally {
            await browser.close();
          }
        }
      } finally {
        await server.close();
      }
    }
  }
  const mb = (b) => (b / 1e6).toFixed(0);
  console.log('\nA 1.1B-parameter model (TinyLlama-1.1B shape, random weights): load and generate 16 tokens');
  console.log('| where | weights | file MB | load ms | first token ms | decode tok/s | threads | memoryBytes MB | wasm heap MB | |');
  console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |');
  for (const r of rows)
    console.log(r.error ? `| ${r.where} | ${r.format} | ${mb(r.bytes)} | | | | | | | ${r.error} |`
      : `| ${r.where} | ${r.format} | ${mb(r.bytes)} | ${r.loadMs.toFixed(0)} | ${r.firstTokenMs.toFixed(0)} | ${r.tokS.toFixed(2)} | ${r.threads} | ${mb(r.memoryBytes)} | ${mb(r.heapBytes)} | ${r.build} |`);
  if (at('--json')) writeFileSync(at('--json'), JSON.stringify(rows, null, 1));
}

main().catch((e) => {
  console.error(e.message ?? e);
  process.exit(1);
});
