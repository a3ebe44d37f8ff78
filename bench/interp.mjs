#!/usr/bin/env node
// What the interpretability toolkit costs (issue 13): bench_interp (bench/bench_interp.cpp) natively
// and in wasm, on our kjv-gpt2, on stories260K (../shared) and on a random stories15M-shaped
// checkpoint (bench/models.mjs makes it once into its cache).
//
//   decode   tokens/s with the hooks off, with a no-op hook at every point (an upper bound of what the
//            points cost when off), and with top-k predictions at every step (target: ≤ 5% slower)
//   forward  one pass over 64 tokens, alone and with top-k, the logit lens (target: ≤ 2× the pass)
//            and the full lens logits
//   today    (--baseline REF) decode tokens/s of bench_models built from REF (e.g. the commit before
//            the toolkit) beside this tree's, alternately in one run, natively (target: ≤ 2% apart)
//
//   hooks out (--hooks-out) decode with every interpretability feature off against the same tree built
//            with its hook points compiled out (bench_interp_hooks_out: src/nn/hooks.h, ATTNLENS_NO_HOOKS),
//            decode only, the two alternated --repeat times (default 8, the
//            order swapped each time), per model and platform: the median time/token ratio and its spread
//            over the pairs (target: within 2%); the same runs give top-k's overhead per step (≤ 5%)
//
//   instructions (--instructions, native, valgrind) the same two comparisons counted in instructions
//            instead of timed (a count does not depend on the machine's load): callgrind's total for
//            bench_interp --variant V --calls 1 and --calls 0 (--steps 64), the difference being one
//            64-step greedy decode of V; hooks off (this tree) ÷ hooks compiled out, top-k ÷ off
//
//   compare  (--compare DIR) the same rows from another build's bench_interp (DIR/bench_interp and
//            DIR/bench_interp.js + .wasm, e.g. copies from another tree's build dirs) beside this
//            tree's, the two alternated (--repeat times, order swapped each time), the load average
//            printed with each run
//
//   node bench/interp.mjs [--quick] [--no-build] [--platforms native,wasm] [--baseline REF] [--compare DIR [--repeat N]]
//                         [--hooks-out [--repeat N]] [--instructions]
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { checkpoint } from './models.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const shared = process.env.ATTNLENS_SHARED ?? join(root, '..', 'shared');
const log = (...m) => process.stderr.write(m.join(' ') + '\n');

function parseArgs(argv) {
  const a = { quick: false, build: true, platforms: ['native', 'wasm'], baseline: null, compare: null, repeat: 0, hooksOut: false };
  for (let i = 0; i < argv.length; i++) {
    const x = argv[i];
    if (x === '--quick') a.quick = true;
    else if (x === '--no-build') a.build = false;
    else if (x === '--platforms') a.platforms = argv[++i].split(',');
    else if (x === '--baseline') a.baseline = argv[++i];
    else if (x === '--compare') a.compare = argv[++i];
    else if (x === '--hooks-out') a.hooksOut = true;
    else if (x === '--instructions') a.instructions = true;
    else if (x === '--repeat') a.repeat = Math.max(1, parseInt(argv[++i], 10) || 1);
    else if (x === '--help' || x === '-h') {
      console.log('node bench/interp.mjs [--quick] [--no-build] [--platforms native,wasm] [--baseline REF] [--compare DIR [--repeat N]] [--hooks-out [--repeat N]] [--instructions]');
      process.exit(0);
    } else {
      console.error(`bench/interp.mjs: unknown option ${x}`);
      process.exit(2);
    }
  }
  if (!a.repeat) a.repeat = a.hooksOut ? 8 : 1;
  return a;
}

function models() {
  const out = [{ label: 'kjv-gpt2', files: ['config.json', 'model.safetensors', 'tokenizer.json'].map((f) => join(root, 'models', 'kjv-gpt2', f)) }];
  const st = join(shared, 'models', 'stories260K');
  if (existsSync(join(st, 'stories260K.bin'))) out.push({ label: 'stories260K', files: [join(st, 'stories260K.bin'), join(st, 'tok512.bin')] });
  else log(`[bench] SKIPPED stories260K: ${st} is absent (../shared is not next to this clone)`);
  out.push({ label: 'random 15M', files: [checkpoint('15M')] });  // made once, kept in bench/models.mjs's cache
  return out;
}

