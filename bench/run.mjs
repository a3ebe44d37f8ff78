#!/usr/bin/env node
// `npm run bench`: the kernel micro-benchmarks (bench/kernels.mjs), the model benchmark
// (bench/models.mjs: AttnLens wasm — single-thread and pthreads builds — and native, 1 and 2 threads,
// beside onnxruntime-web, wllama and llama.cpp native on stories-shaped checkpoints), llama.cpp's
// quantized GGUF files (bench/quant.mjs: q4_0 and Q4_K_M beside our q8_0/f32, llama.cpp native and its
// wasm build wllama, one thread; skipped, saying so, without the llama.cpp peers), what attention
// costs (bench/attention.mjs: capture, long context), what the interpretability toolkit costs
// (bench/interp.mjs), the time to first token in headless Chromium and the demo's streaming beside
// Node (bench/browser.mjs), what the demo's main thread does while a run decodes (bench/demo-trace.mjs), the
// tokenizers beside transformers.js' (bench/tokenizers.mjs) and the relaxed-SIMD builds beside the
// portable ones (bench/relaxed.mjs, in Node and Chromium).
// Not a test: nothing here fails on a slow figure; the tables say PASS/MISS per target.
//
//   npm run bench [-- OPTIONS]
//     --only kernels|models|quant|attention|interp|browser|tokenizers|relaxed   run one of them
//     --quick, --no-build     passed to both (fewer repetitions / use the binaries already built)
//     every other option goes to bench/models.mjs (see `node bench/models.mjs --help`)
import { spawnSync } from 'node:child_process';
import { cpus, loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const argv = process.argv.slice(2);
let only = null;
const rest = [];
for (let i = 0; i < argv.length; i++) {
  if (argv[i] === '--only') only = argv[++i];
  else if (argv[i].startsWith('--only=')) only = argv[i].slice(7);
  else rest.push(argv[i]);
}
if (only && !['kernels', 'models', 'quant', 'attention', 'interp', 'browser', 'tokenizers', 'relaxed'].includes(only)) {
  console.error(`bench: --only takes "kernels", "models", "quant", "attention", "interp", "browser", "tokenizers" or "relaxed", got ${JSON.stringify(only)}`);
  process.exit(2);
}
// passed to both scripts (each also takes its own options; everything else goes to models.mjs)
const shared = ['--quick', '--no-build'].filter((f) => rest.includes(f));

// The machine may be shared: every part says how busy it was before and after it ran.
const load = () => `load average ${loadavg().map((x) => x.toFixed(2)).join(' / ')} (1 / 5 / 15 min, ${cpus().length} cores)`;

function run(script, args) {
  console.log(`\n[bench] node ${join('bench', script)} ${args.join(' ')}`.trimEnd());
  console.log(`[bench] before: ${load()}`);
  const r = spawnSync(process.execPath, [join(here, script), ...args], { stdio: 'inherit' });
  console.log(`[bench] after ${script}: ${load()}`);
  if (r.error) throw r.error;
  return r.status ?? 1;
}

// On a new machine: what the benchmarks need beyond the tests' packages (tools/setup.mjs --for bench).
const setup = spawnSync(process.execPath, [join(here, '..', 'tools', 'setup.mjs'), '--for', 'bench'], { stdio: 'inherit' });
if (setup.status !== 0) process.exit(setup.status ?? 1);

let status = 0;
if (!only || only === 'kernels') status |= run('kernels.mjs', shared);
if (!only || only === 'models') status |= run('models.mjs', rest);
if (!only || only === 'quant') status |= run('quant.mjs', shared);
if (!only || only === 'attention') status |= run('attention.mjs', shared);
if (!only || only === 'interp') status |= run('interp.mjs', shared);
if (!only || only === 'browser') status |= run('browser.mjs', []) | run('demo-trace.mjs', []);
if (!only || only === 'tokenizers') status |= run('tokenizers.mjs', shared);
if (!only || only === 'relaxed') status |= run('relaxed.mjs', shared.filter((a) => a === '--quick'));
process.exit(status);
