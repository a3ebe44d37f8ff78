#!/usr/bin/env node
// Our logits against llama.cpp's on the same GGUF files, for files too large to commit (the peers'
// rand{15M,42M,110M}-ll-<ftype>.gguf made by llama.cpp's quantizer). The committed test with small
// fixtures is tests/cpp/test_runtime_parity_llamacpp.cpp; this applies the same rule to any file:
//
//   node tools/parity_llamacpp.mjs [--f32 F32.gguf] [--positions 64] [--seed 7] [--per-position] [--self] FILE.gguf ...
//
// Per file: the same random token ids (BOS first) teacher-forced through our wasm engine (the JS
// package, model.forward) and through llama.cpp (../shared/peers/llamacpp_logits.mjs: node-llama-cpp,
// CPU, f32 KV cache, one batch). Printed: max and RMS |ours − llama.cpp|, the positions whose every
// logit is within 1e-4 × the logit range and the first position that is not, and — with --f32, the
// f32 file the others were quantized from — llama.cpp's own quantization drift
// D = max |llama.cpp(file) − llama.cpp(f32)|, our max ÷ D, and top-1 agreement wherever llama.cpp's
// top-2 margin exceeds 0.25·D (1e-4 × range without --f32). "over" marks a file beyond 0.25·D or
// with a top-1 difference (exit status 1). --self adds llama.cpp against itself: the same ids fed
// one token at a time instead of in one batch (same file, same build, f32 KV cache), S = max
// |llama.cpp(token by token) − llama.cpp(one batch)|: how far llama.cpp's own two ways of running
// the same tokens differ, the floor under any comparison with it.
// What to expect: we compute llama.cpp's integer block sums, so positions agree to ~1e-6 until the
// first position where the float summation order puts one quantized activation on the other side of
// an 8-bit rounding step; the difference then reaches every later position through attention. In a
// 1-layer model that is rare (tests/cpp/test_runtime_parity_llamacpp.cpp: ≥ 80% of positions exact);
// in deeper models the first such step comes within a few positions (--per-position shows where).
// All files must share one vocabulary (the ids are drawn from the first file's).
// Needs the peers (bench/peers.mjs) and the built package (node tools/build.mjs).
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { peersDir } from '../bench/peers.mjs';
import { loadModel } from '../web/src/index.mjs';

function parseArgs(argv) {
  const a = { f32: null, positions: 64, seed: 7, perPosition: false, self: false, files: [] };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i];
    if (k === '--f32') a.f32 = resolve(argv[++i]);
    else if (k === '--positions') a.positions = Number(argv[++i]);
    else if (k === '--seed') a.seed = Number(argv[++i]);
    else if (k === '--per-position') a.perPosition = true;
    else if (k === '--self') a.self = true;
    else if (k.startsWith('--')) throw new Error(`unknown option ${k}`);
    else a.files.push(resolve(k));
  }
  if (!a.files.length) throw new Error('usage: node tools/parity_llamacpp.mjs [--f32 F32.gguf] [--positions N] FILE.gguf ...');
  return a;
}

// Deterministic ids in [3, vocab): BOS (1) first.
function randomIds(n, vocab, seed) {
  let s = seed >>> 0 || 1;
  const next = () => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32);
  return [1, ...Array.from({ length: n - 1 }, () => 3 + Math.floor(next() * (vocab - 3)))];
}

function llamacpp(peers, file, ids, tmp) {
  const out = join(tmp, `${basename(file)}.f32`);
  execFileSync(process.execPath, [join(peers, 'llamacpp_logits.mjs'), '--model', file, '--ids', ids.join(','), '--n', '0',
    '--logits-out', out], { cwd: peers, stdio: ['ignore', 'ignore', 'inherit'] });
  const b = readFileSync(out);
  return new Float32Array(b.buffer, b.byteOffset, b.byteLength / 4);
}

// llama.cpp (node-llama-cpp from the peers, as llamacpp_logits.mjs opens it: CPU, f32 KV cache, no
// flash attention) fed one token at a time: logits [T][V].
async function llamacppTokenwise(peers, file, ids) {
  const req = createRequire(join(peers, 'package.json'));
  const { getLlama, LlamaLogLevel } = await import(pathToFileURL(req.resolve('node-llama-cpp')).href);
  const llama = await getLlama({ gpu: false, build: 'never', logLevel: LlamaLogLevel.error, progressLogs: false });
  const model = await llama.loadModel({ modelPath: file, gpuLayers: 0 });
  const context = await model.createContext({ contextSize: Math.max(512, ids.length), threads: 1, batchSize: 512, sequences: 1,
    flashAttention: false, experimentalKvCacheKeyType: 'F32', experimentalKvCacheValueType: 'F32' });
  try {
    const seq = context.getSequence();
    const rows = [];
    for (const id of ids) {
      const [r] = await seq.controlledEvaluate([[id, { generateNext: { logits: true } }]]);
      const row = new Float32Array(r.next.logits.size);
      for (const [t, x] of r.next.logits) row[t] = x;
      rows.push(row);
    }
    const out = new Float32Array(rows.length * rows[0].length);
    rows.forEach((r, i) => out.set(r, i * r.length));
    return out;
  } finally {
    await context.dispose();
    await model.dispose();
  }
}

