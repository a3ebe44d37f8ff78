#!/usr/bin/env node
// Quantized-model benchmark: AttnLens (wasm in Node, and native) on GGUF files in f32, q8_0, q4_0 and
// llama.cpp's Q4_K_M, beside llama.cpp itself on the very same files — native (node-llama-cpp,
// ../shared/peers/bench_llamacpp.mjs) and its wasm build (wllama in headless Chromium,
// bench_wllama.mjs). One thread everywhere. The files are the peers' random-weight models shaped like
// stories15M / 42M / 110M (../shared/peers/make_models.sh: rand{S}-{f32,q8_0,q4_0}.gguf written by
// its mkgguf.py with ggml's reference quantizers, rand{S}-ll-q4_k_m.gguf by llama.cpp's quantizer).
//
//   node bench/quant.mjs [--shapes 42M,110M] [--types f32,q8_0,q4_0,q4_k_m] [--platforms wasm,native]
//                        [--rounds N] [--quick] [--no-llamacpp] [--no-wllama] [--no-build] [--json FILE]
//
// Per file and engine: decode tok/s (greedy, 128 tokens after a short prompt), prefill of 64 and 256
// tokens (ms, one batch into an empty cache). Ours: bench/bench_models.cpp (its method: warm-up,
// median of passes; decode GB/s = weight bytes × tok/s). llama.cpp native: its own perf counters of
// llama_decode ("native" figures of bench_llamacpp.mjs, f32 KV cache like ours). wllama: its own
// timings. Ratios printed: 4-bit decode ÷ our q8_0 decode, ÷ wllama, ÷ llama.cpp native; prefill
// ÷ our f32 prefill of the same shape, and llama.cpp's prefill time ÷ ours.
// Peers: $ATTNLENS_PEERS, else ../shared/peers when set up (tests/fixtures/llamacpp/llamacpp.py sets
// a copy up in ~/.cache/attnlens-peers otherwise); models in <peers>/models (its make_models.sh).
import { spawn, execFileSync } from 'node:child_process';
import { existsSync, writeFileSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { peersDir, root } from './peers.mjs';
import { median } from './stats.mjs';

const log = (...a) => console.error(...a);

function parseArgs(argv) {
  const a = { shapes: ['42M', '110M'], types: ['f32', 'q8_0', 'q4_0', 'q4_k_m'], platforms: ['wasm', 'native'],
              rounds: 1, quick: false, llamacpp: true, wllama: true, build: true, json: null };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i];
    const val = () => argv[++i];
    if (k === '--shapes') a.shapes = val().split(',').map((s) => s.toUpperCase().replace(/^(\d+)M?$/, '$1M'));
    else if (k === '--types') a.types = val().split(',');
    else if (k === '--platforms') a.platforms = val().split(',');
    else if (k === '--rounds') a.rounds = Math.max(1, Number(val()));
    else if (k === '--quick') a.quick = true;
    else if (k === '--no-llamacpp') a.llamacpp = false;
    else if (k === '--no-wllama') a.wllama = false;
    else if (k === '--no-build') a.build = false;
    else if (k === '--json') a.json = val();
    else throw new Error(`unknown option ${k}`);
  }
  return a;
}

// The file of a shape and type in the peers' models folder.
const fileOf = (models, shape, type) =>
  join(models, type === 'q4_k_m' ? `rand${shape}-ll-q4_k_m.gguf` : `rand${shape}-${type}.gguf`);

function runJson(cmd, argv, { cwd } = {}) {
  return new Promise((resolve, reject) => {
    const p = spawn(cmd, argv, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '', err = '';
    p.stdout.on('data', (d) => { out += d; });
    p.stderr.on('data', (d) => { err += d; });
    p.on('error', reject);
    p.on('close', (code) => {
      if (code !== 0) return reject(new Error(`${cmd} ${argv.join(' ')} exited with ${code}\n${err.split('\n').slice(-8).join('\n')}`));
      resolve({ out, lines: out.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l)) });
    });
  });
}

async function ours(platform, file, quick) {
  const bin = platform === 'native' ? join(root, 'build-native', 'bench_models') : join(root, 'build-wasm', 'bench_models.js');
  const flags = [file, '--steps', '128', '--prefill', '64,256', ...(quick ? ['--quick'] : ['--warmup-s', '5'])];
  const { lines } = platform === 'native' ? await runJson(bin, flags)
                                          : await runJson(process.execPath, ['--no-experimental-fetch', bin, ...flags]);
  const r = { prefill: {} };
  for (const l of lines) {
    if (l.type === 'prefill') r.prefill[l.tokens] = l.ms_median ?? l.ms;
    else if (l.type === 'decode') r.decode = l;
    else if (l.type === 'load') r.load = l;
  }
  return { tokS: r.decode?.tok_s_median ?? r.decode?.tok_s, gbs: r.decode?.gbs, p64: r.prefill[64], p256: r.prefill[256],
           weights: r.load?.weights, weightBytes: r.load?.weight_bytes };
}

async function llamacpp(peers, file, prefill) {
  const out = join(root, 'build-native', `llamacpp-${prefill}.json`);
  await runJson(process.execPath, [join(peers, 'bench_llamacpp.mjs'), '--threads', '1', '--kv', 'f32', '--runs', '3',
    '--decode', prefill === 64 ? '128' : '16', '--prefill', String(prefill), '--json', out, file], { cwd: peers });
  const { results } = JSON.parse((await import('node:fs')).readFileSync(out, 'utf8'));
  const r = results[0];
  return { tokS: r.decode_tok_s_native_last ?? r.decode_tok_s, tokSWall: r.decode_tok_s,
           prefillMs: r.prefill_ms_native_last ?? r.prefill_ms };
}

