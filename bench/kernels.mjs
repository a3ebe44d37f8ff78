#!/usr/bin/env node
// Kernel benchmark in one run: builds what is missing, runs bench_kernels natively (xsimd,
// -march=native, plus its scalar references), in wasm under this Node (SIMD128), the same on the
// relaxed-SIMD kernels (bench_kernels_relaxed, Node with --experimental-wasm-relaxed-simd) and the
// scalar references compiled to wasm without SIMD (bench_kernels_scalar), then prints GFLOP/s, GB/s of
// weights streamed, the relaxed/SIMD, SIMD/scalar and wasm/native ratios and the acceptance targets.
//
//   node bench/kernels.mjs [--runs N] [--quick] [--filter SUBSTR] [--json FILE] [--simd-ref] [--no-build] [--cpu-time]
//
//   --runs N     run every binary N times, interleaved (default 1); the table shows the median
//                of the per-run medians and, with N > 1, their range
//   --quick      skip the matrices larger than 64 MiB and shorten the timing (a smoke test)
//   --simd-ref   also time the scalar references inside the SIMD wasm build (shows whether clang
//                auto-vectorizes them when SIMD128 is on; it does not: they accumulate in double)
//   --json FILE  also write every raw JSON line
//   --cpu-time   time by the process's CPU time instead of the wall clock (a loaded, shared machine:
//                at nice 19 a run gets a few % of a core and wall time measures the other processes)
// Build folders: ATTNLENS_BENCH_NATIVE (default build-bench-native) and ATTNLENS_BENCH_WASM
// (default build-bench-wasm). The targets come from bench/CMakeLists.kernels.cmake; while the
// top-level CMakeLists.txt does not include it yet, it is injected with CMAKE_PROJECT_INCLUDE.
// Method: see bench/kernels/bench_kernels.cpp (warm-up, then the median of timed repetitions).
// The machine may be shared: run it while nothing else is busy, and compare the GB/s with the
// "read" line (the memory bandwidth of that moment).
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { median } from './stats.mjs';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const snippet = join(root, 'bench', 'CMakeLists.kernels.cmake');
const dirs = {
  native: resolve(root, process.env.ATTNLENS_BENCH_NATIVE ?? 'build-bench-native'),
  wasm: resolve(root, process.env.ATTNLENS_BENCH_WASM ?? 'build-bench-wasm'),
};

const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(name);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : dflt;
};
const runs = Math.max(1, Number(opt('--runs', '1')));
const quick = args.includes('--quick');
const filter = opt('--filter', '');
const jsonOut = opt('--json', '');
const simdRef = args.includes('--simd-ref');
const noBuild = args.includes('--no-build');
const cpuTime = args.includes('--cpu-time');

// ---- build ---------------------------------------------------------------------------------------
function sh(cmd, argv, env = {}) {
  console.error(`[bench:kernels] ${cmd} ${argv.join(' ')}`);
  execFileSync(cmd, argv, { cwd: root, stdio: ['ignore', process.stderr, process.stderr], env: { ...process.env, ...env } });
}

function configureArgs() {
  const top = readFileSync(join(root, 'CMakeLists.txt'), 'utf8');
  if (/include\(\s*bench\/CMakeLists\.kernels\.cmake\s*\)/.test(top)) return [];
  return [`-DCMAKE_PROJECT_INCLUDE=${snippet}`];  // the snippet defers itself to the end of the top level
}

