// The llama.cpp peers of the model benchmark (bench/models.mjs): llama.cpp native (node-llama-cpp,
// `bench_llamacpp.mjs`) and llama.cpp's wasm build in Chromium (wllama, `bench_wllama.mjs`), on GGUF
// files converted from the very checkpoints our engine and onnxruntime-web run.
//
// Where they come from (never from the repo):
//   $ATTNLENS_PEERS      a peers folder already set up (node_modules/, models/, ./quantize), used as is
//   ../shared/peers      copied once into $ATTNLENS_BENCH_CACHE/peers-home/peers (beside links to ../shared/anchors
//                        and ../shared/models, which its scripts expect as ../anchors and ../models);
//                        its setup.sh (npm install from the registry, builds ./quantize) and
//                        make_models.sh (random checkpoints + GGUF conversions, ~2 GB, long) run there once
// Without either, the peers are skipped and the report says why.
import { execFileSync, spawn } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { homedir, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = join(dirname(fileURLToPath(import.meta.url)), '..');
// The benchmarks' cache of generated checkpoints and files (never the repo): $ATTNLENS_BENCH_CACHE.
export const cacheDir = process.env.ATTNLENS_BENCH_CACHE ?? join(homedir(), '.cache', 'attnlens-bench');
// Where findPeers() copies ../shared/peers (as peers/, beside links to ../shared/anchors and models).
const peersHome = join(cacheDir, 'peers-home');

// A peers folder ready for scripts that only read its tools and models (tools/parity_llamacpp.mjs,
// bench/quant.mjs, bench/browser.mjs): $ATTNLENS_PEERS, else ../shared/peers when it is set up, else
// the copy findPeers() below sets up in the bench cache, else the one
// tests/fixtures/llamacpp/llamacpp.py sets up in ~/.cache/attnlens-peers. null if none.
export function peersDir(needs = ['bench_llamacpp.mjs', 'node_modules', 'models']) {
  const ready = (p) => needs.every((f) => existsSync(join(p, f)));
  for (const p of [process.env.ATTNLENS_PEERS, join(root, '..', 'shared', 'peers'), join(peersHome, 'peers'),
                   join(homedir(), '.cache', 'attnlens-peers')])
    if (p && ready(p)) return p;
  return null;
}

// The GGUF name of (shape, format) in the peers' models/ (make_models.sh): mkgguf.py's f32/q8_0/q4_0
// conversions, and llama.cpp's own quantizer's Q4_K_M ("-ll-"; 42M and 110M only).
export function peerModelName(shape, format) {
  if (format === 'q4_k_m') return `rand${shape}-ll-q4_k_m.gguf`;
  return `rand${shape}-${format}.gguf`;
}

/** { dir, models } of a ready peers folder, or { missing: reason }. */
export function findPeers({ shared, log }) {
  const ready = (dir) => existsSync(join(dir, 'node_modules', 'node-llama-cpp')) && existsSync(join(dir, 'models'));
  const env = process.env.ATTNLENS_PEERS;
  if (env) {
    if (!ready(env)) return { missing: `$ATTNLENS_PEERS=${env} is not a set-up peers folder (node_modules/node-llama-cpp and models/ expected)` };
    return { dir: env, models: join(env, 'models') };
  }
  const source = join(shared, 'peers');
  if (!existsSync(join(source, 'setup.sh'))) return { missing: `${source} not found (and $ATTNLENS_PEERS not set)` };
  const dir = join(peersHome, 'peers');
  if (!ready(dir) || !existsSync(join(dir, 'models', 'rand110M-q8_0.gguf'))) {
    mkdirSync(peersHome, { recursive: true });
    cpSync(source, dir, { recursive: true, filter: (p) => !/\/(node_modules|models)(\/|$)/.test(p.slice(source.length)) });
    for (const name of ['anchors', 'models']) if (!existsSync(join(peersHome, name))) symlinkSync(join(shared, name), join(peersHome, name));
    try {
      log(`[bench] setting up the llama.cpp peers in ${dir} (once: npm install, then the GGUF files — this takes a while)`);
      // Their GGUF generators need numpy: installed here too, for a bench script run directly rather
      // than through `npm run bench` (which runs the same setup first).
      execFileSync(process.execPath, [join(root, 'tools', 'setup.mjs'), '--for', 'bench'], { stdio: ['ignore', 2, 2] });
      execFileSync('sh', ['setup.sh'], { cwd: dir, stdio: ['ignore', 2, 2] });
      execFileSync('sh', ['make_models.sh'], { cwd: dir, stdio: ['ignore', 2, 2] });
    } catch (e) {
      return { missing: `setting up ${dir} failed: ${String(e.message).split('\n')[0]}` };
    }
  }
  return { dir, models: join(dir, 'models') };
}

// A peer run is stopped after `timeoutS` seconds (ATTNLENS_PEER_TIMEOUT_S, default 300): llama.cpp's
// threads spin while they wait for each other, and on an oversubscribed machine (load average well
// above the cores) a 2-thread run can take many minutes for a few hundred tokens. Such a run is
// reported as failed, with why, instead of stalling the whole benchmark.
const timeoutS = Number(process.env.ATTNLENS_PEER_TIMEOUT_S ?? 300);

function runNode(script, args, { cwd, verbose, tag, log }) {
  return new Promise((resolve, reject) => {
    // its own process group, so that a stop also ends the browser wllama starts
    const p = spawn(process.execPath, [script, ...args], { cwd, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
    let err = '';
    const timer = setTimeout(() => {
      err += `\nstopped after ${timeoutS} s (load average ${loadavg().map((x) => x.toFixed(1)).join(' / ')}); ATTNLENS_PEER_TIMEOUT_S raises the limit`;
      try {
        process.kill(-p.pid, 'SIGKILL');
      } catch {
        p.kill('SIGKILL');
      }
    }, timeoutS * 1000);
    p.on('close', () => clearTimeout(timer));
    p.stdout.on('data', (d) => { if (verbose) process.stderr.write(String(d).replace(/^(?=.)/gm, `    [${tag}] `)); });
    p.stderr.on('data', (d) => {
      err += d;
      if (verbose) process.stderr.write(String(d).replace(/^(?=.)/gm, `    [${tag}] `));
    });
    p.on('error', reject);
    p.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`${tag} exited with ${code}: ${err.split('\n').slice(-4).join(' ')}`))));
  });
}