const maxAbsDiff = (x, y) => x.reduce((m, v, i) => Math.max(m, Math.abs(v - y[i])), 0);

async function ours(file, ids) {
  const model = await loadModel(file);
  try {
    const r = await model.forward(ids);
    return { logits: r.logits, vocab: r.shape[1], dtype: model.info.weightDtype };
  } finally {
    await model.dispose();
  }
}

function argmax(x, o, V) {
  let b = 0;
  for (let v = 1; v < V; v++) if (x[o + v] > x[o + b]) b = v;
  return b;
}

function compare(mine, want, V, { range, drift }) {
  const T = want.length / V, exact = 1e-4 * range, tol = drift == null ? null : 0.25 * drift;
  let max = 0, sum2 = 0, within = 0, checked = 0, agree = 0;
  const rows = [];
  for (let t = 0; t < T; t++) {
    const o = t * V;
    let rowMax = 0;
    for (let v = 0; v < V; v++) {
      const d = Math.abs(mine[o + v] - want[o + v]);
      rowMax = Math.max(rowMax, Number.isNaN(d) ? Infinity : d);
      sum2 += d * d;
    }
    max = Math.max(max, rowMax);
    rows.push(rowMax);
    within += rowMax <= exact;
    const best = argmax(want, o, V);
    let second = -Infinity;
    for (let v = 0; v < V; v++) if (v !== best) second = Math.max(second, want[o + v]);
    if (want[o + best] - second > (rowMax <= exact ? exact : tol ?? exact)) {
      checked++;
      agree += argmax(mine, o, V) === best;
    }
  }
  return { T, max, rms: Math.sqrt(sum2 / want.length), within, checked, agree, tol, rows };
}

const g = (x) => (x == null ? '–' : x.toPrecision(3));
const selfCell = (tokenwise, batch, drift) => {
  const S = maxAbsDiff(tokenwise, batch);
  return drift == null ? g(S) : `${g(S)} (${g(S / drift)})`;
};

async function main() {
  const a = parseArgs(process.argv.slice(2));
  const peers = peersDir(['llamacpp_logits.mjs', 'node_modules']);
  if (!peers) {
    console.error('parity_llamacpp: the llama.cpp peers are not set up (../shared/peers or $ATTNLENS_PEERS): SKIPPED');
    process.exit(2);
  }
  const tmp = mkdtempSync(join(tmpdir(), 'attnlens-parity-'));
  let failed = false;
  try {
    const first = await ours(a.files[0], [1]);
    const ids = randomIds(a.positions, first.vocab, a.seed);
    const ref = a.f32 ? llamacpp(peers, a.f32, ids, tmp) : null;
    const rangeOf = (x) => x.reduce((m, v) => Math.max(m, v), -Infinity) - x.reduce((m, v) => Math.min(m, v), Infinity);
    console.log('| file | our weights | max \\|ours − llama.cpp\\| | rms | positions within 1e-4 × range | llama.cpp drift D (max / rms) | max ÷ D | top-1 equal |' +
      (a.self ? ' llama.cpp token by token vs one batch: S (÷ D) |' : ''));
    console.log('| --- | --- | --- | --- | --- | --- | --- | --- |' + (a.self ? ' --- |' : ''));
    for (const file of a.files) {
      const want = llamacpp(peers, file, ids, tmp);
      const mine = await ours(file, ids);
      if (mine.logits.length !== want.length) throw new Error(`${file}: ${mine.logits.length} logits, llama.cpp gave ${want.length}`);
      let drift = null, driftRms = null;
      if (ref) {
        let s2 = 0;
        drift = 0;
        for (let i = 0; i < want.length; i++) {
          const d = Math.abs(want[i] - ref[i]);
          drift = Math.max(drift, d);
          s2 += d * d;
        }
        driftRms = Math.sqrt(s2 / want.length);
      }
      const c = compare(mine.logits, want, mine.vocab, { range: rangeOf(ref ?? want), drift });
      const ok = c.agree === c.checked && (drift == null || c.max <= 0.25 * drift);
      const firstOff = c.rows.findIndex((x) => x > 1e-4 * rangeOf(ref ?? want));
      failed ||= !ok;
      console.log(`| ${basename(file)} | ${mine.dtype} | ${g(c.max)} | ${g(c.rms)} | ${c.within} of ${c.T} (first beyond: ${firstOff < 0 ? 'none' : firstOff}) | ` +
        `${drift == null ? '–' : `${g(drift)} / ${g(driftRms)}`} | ${drift == null ? '–' : g(c.max / drift)} | ` +
        `${c.agree} of ${c.checked}${ok ? '' : ' **over**'} |` + (a.self ? ` ${selfCell(await llamacppTokenwise(peers, file, ids), want, drift)} |` : ''));
      if (a.perPosition) console.log(`  max |ours − llama.cpp| per position: ${c.rows.map((x) => x.toExponential(1)).join(' ')}`);
    }
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
  process.exit(failed ? 1 : 0);
}

await main();
