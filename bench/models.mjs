#!/usr/bin/env node
// Model benchmark: AttnLens (wasm in Node — the single-thread and the pthreads build — and native)
// beside its peers on the same random-weight checkpoints, shaped like stories15M / 42M / 110M:
// onnxruntime-web 1.30 (wasm SIMD, the engine under transformers.js; f32), llama.cpp's wasm build
// (wllama, in Chromium) and llama.cpp native, with 1 and 2 threads, f32, q8_0 and the 4-bit GGUF
// types. See bench/README.md for the method and what each figure means.
//
//   node bench/models.mjs [--shapes 15M,42M,110M] [--formats f32,q8_0,q4_0,q4_k_m] [--platforms wasm,wasm-mt,wasm-mt-relaxed,native]
//                         [--threads 1,2] [--quick] [--rounds N] [--no-anchor] [--no-anchor-256] [--no-peers]
//                         [--no-api] [--no-build] [--json FILE] [--verbose]
//
//   --platforms     wasm = the single-thread build (1 thread), wasm-mt = the pthreads build (each --threads),
//                   native = g++ -O3 -march=native (each --threads); wasm-relaxed, wasm-mt-relaxed = the same
//                   two builds on the relaxed-SIMD kernels (what Chromium loads; Node 20 runs them with
//                   --experimental-wasm-relaxed-simd), their 4-bit and integer-prefill targets against
//                   their own q8_0 and f32 rows
//   --threads 1,2   thread counts for wasm-mt, native and the peers
//   --no-peers      skip llama.cpp native and wllama (bench/peers.mjs: $ATTNLENS_PEERS or ../shared/peers)
//   --quick         fewer repetitions (bench_models --quick: 2 s warm-up, 1 timed pass, 3 prefill reps),
//                   no onnxruntime-web prefill-256, a 2 s warm-up for the JS API run; for iterating.
//   --rounds N      run everything N times (ours and onnxruntime-web back to back per shape each round)
//                   and print the median and min–max of every cell.
//   --no-anchor     skip onnxruntime-web (../shared/anchors/run.sh); it is skipped anyway without ../shared.
//   --no-anchor-256 skip onnxruntime-web's 256-token prefill (run.sh times 64 tokens only; the 256-token
//                   figure comes from a second, shorter bench_ort.mjs run on the same export).
//   --no-api        skip the JS API timing (loadModel + model.generate on the 15M checkpoint).
//   --no-build      use the existing binaries (default: build bench_models and the wasm module, incrementally).
//   --json FILE     also write every raw JSON result to FILE.
//   --report FILE   print the table again from such a FILE (no run; pass the --shapes/--formats/--platforms
//                   it was run with if they were limited).
//   --readme        with --json or --report: rewrite README.md's performance table (between the
//                   <!-- bench:models --> markers) from these results.
//
// Checkpoints: the peers' own (their GGUF files are converted from them) when the peers are there, else
// made once in $ATTNLENS_BENCH_CACHE (default ~/.cache/attnlens-bench), never in the repo.
// Build dirs: $ATTNLENS_BUILD_NATIVE / _WASM / _WASM_MT (tools/build.mjs), default build-native / build-wasm / build-wasm-mt.
import { spawn, spawnSync, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, renameSync, statSync, writeFileSync, openSync, writeSync, closeSync } from 'node:fs';
import { cpus, homedir, loadavg } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { gzipSync } from 'node:zlib';
import { performance } from 'node:perf_hooks';
import { cacheDir, findPeers, peerModelName, runPeer } from './peers.mjs';
import { BENCH_PLATFORMS as PLATFORMS, benchBinary, nodeFlags } from './platforms.mjs';
import { median } from './stats.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const shared = process.env.ATTNLENS_SHARED ?? join(root, '..', 'shared');
const PROMPT = [1, 9038, 2501, 263, 931];  // "Once upon a time", BOS first: run.sh's default

// dim hidden layers heads kv_heads vocab seq (the stories checkpoints' shapes)
export const SHAPES = {
  '15M': [288, 768, 6, 6, 6, 32000, 256],
  '42M': [512, 1376, 8, 8, 8, 32000, 1024],
  '110M': [768, 2048, 12, 12, 12, 32000, 1024],
};

// The targets. Single thread, wasm rows: against onnxruntime-web and our native build. Threads (issue
// 14): the pthreads build's 2-thread / 1-thread ratios, and ahead of onnxruntime-web and wllama with 2
// threads each. 4-bit decode (1 thread): against our q8_0, wllama and llama.cpp native on the same file.
const TARGETS = { f32Decode: 0.9, f32Prefill: 0.9, q8Decode: 2.0, wasmVsNative: 1.3,
                  threads: { f32Decode: 1.6, quantDecode: 1.8, prefill: 1.8 },
                  q4: { vsQ8: 1.4, vsWllama: 5.0, vsLlamacpp: 1.0 },
                  intPrefill: { vsF32: 1.8, vsLlamacpp: 1.3 } };  // quantized prefill: ≥ 1.8× our f32, ≤ 1.3× llama.cpp's ms
const QUANT = ['q4_0', 'q4_k_m'];  // read from the peers' GGUF files
const isMt = (p) => p.startsWith('wasm-mt');  // the pthreads builds (every --threads); wasm, wasm-relaxed: 1 thread
// tests/js/size.test.mjs's budget for each build (module + JS glue; the pthreads build also its worker script)
const SIZE_LIMIT = { raw: 1_300_000, gzip: 450_000 };  // tests/js/size.test.mjs
// The load average (1, 5, 15 minutes) as printed: the machine is shared, so every run says how busy it was.
const loadNow = () => loadavg().map((x) => x.toFixed(2)).join(' / ');
// A load sample of the run's record: when it was taken (UTC) beside the load average then.
const sample = (when) => ({ when, load: loadNow(), at: new Date().toISOString() });

function parseArgs(argv) {
  const a = { shapes: Object.keys(SHAPES), formats: ['f32', 'q8_0', ...QUANT], platforms: ['wasm', 'wasm-mt', 'wasm-mt-relaxed', 'native'],
              threads: [1, 2], quick: false, rounds: 1, anchor: true, anchor256: true, peers: true, api: true, build: true,
              json: null, verbose: false };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i];
    const val = () => {
      if (i + 1 >= argv.length) throw new Error(`${k} needs a value`);
      return argv[++i];
    };
    if (k === '--shapes') a.shapes = val().split(',').map((s) => s.trim().toUpperCase().replace(/^(\d+)M?$/, '$1M'));
    else if (k === '--formats') a.formats = val().split(',').map((s) => (s === 'q8' ? 'q8_0' : s));
    else if (k === '--platforms') a.platforms = val().split(',');
    else if (k === '--quick') a.quick = true;
    else if (k === '--rounds') a.rounds = Math.max(1, Number(val()));
    else if (k === '--no-anchor') a.anchor = false;
    else if (k === '--no-anchor-256') a.anchor256 = false;
    else if (k === '--no-peers') a.peers = false;
    else if (k === '--threads') a.threads = val().split(',').map(Number);
    else if (k === '--no-api') a.api = false;
    else if (k === '--no-build') a.build = false;
    else if (k === '--json') a.json = val();
    else if (k === '--report') a.report = val();
    else if (k === '--readme') a.readme = true;
    else if (k === '--verbose' || k === '-v') a.verbose = true;
    else if (k === '--help' || k === '-h') {
      console.log(readFileSync(fileURLToPath(import.meta.url), 'utf8').split('\n').slice(1, 35).join('\n'));
      process.exit(0);
    } else throw new Error(`unknown option ${k} (see --help)`);
  }
  for (const s of a.shapes) if (!SHAPES[s]) throw new Error(`unknown shape ${s} (15M, 42M, 110M)`);
  for (const f of a.formats) if (!['f32', 'q8_0', ...QUANT].includes(f)) throw new Error(`unknown format ${f} (f32, q8_0, ${QUANT.join(', ')})`);
  for (const p of a.platforms) if (!PLATFORMS.includes(p)) throw new Error(`unknown platform ${p} (${PLATFORMS.join(', ')})`);
  for (const t of a.threads) if (!(Number.isInteger(t) && t >= 1 && t <= 16)) throw new Error(`bad thread count ${t}`);
  if (a.quick) a.anchor256 = false;
  return a;
}

