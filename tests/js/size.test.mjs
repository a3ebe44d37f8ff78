// The WebAssembly module and its JS glue stay small enough to embed: under 1.3 MB together,
// uncompressed, and under 450 kB gzipped (what a page downloads), for each of the four builds (single
// thread; pthreads, with its worker script; and the relaxed-SIMD twin of each). The budget was 1 MB while the engine ran two
// architectures, then 1.25 MB / 400 kB; it now carries every decoder architecture, the GGML block
// types with their SIMD kernels, the tokenizer.json pipeline (regex + Unicode tables), SentencePiece,
// the interpretability layer and the encoder / encoder-decoder families (BERT, T5, BART, Marian:
// +19 kB gzipped) and the SentencePiece conventions of T5, XLM-R and ALBERT (+4.2 kB gzipped, when
// the pthreads build stood 0.2 kB under the former 440 kB), with load-time code compiled -Os/-Oz. (binaryen's -Oz at link would take 3 kB
// gzipped off and cost 18% decode speed: not taken.) And the glue has no eval / new
// Function (strict CSP, see tests/e2e/package_csp and tests/e2e/threads). The sizes the README
// states (section "Speed") are the sizes built: within 2% of each figure, so a change that grows or
// shrinks the module updates the README with it.
import assert from 'node:assert/strict';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { gzipSync } from 'node:zlib';
import { root } from './fixtures/models.mjs';

// README: "The wasm module plus its JS glue is N bytes (N gzipped); the pthreads build with its worker
// script is N bytes (N gzipped), …; their relaxed-SIMD twins are N and N bytes (N and N gzipped)".
const readme = readFileSync(join(root, 'README.md'), 'utf8').replace(/\s+/g, ' ');
const num = (x) => Number(x.replace(/,/g, ''));
const statedMatch = /wasm module plus its JS glue is ([\d,]+) bytes \(([\d,]+) gzipped\); the pthreads build with its worker script is ([\d,]+) bytes \(([\d,]+) gzipped\)[^;]*; their relaxed-SIMD twins are ([\d,]+) and ([\d,]+) bytes \(([\d,]+) and ([\d,]+) gzipped\)/.exec(readme);
const stated = statedMatch && {
  single: { raw: num(statedMatch[1]), gz: num(statedMatch[2]) },
  threads: { raw: num(statedMatch[3]), gz: num(statedMatch[4]) },
  'single-relaxed': { raw: num(statedMatch[5]), gz: num(statedMatch[7]) },
  'threads-relaxed': { raw: num(statedMatch[6]), gz: num(statedMatch[8]) },
};

test('the README states the size of the four builds', () => {
  assert.ok(stated, 'README.md: the sentence "The wasm module plus its JS glue is N bytes (N gzipped); the pthreads build with its worker script is N bytes (N gzipped), …; their relaxed-SIMD twins are N and N bytes (N and N gzipped)" is missing');
});

const builds = {
  single: ['attnlens.wasm', 'attnlens.mjs'],
  threads: ['attnlens-mt.wasm', 'attnlens-mt.mjs', 'attnlens-mt.worker.js'],
  'single-relaxed': ['attnlens-relaxed.wasm', 'attnlens-relaxed.mjs'],
  'threads-relaxed': ['attnlens-mt-relaxed.wasm', 'attnlens-mt-relaxed.mjs', 'attnlens-mt-relaxed.worker.js'],
};

for (const [build, names] of Object.entries(builds)) {
  const files = names.map((f) => join(root, 'dist/wasm', f));
  const notBuilt = !files.every(existsSync) && 'dist/wasm is not built (node tools/build.mjs --wasm)';

  test(`${build} build: ${names.join(' + ')} < 1.3 MB uncompressed, < 450 kB gzipped`, { skip: notBuilt }, (t) => {
    const sizes = files.map((f) => statSync(f).size);
    const total = sizes.reduce((a, b) => a + b, 0);
    const gz = files.reduce((a, f) => a + gzipSync(readFileSync(f)).length, 0);
    t.diagnostic(`${names.map((n, i) => `${n} ${sizes[i]} B`).join(' + ')} = ${total} B (${(total / 1024).toFixed(1)} KiB); gzip ${gz} B`);
    assert.ok(total < 1_300_000, `${total} bytes`);
    assert.ok(gz < 450_000, `${gz} bytes gzipped`);
    if (!stated) return;
    const { raw, gz: statedGz } = stated[build];
    assert.ok(Math.abs(total - raw) <= 0.02 * raw, `${total} bytes built, README.md states ${raw} (more than 2% apart): update the README`);
    assert.ok(Math.abs(gz - statedGz) <= 0.02 * statedGz, `${gz} bytes gzipped built, README.md states ${statedGz} (more than 2% apart): update the README`);
  });

  test(`${build} build: the glue needs no eval: no new Function, no eval(`, { skip: notBuilt }, () => {
    for (const f of files.filter((x) => !x.endsWith('.wasm'))) {
      const src = readFileSync(f, 'utf8');
      assert.doesNotMatch(src, /new Function\s*\(/, f);
      assert.doesNotMatch(src, /[^.\w]eval\s*\(/, f);
    }
  });
}
