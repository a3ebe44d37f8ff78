// The WebAssembly module and its JS glue stay small enough to embed: under 1.25 MB together,
// uncompressed, and under 400 kB gzipped (what a page downloads), for each of the two builds (single
// thread; pthreads, with its worker script). The budget was 1 MB while the engine ran two
// architectures; it now carries every decoder architecture, the GGML block types with their SIMD
// kernels, the tokenizer.json pipeline (regex + Unicode tables), SentencePiece, encoder-decoders and
// the interpretability layer, with load-time code compiled -Os. And the glue has no eval / new
// Function (strict CSP, see tests/e2e/package_csp and tests/e2e/threads).
import assert from 'node:assert/strict';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { gzipSync } from 'node:zlib';
import { root } from './fixtures/models.mjs';

const builds = {
  single: ['attnlens.wasm', 'attnlens.mjs'],
  threads: ['attnlens-mt.wasm', 'attnlens-mt.mjs', 'attnlens-mt.worker.js'],
};

for (const [build, names] of Object.entries(builds)) {
  const files = names.map((f) => join(root, 'dist/wasm', f));
  const notBuilt = !files.every(existsSync) && 'dist/wasm is not built (node tools/build.mjs --wasm)';

  test(`${build} build: ${names.join(' + ')} < 1.25 MB uncompressed, < 400 kB gzipped`, { skip: notBuilt }, (t) => {
    const sizes = files.map((f) => statSync(f).size);
    const total = sizes.reduce((a, b) => a + b, 0);
    const gz = files.reduce((a, f) => a + gzipSync(readFileSync(f)).length, 0);
    t.diagnostic(`${names.map((n, i) => `${n} ${sizes[i]} B`).join(' + ')} = ${total} B (${(total / 1024).toFixed(1)} KiB); gzip ${gz} B`);
    assert.ok(total < 1_250_000, `${total} bytes`);
    assert.ok(gz < 400_000, `${gz} bytes gzipped`);
  });

  test(`${build} build: the glue needs no eval: no new Function, no eval(`, { skip: notBuilt }, () => {
    for (const f of files.filter((x) => !x.endsWith('.wasm'))) {
      const src = readFileSync(f, 'utf8');
      assert.doesNotMatch(src, /new Function\s*\(/, f);
      assert.doesNotMatch(src, /[^.\w]eval\s*\(/, f);
    }
  });
}