async function binaries(args) {
  const { buildDirs, buildNative, buildWasm } = await import(pathToFileURL(join(root, 'tools', 'build.mjs')).href);
  const bin = { native: join(buildDirs.native, 'bench_interp'), wasm: join(buildDirs.wasm, 'bench_interp.js') };
  if (args.platforms.includes('native') && (args.build || !existsSync(bin.native))) buildNative(['bench_interp']);
  if (args.platforms.includes('wasm') && (args.build || !existsSync(bin.wasm))) buildWasm(['bench_interp']);
  return { bin, buildDirs };
}

function runJson(cmd, argv) {
  const r = spawnSync(cmd, argv, { cwd: root, encoding: 'utf8', maxBuffer: 16 << 20 });
  if (r.status !== 0) throw new Error(`${cmd} ${argv.join(' ')} failed (${r.status}):\n${r.stderr.slice(-2000)}`);
  return r.stdout.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l));
}

const pct = (ratio) => `${ratio >= 1 ? '+' : '−'}${Math.abs((ratio - 1) * 100).toFixed(1)}%`;

function table(headers, rows) {
  const line = (cells) => `| ${cells.join(' | ')} |`;
  return [line(headers), line(headers.map(() => '---')), ...rows.map(line)].join('\n');
}

// bench_models at `ref` (a worktree in /tmp, built natively) against this tree's, decode only.
function today(ref, args, bin, ckpt) {
  const dir = mkdtempSync(join(tmpdir(), 'attnlens-baseline-'));
  try {
    execFileSync('git', ['worktree', 'add', '--detach', dir, ref], { cwd: root, stdio: 'ignore' });
    const build = join(dir, 'build-native');
    execFileSync('nice', ['cmake', '-S', dir, '-B', build, '-DCMAKE_BUILD_TYPE=Release', '-DATTNLENS_TESTS=OFF'], { stdio: 'ignore' });
    execFileSync('nice', ['cmake', '--build', build, '-j', '2', '--target', 'bench_models'], { stdio: 'inherit' });
    const ours = join(dirname(bin.native), 'bench_models');
    if (args.build || !existsSync(ours)) execFileSync('nice', ['cmake', '--build', dirname(bin.native), '-j', '2', '--target', 'bench_models'], { stdio: 'inherit' });
    const flags = [ckpt, '--steps', '128', '--warmup-s', '1', '--reps', '3', '--prefill', '1', '--prefill-reps', '1'];
    const rounds = args.quick ? 2 : 5;
    const base = [];
    const mine = [];
    for (let r = 0; r < rounds; r++) {
      const pair = r % 2 ? [[mine, ours], [base, join(build, 'bench_models')]] : [[base, join(build, 'bench_models')], [mine, ours]];
      for (const [acc, exe] of pair) acc.push(runJson(exe, flags).find((x) => x.type === 'decode').tok_s_median);
      log(`[bench] today: round ${r + 1}/${rounds}: ${ref} ${base.at(-1).toFixed(1)} tok/s, this tree ${mine.at(-1).toFixed(1)} tok/s`);
    }
    const med = (v) => [...v].sort((a, b) => a - b)[Math.floor((v.length - 1) / 2)];
    return { base: med(base), mine: med(mine) };
  } finally {
    try { execFileSync('git', ['worktree', 'remove', '--force', dir], { cwd: root, stdio: 'ignore' }); } catch {}
    rmSync(dir, { recursive: true, force: true });
  }
}

// bench_interp_hooks_out (CMakeLists.txt): this tree's bench_interp with its hook points compiled out.
async function hooksOutBinaries(args) {
  const { buildDirs, buildNative, buildWasm } = await import(pathToFileURL(join(root, 'tools', 'build.mjs')).href);
  const bin = { native: join(buildDirs.native, 'bench_interp_hooks_out'), wasm: join(buildDirs.wasm, 'bench_interp_hooks_out.js') };
  if (args.platforms.includes('native') && (args.build || !existsSync(bin.native))) buildNative(['bench_interp_hooks_out']);
  if (args.platforms.includes('wasm') && (args.build || !existsSync(bin.wasm))) buildWasm(['bench_interp_hooks_out']);
  return bin;
}