const log = (...m) => process.stderr.write(m.join(' ') + '\n');

// ---- checkpoints --------------------------------------------------------------------------------
// Random llama2.c v0 checkpoints: ../shared/anchors/mkrand_unique.py when present (every weight distinct,
// N(0, 0.02), norms 1), else the same layout written here with a seeded generator.
function writeRandomCheckpoint(path, [dim, hidden, layers, heads, kv, vocab, seq]) {
  const head = dim / heads;
  const sizes = [vocab * dim, layers * dim, layers * dim * dim, layers * dim * kv * head, layers * dim * kv * head,
                 layers * dim * dim, layers * dim, layers * dim * hidden, layers * hidden * dim, layers * dim * hidden,
                 dim, seq * head / 2, seq * head / 2];
  const ones = new Set([1, 6, 10]);
  const fd = openSync(path, 'w');
  writeSync(fd, new Uint8Array(new Int32Array([dim, hidden, layers, heads, kv, vocab, seq]).buffer));
  let s = 0x9e3779b9 >>> 0;
  const next = () => { s ^= s << 13; s >>>= 0; s ^= s >>> 17; s ^= s << 5; s >>>= 0; return (s + 0.5) / 4294967296; };
  const chunk = new Float32Array(1 << 20);
  sizes.forEach((n, i) => {
    while (n > 0) {
      const k = Math.min(n, chunk.length);
      for (let j = 0; j < k; j++) chunk[j] = ones.has(i) ? 1 : 0.02 * Math.sqrt(-2 * Math.log(next())) * Math.cos(2 * Math.PI * next());
      writeSync(fd, new Uint8Array(chunk.buffer, 0, k * 4));
      n -= k;
    }
  });
  closeSync(fd);
}

export function checkpoint(shape, peers) {
  // The peers' checkpoint: their GGUF files were converted from it, so every engine reads the same weights.
  if (peers?.models && existsSync(join(peers.models, `rand${shape}.bin`))) return join(peers.models, `rand${shape}.bin`);
  mkdirSync(cacheDir, { recursive: true });
  const path = join(cacheDir, `rand${shape}.bin`);
  if (existsSync(path)) return path;
  const tmp = path + '.tmp';
  const mk = join(shared, 'anchors', 'mkrand_unique.py');
  log(`[bench] making ${path} (once)`);
  if (existsSync(mk) && spawnSync('/usr/bin/python3', ['-c', 'import numpy'], { stdio: 'ignore' }).status !== 0)
    throw new Error(`${mk} needs numpy for /usr/bin/python3: run node tools/setup.mjs --for bench (apt python3-numpy)`);
  if (existsSync(mk)) execFileSync('/usr/bin/python3', [mk, tmp, ...SHAPES[shape].map(String)], { stdio: 'inherit' });
  else writeRandomCheckpoint(tmp, SHAPES[shape]);
  renameSync(tmp, path);
  return path;
}

// ---- builds ---------------------------------------------------------------------------------------
async function binaries(args) {
  const { buildDirs, buildNative, buildWasm } = await import(pathToFileURL(join(root, 'tools', 'build.mjs')).href);
  const bin = Object.fromEntries(PLATFORMS.map((p) => [p, benchBinary(buildDirs, p)]));
  const guarded = (f) => {
    try {
      f();
    } catch (e) {
      throw new Error(`build failed (${String(e.message).split('\n')[0]}); fix it or pass --no-build`);
    }
  };
  if (args.platforms.includes('native') && (args.build || !existsSync(bin.native))) guarded(() => buildNative(['bench_models']));
  const wasmTargets = [];
  if (args.platforms.includes('wasm') && (args.build || !existsSync(bin.wasm))) wasmTargets.push('bench_models');
  if (args.platforms.includes('wasm-relaxed') && (args.build || !existsSync(bin['wasm-relaxed']))) wasmTargets.push('bench_models_relaxed');
  // the package's module: its size is reported, and the JS API run loads it
  if (args.build || !existsSync(join(root, 'dist', 'wasm', 'attnlens.wasm'))) wasmTargets.push('attnlens_wasm');
  if (wasmTargets.length) guarded(() => buildWasm(wasmTargets));
  const mtTargets = [['wasm-mt', 'bench_models'], ['wasm-mt-relaxed', 'bench_models_relaxed']]
    .filter(([p]) => args.platforms.includes(p) && (args.build || !existsSync(bin[p]))).map(([, t]) => t);
  if (mtTargets.length) guarded(() => buildWasm([...mtTargets, ...(args.build ? ['attnlens_wasm'] : [])], { threads: true }));
  // Emscripten's node glue is CommonJS, and the repo's package.json says "type": "module"; and it reads
  // its .wasm by path, which Node's fetch refuses (hence --no-experimental-fetch, as ctest's emulator).
  for (const b of [bin.wasm, bin['wasm-mt']]) {
    const pkg = join(dirname(b), 'package.json');
    if (existsSync(b) && !existsSync(pkg)) writeFileSync(pkg, '{"type":"commonjs"}\n');
  }
  return bin;
}

// ---- child processes ------------------------------------------------------------------------------
function runJson(cmd, argv, { verbose, tag, timeoutS = 0 }) {
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, argv, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'], detached: timeoutS > 0 });
    let out = '', err = '';
    // onnxruntime-web's threads, like llama.cpp's, can crawl on an oversubscribed machine: stopped, with why
    const timer = timeoutS > 0 && setTimeout(() => {
      err += `\nstopped after ${timeoutS} s (load average ${loadNow()})`;
      try {
        process.kill(-p.pid, 'SIGKILL');
      } catch {
        p.kill('SIGKILL');
      }
    }, timeoutS * 1000);
    p.on('close', () => clearTimeout(timer));
    p.stdout.on('data', (d) => { out += d; });
    p.stderr.on('data', (d) => {
      err += d;
      if (verbose) process.stderr.write(String(d).replace(/^(?=.)/gm, `    [${tag}] `));
    });
    p.on('error', reject);
    p.on('close', (code) => {
      const lines = out.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
      if (code !== 0) reject(new Error(`${tag}: ${cmd} exited with ${code}\n${err.split('\n').slice(-8).join('\n')}`));
      else resolve(lines);
    });
  });
}