/**
 * Runs one peer script on the given GGUF names (in peers.models) at the given thread counts.
 * Returns [{ model, threads, decodeTokS, prefillMs, raw }]; decode = tok/s of 128 greedy tokens,
 * prefill = 64 tokens in ms, both by the engine's own clock (llama.cpp: its perf counters of the last
 * pass, llama_decode alone — the wall clock of node-llama-cpp's JS-driven loop is in raw; wllama: the
 * server context's timings inside its worker), as ours time the engine alone.
 */
export async function runPeer(peers, which, names, threads, { verbose = false, log, extra = [] } = {}) {
  const present = names.filter((n) => existsSync(join(peers.models, n)));
  if (!present.length) return [];
  const tmp = mkdtempSync(join(tmpdir(), 'attnlens-peer-'));
  const out = join(tmp, 'out.json');
  try {
    const script = join(peers.dir, which === 'llamacpp' ? 'bench_llamacpp.mjs' : 'bench_wllama.mjs');
    const models = which === 'llamacpp' ? present.map((n) => join(peers.models, n)) : present;
    log?.(`[bench] ${which} ${present.join(' ')} threads ${threads.join(',')}${extra.length ? ' ' + extra.join(' ') : ''} ...`);
    await runNode(script, ['--threads', threads.join(','), ...extra, '--json', out, ...models], { cwd: peers.dir, verbose, tag: which, log });
    const { results } = JSON.parse(readFileSync(out, 'utf8'));
    return results.filter((r) => !r.error).map((r) => ({
      model: r.model,
      threads: which === 'llamacpp' ? r.threads : r.n_threads,
      multithread: which === 'wllama' ? r.multithread : undefined,
      // llama.cpp's own counters when they are sane (node-llama-cpp's perf counters can go backwards
      // between passes, giving a negative difference), else the wall clock of the JS-driven loop
      decodeTokS: which === 'llamacpp' && r.decode_tok_s_native_last > 0 ? r.decode_tok_s_native_last : r.decode_tok_s,
      prefillMs: which === 'llamacpp' && r.prefill_ms_native_last > 0 ? r.prefill_ms_native_last : r.prefill_ms,
      prefillTokens: r.prefill_tokens,
      raw: r,
    }));
  } finally {
    rmSync(tmp, { recursive: true, force: true });
  }
}