function build() {
  const jobs = String(Math.max(1, cpus().length));
  if (!existsSync(join(dirs.native, 'CMakeCache.txt')))
    sh('cmake', ['-S', root, '-B', dirs.native, '-DCMAKE_BUILD_TYPE=Release', ...configureArgs()]);
  sh('cmake', ['--build', dirs.native, '-j', jobs, '--target', 'bench_kernels']);
  if (!existsSync(join(dirs.wasm, 'CMakeCache.txt')))
    sh('emcmake', ['cmake', '-S', root, '-B', dirs.wasm, '-DCMAKE_BUILD_TYPE=Release',
      '-DCMAKE_CROSSCOMPILING_EMULATOR=/usr/bin/node;--no-experimental-fetch', '-DATTNLENS_WASM_RELAXED=ON', ...configureArgs()]);
  sh('cmake', ['--build', dirs.wasm, '-j', jobs, '--target', 'bench_kernels', '--target', 'bench_kernels_scalar', '--target', 'bench_kernels_relaxed']);
  // The repository's package.json says "type": "module"; emscripten's .js output is CommonJS.
  const pj = join(dirs.wasm, 'package.json');
  if (!existsSync(pj)) writeFileSync(pj, '{"type":"commonjs"}\n');
}

// ---- run -------------------------------------------------------------------------------------------
const common = [...(quick ? ['--quick'] : []), ...(filter ? ['--filter', filter] : []), ...(cpuTime ? ['--cpu-time'] : [])];
const binaries = [
  { label: 'native', cmd: join(dirs.native, 'bench_kernels'), argv: ['--ref', ...common] },
  { label: 'wasm', cmd: process.execPath, argv: ['--no-experimental-fetch', join(dirs.wasm, 'bench_kernels.js'), ...(simdRef ? ['--ref'] : []), ...common] },
  { label: 'wasm-scalar', cmd: process.execPath, argv: ['--no-experimental-fetch', join(dirs.wasm, 'bench_kernels_scalar.js'), ...common] },
  // Its lines say platform "wasm": renamed "wasm-relaxed" below.
  // (skipped where it was not built: a build folder configured without ATTNLENS_WASM_RELAXED)
  { label: 'wasm-relaxed', cmd: process.execPath, argv: ['--no-experimental-fetch', '--experimental-wasm-relaxed-simd', join(dirs.wasm, 'bench_kernels_relaxed.js'), ...common],
    optional: join(dirs.wasm, 'bench_kernels_relaxed.js') },
];

function runAll() {
  const lines = [];
  for (let r = 0; r < runs; ++r) {
    for (const b of binaries) {
      if (b.optional && !existsSync(b.optional)) continue;
      console.error(`[bench:kernels] run ${r + 1}/${runs}: ${b.label}`);
      const res = spawnSync(b.cmd, b.argv, { cwd: root, encoding: 'utf8', maxBuffer: 64 << 20 });
      if (res.status !== 0) throw new Error(`${b.label} failed (${res.status}): ${res.stderr}`);
      for (const l of res.stdout.split('\n')) {
        if (!l.startsWith('{')) continue;
        const line = { run: r, ...JSON.parse(l) };
        if (b.label === 'wasm-relaxed') line.platform = 'wasm-relaxed';
        lines.push(line);
      }
    }
  }
  return lines;
}

// ---- table -----------------------------------------------------------------------------------------
// key: kernel/dtype/shape; column: platform + variant ("wasm simd", "wasm-scalar ref", "native ref", ...)
function collect(lines) {
  const cases = new Map();
  for (const l of lines) {
    const key = `${l.kernel} ${l.dtype} ${l.n}x${l.k}x${l.m}`;
    if (!cases.has(key)) cases.set(key, { kernel: l.kernel, dtype: l.dtype, n: l.n, k: l.k, m: l.m, cols: {} });
    const col = `${l.platform} ${l.variant}`;
    const c = cases.get(key).cols;
    (c[col] ??= []).push(l);
  }
  const stat = (arr, f) => (arr ? { med: median(arr.map(f)), lo: Math.min(...arr.map(f)), hi: Math.max(...arr.map(f)), n: arr.length } : null);
  for (const c of cases.values()) {
    c.g = {};
    c.b = {};
    c.ms = {};
    for (const [col, arr] of Object.entries(c.cols)) {
      c.g[col] = stat(arr, (l) => l.gflops);
      c.b[col] = stat(arr, (l) => l.gbps);
      c.ms[col] = stat(arr, (l) => l.ms);
    }
  }
  return cases;
}

