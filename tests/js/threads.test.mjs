// Threads in Node: the pthreads build is the one Node loads, loadModel's `threads` option, identical
// bits with 1, 2 and 4 threads (logits and every attention weight, prompt and token-by-token), in
// this thread and in the worker; the single-thread build (ATTNLENS_WASM=single) gives the same bits;
// and a process that used threads exits by itself.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { after, before, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { kjv, noKjv, reportSkips, root, web } from './fixtures/models.mjs';

reportSkips(noKjv);
const { loadModel, engineInfo } = await import(web);
const files = ['config.json', 'model.safetensors', 'tokenizer.json'].map((f) => `${kjv.dir}/${f}`);
const PROMPT = 'And God said, Let there be light: and there was light.';

// logits and attention of a forward pass over the prompt, then 12 greedy tokens with their attention
async function trace(model) {
  const { ids } = await model.tokenize(PROMPT);
  const f = await model.forward(ids, { attentions: true });
  const out = [f.logits];
  for (const r of f.attentions.records) out.push(r.data);
  const steps = [];
  for await (const step of model.stream(ids, { maxNewTokens: 12, temperature: 0, attentions: true })) {
    steps.push(step.token);
    for (const r of step.attentions.records) out.push(r.data);
  }
  return { arrays: out, tokens: steps };
}

function sameBits(a, b) {
  assert.equal(a.arrays.length, b.arrays.length);
  a.arrays.forEach((x, i) => {
    assert.equal(x.length, b.arrays[i].length, `array ${i}`);
    assert.ok(Buffer.from(x.buffer, x.byteOffset, x.byteLength).equals(Buffer.from(b.arrays[i].buffer, b.arrays[i].byteOffset, b.arrays[i].byteLength)),
      `array ${i} differs`);
  });
  assert.deepEqual(a.tokens, b.tokens);
}

let reference;
before(async () => {
  if (noKjv) return;
  const m = await loadModel(files, { threads: 1 });
  reference = await trace(m);
  await m.dispose();
});

test('Node loads the pthreads build; a model takes the default number of threads', { skip: noKjv }, async () => {
  const m = await loadModel(files);
  const info = await engineInfo();
  assert.equal(info.build, 'threads');
  assert.ok(m.info.threads >= 1 && m.info.threads <= 4, `default threads ${m.info.threads}`);
  assert.ok(info.threads >= m.info.threads);
  await m.dispose();
});

for (const threads of [2, 4]) {
  test(`threads: ${threads} gives the bits of 1 thread (logits, attention, tokens)`, { skip: noKjv }, async () => {
    const m = await loadModel(files, { threads });
    assert.equal(m.info.threads, threads);
    sameBits(await trace(m), reference);
    await m.dispose();
  });
}

test('threads in the worker (worker: true) give the same bits', { skip: noKjv }, async () => {
  const m = await loadModel(files, { threads: 2, worker: true });
  assert.equal(m.info.threads, 2);
  const info = await m.engineInfo();
  assert.equal(info.build, 'threads');
  sameBits(await trace(m), reference);
  await m.dispose();
  m.worker.terminate?.();
});

test('loadModel rejects a bad threads option', async () => {
  for (const threads of [0, 17, 1.5, '2', -1])
    await assert.rejects(loadModel(files, { threads }), (e) => e instanceof RangeError && /threads must be an integer from 1 to 16/.test(e.message));
});

// In a child process: the single-thread build (forced), and exiting without terminating anything.
function child(code, env = {}) {
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', code], {
    cwd: root, env: { ...process.env, ...env }, encoding: 'utf8', timeout: 60_000,
  });
  assert.equal(r.signal, null, `the child process did not exit by itself (killed by ${r.signal}); stderr: ${r.stderr}`);
  assert.equal(r.status, 0, r.stderr);
  return JSON.parse(r.stdout.trim().split('\n').pop());
}

const childTrace = `
  const { loadModel, engineInfo } = await import(${JSON.stringify(pathToFileURL(web).href)});
  const m = await loadModel(${JSON.stringify(files)}, { threads: 4 });
  const { ids } = await m.tokenize(${JSON.stringify(PROMPT)});
  const f = await m.forward(ids, { attentions: true });
  const r = await m.generate(ids, { maxNewTokens: 12, temperature: 0 });
  const hex = (a) => Buffer.from(a.buffer, a.byteOffset, a.byteLength).toString('base64');
  console.log(JSON.stringify({ build: (await engineInfo()).build, threads: m.info.threads, logits: hex(f.logits),
    attention: f.attentions.records.map((r) => hex(r.data)), tokens: r.tokens.slice(ids.length) }));
`;

test('the single-thread build (ATTNLENS_WASM=single) runs 1 thread and gives the same bits', { skip: noKjv }, () => {
  const single = child(childTrace, { ATTNLENS_WASM: 'single' });
  const threaded = child(childTrace, { ATTNLENS_WASM: 'threads' });
  assert.equal(single.build, 'single');
  assert.equal(single.threads, 1);
  assert.equal(threaded.build, 'threads');
  assert.equal(threaded.threads, 4);
  assert.equal(single.logits, threaded.logits);
  assert.deepEqual(single.attention, threaded.attention);
  assert.deepEqual(single.tokens, threaded.tokens);
  assert.deepEqual(threaded.tokens, reference.tokens);
});

test('a process that ran 4 threads (and one in a worker) exits by itself', { skip: noKjv }, () => {
  const r = child(`
    const { loadModel } = await import(${JSON.stringify(pathToFileURL(web).href)});
    const a = await loadModel(${JSON.stringify(files)}, { threads: 4 });
    await a.generate('And God', { maxNewTokens: 4 });
    const b = await loadModel(${JSON.stringify(files)}, { threads: 2, worker: true });
    await b.generate('And God', { maxNewTokens: 4 });
    await b.dispose();
    console.log(JSON.stringify({ ok: true }));
  `);
  assert.deepEqual(r, { ok: true });
});

after(() => {});
