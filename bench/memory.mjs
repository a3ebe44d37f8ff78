#!/usr/bin/env node
// Memory as users meet it (issue 11 item 4): a ~1B-parameter model (TinyLlama-1.1B's shape: dim
// 2048, FFN 5632, 22 layers, 32 heads / 4 KV heads, 32000 tokens, tied embeddings, random weights:
// 1.03B parameters) in Q4_K_M (≈ 0.63 GB, llama.cpp's quantizer) and q8_0 (≈ 1.1 GB, mkgguf.py),
// and the same shape with 24 layers (1.12B parameters) in f16 (2.25 GB: one file over 2 GiB, also
// by llama.cpp's quantizer) loads and generates in Node and in headless Chromium (the file given as a File: read in
// 16 MB slices straight into wasm memory). Reported: load time, first token, decode tok/s,
// model.info.memoryBytes, the wasm heap (which never shrinks: its peak) and the peak resident memory
// of the process (Node: resourceUsage().maxRSS; Chromium: VmHWM of the renderer running the page
// and its worker, and of the browser process). The 4.1 GB f32 file fits too (4.23 of the 4.29 GB
// heap); a model that does not fit is refused with its sizes (tests/js/memory-limits.test.mjs).
// Not a test: nothing fails. The README's "Big models: memory" table is one run of this.
//
//   node bench/memory.mjs [--formats q4_k_m,q8_0,f16,f32] [--no-browser] [--json FILE]
//
// "Node, pieces" gives the f16 file as 1 GiB ArrayBuffers ({ name, data: [ab, ab, ab] }): no
// buffer of 2 GB, but the process then also holds those 2.2 GB in JS memory.
// The files are made once in $ATTNLENS_BENCH_CACHE/big/ from ../shared/anchors/mkrand_unique.py and
// the llama.cpp peers (bench/peers.mjs); that takes a while (4 GB of random weights).
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, openSync, readFileSync, readSync, closeSync, readdirSync, renameSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { cacheDir, findPeers } from './peers.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const shared = process.env.ATTNLENS_SHARED ?? join(root, '..', 'shared');
const dir = join(cacheDir, 'big');
const SHAPE = ['2048', '5632', '22', '32', '4', '32000', '2048'];
const log = (m) => process.stderr.write(m + '\n');

// shape: the llama2.c header fields of mkrand_unique.py (dim, FFN, layers, heads, KV heads, vocab, context).
const SHAPES = { 'tinyllama-shape': SHAPE, 'tinyllama-24l': ['2048', '5632', '24', '32', '4', '32000', '2048'] };
// format → [shape, how]: the 24-layer shape in f16 is 2.25 GB, a file over 2 GiB (1.12B parameters).
const FORMATS = { q4_k_m: ['tinyllama-shape', 'quantize'], q8_0: ['tinyllama-shape', 'mkgguf'], f16: ['tinyllama-24l', 'quantize'],
  f32: ['tinyllama-shape', 'mkgguf'] };

function files(formats) {
  const out = {};
  const peers = findPeers({ shared, log });
  if (peers.missing) return { missing: `llama.cpp peers not found (${peers.missing})` };
  mkdirSync(dir, { recursive: true });
  const tok = join(shared, 'models', 'llama2-tokenizer', 'tokenizer.bin');
  const gguf = (shape, t) => join(dir, `${shape}-${t}.gguf`);
  const once = (path, make) => {
    if (existsSync(path)) return;
    log(`[bench] making ${path} (once)`);
    make(path + '.tmp');
    renameSync(path + '.tmp', path);
  };
  const made = (shape, t) => {
    const path = gguf(shape, t);
    const bin = join(dir, `${shape}.bin`);
    once(bin, (tmp) => execFileSync('/usr/bin/python3', [join(shared, 'anchors', 'mkrand_unique.py'), tmp, ...SHAPES[shape]], { stdio: 'inherit' }));
    if (t === 'f32' || t === 'q8_0')
      once(path, (tmp) => execFileSync('/usr/bin/python3', [join(peers.dir, 'mkgguf.py'), bin, tok, tmp, t], { stdio: 'inherit' }));
    else {
      const f32 = made(shape, 'f32');
      once(path, (tmp) => execFileSync(join(peers.dir, 'quantize'), [f32, tmp, t], { stdio: ['ignore', 'ignore', 'inherit'] }));
    }
    return path;
  };
  for (const t of formats) {
    if (!FORMATS[t]) throw new Error(`unknown format ${t} (${Object.keys(FORMATS).join(', ')})`);
    out[t] = made(FORMATS[t][0], t);
  }
  return { files: out };
}