// One bench_models run: `input` is the llama2.c checkpoint (f32; --q8 quantizes at load) or a GGUF.
async function runOurs(bin, platform, input, format, threads, args, extra = []) {
  const flags = [input, ...(format === 'q8_0' ? ['--q8'] : []), ...(args.quick ? ['--quick'] : []),
                 '--threads', String(threads), '--limits', ...extra];
  const tag = `${platform} ${basename(input).replace(/\.(bin|gguf)$/, '')} ${format} ${threads}t`;
  log(`[bench] ${tag} ...`);
  const node = nodeFlags(platform);
  const lines = platform === 'native' ? await runJson(bin.native, flags, { verbose: args.verbose, tag })
                                      : await runJson(process.execPath, [...node, bin[platform], ...flags], { verbose: args.verbose, tag });
  const r = { threads, load: null, decode: null, prefill: {}, generate: null, limits: null };
  for (const l of lines) {
    if (l.type === 'prefill') r.prefill[l.tokens] = l;
    else r[l.type] = l;
  }
  return r;
}

function anchorExportDir(ckpt) {
  const st = statSync(ckpt);
  const ortb = process.env.ORTBENCH_DIR ?? join(homedir(), '.cache', 'attnlens-anchors');
  return join(ortb, 'models', `${st.size}-${Math.floor(st.mtimeMs / 1000)}-${basename(ckpt, '.bin')}`);
}

async function runAnchor(ckpt, args, seq, threads = 1) {
  const tag = `onnxruntime-web ${basename(ckpt, '.bin')} ${threads}t`;
  log(`[bench] ${tag} (../shared/anchors/run.sh) ...`);
  const [r] = (await runJson('bash', [join(shared, 'anchors', 'run.sh'), ckpt, String(threads), PROMPT.join(' ')],
                             { verbose: args.verbose, tag, timeoutS: Number(process.env.ATTNLENS_PEER_TIMEOUT_S ?? 300) })).slice(-1);
  r.threads = threads;
  if (args.anchor256 && seq >= 256) {
    const dir = anchorExportDir(ckpt);
    if (existsSync(join(dir, 'prefill.onnx'))) {
      log(`[bench] ${tag} prefill 256 (bench_ort.mjs on the same export) ...`);
      const [r2] = (await runJson(process.execPath, [join(shared, 'anchors', 'bench_ort.mjs'), '--engine', 'web',
        '--threads', String(threads), '--model', dir, '--prompt', PROMPT.join(' '), '--steps', '256', '--reps', '1',
        '--warmup-s', '0', '--prefill', '256', '--prefill-reps', '5'], { verbose: args.verbose, tag })).slice(-1);
      r.prefill256MsMedian = r2.prefillMsMedian;
      r.prefill256Ms = r2.prefillMs;
    }
  }
  return r;
}

// ---- the JS API path (a child process runs this file with --api-child) -----------------------------
async function apiChild(ckpt, tok, quick) {
  const { loadModel } = await import(pathToFileURL(join(root, 'web', 'src', 'index.mjs')).href);
  const t0 = performance.now();
  const model = await loadModel([ckpt, tok]);
  const loadMs = performance.now() - t0;
  const steps = 200;
  const once = async () => {
    const w0 = performance.now();
    const r = await model.generate(PROMPT, { maxNewTokens: steps - PROMPT.length, temperature: 0 });
    const wall = performance.now() - w0;
    const t = r.timings;
    return { tokS: t.decodedTokens / (t.decodeMs / 1000), wallTokS: t.decodedTokens / ((wall - t.prefillMs) / 1000),
             decoded: t.decodedTokens, finish: r.finishReason };
  };
  const cold = await once();
  const tw = performance.now();
  let warm = 0;
  while (warm < 1 || performance.now() - tw < (quick ? 2000 : 10000)) { await once(); warm++; }
  const runs = [];
  for (let i = 0; i < (quick ? 1 : 3); i++) runs.push(await once());
  runs.sort((a, b) => a.tokS - b.tokS);
  const med = runs[Math.floor((runs.length - 1) / 2)];
  await model.dispose();
  console.log(JSON.stringify({ type: 'api', loadMs, coldTokS: cold.tokS, warmupPasses: warm, tokS: runs.map((r) => r.tokS),
                               tokSMedian: med.tokS, wallTokSMedian: med.wallTokS, decoded: med.decoded, finish: med.finish }));
}

// ---- table ------------------------------------------------------------------------------------------
function cell(xs, digits = 1) {
  const v = xs.filter((x) => x != null && Number.isFinite(x));
  if (!v.length) return '–';
  const m = median(v);
  const f = (x) => x.toFixed(digits);
  if (v.length === 1) return f(m);
  return `${f(m)} (${f(Math.min(...v))}–${f(Math.max(...v))})`;
}

function table(headers, rows) {
  const w = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
  const line = (r) => '| ' + r.map((c, i) => String(c).padEnd(w[i])).join(' | ') + ' |';
  return [line(headers), '| ' + w.map((n) => '-'.repeat(n)).join(' | ') + ' |', ...rows.map(line)].join('\n');
}

function wasmSizes() {
  const one = (names) => {
    const files = names.map((f) => join(root, 'dist', 'wasm', f));
    if (!files.every(existsSync)) return null;
    const raw = files.map((f) => readFileSync(f));
    return { files: names, total: raw.reduce((s, b) => s + b.length, 0), gzip: raw.reduce((s, b) => s + gzipSync(b, { level: 9 }).length, 0) };
  };
  const single = one(['attnlens.wasm', 'attnlens.mjs']);
  return single && { single, threads: one(['attnlens-mt.wasm', 'attnlens-mt.mjs', 'attnlens-mt.worker.js']) };
}

