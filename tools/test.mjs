#!/usr/bin/env node
// Every test of AttnLens, as CI runs it (`npm test`):
//   1. install what is missing (tools/setup.mjs)
//   2. build native and wasm (engine, Catch2 tests, the JS package's module)
//   3. Catch2 through CTest: natively, then the same tests compiled to wasm and run under Node (and
//      the thread tests once more in the pthreads build, build-wasm-mt/)
//   4. the fuzzing smoke run (tools/fuzz.mjs --smoke: clang + ASan + UBSan builds of the libFuzzer
//      harnesses replay their seeds and tests/fuzz/regressions, then fuzz 3 s each)
//   5. node --test tests/js (the JS API, CLI, packaging) and tests/e2e (headless Chromium)
// Options: --only cpp|fuzz|js    --skip-setup
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { buildDirs, buildNative, buildWasm, moduleTargets, root } from './build.mjs';

const args = process.argv.slice(2);
const only = args.includes('--only') ? args[args.indexOf('--only') + 1] : null;
const failures = [];

function step(name, fn) {
  console.log(`\n=== ${name}`);
  try {
    fn();
  } catch (e) {
    failures.push(name);
    console.error(`*** ${name} failed: ${e.message.split('\n')[0]}`);
  }
}

if (!args.includes('--skip-setup')) execFileSync('node', [join(root, 'tools/setup.mjs'), '--for', 'test'], { stdio: 'inherit' });
if (!existsSync(join(root, '..', 'shared')))
  console.log('\nNOTE: ../shared is absent: the tests that need its models and golden outputs will say SKIPPED.');

// Catch2 has no skip: the test binaries append the cases they skipped to catch2-skipped.log in their
// working directory (tests/cpp/main.cpp); they are listed and counted here, apart from the passes.
const skipped = [];
const ctest = (dir, ...args) => {
  const log = join(dir, 'catch2-skipped.log');
  rmSync(log, { force: true });
  try {
    execFileSync('ctest', ['--output-on-failure', '-j', String(cpus().length), ...args], { cwd: dir, stdio: 'inherit' });
  } finally {
    if (existsSync(log)) {
      const lines = readFileSync(log, 'utf8').split('\n').filter(Boolean);
      console.log(`\n${lines.length} Catch2 test case(s) SKIPPED in ${dir} (they passed nothing):`);
      for (const l of lines) console.log(`  SKIPPED ${l}`);
      skipped.push(...lines);
    }
  }
};
// The tests of work split over threads, built and run in the pthreads build too.
const threadTests = ['test_core_parallel', 'test_nn_threads', 'test_runtime_threads'];

if (!only || only === 'cpp') {
  step('build native', () => buildNative());
  step('C++ tests (native)', () => ctest(buildDirs.native));
}
if (only !== 'fuzz') step('build wasm', () => buildWasm());
if (only !== 'fuzz') step('build wasm (pthreads)', () => buildWasm([...moduleTargets, ...(!only || only === 'cpp' ? threadTests : [])], { threads: true }));
if (!only || only === 'cpp') {
  step('C++ tests (wasm, under Node)', () => ctest(buildDirs.wasm));
  step('C++ thread tests (wasm pthreads, under Node)', () => ctest(buildDirs.wasmMt, '-R', `^(${threadTests.join('|')})$`));
}
if (!only || only === 'fuzz') step('fuzzing smoke run', () => execFileSync('node', [join(root, 'tools/fuzz.mjs'), '--smoke'], { stdio: 'inherit' }));
if (!only || only === 'js') {
  for (const dir of ['tests/js', 'tests/e2e']) {
    if (!existsSync(join(root, dir))) continue;
    step(`node --test ${dir}`, () => {
      const r = spawnSync('node', ['--test', '--test-concurrency=1', dir], { cwd: root, stdio: 'inherit' });
      if (r.status !== 0) throw new Error(`exit code ${r.status}`);
    });
  }
}

if (skipped.length) console.log(`\n${skipped.length} Catch2 test case(s) were SKIPPED (listed above).`);
console.log(failures.length ? `\nFAILED: ${failures.join(', ')}` : '\nAll tests passed.');
process.exit(failures.length ? 1 : 0);
