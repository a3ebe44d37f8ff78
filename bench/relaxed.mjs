#!/usr/bin/env node
// Relaxed SIMD against portable SIMD128 (issue 14 item 6), the same weights, side by side in one run:
//   Node      two kinds of child process, alternated per round: `node` (the portable build) and
//             `node --experimental-wasm-relaxed-simd` with ATTNLENS_SIMD=relaxed (the relaxed build);
//   Chromium  one cross-origin isolated page with two models in Web Workers, loaded with
//             simd: 'portable' and simd: 'relaxed' (each worker its own engine), alternated per pass.
// Per engine: f32 prefill of 64 and 256 tokens (ms, from generate()'s timings), f32 decode (tok/s over
// 64 greedy tokens), and the same with quantize: 'q8_0' (its integer kernels are the same in both
// builds: the f32 parts, attention and the norms' neighbours, are what changes), 'q4_0' and 'q4_k'
// (whose kernels use the int8 relaxed dot product in the relaxed build; --formats). Random llama2.c
// checkpoints of the stories42M / 110M shapes (bench/models.mjs checkpoint(), the peers' when set up).
// A benchmark, not a test: nothing fails.
//   node bench/relaxed.mjs [--shapes 42M,110M] [--formats f32,q8_0,q4_0,q4_k] [--rounds 3] [--threads 1] [--no-node]
//                          [--no-browser] [--quick] [--json FILE]
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { median } from './stats.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const shared = process.env.ATTNLENS_SHARED ?? join(root, '..', 'shared');
const tokenizer = join(shared, 'models', 'llama2-tokenizer', 'tokenizer.bin');

const argv = process.argv.slice(2);
const opt = (name, dflt) => (argv.includes(name) ? argv[argv.indexOf(name) + 1] : dflt);
const args = {
  shapes: opt('--shapes', '42M,110M').split(','),
  formats: opt('--formats', 'f32,q8_0,q4_0,q4_k').split(',').map((f) => (f === 'f32' ? '' : f)),
  rounds: Number(opt('--rounds', '3')),
  threads: Number(opt('--threads', '1')),
  node: !argv.includes('--no-node'),
  browser: !argv.includes('--no-browser'),
  quick: argv.includes('--quick'),
  json: opt('--json', null),
};

// Runs in a Node child and in the page (against a worker's model): the same calls, the same clock.
const MEASURE = `async function measure(model, quick) {
  const ids = (n) => Array.from({ length: n }, (_, i) => 1 + ((i * 7919) % 31000));
  const reps = quick ? 2 : 4;
  const prefill = async (n) => {
    const t = [];
    for (let r = 0; r < reps; r++) t.push((await model.generate(ids(n), { maxNewTokens: 1, temperature: 0 })).timings.prefillMs);
    return t.sort((a, b) => a - b)[Math.floor((t.length - 1) / 2)];
  };
  const decode = async () => {
    const t = [];
    for (let r = 0; r < reps; r++) {
      const g = await model.generate(ids(8), { maxNewTokens: 64, minNewTokens: 64, temperature: 0 });
      t.push(g.timings.tokensPerSecond);
    }
    return t.sort((a, b) => a - b)[Math.floor((t.length - 1) / 2)];
  };
  await model.generate(ids(64), { maxNewTokens: 8, temperature: 0 });  // warm-up
  return { pf64: await prefill(64), pf256: await prefill(256), dec: await decode() };
}`;

// ---- Node ----------------------------------------------------------------------------------------------
async function nodeChild(ckpt, quantize, threads, quick) {
  const { loadModel, engineInfo } = await import(pathToFileURL(join(root, 'web', 'src', 'index.mjs')).href);
  const model = await loadModel([ckpt, tokenizer], { threads, quantize: quantize || undefined });
  const measure = new Function(`return (${MEASURE})`)();
  const r = await measure(model, quick);
  const e = await engineInfo();
  console.log(JSON.stringify({ ...r, relaxed: e.relaxedSimd, simd: e.simd, threads: model.info.threads }));
  await model.dispose();
}

function runNode(variant, ckpt, quantize) {
  const flags = variant === 'relaxed' ? ['--experimental-wasm-relaxed-simd'] : [];
  const out = execFileSync(process.execPath, [...flags, fileURLToPath(import.meta.url), '--child', ckpt, quantize, String(args.threads), args.quick ? '1' : ''],
    { env: { ...process.env, ATTNLENS_SIMD: variant, ATTNLENS_WASM: 'threads' }, encoding: 'utf8' });
  const r = JSON.parse(out.trim().split('\n').at(-1));
  if (r.relaxed !== (variant === 'relaxed')) throw new Error(`the ${variant} child ran relaxed=${r.relaxed}`);
  return r;
}

// ---- Chromium ------------------------------------------------------------------------------------------
const PAGE = `
import { loadModel } from '/repo/web/src/index.mjs';
${MEASURE}
window.bench = async (ckptUrl, tokUrl, quantize, threads, quick, rounds) => {
  const models = {};
  for (const simd of ['portable', 'relaxed'])
    models[simd] = await loadModel([ckptUrl, tokUrl], { worker: true, simd, threads, quantize: quantize || undefined });
  const engines = {};
  for (const [k, m] of Object.entries(models)) engines[k] = await m.engineInfo();
  const runs = { portable: [], relaxed: [] };
  for (let r = 0; r < rounds; r++) {
    const order = r % 2 ? ['relaxed', 'portable'] : ['portable', 'relaxed'];
    for (const k of order) runs[k].push(await measure(models[k], quick));
  }
  for (const m of Object.values(models)) await m.dispose();
  return { engines, runs };
};
window.ready = true;
`;