// Decode alone, this tree (hooks off) and the hooks-out build alternated: per pair the ratio of time per
// token (this tree ÷ hooks out), and this tree's top-k overhead of each run.
function hooksOut(args, bin, out) {
  const med = (v) => {
    const s = [...v].sort((a, b) => a - b);
    return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
  };
  const spread = (v) => `${pct(Math.min(...v))} … ${pct(Math.max(...v))}`;
  const rows = [];
  for (const m of models()) {
    for (const platform of args.platforms) {
      const ratios = [], topk = [], tree = [], outs = [], loads = [];
      for (let r = 0; r < args.repeat; r++) {
        const order = r % 2 ? [['out', out], ['tree', bin]] : [['tree', bin], ['out', out]];
        const got = {};
        for (const [name, b] of order) {
          const exe = platform === 'native' ? [b.native] : [process.execPath, '--no-experimental-fetch', b.wasm];
          const flags = [...m.files, '--label', m.label, '--rounds', '3', '--steps', '128', '--k', '10', '--decode-only'];
          loads.push(loadavg()[0]);
          got[name] = runJson(exe[0], [...exe.slice(1), ...flags]);
        }
        const off = (o) => o.find((x) => x.variant === 'off').tok_s;
        tree.push(off(got.tree));
        outs.push(off(got.out));
        ratios.push(off(got.out) / off(got.tree));  // time/token of this tree ÷ of the hooks-out build
        topk.push(1 / got.tree.find((x) => x.variant === 'top-k').ratio);
        log(`[bench] hooks out ${platform} ${m.label} pair ${r + 1}/${args.repeat}: this tree ${off(got.tree).toFixed(0)} tok/s, hooks out ${off(got.out).toFixed(0)} tok/s, top-k ${pct(topk.at(-1))}`);
      }
      rows.push([m.label, platform, med(outs).toFixed(0), med(tree).toFixed(0), `${pct(med(ratios))} (${spread(ratios)})`,
        `${pct(med(topk))} (${spread(topk)})`, `${Math.min(...loads).toFixed(1)}–${Math.max(...loads).toFixed(1)}`]);
    }
  }
  console.log(`\nDecode with everything off against the hook points compiled out, and top-k per step (${args.repeat} alternated pairs of bench_interp --decode-only runs; medians, spread over the pairs)\n`);
  console.log(table(['model', 'platform', 'hooks compiled out, tok/s', 'this tree, hooks off, tok/s', 'time/token, hooks off ÷ compiled out (≤ 2%)',
    'time/token, top-10 per step (≤ +5%)', 'load average'], rows));
}

// Instructions of one 64-step greedy decode of a variant (callgrind; the set-up cancels out).
function instructions(args, bin, out) {
  const count = (exe, m, variant, calls) => {
    const r = spawnSync('valgrind', ['--tool=callgrind', '--callgrind-out-file=/dev/null', exe, ...m.files,
      '--label', m.label, '--steps', '64', '--k', '10', '--variant', variant, '--calls', String(calls)], { cwd: root, encoding: 'utf8', maxBuffer: 16 << 20 });
    const got = /Collected : (\d+)/.exec(r.stderr);
    if (r.status !== 0 || !got) throw new Error(`callgrind ${exe} ${variant} failed (${r.status}):\n${r.stderr.slice(-2000)}`);
    return Number(got[1]);
  };
  const perDecode = (exe, m, variant) => count(exe, m, variant, 1) - count(exe, m, variant, 0);
  const rows = [];
  for (const m of models()) {
    log(`[bench] instructions: ${m.label} (callgrind, 6 runs)`);
    const off = perDecode(bin.native, m, 'off'), hooksOut = perDecode(out.native, m, 'off'), topk = perDecode(bin.native, m, 'top-k');
    const M = (x) => (x / 64 / 1e6).toFixed(3);
    rows.push([m.label, M(hooksOut), M(off), pct(off / hooksOut), M(topk), pct(topk / off)]);
  }
  console.log('\nInstructions per decoded token (native, callgrind; one 64-step greedy decode, the difference of --calls 1 and 0)\n');
  console.log(table(['model', 'hooks compiled out, M', 'this tree, hooks off, M', 'hooks off ÷ compiled out (≤ 2%)', 'top-10 per step, M', 'top-10 ÷ off (≤ +5%)'], rows));
}

