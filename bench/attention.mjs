#!/usr/bin/env node
// What attention costs (issue 14 item 4), 110M shape, in one run:
//   capture  model.stream() with and without { attentions: true } over 256 positions (the JS API in
//            Node, the pthreads build): tok/s of the decode steps and the ratio (target: capture
//            costs ≤ 10%, i.e. ≥ 0.909×). Alternated 3 times, medians.
//   context  decode speed at position 2048 against position 200 (bench_models --at 200,2048: the
//            cache filled by a prefill, then 32 steps timed), f32 and Q4_K_M weights (target ≥ 0.75×),
//            each with the f32 KV cache and the q8_0 one (--kv-cache: nn/kv_cache.h), their timed runs
//            alternated in one process. Needs a
//            checkpoint whose context holds 2080 positions: the 110M weights with a 4096-position RoPE
//            table (../shared/anchors/mkrand_unique.py draws the same weights for any seq), and its
//            Q4_K_M GGUF from the peers' mkgguf.py + llama.cpp's quantizer (skipped without the peers).
//            --platforms: wasm-mt (the portable pthreads build, what Node 20 loads) and wasm-mt-relaxed
//            (the same on the relaxed-SIMD kernels, what Chromium loads; Node 20 runs it with
//            --experimental-wasm-relaxed-simd); both by default.
//
//   node bench/attention.mjs [--threads 1,2] [--kv f32,q8_0] [--platforms wasm-mt,wasm-mt-relaxed] [--only capture|context]
//                            [--quick] [--no-build] [--json FILE]
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { cacheDir, findPeers } from './peers.mjs';
import { benchBinary, benchTarget, nodeFlags } from './platforms.mjs';
import { median } from './stats.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const shared = process.env.ATTNLENS_SHARED ?? join(root, '..', 'shared');
const SHAPE_110M = [768, 2048, 12, 12, 12, 32000];
const PROMPT = [1, 9038, 2501, 263, 931];
const log = (...m) => process.stderr.write(m.join(' ') + '\n');
// The context rows' builds: bench_models of the pthreads build directory (bench/platforms.mjs).
const PLATFORMS = ['wasm-mt', 'wasm-mt-relaxed'];
// ---- the capture child: one realm, one model, alternating with / without capture ---------------------
async function captureChild(ckpt, tok, threads, quick) {
  const { loadModel } = await import(pathToFileURL(join(root, 'web', 'src', 'index.mjs')).href);
  const model = await loadModel([ckpt, tok], { threads: Number(threads) });
  const positions = 256;
  const once = async (attentions) => {
    let t1 = null, n = 0, keys = 0;
    for await (const s of model.stream(PROMPT, { maxNewTokens: positions - PROMPT.length, temperature: 0, attentions, stop: [] })) {
      if (t1 === null) t1 = performance.now();  // after the prompt's pass: decode steps only
      else n++;
      if (attentions) keys += s.attentions.records.reduce((a, r) => a + r.data.length, 0);
    }
    return { tokS: n / ((performance.now() - t1) / 1000), steps: n, floats: keys };
  };
  await once(false);
  await once(true);  // warm-up both paths
  const plain = [], capture = [];
  for (let r = 0; r < (quick ? 1 : 3); r++) {
    plain.push(await once(false));
    capture.push(await once(true));
  }
  await model.dispose();
  console.log(JSON.stringify({ type: 'capture', threads: model.info.threads, positions, plain: plain.map((x) => x.tokS),
                               capture: capture.map((x) => x.tokS), steps: plain[0].steps, floatsPerRun: capture[0].floats }));
}

function parseArgs(argv) {
  const a = { threads: [1, 2], kv: ['f32', 'q8_0'], platforms: PLATFORMS, only: null, quick: false, build: true, json: null };
  for (let i = 0; i < argv.length; i++) {
    const k = argv[i];
    if (k === '--threads') a.threads = argv[++i].split(',').map(Number);
    else if (k === '--kv') a.kv = argv[++i].split(',');
    else if (k === '--platforms') a.platforms = argv[++i].split(',');
    else if (k === '--only') a.only = argv[++i];
    else if (k === '--quick') a.quick = true;
    else if (k === '--no-build') a.build = false;
    else if (k === '--json') a.json = argv[++i];
    else throw new Error(`unknown option ${k}`);
  }
  for (const p of a.platforms) if (!PLATFORMS.includes(p)) throw new Error(`unknown platform ${p} (${PLATFORMS.join(', ')})`);
  return a;
}

function run(cmd, argv) {
  const r = spawnSync(cmd, argv, { cwd: root, encoding: 'utf8', maxBuffer: 64 << 20 });
  if (r.status !== 0) throw new Error(`${[cmd, ...argv].join(' ')} exited with ${r.status}: ${(r.stderr ?? '').split('\n').slice(-4).join(' ')}`);
  return r.stdout.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
}

// The 110M weights with a RoPE table of `seq` positions (same draws as rand110M: only the table differs).
function checkpoint110M(seq) {
  mkdirSync(cacheDir, { recursive: true });
  const path = join(cacheDir, `rand110M-ctx${seq}.bin`);
  if (existsSync(path)) return path;
  const mk = join(shared, 'anchors', 'mkrand_unique.py');
  if (!existsSync(mk)) return null;
  log(`[bench] making ${path} (once)`);
  execFileSync('/usr/bin/python3', [mk, path + '.tmp', ...SHAPE_110M.map(String), String(seq)], { stdio: 'inherit' });
  renameSync(path + '.tmp', path);
  return path;
}