const fmt = (s, digits = 1) => (s ? (runs > 1 ? `${s.med.toFixed(digits)} [${s.lo.toFixed(digits)}-${s.hi.toFixed(digits)}]` : s.med.toFixed(digits)) : '-');
const ratio = (a, b) => (a && b ? (a.med / b.med).toFixed(1) + 'x' : '-');
const pad = (s, n) => String(s).padEnd(n);
const padl = (s, n) => String(s).padStart(n);

function printTable(cases) {
  const w = runs > 1 ? 17 : 8;
  const head = ['case', 'wasm SIMD GF/s', 'GB/s', 'relaxed GF/s', 'wasm scalar GF/s', 'native GF/s', 'native scalar', 'relaxed/SIMD', 'SIMD/scalar', 'wasm/native'];
  const widths = [30, w + 6, w, w + 4, w + 8, w + 3, w + 5, 12, 11, 11];
  console.log(head.map((h, i) => (i ? padl(h, widths[i]) : pad(h, widths[i]))).join(' '));
  const ratio2 = (a, b) => (a && b ? (a.med / b.med).toFixed(2) + 'x' : '-');
  for (const [key, c] of cases) {
    const ws = c.g['wasm simd'], wr = c.g['wasm-relaxed simd'], wsc = c.g['wasm-scalar ref'], ns = c.g['native simd'], nr = c.g['native ref'];
    const row = [key, fmt(ws), fmt(c.b['wasm simd']), fmt(wr), fmt(wsc), fmt(ns), fmt(nr), ratio2(wr, ws), ratio(ws, wsc), ratio(ws, ns)];
    console.log(row.map((v, i) => (i ? padl(v, widths[i]) : pad(v, widths[i]))).join(' '));
    if (c.g['wasm ref']) console.log(pad(`  (wasm SIMD build, scalar ref: ${fmt(c.g['wasm ref'])} GF/s)`, 60));
    // act cases: G elements/s; "xsimd" = the formula with xsimd's own tanh / erf / exp (bench_kernels.cpp)
    if (c.g['wasm xsimd'] || c.g['native xsimd'])
      console.log(pad(`  (with xsimd's tanh/erf/exp: wasm ${fmt(c.g['wasm xsimd'])}, native ${fmt(c.g['native xsimd'])} G elements/s)`, 60));
  }
}

