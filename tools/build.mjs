#!/usr/bin/env node
// Builds AttnLens with CMake: the WebAssembly module for the JS package (dist/wasm/) and, with
// --native or --all, the native engine, tests and benchmarks. Incremental: reruns are quick.
//   node tools/build.mjs [--wasm] [--native] [--all]     (default: --wasm)
// Build folders: build-wasm/ and build-native/ (override with ATTNLENS_BUILD_WASM / _NATIVE).
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = join(dirname(fileURLToPath(import.meta.url)), '..');
export const buildDirs = {
  wasm: process.env.ATTNLENS_BUILD_WASM ?? join(root, 'build-wasm'),
  native: process.env.ATTNLENS_BUILD_NATIVE ?? join(root, 'build-native'),
};
const jobs = String(Math.max(1, cpus().length));

function run(cmd, args) {
  console.log(`[build] ${cmd} ${args.join(' ')}`);
  execFileSync(cmd, args, { cwd: root, stdio: 'inherit' });
}

export function buildNative(targets = []) {
  const dir = buildDirs.native;
  if (!existsSync(join(dir, 'CMakeCache.txt'))) run('cmake', ['-S', root, '-B', dir, '-DCMAKE_BUILD_TYPE=Release']);
  run('cmake', ['--build', dir, '-j', jobs, ...targets.flatMap((t) => ['--target', t])]);
}

export function buildWasm(targets = []) {
  const dir = buildDirs.wasm;
  if (!existsSync(join(dir, 'CMakeCache.txt'))) {
    run('emcmake', ['cmake', '-S', root, '-B', dir, '-DCMAKE_BUILD_TYPE=Release',
      // emcmake's default emulator passes --experimental-wasm-threads, which Node 20 refuses
      '-DCMAKE_CROSSCOMPILING_EMULATOR=/usr/bin/node;--no-experimental-fetch']);
  }
  run('cmake', ['--build', dir, '-j', jobs, ...targets.flatMap((t) => ['--target', t])]);
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const args = process.argv.slice(2);
  const all = args.includes('--all');
  if (all || args.includes('--native')) buildNative();
  if (all || args.includes('--wasm') || !args.some((a) => a.startsWith('--'))) buildWasm(all ? [] : ['attnlens_wasm']);
}