async function wllama(peers, file) {
  const out = join(root, 'build-native', 'wllama.json');
  await runJson(process.execPath, [join(peers, 'bench_wllama.mjs'), '--threads', '1', '--runs', '3', '--json', out, basename(file)], { cwd: peers });
  const { results } = JSON.parse((await import('node:fs')).readFileSync(out, 'utf8'));
  const r = results[0];
  return { tokS: r.decode_tok_s, prefillMs: r.prefill_ms };
}

const f = (x, d = 1) => (x == null ? '–' : x.toFixed(d));
const ratio = (x, y) => (x == null || y == null ? null : x / y);

function table(headers, rows) {
  const w = headers.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
  const line = (r) => '| ' + r.map((c, i) => String(c).padEnd(w[i])).join(' | ') + ' |';
  return [line(headers), '| ' + w.map((n) => '-'.repeat(n)).join(' | ') + ' |', ...rows.map(line)].join('\n');
}

async function main() {
  const a = parseArgs(process.argv.slice(2));
  const peers = peersDir();
  if (!peers) {
    log('bench/quant: the llama.cpp peers are not set up (../shared/peers or $ATTNLENS_PEERS, with models/): SKIPPED');
    return;
  }
  const models = join(peers, 'models');
  if (a.build) {
    if (a.platforms.includes('native')) execFileSync(process.execPath, [join(root, 'tools', 'build.mjs'), '--native'], { stdio: 'inherit' });
    execFileSync('cmake', ['--build', join(root, 'build-native'), '--target', 'bench_models'], { stdio: 'inherit' });
    if (a.platforms.includes('wasm')) {
      execFileSync(process.execPath, [join(root, 'tools', 'build.mjs')], { stdio: 'inherit' });
      execFileSync('cmake', ['--build', join(root, 'build-wasm'), '--target', 'bench_models'], { stdio: 'inherit' });
    }
  }
  const raw = [];
  for (let round = 0; round < a.rounds; round++) {
    for (const shape of a.shapes) {
      for (const type of a.types) {
        const file = fileOf(models, shape, type);
        if (!existsSync(file)) { log(`[quant] ${file} is missing (../shared/peers/make_models.sh): skipped`); continue; }
        const rec = { round, shape, type, file, bytes: statSync(file).size };
        for (const p of a.platforms) {
          log(`[quant] ours ${p} ${shape} ${type} ...`);
          rec[p] = await ours(p, file, a.quick);
        }
        if (a.llamacpp) {
          log(`[quant] llama.cpp native ${shape} ${type} ...`);
          const r64 = await llamacpp(peers, file, 64);
          const r256 = await llamacpp(peers, file, 256);
          rec.llamacpp = { tokS: r64.tokS, tokSWall: r64.tokSWall, p64: r64.prefillMs, p256: r256.prefillMs };
        }
        if (a.wllama && type !== 'f32') {
          log(`[quant] wllama ${shape} ${type} ...`);
          try { rec.wllama = await wllama(peers, file); } catch (e) { log(`[quant] wllama failed: ${e.message.split('\n')[0]}`); }
        }
        raw.push(rec);
      }
    }
  }
  if (a.json) writeFileSync(a.json, JSON.stringify(raw, null, 1));

  // One row per (shape, type): medians over rounds.
  const get = (shape, type, path) => median(raw.filter((r) => r.shape === shape && r.type === type).map((r) => path(r)));
  const rows = [];
  for (const shape of a.shapes) {
    for (const type of a.types) {
      if (!raw.some((r) => r.shape === shape && r.type === type)) continue;
      const w = (k) => get(shape, type, (r) => r.wasm?.[k]);
      const n = (k) => get(shape, type, (r) => r.native?.[k]);
      const l = (k) => get(shape, type, (r) => r.llamacpp?.[k]);
      const wl = (k) => get(shape, type, (r) => r.wllama?.[k]);
      const q8 = get(shape, 'q8_0', (r) => r.wasm?.tokS);
      const f32p64 = get(shape, 'f32', (r) => r.wasm?.p64), f32p256 = get(shape, 'f32', (r) => r.wasm?.p256);
      rows.push([
        `${shape} ${type}`, f(w('tokS')), f(w('gbs')), type === 'q8_0' || type === 'f32' ? '' : f(ratio(w('tokS'), q8), 2),
        f(wl('tokS')), f(ratio(w('tokS'), wl('tokS')), 2), f(l('tokS')), f(ratio(w('tokS'), l('tokS')), 2), f(n('tokS')),
        `${f(w('p64'))} / ${f(w('p256'))}`,
        type === 'f32' ? '' : `${f(ratio(f32p64, w('p64')), 2)} / ${f(ratio(f32p256, w('p256')), 2)}`,
        `${f(l('p64'))} / ${f(l('p256'))}`, `${f(ratio(w('p64'), l('p64')), 2)} / ${f(ratio(w('p256'), l('p256')), 2)}`,
        f(wl('prefillMs')),
      ]);
    }
  }
  console.log(table(['model', 'decode tok/s (wasm)', 'GB/s', '÷ our q8_0', 'wllama tok/s', '÷ wllama', 'llama.cpp tok/s',
    '÷ llama.cpp', 'native tok/s', 'prefill 64 / 256 ms (wasm)', 'f32 prefill ÷ this', 'llama.cpp prefill ms',
    'ours ÷ llama.cpp (time)', 'wllama prefill 64 ms'], rows));
}

await main();
