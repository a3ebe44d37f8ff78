#!/usr/bin/env node
// `npm run bench`: the kernel micro-benchmarks (bench/kernels.mjs) and then the model benchmark
// (bench/models.mjs: AttnLens wasm + native beside onnxruntime-web on stories-shaped checkpoints).
// Not a test: nothing here fails on a slow figure; the tables say PASS/MISS per target.
//
//   npm run bench [-- OPTIONS]
//     --only kernels|models   run one of the two
//     --quick, --no-build     passed to both (fewer repetitions / use the binaries already built)
//     every other option goes to bench/models.mjs (see `node bench/models.mjs --help`)
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const argv = process.argv.slice(2);
let only = null;
const rest = [];
for (let i = 0; i < argv.length; i++) {
  if (argv[i] === '--only') only = argv[++i];
  else if (argv[i].startsWith('--only=')) only = argv[i].slice(7);
  else rest.push(argv[i]);
}
if (only && !['kernels', 'models'].includes(only)) {
  console.error(`bench: --only takes "kernels" or "models", got ${JSON.stringify(only)}`);
  process.exit(2);
}
// passed to both scripts (each also takes its own options; everything else goes to models.mjs)
const shared = ['--quick', '--no-build'].filter((f) => rest.includes(f));

function run(script, args) {
  console.log(`\n[bench] node ${join('bench', script)} ${args.join(' ')}`.trimEnd());
  const r = spawnSync(process.execPath, [join(here, script), ...args], { stdio: 'inherit' });
  if (r.error) throw r.error;
  return r.status ?? 1;
}

let status = 0;
if (only !== 'models') {
  if (existsSync(join(here, 'kernels.mjs'))) status |= run('kernels.mjs', shared);
  else console.log('\n[bench] bench/kernels.mjs does not exist yet: kernel benchmarks skipped');
}
if (only !== 'kernels') status |= run('models.mjs', rest);
process.exit(status);