function report(results, args) {
  const out = [];
  const hasAnchor = Object.values(results.anchor).some((l) => l.length);
  out.push(`AttnLens model benchmark — ${new Date().toISOString()} — node ${process.version}, rounds ${args.rounds}${args.quick ? ', --quick' : ''}`);
  if (results.loads?.length)
    out.push(`load average (1 / 5 / 15 min) on ${cpus().length} cores: ` + results.loads.map((l) => `${l.when} ${l.load}`).join('; '));
  out.push('decode: tok/s over 200 positions (median of timed passes); prefill: ms for the prompt (median); ' +
           'ratios vs onnxruntime-web: decode ours/ORT, prefill ORT-ms/our-ms (>1 = we are faster); ' +
           'w/n = native tok/s ÷ wasm tok/s (target ≤ 1.3).');
  const rows = [], verdicts = [];
  const peers1 = (shape, format, engine) => results.peers[peerKey(shape, format, engine, 1)] ?? [];
  for (const shape of args.shapes) {
    const A = results.anchor[shape] ?? [];
    const aDec = A.map((a) => a.decodeTokPerSMedian), aP64 = A.map((a) => a.prefillMsMedian), aP256 = A.map((a) => a.prefill256MsMedian);
    const load = results.load[shape];
    if (A.length && load) {
      const wb = load.weight_bytes_f32, mm = load.matmul_params_per_token;
      const aCpu = Math.min(...A.map((a) => a.cpuPerWall ?? 1));
      rows.push([shape, 'f32', 'ORT-web' + (aCpu < 0.85 ? '*' : ''), cell(aDec), '', cell(aDec.map((t) => t * wb / 1e9), 1), cell(aDec.map((t) => 2 * mm * t / 1e9), 1),
                 cell(aP64), '', cell(aP64.map((ms) => prefillGflops(load, 64, ms)), 1), cell(aP256), '', '', '']);
    }
    for (const format of args.formats) {
      for (const platform of args.platforms.filter((p) => !isMt(p))) {  // one thread: the single-thread builds
        const R = results.ours[`${shape}/${format}/${platform}`] ?? [];
        if (!R.length) continue;
        const dec = R.map((r) => r.decode?.tok_s_median);
        const p64 = R.map((r) => r.prefill[64]?.ms_median), p256 = R.map((r) => r.prefill[256]?.ms_median);
        const rDec = R.map((r, i) => (A[i] ? r.decode?.tok_s_median / A[i].decodeTokPerSMedian : null));
        const rP64 = R.map((r, i) => (A[i] ? A[i].prefillMsMedian / r.prefill[64]?.ms_median : null));
        const rP256 = R.map((r, i) => (A[i]?.prefill256MsMedian ? A[i].prefill256MsMedian / r.prefill[256]?.ms_median : null));
        const N = results.ours[`${shape}/${format}/native`] ?? [];
        const wn = platform === 'wasm' ? R.map((r, i) => (N[i]?.decode ? N[i].decode.tok_s_median / r.decode?.tok_s_median : null)) : [];
        const cpu = Math.min(...R.map((r) => r.decode?.cpu_per_wall ?? 1));
        const marks = [];
        if (platform === 'wasm' || platform === 'wasm-relaxed') {
          const check = (name, vals, ok) => {
            const m = median(vals);
            if (m == null) return;
            const pass = ok(m);
            marks.push(`${name} ${pass ? 'PASS' : 'MISS'}`);
            verdicts.push(`${shape} ${format}${platform === 'wasm' ? '' : ` ${platform}`} ${name}: ${m.toFixed(2)} → ${pass ? 'PASS' : 'MISS'}`);
          };
          if (QUANT.includes(format)) {
            const Q = results.ours[`${shape}/q8_0/${platform}`] ?? [];
            check(`dec≥${TARGETS.q4.vsQ8}×q8_0`, R.map((r, i) => (Q[i]?.decode ? r.decode?.tok_s_median / Q[i].decode.tok_s_median : null)),
                  (m) => m >= TARGETS.q4.vsQ8);
            const vsPeer = (engine) => R.map((r, i) => {
              const d = peers1(shape, format, engine)[i]?.decodeTokS;
              return d ? r.decode?.tok_s_median / d : null;
            });
            check(`dec≥${TARGETS.q4.vsWllama}×wllama`, vsPeer('wllama'), (m) => m >= TARGETS.q4.vsWllama);
            check(`dec≥${TARGETS.q4.vsLlamacpp}×llama.cpp`, vsPeer('llamacpp'), (m) => m >= TARGETS.q4.vsLlamacpp);
          } else if (format === 'f32') {
            check(`dec≥${TARGETS.f32Decode}×`, rDec, (m) => m >= TARGETS.f32Decode);
            check(`pf64≥${TARGETS.f32Prefill}×`, rP64, (m) => m >= TARGETS.f32Prefill);
            check(`pf256≥${TARGETS.f32Prefill}×`, rP256, (m) => m >= TARGETS.f32Prefill);
          } else {
            check(`dec≥${TARGETS.q8Decode}×ORT-f32`, rDec, (m) => m >= TARGETS.q8Decode);
          }
          check(`w/n≤${TARGETS.wasmVsNative}`, wn, (m) => m <= TARGETS.wasmVsNative);
        }
        rows.push([shape, format, platform + (cpu < 0.85 ? '*' : ''), cell(dec), cell(rDec, 2),
                   cell(R.map((r) => r.decode?.gbs), 1), cell(R.map((r) => r.decode?.gflops), 1),
                   cell(p64), cell(rP64, 2), cell(R.map((r) => r.prefill[64]?.gflops), 1),
                   cell(p256), cell(rP256, 2), cell(wn, 2), marks.join(', ')]);
      }
      // The peers on the same file with one thread, unless the threads table shows them.
      for (const [engine, label] of hasThreadsTable(args) ? [] : [['llamacpp', 'llama.cpp native'], ['wllama', 'wllama']]) {
        const P = peers1(shape, format, engine);
        if (!P.some(Boolean)) continue;
        const ms = (k) => P.map((r) => r?.[k]);
        rows.push([shape, format, `${label} 1t`, cell(ms('decodeTokS')), '', '', '', cell(ms('prefillMs')), '', '',
                   cell(ms('prefill256Ms')), '', '', '']);
      }
    }
  }
  out.push(table(['shape', 'weights', 'engine', 'decode tok/s', '×ORT', 'GB/s', 'GFLOP/s', 'prefill-64 ms', '×ORT', 'GFLOP/s',
                  'prefill-256 ms', '×ORT', 'w/n', 'targets'], rows));
  out.push('GB/s = weight bytes per token (ModelInfo::weight_bytes) × tok/s; limit ≈ 25 GB/s per core. GFLOP/s = 2 × params in ' +
           'matrix multiplies per token (+ attention q·k and p·v) ÷ time (for quantized weights: integer ops); the SIMD peaks are in the threads table (bench/limits.h). ORT rows use the f32 ' +
           'byte and flop counts of the same shape. * = the process got < 85% of a core during the timed passes (busy machine).');
  if (!hasAnchor) out.push('onnxruntime-web: not run (' + (args.anchor ? `${shared} not found` : '--no-anchor') + ').');
  if (results.api.length) {
    const api = results.api;
    const raw = (results.ours['15M/f32/wasm'] ?? []).map((r) => r.decode?.tok_s_median);
    const gen = (results.ours['15M/f32/wasm'] ?? []).map((r) => r.generate?.tok_s_median);
    const a = median(api.map((x) => x.tokSMedian)), b = median(raw), g = median(gen);
    out.push(`JS API (loadModel + model.generate, greedy, 195 new tokens, 15M f32, wasm in Node): ${cell(api.map((x) => x.tokSMedian))} tok/s` +
             ` (wall clock incl. the last await: ${cell(api.map((x) => x.wallTokSMedian))}); C++ generate loop in wasm: ${cell(gen)} tok/s;` +
             ` bench_models raw decode in wasm: ${cell(raw)} tok/s` +
             (a && b ? `; API vs raw: ${(1000 / a - 1000 / b).toFixed(3)} ms/token (${((b / a - 1) * 100).toFixed(1)}%)` : '') +
             (g && b ? `; C++ loop vs raw: ${(1000 / g - 1000 / b).toFixed(3)} ms/token` : '') +
             ' (differences within ±10% are noise on a shared machine).');
  }
  const sz = results.sizes;
  for (const b of sz ? [sz.single, sz.threads].filter(Boolean) : []) {
    const ok = b.total <= SIZE_LIMIT.raw && b.gzip <= SIZE_LIMIT.gzip;
    out.push(`wasm build ${b.files.join(' + ')}: ${b.total} B, gzip -9 ${b.gzip} B → ${ok ? 'PASS' : 'MISS'} ` +
             `(size.test's budget: ${SIZE_LIMIT.raw} B, ${SIZE_LIMIT.gzip} B gzip)`);
  }
  out.push(...threadsReport(results, args, verdicts));
  if (results.skipped?.length) out.push('SKIPPED: ' + results.skipped.join('; '));
  if (verdicts.length) out.push('targets (medians): ' + verdicts.join('; '));
  return out.join('\n');
}

// Whether the report has a threads table (threadsReport).
const hasThreadsTable = (args) => args.threads.length > 1 || args.platforms.some(isMt);

