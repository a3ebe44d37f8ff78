// The WebAssembly module and its JS glue stay small enough to embed: under 1.25 MB together,
// uncompressed, and under 400 kB gzipped (what a page downloads). The budget was 1 MB while the
// engine ran two architectures; it now carries every decoder architecture, the GGML block types
// with their SIMD kernels, the tokenizer.json pipeline (regex + Unicode tables), SentencePiece,
// encoder-decoders and the interpretability layer, with load-time code compiled -Os. And the glue has no eval / new Function (strict CSP, see tests/e2e/package_csp).
import assert from 'node:assert/strict';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { gzipSync } from 'node:zlib';
import { root } from './fixtures/models.mjs';

const glue = join(root, 'dist/wasm/attnlens.mjs');
const wasm = join(root, 'dist/wasm/attnlens.wasm');
const notBuilt = !(existsSync(glue) && existsSync(wasm)) && 'dist/wasm is not built (node tools/build.mjs --wasm)';

test('attnlens.wasm + attnlens.mjs < 1.25 MB uncompressed, < 400 kB gzipped', { skip: notBuilt }, (t) => {
  const w = statSync(wasm).size;
  const g = statSync(glue).size;
  const gz = gzipSync(readFileSync(wasm)).length + gzipSync(readFileSync(glue)).length;
  t.diagnostic(`attnlens.wasm ${w} B + attnlens.mjs ${g} B = ${w + g} B (${((w + g) / 1024).toFixed(1)} KiB); gzip ${gz} B`);
  assert.ok(w + g < 1_250_000, `${w + g} bytes`);
  assert.ok(gz < 400_000, `${gz} bytes gzipped`);
});

test('the glue needs no eval: no new Function, no eval(', { skip: notBuilt }, () => {
  const src = readFileSync(glue, 'utf8');
  assert.doesNotMatch(src, /new Function\s*\(/);
  assert.doesNotMatch(src, /[^.\w]eval\s*\(/);
});