function targets(cases) {
  const get = (kernel, dtype, n, k, m) => cases.get(`${kernel} ${dtype} ${n}x${k}x${m}`);
  const out = [];
  const check = (name, value, goal, unit, why = '') => {
    if (value == null) return out.push([name, '-', `>= ${goal} ${unit}`, 'n/a (case not run)', why]);
    out.push([name, `${value.toFixed(1)} ${unit}`, `>= ${goal} ${unit}`, value >= goal ? 'PASS' : 'MISS', why]);
  };
  // 1. f32 matmul >= 20 GFLOP/s in wasm at 64x288x768 and larger; SIMD >= 3x scalar wasm
  for (const [n, k, m] of [[64, 288, 768], [256, 768, 768], [64, 768, 2048]]) {
    const c = get('matmul', 'f32', n, k, m);
    check(`f32 matmul ${n}x${k}x${m} (wasm)`, c?.g['wasm simd']?.med, 20, 'GFLOP/s');
    const s = c?.g['wasm-scalar ref']?.med;
    check(`  SIMD / scalar wasm`, s ? c.g['wasm simd'].med / s : null, 3, 'x');
  }
  // 2. f32 matvec from memory >= 20 GB/s
  for (const [k, m] of [[768, 32000], [4096, 8192]]) {
    const c = get('matvec', 'f32', 1, k, m);
    const read = [...cases.values()].find((x) => x.kernel === 'read')?.b['wasm simd']?.med;
    check(`f32 matvec 1x${k}x${m}, ${((4 * k * m) / 2 ** 20).toFixed(0)} MiB (wasm)`, c?.b['wasm simd']?.med, 20, 'GB/s',
      read ? `memory read now: ${read.toFixed(1)} GB/s` : '');
  }
  // 3. q8_0 decode: 750 tokens/s on stories15M needs the matvecs alone (15.2M weights) faster than that
  const dq = [...cases.values()].find((x) => x.kernel === 'decode' && x.dtype === 'q8_0');
  const df = [...cases.values()].find((x) => x.kernel === 'decode' && x.dtype === 'f32');
  if (dq?.ms['wasm simd']) {
    const tps = 1000 / dq.ms['wasm simd'].med;
    check('q8_0 decode stories15M, matvecs only (wasm)', tps, 750, 'tok/s',
      `${dq.g['wasm simd'].med.toFixed(1)} GFLOP/s, ${dq.b['wasm simd'].med.toFixed(1)} GB/s; attention, norms, sampling come on top`);
    if (df?.ms['wasm simd']) check('  q8_0 / f32 decode speed', df.ms['wasm simd'].med / dq.ms['wasm simd'].med, 2, 'x');
  } else check('q8_0 decode stories15M, matvecs only (wasm)', null, 750, 'tok/s');
  // 4. integer prefill (issue 14): the block-format GEMM (prefill tiles, src/kernels/quant.cpp and
  //    quant_k.cpp) against the f32 matmul of the same shape, GOP/s over GFLOP/s
  for (const [n, k, m] of [[64, 768, 2048], [256, 768, 768]]) {
    const f = get('matmul', 'f32', n, k, m)?.g['wasm simd']?.med;
    for (const dt of ['q8_0', 'q4_0', 'q4_K', 'q6_K']) {
      const q = get('matmul', dt, n, k, m)?.g['wasm simd']?.med;
      check(`${dt} GEMM / f32 matmul ${n}x${k}x${m} (wasm)`, q && f ? q / f : null, 1.8, 'x',
        q ? `${q.toFixed(1)} GOP/s` : '');
    }
  }
  // 5. 4-bit decode (issue 14): q4_0 against our own q8_0 on the rand42M shape (both streamed from
  //    memory): the matvecs of one token, tokens/s ratio
  {
    const r42 = (dt) => [...cases.values()].find((x) => x.kernel === 'decode' && x.dtype === dt && x.m === 57);
    const a = r42('q4_0'), b = r42('q8_0');
    const ta = a?.ms['wasm simd']?.med, tb = b?.ms['wasm simd']?.med;
    check('q4_0 / q8_0 decode rand42M, matvecs (wasm)', ta && tb ? tb / ta : null, 1.4, 'x',
      ta && tb ? `${a.b['wasm simd'].med.toFixed(1)} vs ${b.b['wasm simd'].med.toFixed(1)} GB/s, ` +
        `${a.g['wasm simd'].med.toFixed(1)} vs ${b.g['wasm simd'].med.toFixed(1)} GOP/s` : '');
  }
  console.log('\nTargets (wasm, Node ' + process.versions.node + ', single thread)');
  for (const r of out) console.log(`  ${pad(r[0], 44)} ${padl(r[1], 16)}  ${pad(r[2], 14)} ${pad(r[3], 5)} ${r[4]}`);
}

if (!noBuild) build();
const lines = runAll();
if (jsonOut) writeFileSync(jsonOut, lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
const cases = collect(lines);
const arch = (p) => lines.find((l) => l.platform === p && l.variant === 'simd')?.arch ?? '?';
console.log(`\nAttnLens kernels: native ${arch('native')} (g++ -O3 -march=native), wasm ${arch('wasm')}→SIMD128 ` +
  `(em++ -O3 -msimd128), wasm scalar (no -msimd128). ${runs} run(s); GF/s = 2·n·k·m / median time; ` +
  `GB/s = weight bytes / time.\n`);
printTable(cases);
targets(cases);