// The threads table: every engine with 1 and 2 (…) threads on each shape and weight type, the
// pthreads build's speed-up, and ours against the peers on the same file (PASS/MISS per target);
// ours also against the machine: decode GB/s as a share of the memory read bandwidth and GFLOP/s as a
// share of the SIMD peak, both measured by the same bench_models run with the same threads.
function threadsReport(results, args, verdicts) {
  const T = args.threads;
  if (!hasThreadsTable(args)) return [];
  const out = [];
  const t1 = T[0], tn = T[T.length - 1];
  const med = (xs) => median(xs ?? []);
  const oursRuns = (shape, format, platform, t) => results.ours[oursKey(shape, format, platform, t)] ?? [];
  const ours = (shape, format, platform, t, f) => med(oursRuns(shape, format, platform, t).map(f));
  const peer = (shape, format, engine, t, f) => med((results.peers[peerKey(shape, format, engine, t)] ?? []).map(f));
  const anchor = (shape, t, f) => med((results.anchor[t > 1 ? `${shape}@${t}` : shape] ?? []).map(f));
  const fx = (x, d = 1) => (x == null || !Number.isFinite(x) ? '–' : x.toFixed(d));
  const rows = [];
  const platform1 = (e) => e.platform;  // one-thread figures of the same build
  for (const shape of args.shapes) {
    for (const format of args.formats) {
      const load = results.load[shape];
      const engines = [];
      for (const platform of ['wasm-mt', 'wasm-mt-relaxed', 'native'].filter((p) => args.platforms.includes(p))) {
        const get = (t, f) => ours(shape, format, platform, t, f);
        engines.push({ name: `ours ${platform}`, platform,
          dec: (t) => get(t, (r) => r.decode?.tok_s_median), p64: (t) => get(t, (r) => r.prefill[64]?.ms_median),
          p256: (t) => get(t, (r) => r.prefill[256]?.ms_median), gbs: (t) => get(t, (r) => r.decode?.gbs),
          read: (t) => get(t, (r) => r.limits?.read_gbs), gflops: (t) => get(t, (r) => r.prefill[64]?.gflops),
          // f32 prefill against the f32 step's peak, the integer prefill against the integer step's (bench/limits.h)
          peak: (t) => get(t, (r) => (format === 'f32' ? r.limits?.peak_gflops : r.limits?.peak_int_gops)),
          cpu: (t) => Math.min(...oursRuns(shape, format, platform, t).map((r) => (r.decode?.cpu_per_wall ?? t) / t)) });
      }
      if (format === 'f32')
        engines.push({ name: 'ORT-web', dec: (t) => anchor(shape, t, (a) => a.decodeTokPerSMedian), p64: (t) => anchor(shape, t, (a) => a.prefillMsMedian),
                       p256: (t) => anchor(shape, t, (a) => a.prefill256MsMedian) });
      engines.push({ name: 'wllama', dec: (t) => peer(shape, format, 'wllama', t, (r) => r.decodeTokS), p64: (t) => peer(shape, format, 'wllama', t, (r) => r.prefillMs), p256: () => null });
      engines.push({ name: 'llama.cpp', dec: (t) => peer(shape, format, 'llamacpp', t, (r) => r.decodeTokS), p64: (t) => peer(shape, format, 'llamacpp', t, (r) => r.prefillMs),
                     p256: (t) => peer(shape, format, 'llamacpp', t, (r) => r.prefill256Ms) });
      for (const e of engines) {
        if (T.every((t) => e.dec(t) == null && e.p64(t) == null)) continue;
        const marks = [];
        const check = (name, v, ok) => {
          // a missing figure is null, and null / x is 0 in JS: no ratio here is 0 when both figures exist
          if (v == null || !Number.isFinite(v) || v === 0) return;
          const pass = ok(v);
          marks.push(`${name} ${v.toFixed(2)} ${pass ? 'PASS' : 'MISS'}`);
          verdicts.push(`${shape} ${format} ${e.name} ${name}: ${v.toFixed(2)} → ${pass ? 'PASS' : 'MISS'}`);
          (results.checks ??= []).push({ shape, format, engine: e.name, name, value: v, pass });
        };
        const div = (a, b) => (a == null || b == null ? null : a / b);
        const sDec = div(e.dec(tn), e.dec(t1)), sP64 = div(e.p64(t1), e.p64(tn)), sP256 = div(e.p256(t1), e.p256(tn));
        if (isMt(e.platform ?? '') && tn === 2 && t1 === 1) {
          const q = format !== 'f32';
          check(`dec ${tn}t/1t≥${q ? TARGETS.threads.quantDecode : TARGETS.threads.f32Decode}`, sDec, (v) => v >= (q ? TARGETS.threads.quantDecode : TARGETS.threads.f32Decode));
          check(`pf64 ${tn}t/1t≥${TARGETS.threads.prefill}`, sP64, (v) => v >= TARGETS.threads.prefill);
          check(`pf256 ${tn}t/1t≥${TARGETS.threads.prefill}`, sP256, (v) => v >= TARGETS.threads.prefill);
        }
        if (isMt(e.platform ?? '')) {
          // ahead of the peers with the same threads (onnxruntime-web runs f32 only)
          if (format === 'f32') {
            check(`dec≥ORT ${tn}t`, e.dec(tn) / anchor(shape, tn, (a) => a.decodeTokPerSMedian), (v) => v >= 1);
            check(`pf64≥ORT ${tn}t`, anchor(shape, tn, (a) => a.prefillMsMedian) / e.p64(tn), (v) => v >= 1);
          }
          check(`dec≥wllama ${tn}t`, e.dec(tn) / peer(shape, format, 'wllama', tn, (r) => r.decodeTokS), (v) => v >= 1);
          check(`pf64≥wllama ${tn}t`, peer(shape, format, 'wllama', tn, (r) => r.prefillMs) / e.p64(tn), (v) => v >= 1);
          if (QUANT.includes(format)) {  // 4-bit decode, one thread, the same file
            const q8 = ours(shape, 'q8_0', platform1(e), 1, (r) => r.decode?.tok_s_median);
            check(`dec 1t≥${TARGETS.q4.vsQ8}×q8_0`, e.dec(1) / q8, (v) => v >= TARGETS.q4.vsQ8);
            check(`dec 1t≥${TARGETS.q4.vsWllama}×wllama`, e.dec(1) / peer(shape, format, 'wllama', 1, (r) => r.decodeTokS), (v) => v >= TARGETS.q4.vsWllama);
            check(`dec 1t≥${TARGETS.q4.vsLlamacpp}×llama.cpp`, e.dec(1) / peer(shape, format, 'llamacpp', 1, (r) => r.decodeTokS), (v) => v >= TARGETS.q4.vsLlamacpp);
          }
          if (format !== 'f32') {  // integer prefill, one thread: against our f32 prefill and llama.cpp native on the same file
            const f32 = (n) => ours(shape, 'f32', platform1(e), 1, (r) => r.prefill[n]?.ms_median);
            const { vsF32, vsLlamacpp } = TARGETS.intPrefill;
            check(`pf64 1t≥${vsF32}×f32`, f32(64) / e.p64(1), (v) => v >= vsF32);
            check(`pf256 1t≥${vsF32}×f32`, f32(256) / e.p256(1), (v) => v >= vsF32);
            check(`pf64 1t ms÷llama.cpp≤${vsLlamacpp}`, e.p64(1) / peer(shape, format, 'llamacpp', 1, (r) => r.prefillMs), (v) => v <= vsLlamacpp);
            check(`pf256 1t ms÷llama.cpp≤${vsLlamacpp}`, e.p256(1) / peer(shape, format, 'llamacpp', 1, (r) => r.prefill256Ms), (v) => v <= vsLlamacpp);
          }
        }
        const limits = e.read ? `${fx(e.gbs(tn))} of ${fx(e.read(tn))} (${fx(100 * e.gbs(tn) / e.read(tn), 0)}%)` : '';
        const peak = !e.peak ? '' : e.peak(tn) == null ? fx(e.gflops(tn)) : `${fx(e.gflops(tn))} of ${fx(e.peak(tn))} (${fx(100 * e.gflops(tn) / e.peak(tn), 0)}%)`;
        const busy = e.cpu && e.cpu(tn) < 0.85 ? '*' : '';
        rows.push([shape, format, e.name + busy, ...T.map((t) => fx(e.dec(t))), fx(sDec, 2), ...T.map((t) => fx(e.p64(t))), fx(sP64, 2),
                   ...T.map((t) => fx(e.p256(t))), fx(sP256, 2), limits, peak, marks.join(', ')]);
      }
    }
  }
  if (!rows.length) return out;
  out.push('');
  out.push(`Threads and the llama.cpp peers — decode tok/s and prefill ms with ${T.join(' / ')} threads; ×: ${tn} threads over ${t1} ` +
           `(prefill: ${t1}-thread ms ÷ ${tn}-thread ms); ours' decode GB/s of weights against the memory read bandwidth and prefill-64 ` +
           `G op/s against the SIMD peak (f32 weights: the f32 step's; quantized weights: the integer step's, bench/limits.h), ` +
           `both measured by the same run with ${tn} threads.`);
  out.push(table(['shape', 'weights', 'engine', ...T.map((t) => `decode ${t}t`), '×', ...T.map((t) => `pf64 ${t}t`), '×',
                  ...T.map((t) => `pf256 ${t}t`), '×', `GB/s ${tn}t of read`, `pf64 G op/s ${tn}t of peak`, 'targets'], rows));
  out.push('wllama: llama.cpp\'s wasm build in headless Chromium (its own clock, 128 tokens after BOS; pthreads when threads > 1); llama.cpp: ' +
           'node-llama-cpp native, llama.cpp\'s own perf counters (llama_decode alone, 128 tokens; the wall clock of its JS loop is in the JSON). ' +
           'Both on the GGUF converted from the same checkpoint. ' +
           '* = our process got < 85% of the cores it asked for.');
  if (results.peersMissing) out.push(`llama.cpp peers: not run (${results.peersMissing}).`);
  out.push(...prefillBounds(results, args));
  return out;
}