// The file as consecutive ArrayBuffers of at most 1 GiB.
function pieces(path) {
  const size = statSync(path).size, out = [], fd = openSync(path, 'r');
  try {
    for (let at = 0; at < size;) {
      const piece = new Uint8Array(Math.min(2 ** 30, size - at));
      for (let o = 0; o < piece.length;) o += readSync(fd, piece, o, piece.length - o, at + o);
      out.push(piece.buffer);
      at += piece.length;
    }
  } finally {
    closeSync(fd);
  }
  return out;
}

async function nodeChild(path, asPieces) {
  const { loadModel, engineInfo } = await import(pathToFileURL(join(root, 'web', 'src', 'index.mjs')).href);
  const source = asPieces ? { name: path.split('/').pop(), data: pieces(path) } : path;
  const t0 = performance.now();
  let model;
  try {
    model = await loadModel(source);
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
                               memoryBytes: model.info.memoryBytes, heapBytes: e.heapBytes, build: e.build,
                               peakRss: process.resourceUsage().maxRSS * 1024 }));
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

// Peak resident bytes (VmHWM) of this process's Chromium descendants: the largest renderer, the browser.
function chromiumPeaks() {
  const kids = new Map();
  for (const d of readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = readFileSync(`/proc/${d}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (!kids.has(ppid)) kids.set(ppid, []);
      kids.get(ppid).push(Number(d));
    } catch {}  // gone meanwhile
  }
  const out = { rendererPeak: 0, browserPeak: 0 };
  const walk = (pid) => {
    for (const k of kids.get(pid) ?? []) {
      try {
        const cmd = readFileSync(`/proc/${k}/cmdline`, 'utf8');
        const hwm = Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${k}/status`, 'utf8'))?.[1] ?? 0) * 1024;
        if (/chrom/.test(cmd.split('\0')[0])) {
          if (cmd.includes('--type=renderer')) out.rendererPeak = Math.max(out.rendererPeak, hwm);
          else if (!cmd.includes('--type=')) out.browserPeak = Math.max(out.browserPeak, hwm);
        }
      } catch {}
      walk(k);
    }
  };
  walk(process.pid);
  return out;
}

async function main() {
  if (process.argv[2] === '--node-child') return nodeChild(process.argv[3], process.argv[4] === 'pieces');
  const argv = process.argv.slice(2);
  const at = (k) => (argv.includes(k) ? argv[argv.indexOf(k) + 1] : null);
  const formats = (at('--formats') ?? 'q4_k_m,q8_0,f16,f32').split(',');
  const made = files(formats);
  const rows = [];
  if (made.missing) {
    console.log(`memory benchmark SKIPPED: ${made.missing}`);
    return;
  }
  for (const [format, path] of Object.entries(made.files)) {
    for (const how of format === 'f16' ? ['path', 'pieces'] : ['path']) {
      log(`[bench] Node (${how}): ${path} ...`);
      const r = spawnSync(process.execPath, [fileURLToPath(import.meta.url), '--node-child', path, how], { cwd: root, encoding: 'utf8' });
      const line = r.stdout.split('\n').filter((l) => l.startsWith('{')).pop();
      rows.push({ where: how === 'path' ? 'Node (path)' : 'Node (1 GiB ArrayBuffers)', format, bytes: statSync(path).size,
        ...(line ? JSON.parse(line) : { error: (r.stderr || '').split('\n').slice(-3).join(' ') }) });
    }
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
            rows.push({ where: 'Chromium (worker)', format, bytes: statSync(path).size, ...r, ...chromiumPeaks() });
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
  const peak = (r) => (r.peakRss ? mb(r.peakRss) : `${mb(r.rendererPeak)} (browser ${mb(r.browserPeak)})`);
  console.log('\nA 1.1B-parameter model (TinyLlama-1.1B shape, random weights): load and generate 16 tokens');
  console.log('| where | weights | file MB | load ms | first token ms | decode tok/s | threads | memoryBytes MB | wasm heap MB | peak RSS MB | |');
  console.log('| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |');
  for (const r of rows)
    console.log(r.error ? `| ${r.where} | ${r.format} | ${mb(r.bytes)} | | | | | | | | ${r.error} |`
      : `| ${r.where} | ${r.format} | ${mb(r.bytes)} | ${r.loadMs.toFixed(0)} | ${r.firstTokenMs.toFixed(0)} | ${r.tokS.toFixed(2)} | ${r.threads} | ${mb(r.memoryBytes)} | ${mb(r.heapBytes)} | ${peak(r)} | ${r.build} |`);
  if (at('--json')) writeFileSync(at('--json'), JSON.stringify(rows, null, 1));
}

main().catch((e) => {
  console.error(e.message ?? e);
  process.exit(1);
});
