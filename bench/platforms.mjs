// The bench_models builds the benchmarks run, by platform name, and the Node flags each needs: one
// table for bench/models.mjs and bench/attention.mjs.
import { join } from 'node:path';

// wasm* platforms are Emscripten builds run under Node; '-mt' the pthreads build directory, '-relaxed'
// the relaxed-SIMD kernels (the bench_models_relaxed target).
export const BENCH_PLATFORMS = ['wasm', 'wasm-mt', 'wasm-relaxed', 'wasm-mt-relaxed', 'native'];
export const isRelaxed = (platform) => platform.endsWith('-relaxed');

// The CMake target of bench_models for `platform`.
export const benchTarget = (platform) => (isRelaxed(platform) ? 'bench_models_relaxed' : 'bench_models');

// The binary (native) or the Emscripten .js (wasm*) of `platform`, in tools/build.mjs's build directories.
export function benchBinary(buildDirs, platform) {
  if (platform === 'native') return join(buildDirs.native, 'bench_models');
  const dir = platform.startsWith('wasm-mt') ? buildDirs.wasmMt : buildDirs.wasm;
  return join(dir, `${benchTarget(platform)}.js`);
}

// Node's flags for a wasm platform's .js: Emscripten's glue reads its .wasm by path, which Node's fetch
// refuses; the relaxed build needs Node 20's flag.
export const nodeFlags = (platform) => ['--no-experimental-fetch', ...(isRelaxed(platform) ? ['--experimental-wasm-relaxed-simd'] : [])];