// What the integer-prefill row "within 1.3× of llama.cpp native's time" asks of our one-thread
// prefill-64 in G op/s (the same shape's op count: llama.cpp's rate is ours × our ms ÷ its ms),
// against the integer step's peak measured by the same bench_models run.
function prefillBounds(results, args) {
  const out = [];
  const med = (xs) => median(xs.filter((x) => x != null));
  for (const platform of ['wasm-mt', 'wasm-mt-relaxed'].filter((p) => args.platforms.includes(p))) {
    for (const shape of args.shapes) {
      for (const format of args.formats.filter((f) => f !== 'f32')) {
        const runs = results.ours[oursKey(shape, format, platform, 1)] ?? [];
        const ms = med(runs.map((r) => r.prefill[64]?.ms_median)), gops = med(runs.map((r) => r.prefill[64]?.gflops));
        const peak = med(runs.map((r) => r.limits?.peak_int_gops));
        const peerMs = med((results.peers[peerKey(shape, format, 'llamacpp', 1)] ?? []).map((r) => r.prefillMs));
        if (!ms || !gops || !peak || !peerMs) continue;
        const need = gops * ms / peerMs / TARGETS.intPrefill.vsLlamacpp;
        out.push(`- ${platform} ${shape} ${format}, prefill-64, 1 thread: ours ${gops.toFixed(1)} G op/s (${(100 * gops / peak).toFixed(0)}% of ` +
                 `the integer peak, ${peak.toFixed(1)}); llama.cpp native ${(gops * ms / peerMs).toFixed(1)}, so ≤ ` +
                 `${TARGETS.intPrefill.vsLlamacpp}× its time needs ≥ ${need.toFixed(1)} G op/s = ${(100 * need / peak).toFixed(0)}% of the peak.`);
      }
    }
  }
  if (out.length) out.unshift('', 'Integer prefill against the machine (the peak: bench/limits.h, in the same run):');
  return out;
}

function prefillGflops(load, n, ms) {
  if (!ms) return null;
  const attn = load.attn_per_key * n * (n + 1) / 2;
  return (2 * (load.layer_matmul_params * n + load.head_params) + attn) / (ms / 1000) / 1e9;
}

// The results object again from the raw list written by --json.
function fromRaw(saved, args) {
  const raw = Array.isArray(saved) ? saved : saved.raw;  // older files: the list alone
  const results = { ours: {}, anchor: {}, peers: {}, load: {}, api: [], sizes: wasmSizes(), raw,
                    skipped: saved.skipped ?? [], peersMissing: saved.peersMissing ?? null };
  args.rounds = 1 + Math.max(0, ...raw.map((r) => r.round ?? 0));
  for (const r of raw) {
    const t = r.threads ?? 1;
    if (r.type === 'api') results.api[r.round] = r;
    else if (r.platform) (results.ours[oursKey(r.shape, r.format, r.platform, t)] ??= [])[r.round] = r;
    else if (r.engine === 'llamacpp' || r.engine === 'wllama') (results.peers[peerKey(r.shape, r.format, r.engine, t)] ??= [])[r.round] = r;
    else if (r.shape) (results.anchor[t > 1 ? `${r.shape}@${t}` : r.shape] ??= [])[r.round] = r;
  }
  for (const shape of args.shapes) {
    const [dim, hidden, layers, heads, kv, vocab] = SHAPES[shape];
    const mm = layers * (2 * dim * dim + 2 * dim * (dim * kv / heads) + 3 * dim * hidden);
    results.load[shape] = { weight_bytes_f32: 4 * (mm + vocab * dim + (2 * layers + 1) * dim), matmul_params_per_token: mm + vocab * dim,
                            layer_matmul_params: mm, head_params: vocab * dim, attn_per_key: 4 * dim * layers };
  }
  results.api = results.api.filter(Boolean);
  return results;
}

// ---- main -------------------------------------------------------------------------------------------
// results.ours key of one of our runs: `${shape}/${format}/${platform}`, `@${threads}` past 1 thread.
export const oursKey = (shape, format, platform, threads = 1) => `${shape}/${format}/${platform}${threads > 1 ? `@${threads}` : ''}`;
// results.peers' key: a peer engine ('llamacpp', 'wllama') on the file of shape and format, with threads.
const peerKey = (shape, format, engine, threads) => `${shape}/${format}/${engine}@${threads}`;