// valgrind 3.19 cannot decode AVX-512: on a CPU that has it, the instruction counts come from a build
// for x86-64-v3 (AVX2), in build-native-x86-64-v3/ (tools/build.mjs).
async function valgrindBinaries(args) {
  const cpu = existsSync('/proc/cpuinfo') ? readFileSync('/proc/cpuinfo', 'utf8') : '';
  if (!/^flags\s*:.*\bavx512f\b/m.test(cpu)) {
    const { bin } = await binaries(args);
    return [bin, await hooksOutBinaries(args)];
  }
  const { buildDirs, buildNative } = await import(pathToFileURL(join(root, 'tools', 'build.mjs')).href);
  const arch = 'x86-64-v3';
  const dir = `${buildDirs.native}-${arch}`;
  log(`[bench] this CPU has AVX-512, which valgrind cannot run: counting a build for ${arch} (${dir})`);
  const bin = { native: join(dir, 'bench_interp') }, out = { native: join(dir, 'bench_interp_hooks_out') };
  if (args.build || !existsSync(bin.native) || !existsSync(out.native)) buildNative(['bench_interp', 'bench_interp_hooks_out'], { arch });
  return [bin, out];
}

async function main() {
  const args = parseArgs(process.argv.slice(2));
  if (args.instructions) {
    args.platforms = ['native'];
    return instructions(args, ...(await valgrindBinaries(args)));
  }
  const { bin } = await binaries(args);
  if (args.hooksOut) return hooksOut(args, bin, await hooksOutBinaries(args));
  const rows = [];
  const builds = [{ name: 'this tree', bin }];
  if (args.compare) {
    const dir = resolve(args.compare);
    builds.push({ name: dir, bin: { native: join(dir, 'bench_interp'), wasm: join(dir, 'bench_interp.js') } });
  }
  for (const m of models()) {
    for (const platform of args.platforms) {
      for (let rep = 0; rep < args.repeat; rep++) {
        for (const b of rep % 2 ? [...builds].reverse() : builds) {
          // Emscripten's Node glue must not see fetch (TOOLCHAIN.md §1).
          const exe = platform === 'native' ? [b.bin.native] : [process.execPath, '--no-experimental-fetch', b.bin.wasm];
          const flags = [...m.files, '--label', m.label, '--rounds', args.quick ? '5' : '15', '--steps', '128', '--n', '64', '--k', '10'];
          const load = loadavg().map((x) => x.toFixed(1)).join(' ');
          log(`[bench] bench_interp ${platform} ${m.label}${builds.length > 1 ? ` (${b.name})` : ''}, load average ${load}`);
          const out = runJson(exe[0], [...exe.slice(1), ...flags]);
          const get = (group, variant) => out.find((x) => x.group === group && x.variant === variant);
          rows.push([
            m.label, builds.length > 1 ? `${platform}, ${b.name} (load ${load})` : platform,
            get('decode', 'off').tok_s.toFixed(0),
            pct(1 / get('decode', 'noop-hooks').ratio),  // time per token, relative
            pct(1 / get('decode', 'top-k').ratio),
            get('forward', 'forward').ms.toFixed(2),
            `${get('forward', 'top-k').ratio.toFixed(2)}×`,
            `${get('forward', 'lens').ratio.toFixed(2)}×`,
            `${get('forward', 'lens-full').ratio.toFixed(2)}×`,
          ]);
        }
      }
    }
  }
  console.log('\nInterpretability toolkit cost (CPU time of this process, medians; ratios measured side by side in one run)\n');
  console.log(table(['model', 'platform', 'decode tok/s (hooks off)', 'time/token, no-op hooks', 'time/token, top-10 per step (≤ +5%)',
    'forward 64 tok, ms', '+ top-10', '+ logit lens (≤ 2×)', '+ full lens logits'], rows));
  if (args.baseline) {
    const t = today(args.baseline, args, bin, checkpoint('15M'));
    console.log(`\nDecode, random 15M, native: ${args.baseline} ${t.base.toFixed(1)} tok/s, this tree (hooks off) ${t.mine.toFixed(1)} tok/s: time/token ${pct(t.base / t.mine)} (target within 2%)`);
  }
}

main().catch((e) => {
  console.error(e.stack || String(e));
  process.exit(1);
});