async function runBrowser(shape, ckpt, quantize) {
  const { chromiumMissing, launch } = await import('../tests/js/fixtures/chromium.mjs');
  const { serve } = await import('../tests/js/fixtures/server.mjs');
  const missing = await chromiumMissing();
  if (missing) { console.log(`[relaxed] Chromium skipped: ${missing}`); return null; }
  const dir = mkdtempSync(join(tmpdir(), 'attnlens-bench-relaxed-'));
  writeFileSync(join(dir, 'index.html'), '<!doctype html><meta charset="utf-8"><script type="module" src="./page.mjs"></script>');
  writeFileSync(join(dir, 'page.mjs'), PAGE);
  const server = await serve({
    '/favicon.ico': (req, res) => { res.statusCode = 204; res.end(); return true; },
    '/page/': dir,
    '/repo/web/src/': join(root, 'web/src'),
    '/repo/dist/wasm/': join(root, 'dist/wasm'),
    '/repo/node_modules/@huggingface/jinja/': join(root, 'node_modules/@huggingface/jinja'),
    '/ckpt/': dirname(ckpt),
    '/tok/': dirname(tokenizer),
  }, { headers: { 'Cache-Control': 'no-store', 'Cross-Origin-Opener-Policy': 'same-origin', 'Cross-Origin-Embedder-Policy': 'require-corp' } });
  const browser = await launch();
  try {
    const page = await browser.ctx.newPage();
    await page.goto(server.url('/page/index.html'));
    await page.waitForFunction(() => window.ready === true);
    const base = server.url('/');
    return await page.evaluate(([c, t, q, th, quick, rounds]) => window.bench(c, t, q, th, quick, rounds),
      [`${base}ckpt/${ckpt.split('/').at(-1)}`, `${base}tok/tokenizer.bin`, quantize, args.threads, args.quick, args.rounds]);
  } finally {
    await browser.close();
    await server.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

// ---- report ----------------------------------------------------------------------------------------------
const fmt = (x, d = 1) => (x == null ? '–' : x.toFixed(d));
function summarize(label, runs) {
  const m = (k, v) => median(runs[k].map((r) => r[v]));
  const row = (v, better) => {
    const p = m('portable', v), r = m('relaxed', v);
    const ratio = better === 'lower' ? p / r : r / p;  // > 1: relaxed faster
    return `${fmt(p)} → ${fmt(r)} (${ratio.toFixed(2)}×)`;
  };
  return `| ${label} | ${row('pf64', 'lower')} | ${row('pf256', 'lower')} | ${row('dec', 'higher')} |`;
}

async function main() {
  const { checkpoint } = await import('./models.mjs');
  const lines = [];
  const all = {};
  const load0 = loadavg().map((x) => x.toFixed(2)).join(' / ');
  for (const shape of args.shapes) {
    const ckpt = checkpoint(shape, null);
    for (const quantize of args.formats) {
      if (!['', 'q8_0', 'q4_0', 'q4_k'].includes(quantize)) throw new Error(`--formats: f32, q8_0, q4_0 or q4_k, got ${quantize}`);
      const label = `${shape} ${quantize || 'f32'}`;
      if (args.node) {
        const runs = { portable: [], relaxed: [] };
        for (let r = 0; r < args.rounds; r++) {
          const order = r % 2 ? ['relaxed', 'portable'] : ['portable', 'relaxed'];
          for (const v of order) runs[v].push(runNode(v, ckpt, quantize));
          console.log(`[relaxed] node ${label} round ${r + 1}: ${JSON.stringify({ portable: runs.portable.at(-1), relaxed: runs.relaxed.at(-1) })}`);
        }
        all[`node ${label}`] = runs;
        lines.push(summarize(`Node 20 (--experimental-wasm-relaxed-simd), ${label}`, runs));
      }
      if (args.browser) {
        const r = await runBrowser(shape, ckpt, quantize);
        if (r) {
          console.log(`[relaxed] chromium ${label}: engines ${JSON.stringify(r.engines)} runs ${JSON.stringify(r.runs)}`);
          all[`chromium ${label}`] = r.runs;
          lines.push(summarize(`Chromium (workers), ${label}`, r.runs));
        }
      }
    }
  }
  const load1 = loadavg().map((x) => x.toFixed(2)).join(' / ');
  console.log(`\nRelaxed SIMD against portable, ${args.threads} thread(s), medians of ${args.rounds} alternated round(s); load average (1/5/15 min) ${load0} → ${load1}`);
  console.log('portable → relaxed (relaxed ÷ portable speed)\n');
  console.log('| engine, weights | prefill-64 ms | prefill-256 ms | decode tok/s |');
  console.log('| --- | --- | --- | --- |');
  for (const l of lines) console.log(l);
  if (args.json) writeFileSync(args.json, JSON.stringify({ date: new Date().toISOString(), args, load: [load0, load1], runs: all }, null, 1));
}

if (argv[0] === '--child') await nodeChild(argv[1], argv[2], Number(argv[3]), argv[4] === '1');
else await main();