async function main() {
  if (process.argv[2] === '--api-child') return apiChild(process.argv[3], process.argv[4], process.argv[5] === 'quick');
  const args = parseArgs(process.argv.slice(2));
  if (args.report) {
    const saved = JSON.parse(readFileSync(args.report, 'utf8'));
    const results = fromRaw(saved, args);
    results.loads = saved.loads ?? [];
    results.argv = saved.argv;
    console.log(report(results, args));
    if (args.readme) writeReadme(results, args);
    return;
  }
  const haveShared = existsSync(join(shared, 'anchors', 'run.sh'));
  if (args.anchor && !haveShared) log(`[bench] ${shared} not found: onnxruntime-web is not run`);
  const peers = args.peers ? findPeers({ shared, log }) : { missing: '--no-peers' };
  if (peers.missing) log(`[bench] llama.cpp peers not run: ${peers.missing}`);
  const bin = await binaries(args);
  const results = { ours: {}, anchor: {}, peers: {}, load: {}, api: [], sizes: wasmSizes(), raw: [], skipped: [],
                    peersMissing: peers.missing ?? null, loads: [sample('start')] };
  log(`[bench] load average ${loadNow()} (1 / 5 / 15 min, ${cpus().length} cores)`);
  const tok = join(shared, 'models', 'llama2-tokenizer', 'tokenizer.bin');
  const skip = (what) => {
    if (!results.skipped.includes(what)) results.skipped.push(what);
    log(`[bench] SKIPPED ${what}`);
  };
  for (let round = 0; round < args.rounds; round++) {
    if (args.rounds > 1) log(`[bench] round ${round + 1} of ${args.rounds}, load average ${loadNow()}`);
    if (round > 0) results.loads.push(sample(`round ${round + 1}`));
    for (const shape of args.shapes) {
      const ckpt = checkpoint(shape, peers.missing ? null : peers);
      const seq = SHAPES[shape][6];
      // Side by side: the peers on this shape first, then ours.
      if (args.anchor && haveShared && args.formats.includes('f32')) {
        for (const threads of args.threads) {
          try {
            const a = await runAnchor(ckpt, args, seq, threads);
            (results.anchor[threads > 1 ? `${shape}@${threads}` : shape] ??= [])[round] = a;
            results.raw.push({ shape, round, engine: 'onnxruntime-web', ...a });
          } catch (e) {
            skip(`${shape} onnxruntime-web ${threads}t: ${String(e.message).split('\n').filter(Boolean).slice(-1)[0]}`);
          }
        }
      }
      if (!peers.missing) {
        const names = args.formats.map((f) => peerModelName(shape, f));
        for (const f of args.formats)
          if (!existsSync(join(peers.models, peerModelName(shape, f)))) skip(`${shape} ${f}: ${peerModelName(shape, f)} is not among the peers' models`);
        // one peer run per thread count: a run stopped by the timeout (bench/peers.mjs) loses only its own figures
        for (const [engine, threads] of ['llamacpp', 'wllama'].flatMap((e) => args.threads.map((t) => [e, t]))) {
          try {
            for (const r of await runPeer(peers, engine, names, [threads], { verbose: args.verbose, log })) {
              const format = args.formats.find((f) => peerModelName(shape, f) === r.model);
              const rec = { shape, round, format, engine, ...r };  // the same object in both: prefill256Ms is added below
              (results.peers[peerKey(shape, format, engine, r.threads)] ??= [])[round] = rec;
              results.raw.push(rec);
            }
          } catch (e) {
            skip(`${shape} ${engine} ${threads}t: ${String(e.message).split('\n').filter(Boolean).slice(-1)[0]}`);
          }
        }
        // llama.cpp native's 256-token prefill (the integer-prefill target compares 64 and 256 tokens)
        for (const threads of args.formats.some((f) => f !== 'f32') ? args.threads : []) {
          try {
            for (const r of await runPeer(peers, 'llamacpp', names, [threads], { verbose: args.verbose, log, extra: ['--prefill', '256', '--decode', '1', '--runs', '1'] })) {
              const format = args.formats.find((f) => peerModelName(shape, f) === r.model);
              const rec = (results.peers[peerKey(shape, format, 'llamacpp', r.threads)] ?? [])[round];
              if (rec) rec.prefill256Ms = r.prefillMs;
            }
          } catch (e) {
            skip(`${shape} llamacpp prefill-256 ${threads}t: ${String(e.message).split('\n').filter(Boolean).slice(-1)[0]}`);
          }
        }
      }
      for (const format of args.formats) {
        let input = ckpt;
        if (QUANT.includes(format)) {
          input = peers.missing ? null : join(peers.models, peerModelName(shape, format));
          if (!input || !existsSync(input)) {
            skip(`${shape} ${format} (ours): no GGUF file (${peers.missing ?? `${peerModelName(shape, format)} missing`})`);
            continue;
          }
        }
        for (const platform of args.platforms) {
          for (const threads of platform === 'wasm' || platform === 'wasm-relaxed' ? [1] : args.threads) {
            const extra = shape === '15M' && format === 'f32' && existsSync(tok) && threads === 1 ? ['--tokenizer', tok] : [];
            let r;
            try {
              r = await runOurs(bin, platform, input, format, threads, args, extra);
            } catch (e) {
              skip(`${shape} ${format} ${platform} ${threads}t: ${String(e.message).split('\n').slice(-1)[0]}`);
              continue;
            }
            (results.ours[oursKey(shape, format, platform, threads)] ??= [])[round] = r;
            results.raw.push({ shape, round, format, platform, ...r });
            if (r.load && format === 'f32') {
              const [dim, hidden, layers, heads, kv, vocab] = SHAPES[shape];
              const kvd = dim * kv / heads;
              results.load[shape] = { weight_bytes_f32: r.load.weight_bytes, matmul_params_per_token: r.load.matmul_params_per_token,
                                      layer_matmul_params: layers * (2 * dim * dim + 2 * dim * kvd + 3 * dim * hidden),
                                      head_params: vocab * dim, attn_per_key: 4 * dim * layers };
            }
            const d = r.decode, p = r.prefill;
            log(`[bench]   decode ${d?.tok_s_median} tok/s (cpu/wall ${d?.cpu_per_wall}), prefill-64 ${p[64]?.ms_median} ms, prefill-256 ${p[256]?.ms_median ?? '–'} ms` +
                (r.limits ? `; read ${r.limits.read_gbs} GB/s, peak ${r.limits.peak_gflops} GFLOP/s (f32), ${r.limits.peak_int_gops ?? '–'} G op/s (int)` : ''));
          }
        }
      }
      if (shape === '15M' && args.api && existsSync(tok) && results.sizes) {
        // right after our 15M runs, so the API figure and the raw wasm figure are measured close together
        log('[bench] JS API: loadModel + model.generate on rand15M (wasm in Node) ...');
        try {
          const [r] = await runJson(process.execPath, [fileURLToPath(import.meta.url), '--api-child', ckpt, tok, args.quick ? 'quick' : ''],
                                    { verbose: args.verbose, tag: 'api' });
          results.api[round] = r;
          results.raw.push({ round, ...r });
          log(`[bench]   API ${r.tokSMedian.toFixed(1)} tok/s`);
        } catch (e) {
          log(`[bench] JS API run failed: ${e.message}`);
        }
      }
      if (!results.load[shape]) {  // f32 not run: the ORT rows still want the f32 counts
        const [dim, hidden, layers, heads, kv, vocab] = SHAPES[shape];
        const kvd = dim * kv / heads;
        const mm = layers * (2 * dim * dim + 2 * dim * kvd + 3 * dim * hidden);
        results.load[shape] = { weight_bytes_f32: 4 * (mm + vocab * dim + (2 * layers + 1) * dim), matmul_params_per_token: mm + vocab * dim,
                                layer_matmul_params: mm, head_params: vocab * dim, attn_per_key: 4 * dim * layers };
      }
    }
  }
  results.api = results.api.filter(Boolean);
  results.loads.push(sample('end'));
  const text = report(results, args);
  console.log('\n' + text);
  if (args.json) writeFileSync(args.json, JSON.stringify({ raw: results.raw, skipped: results.skipped, peersMissing: results.peersMissing, loads: results.loads,
                                                          argv: process.argv.slice(2) }, null, 1));
  if (args.readme) writeReadme(results, args);
}

