// `npm pack`'s tarball installs into an empty project (offline: its one dependency, @huggingface/jinja,
// is bundled in the tarball)
// where a script imports 'attnlens', loads a model and generates, in this thread and in worker
// mode; its TypeScript types resolve there through "exports"; and `npx attnlens --help` runs.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { kjv, noKjv, noStories, root, stories } from '../js/fixtures/models.mjs';

const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
const built = existsSync(join(root, 'dist/wasm/attnlens.wasm')) && existsSync(join(root, 'dist/wasm/attnlens.mjs'));
const noModel = noStories && noKjv && 'no model: neither ../shared stories260K nor models/kjv-gpt2';
const missing = (!built && 'dist/wasm is not built (node tools/build.mjs --wasm)') || noModel;
if (missing) console.log(`SKIPPED: ${missing}`);
const MODEL = noStories ? { src: kjv.dir, prompt: 'And God said' } : { src: stories.paths, prompt: 'Once upon a time' };

let dir;
let tarball;
const run = (cmd, args, options = {}) => execFileSync(cmd, args, { cwd: dir, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 120_000, ...options });

before(() => {
  if (missing) return;
  dir = mkdtempSync(join(tmpdir(), 'attnlens-consumer-'));
  // --ignore-scripts: prepack would rebuild the wasm; the test suite has just built it.
  const out = JSON.parse(run(npm, ['pack', '--json', '--ignore-scripts', '--pack-destination', dir], { cwd: root }));
  tarball = join(dir, out[0].filename);
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type: 'module' }));
  run(npm, ['install', '--offline', '--no-audit', '--no-fund', '--ignore-scripts', tarball]);
});

after(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test('the tarball holds the package and nothing else', { skip: missing }, () => {
  const files = execFileSync('tar', ['-tzf', tarball], { encoding: 'utf8' }).trim().split('\n').map((f) => f.replace(/^package\//, ''));
  for (const f of ['package.json', 'dist/wasm/attnlens.mjs', 'dist/wasm/attnlens.wasm', 'dist/wasm/attnlens-mt.mjs',
    'dist/wasm/attnlens-mt.wasm', 'dist/wasm/attnlens-mt.worker.js', 'dist/wasm/attnlens-relaxed.mjs', 'dist/wasm/attnlens-relaxed.wasm',
    'dist/wasm/attnlens-mt-relaxed.mjs', 'dist/wasm/attnlens-mt-relaxed.wasm', 'dist/wasm/attnlens-mt-relaxed.worker.js',
    'dist/wasm/package.json', 'web/src/index.mjs', 'web/src/index.d.ts',
    'web/src/worker.mjs', 'web/src/worker-client.mjs']) assert.ok(files.includes(f), `${f} missing`);
  assert.ok(!files.some((f) => /^(tests|src|bindings|build|models)\//.test(f)), files.join(', '));
  // node_modules/ holds the bundled dependency only (package.json "bundleDependencies"), which
  // web/src/chat.mjs imports by a relative path: the same in the repository and when installed.
  const bundled = files.filter((f) => f.startsWith('node_modules/'));
  assert.ok(bundled.includes('node_modules/@huggingface/jinja/dist/index.js'), 'the bundled @huggingface/jinja');
  assert.deepEqual(bundled.filter((f) => !f.startsWith('node_modules/@huggingface/jinja/')), []);
  const installed = readdirSync(join(dir, 'node_modules'));
  assert.deepEqual(installed.filter((n) => !n.startsWith('.')), ['attnlens'], 'no dependencies came along beside it');
  const ours = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  const jinja = JSON.parse(readFileSync(join(dir, 'node_modules/attnlens/node_modules/@huggingface/jinja/package.json'), 'utf8'));
  assert.equal(jinja.version, ours.dependencies['@huggingface/jinja'], 'the pinned version, inside the package');
});

test('a script in the new project imports "attnlens", loads a model and generates (here and in a worker)', { skip: missing, timeout: 120_000 }, () => {
  writeFileSync(join(dir, 'use.mjs'), `
import { loadModel, engineInfo } from 'attnlens';
const MODEL = ${JSON.stringify(MODEL)};
const here = await loadModel(MODEL.src, { threads: 2 });
const threads = here.info.threads;
const a = await here.generate(MODEL.prompt, { maxNewTokens: 10, temperature: 0 });
const f = await here.forward((await here.tokenize(MODEL.prompt)).ids, { attentions: true });
const hereChat = await here.applyChatTemplate([{ role: 'user', content: 'hi' }], { template: '<{{ messages[0].content }}>' });
await here.dispose();
const worker = await loadModel(MODEL.src, { worker: true, threads: 2 });
const b = await worker.generate(MODEL.prompt, { maxNewTokens: 10, temperature: 0 });
// The bundled Jinja renders a template in the installed package (in the worker too).
const chat = [{ role: 'user', content: 'hi' }];
const rendered = [hereChat, await worker.applyChatTemplate(chat, { template: '<{{ messages[0].content }}>' })];
const workerThreads = worker.info.threads;
await worker.dispose();
const engine = await engineInfo();
console.log(JSON.stringify({ rendered, a: a.text, b: b.text, n: a.tokens.length - a.promptTokens, kinds: f.attentions.kinds, simd: engine.simd,
  build: engine.build, threads, workerThreads, resolved: import.meta.resolve('attnlens') }));
`);
  const out = JSON.parse(run(process.execPath, ['use.mjs']).trim().split('\n').pop());
  assert.ok(out.a.length > 0);
  assert.equal(out.b, out.a);
  assert.deepEqual(out.rendered, ['<hi>', '<hi>']);
  assert.equal(out.n, 10);
  assert.deepEqual(out.kinds, ['self']);
  // Node: the pthreads build, its pool workers started from the installed package (and the process
  // exited by itself: run() would have timed out)
  assert.equal(out.build, 'threads');
  assert.equal(out.threads, 2);
  assert.equal(out.workerThreads, 2);
  assert.match(out.resolved, /node_modules\/attnlens\/web\/src\/index\.mjs$/);
});

test('TypeScript in the new project: types come with the package', { skip: missing || (!existsSync(join(root, 'node_modules/typescript')) && 'typescript is not installed'), timeout: 120_000 }, () => {
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions: { strict: true, noEmit: true, module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022', lib: ['es2022', 'dom'], types: [] }, files: ['use.ts'] }));
  writeFileSync(join(dir, 'use.ts'), `
import { loadModel, type GenerateResult, type WorkerModel } from 'attnlens';
const m = await loadModel('model.gguf');
const r: GenerateResult = await m.generate('hi', { maxNewTokens: 3 });
const w: WorkerModel = await loadModel('model.gguf', { worker: true });
const a: Float32Array | undefined = (await w.forward([1], { attentions: true })).attentions?.get(0, 0);
// @ts-expect-error topP is a number
await m.generate('hi', { topP: 'high' });
export { r, a };
`);
  const r = spawnSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', '.'], { cwd: dir, encoding: 'utf8' });
  assert.equal(r.status, 0, r.stdout + r.stderr);
});

test('npx attnlens --help runs the CLI from the installed package', { skip: missing || (!existsSync(join(root, 'bin/attnlens.mjs')) && 'bin/attnlens.mjs does not exist yet'), timeout: 60_000 }, () => {
  const out = run('npx', ['--offline', '--no-install', 'attnlens', '--help']);
  assert.match(out, /usage|attnlens/i);
});
