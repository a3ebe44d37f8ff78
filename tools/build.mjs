#!/usr/bin/env node
// Builds AttnLens with CMake: the WebAssembly modules for the JS package (dist/wasm/: attnlens.* single
// thread, attnlens-mt.* with pthreads, each also as *-relaxed.* with relaxed SIMD) and, with --native or
// --all, the native engine, tests and benchmarks. Incremental: reruns are quick.
//   node tools/build.mjs [--wasm] [--native] [--all]     (default: --wasm)
// Build folders: build-wasm/, build-wasm-mt/ (the pthreads variant: every object is compiled with
// -pthread) and build-native/ (override with ATTNLENS_BUILD_WASM / _WASM_MT / _NATIVE).
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = join(dirname(fileURLToPath(import.meta.url)), '..');
export const buildDirs = {
  wasm: process.env.ATTNLENS_BUILD_WASM ?? join(root, 'build-wasm'),
  wasmMt: process.env.ATTNLENS_BUILD_WASM_MT ?? join(root, 'build-wasm-mt'),
  native: process.env.ATTNLENS_BUILD_NATIVE ?? join(root, 'build-native'),
};
const jobs = String(Math.max(1, cpus().length));

function run(cmd, args) {
  console.log(`[build] ${cmd} ${args.join(' ')}`);
  execFileSync(cmd, args, { cwd: root, stdio: 'inherit' });
}

// With { arch } (a -march= value other than native) in its own folder, build-native-ARCH/.
export function buildNative(targets = [], { arch = null } = {}) {
  const dir = arch ? `${buildDirs.native}-${arch}` : buildDirs.native;
  if (!existsSync(join(dir, 'CMakeCache.txt')))
    run('cmake', ['-S', root, '-B', dir, '-DCMAKE_BUILD_TYPE=Release', ...(arch ? [`-DATTNLENS_NATIVE_ARCH=${arch}`] : [])]);
  run('cmake', ['--build', dir, '-j', jobs, ...targets.flatMap((t) => ['--target', t])]);
}

// The targets of the package's modules in each wasm build folder: the portable module and its
// relaxed-SIMD twin (CMakeLists.txt, ATTNLENS_WASM_RELAXED).
export const moduleTargets = ['attnlens_wasm', 'attnlens_wasm_relaxed'];

// The single-thread variant, or with { threads: true } the pthreads one (build-wasm-mt/).
export function buildWasm(targets = [], { threads = false } = {}) {
  const dir = threads ? buildDirs.wasmMt : buildDirs.wasm;
  const cache = join(dir, 'CMakeCache.txt');
  // (Re)configured when new, or made before the relaxed variant existed.
  if (!existsSync(cache) || !readFileSync(cache, 'utf8').includes('ATTNLENS_WASM_RELAXED:BOOL=ON')) {
    run('emcmake', ['cmake', '-S', root, '-B', dir, '-DCMAKE_BUILD_TYPE=Release',
      // emcmake's default emulator passes --experimental-wasm-threads, which Node 20 refuses
      '-DCMAKE_CROSSCOMPILING_EMULATOR=/usr/bin/node;--no-experimental-fetch',
      `-DATTNLENS_WASM_THREADS=${threads ? 'ON' : 'OFF'}`, '-DATTNLENS_WASM_RELAXED=ON']);
  }
  run('cmake', ['--build', dir, '-j', jobs, ...targets.flatMap((t) => ['--target', t])]);
}

// The four modules of the JS package (dist/wasm/).
export function buildModules() {
  buildWasm(moduleTargets);
  buildWasm(moduleTargets, { threads: true });
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const args = process.argv.slice(2);
  const all = args.includes('--all');
  if (all || args.includes('--native')) buildNative();
  if (all || args.includes('--wasm') || !args.some((a) => a.startsWith('--'))) {
    buildWasm(all ? [] : moduleTargets);
    buildWasm(moduleTargets, { threads: true });
  }
}