// README.md's performance table, from one run's results: the medians, each beside its peer.
// The README's table of one pthreads build (wasm-mt, or its relaxed-SIMD twin) beside the peers.
function readmeRows(results, args, platform) {
  const med = (xs) => median((xs ?? []).filter((x) => x != null));
  const ours = (shape, format, t, f) => med((results.ours[oursKey(shape, format, platform, t)] ?? []).map(f));
  const anchor = (shape, t, f) => med((results.anchor[t > 1 ? `${shape}@${t}` : shape] ?? []).map(f));
  const peer = (shape, format, engine, t, f) => med((results.peers[peerKey(shape, format, engine, t)] ?? []).map(f));
  const n = (x, d = 0) => (x == null || !Number.isFinite(x) ? '–' : x.toFixed(d));
  const x = (a, b) => (a == null || b == null || !Number.isFinite(a / b) ? '–' : `${(a / b).toFixed(2)}×`);
  const tn = Math.max(...args.threads);
  const rows = [];
  const row = (label, f) => rows.push(`| ${label} | ${args.shapes.map(f).join(' | ')} |`);
  const dec = (s, fm, t) => ours(s, fm, t, (r) => r.decode?.tok_s_median);
  const pf = (s, fm, t, k) => ours(s, fm, t, (r) => r.prefill[k]?.ms_median);
  const aDec = (s, t) => anchor(s, t, (a) => a.decodeTokPerSMedian), aP64 = (s, t) => anchor(s, t, (a) => a.prefillMsMedian);
  row(`f32 decode tok/s, 1 / ${tn} threads (${tn}t ÷ 1t) [onnxruntime-web 1 / ${tn}]`,
      (s) => `${n(dec(s, 'f32', 1))} / ${n(dec(s, 'f32', tn))} (${x(dec(s, 'f32', tn), dec(s, 'f32', 1))}) [${n(aDec(s, 1))} / ${n(aDec(s, tn))}]`);
  row(`f32 prefill-64 ms, 1 / ${tn} threads (1t ÷ ${tn}t) [onnxruntime-web 1 / ${tn}]`,
      (s) => `${n(pf(s, 'f32', 1, 64))} / ${n(pf(s, 'f32', tn, 64))} (${x(pf(s, 'f32', 1, 64), pf(s, 'f32', tn, 64))}) [${n(aP64(s, 1))} / ${n(aP64(s, tn))}]`);
  row(`f32 prefill-256 ms, 1 / ${tn} threads (1t ÷ ${tn}t)`,
      (s) => `${n(pf(s, 'f32', 1, 256))} / ${n(pf(s, 'f32', tn, 256))} (${x(pf(s, 'f32', 1, 256), pf(s, 'f32', tn, 256))})`);
  for (const fm of args.formats.filter((f) => f !== 'f32')) {
    row(`${fm} decode tok/s, 1 / ${tn} threads (${tn}t ÷ 1t; 1t ÷ q8_0) [wllama 1 / ${tn}; llama.cpp native 1 / ${tn}]`, (s) => {
      const o1 = dec(s, fm, 1), o2 = dec(s, fm, tn);
      const w = (t) => peer(s, fm, 'wllama', t, (r) => r.decodeTokS), l = (t) => peer(s, fm, 'llamacpp', t, (r) => r.decodeTokS);
      return o1 == null ? '–' : `${n(o1)} / ${n(o2)} (${x(o2, o1)}${fm === 'q8_0' ? '' : `; ${x(o1, dec(s, 'q8_0', 1))}`}) [${n(w(1))} / ${n(w(tn))}; ${n(l(1))} / ${n(l(tn))}]`;
    });
    for (const k of [64, 256]) {
      row(`${fm} prefill-${k} ms, 1 / ${tn} threads (our f32 1t ÷ this 1t) [llama.cpp native 1 / ${tn}]`, (s) => {
        const o1 = pf(s, fm, 1, k), o2 = pf(s, fm, tn, k);
        const l = (t) => peer(s, fm, 'llamacpp', t, (r) => (k === 64 ? r.prefillMs : r.prefill256Ms));
        return o1 == null ? '–' : `${n(o1)} / ${n(o2)} (${x(pf(s, 'f32', 1, k), o1)}) [${n(l(1))} / ${n(l(tn))}]`;
      });
    }
  }
  return rows;
}

function readmeTable(results, args) {
  const out = [];
  for (const [platform, title] of [['wasm-mt', 'AttnLens wasm pthreads build in Node'],
                                   ['wasm-mt-relaxed', 'The same build on the relaxed-SIMD kernels (Node 20 with --experimental-wasm-relaxed-simd)']]) {
    if (!args.platforms.includes(platform)) continue;
    if (out.length) out.push('');
    out.push(`| ${title} | ${args.shapes.join(' | ')} |`, `| --- | ${args.shapes.map(() => '---').join(' | ')} |`, ...readmeRows(results, args, platform));
  }
  // every target: how many shapes meet it, and the values (per build)
  const byName = new Map();
  for (const c of results.checks ?? []) {
    const key = `${c.format} ${c.name}${c.engine === 'ours wasm-mt' ? '' : ` (${c.engine.replace(/^ours /, '')})`}`;
    if (!byName.has(key)) byName.set(key, []);
    byName.get(key).push(c);
  }
  if (byName.size) {
    out.push('', 'Targets of issue 14 (medians; MET only where every shape meets it):', '');
    for (const [key, cs] of byName)
      out.push(`- ${key}: ${cs.every((c) => c.pass) ? 'MET' : 'MISSED'} — ${cs.map((c) => `${c.shape} ${c.value.toFixed(2)}${c.pass ? '' : ' ✗'}`).join(', ')}`);
  }
  out.push(...prefillBounds(results, args));
  return out.join('\n');
}

function writeReadme(results, args) {
  const path = join(root, 'README.md');
  const text = readFileSync(path, 'utf8');
  const begin = '<!-- bench:models -->', end = '<!-- /bench:models -->';
  const a = text.indexOf(begin), b = text.indexOf(end);
  if (a < 0 || b < a) throw new Error(`README.md has no ${begin} … ${end} block`);
  const cmd = `npm run bench -- --only models ${(results.argv ?? process.argv.slice(2)).join(' ')}`;
  const loads = (results.loads ?? []).map((l) => `${l.when} ${l.load}`).join('; ');
  // the run's own start and end (a --report of a file made before they were recorded: unknown)
  const minute = (iso) => iso.slice(0, 16).replace('T', ' ');
  const first = results.loads?.[0]?.at, last = results.loads?.at(-1)?.at;
  const when = first && last ? `${minute(first)}–${minute(last).slice(11)} UTC` : 'at a time the results file does not record';
  const stamp = `<!-- generated by node bench/models.mjs --readme -->
` +
    `Measured ${when}, \`${cmd}\`, medians of ${args.rounds} round(s); ` +
    `load average (1 / 5 / 15 min, ${cpus().length} cores): ${loads || 'not recorded'}.
`;
  writeFileSync(path, text.slice(0, a + begin.length) + '\n' + stamp + '\n' + readmeTable(results, args) + '\n' + text.slice(b));
  log('[bench] README.md performance table rewritten');
}

// Run as a script (bench/interp.mjs imports checkpoint() from here).
if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((e) => {
    console.error(e.message ?? e);
    process.exit(1);
  });
}