function q4kmOf(bin, peers) {
  const out = bin.replace(/\.bin$/, '-q4_k_m.gguf');
  if (existsSync(out)) return out;
  const f32 = bin.replace(/\.bin$/, '-f32.gguf');
  const tok = join(shared, 'models', 'llama2-tokenizer', 'tokenizer.bin');
  log(`[bench] making ${out} (once: the peers' mkgguf.py, then llama.cpp's quantizer)`);
  execFileSync('/usr/bin/python3', [join(peers.dir, 'mkgguf.py'), bin, tok, f32, 'f32'], { stdio: 'inherit' });
  execFileSync(join(peers.dir, 'quantize'), [f32, out, 'q4_k_m'], { stdio: ['ignore', 'ignore', 'inherit'] });
  return out;
}

async function main() {
  if (process.argv[2] === '--capture-child') return captureChild(...process.argv.slice(3));
  const args = parseArgs(process.argv.slice(2));
  const { buildDirs, buildWasm } = await import(pathToFileURL(join(root, 'tools', 'build.mjs')).href);
  const benchOf = (p) => benchBinary(buildDirs, p);
  const context = args.only !== 'capture' ? args.platforms : [];
  const missing = context.filter((p) => !existsSync(benchOf(p))).map(benchTarget);
  if (args.build || missing.length)
    buildWasm([...new Set([...(args.build ? context.map(benchTarget) : missing), 'attnlens_wasm'])], { threads: true });
  const results = [], lines = [], skipped = [];
  const tok = join(shared, 'models', 'llama2-tokenizer', 'tokenizer.bin');

  if (args.only !== 'context') {
    const ckpt = checkpoint110M(1024);
    if (!ckpt || !existsSync(tok)) skipped.push(`capture: ${shared} (anchors, llama2 tokenizer) not found`);
    else {
      for (const t of args.threads) {
        log(`[bench] capture cost, 110M f32, ${t} thread(s) ...`);
        const [r] = run(process.execPath, [fileURLToPath(import.meta.url), '--capture-child', ckpt, tok, String(t), args.quick ? 'quick' : '']);
        results.push(r);
        const p = median(r.plain), c = median(r.capture);
        lines.push(`| capture, 110M f32, ${r.threads}t | ${p.toFixed(1)} tok/s | ${c.toFixed(1)} tok/s | ${(c / p).toFixed(3)} | ` +
                   `${c / p >= 1 / 1.1 ? 'PASS' : 'MISS'} (≥ 0.909: capture costs ≤ 10%) |`);
      }
    }
  }
  if (args.only !== 'capture') {
    const bin = checkpoint110M(4096);
    const peers = findPeers({ shared, log });
    const inputs = [];
    if (!bin) skipped.push(`context: ${shared}/anchors not found`);
    else {
      inputs.push(['f32', bin]);
      if (peers.missing) skipped.push(`context Q4_K_M: llama.cpp peers not found (${peers.missing})`);
      else inputs.push(['q4_k_m', q4kmOf(bin, peers)]);
    }
    for (const platform of context) {
      for (const [format, input] of inputs) {
        for (const t of args.threads) {
          // Both caches in one bench_models process, their timed runs alternated (--kv-cache f32,q8_0).
          log(`[bench] decode at 200 and 2048, ${platform}, 110M ${format}, KV ${args.kv.join(' and ')}, ${t} thread(s) ...`);
          let r;
          try {
            r = run(process.execPath, [...nodeFlags(platform), benchOf(platform), input,
                                       '--threads', String(t), '--at', '200,2048', '--no-decode', '--prefill', '', '--steps', '2',
                                       '--kv-cache', args.kv.join(',')]);
          } catch (e) {
            skipped.push(`context ${platform} ${format} ${t}t: ${e.message.split('\n')[0]}`);
            continue;
          }
          const byKv = {};
          for (const l of r.filter((x) => x.type === 'decode_at')) (byKv[l.kv_cache] ??= {})[l.position] = l;
          for (const kv of args.kv) {
            const at = byKv[kv];
            if (!at?.[200] || !at?.[2048]) continue;
            results.push({ type: 'context', platform, format, kv, threads: t, at });
            const ratio = at[2048].tok_s_median / at[200].tok_s_median;
            const vsF32 = kv !== 'f32' && byKv.f32?.[2048] ? `; ${(at[2048].tok_s_median / byKv.f32[2048].tok_s_median).toFixed(2)}× the f32 cache at 2048` : '';
            lines.push(`| decode at 2048 vs 200, ${platform}, 110M ${format}, KV ${kv}, ${t}t | ${at[200].tok_s_median.toFixed(1)} tok/s | ` +
                       `${at[2048].tok_s_median.toFixed(1)} tok/s (KV ${(at[2048].kv_bytes / 1e6).toFixed(1)} MB at 2048${vsF32}) | ` +
                       `${ratio.toFixed(3)} | ${ratio >= 0.75 ? 'PASS' : 'MISS'} (≥ 0.75) |`);
          }
        }
      }
    }
  }
  console.log('\nAttention at full speed (wasm pthreads builds in Node; 110M shape)');
  console.log('| case | without / at 200 | with / at 2048 | ratio | target |');
  console.log('| --- | --- | --- | --- | --- |');
  for (const l of lines) console.log(l);
  for (const s of skipped) console.log(`SKIPPED: ${s}`);
  if (args.json) writeFileSync(args.json, JSON.stringify({ results, skipped }, null, 1));
}

main().catch((e) => {
  console.error(e.message ?? e);
  process.exit(1);
});
