// The attnlens CLI (bin/attnlens.mjs), end to end through the WebAssembly engine, against llama2.c's
// own outputs for stories260K (../shared/golden) and the golden tokenizer ids.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const run = promisify(execFile);
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const shared = join(root, '..', 'shared');
const cli = join(root, 'bin', 'attnlens.mjs');
const model = join(shared, 'models/stories260K/stories260K.bin');
const tok512 = join(shared, 'models/stories260K/tok512.bin');
const llama2tok = join(shared, 'models/llama2-tokenizer/tokenizer.bin');
const noShared = !existsSync(model) && '../shared is absent (its stories260K model and golden outputs are needed)';

async function attnlens(...args) {
  const { stdout } = await run('node', [cli, ...args], { maxBuffer: 64 << 20 });
  return stdout;
}

function golden(c) {
  const dir = join(shared, `golden/stories260K/case${c}`);
  const tokens = readFileSync(join(dir, 'tokens.txt'), 'utf8').trim().split('\n').map(Number);
  const att = readFileSync(join(dir, 'attention.f32'));
  return {
    prompt: readFileSync(join(dir, 'prompt.txt'), 'utf8'),
    output: readFileSync(join(dir, 'output.txt'), 'utf8').replace(/\n+$/, ''),
    tokens,
    attention: new Float32Array(att.buffer, att.byteOffset, att.byteLength / 4),
  };
}

test('generate --json: llama2.c greedy tokens and text', { skip: noShared }, async () => {
  for (const c of [0, 1, 2]) {
    const g = golden(c);
    const { ids } = JSON.parse(await attnlens('tokenize', '--model', model, '--tokenizer', tok512, '--text', g.prompt, '--json'));
    // run.c samples one token past the fed positions (and prints it): steps - prompt + 1 new tokens.
    const n = g.tokens.length - ids.length + 1;
    const out = JSON.parse(await attnlens('generate', '--model', model, '--tokenizer', tok512, '--prompt', g.prompt,
      '--max-tokens', String(n), '--temperature', '0', '--json'));
    assert.deepEqual(out.tokens.slice(0, g.tokens.length), g.tokens, `case ${c} tokens`);
    assert.equal(g.prompt + out.text, g.output, `case ${c} text`);
    assert.ok(out.prefill_ms > 0 && out.decode_tokens_per_s > 0);
  }
});

test('attention --json: every weight equals llama2.c within 1e-5', { skip: noShared }, async () => {
  const g = golden(0);
  const L = 5, H = 8, T = g.tokens.length;
  const promptLen = 5;  // BOS + "Once upon a time"
  const out = JSON.parse(await attnlens('attention', '--model', model, '--tokenizer', tok512, '--prompt', g.prompt,
    '--max-tokens', String(T - promptLen), '--temperature', '0', '--json'));
  assert.deepEqual(out.tokens, g.tokens);
  assert.equal(out.pieces.length, T);
  assert.equal(out.attention.length, L);
  let worst = 0;
  for (let l = 0; l < L; l++) {
    assert.equal(out.attention[l].length, H);
    for (let h = 0; h < H; h++)
      for (let t = 0; t < T; t++)
        for (let k = 0; k < T; k++) {
          const want = g.attention[((t * L + l) * H + h) * T + k];
          const got = out.attention[l][h][t][k];
          if (k > t) assert.equal(got, 0, 'keys past the query are 0');
          worst = Math.max(worst, Math.abs(got - want));
        }
  }
  assert.ok(worst <= 1e-5, `worst attention difference ${worst}`);

  // --layer / --head select one matrix.
  const one = JSON.parse(await attnlens('attention', '--model', model, '--tokenizer', tok512, '--prompt', g.prompt,
    '--max-tokens', '3', '--temperature', '0', '--layer', '2', '--head', '5', '--json'));
  assert.deepEqual(one.layers, [2]);
  assert.deepEqual(one.heads, [5]);
  assert.equal(one.attention.length, 1);
  assert.equal(one.attention[0].length, 1);
  for (let t = 0; t < one.tokens.length; t++)
    for (let k = 0; k <= t; k++)
      assert.ok(Math.abs(one.attention[0][0][t][k] - g.attention[((t * L + 2) * H + 5) * T + k]) <= 1e-5);
});

test('tokenize: golden ids of tok512 and the Llama 2 tokenizer', { skip: noShared }, async () => {
  const cases = readFileSync(join(shared, 'golden/tokenizer/cases.txt'), 'utf8').split('\n');
  for (const [tok, file] of [[tok512, 'tok512_ids.txt'], [llama2tok, 'llama2_ids.txt']]) {
    const want = readFileSync(join(shared, 'golden/tokenizer', file), 'utf8').split('\n');
    for (const i of [0, 1, 2, 5, 9].filter((i) => i < cases.length && cases[i] !== '')) {
      const r = JSON.parse(await attnlens('tokenize', '--tokenizer', tok, '--text', cases[i], '--json'));
      assert.deepEqual(r.ids, want[i].trim().split(/\s+/).map(Number), `${file} line ${i}: ${cases[i]}`);
      assert.equal(r.pieces.length, r.ids.length);
    }
  }
});

test('same seed, same text; flags reach the sampler', { skip: noShared }, async () => {
  const gen = (...extra) => attnlens('generate', '--model', model, '--tokenizer', tok512, '--prompt', 'Once upon a time',
    '--max-tokens', '25', '--json', ...extra).then(JSON.parse);
  const a = await gen('--seed', '42', '--temperature', '1');
  const b = await gen('--seed', '42', '--temperature', '1');
  assert.deepEqual(a.tokens, b.tokens);
  // The C++ test records these tokens natively and checks them in wasm too (test_runtime.cpp).
  assert.deepEqual(a.tokens.slice(5, 13), [432, 383, 286, 261, 376, 298, 315, 421]);
  const greedy = await gen('--temperature', '0');
  assert.deepEqual((await gen('--seed', '9', '--top-k', '1')).tokens, greedy.tokens);
  const stopped = await gen('--temperature', '0', '--stop', 'Lily');
  assert.equal(stopped.text, ', there was a little girl named ');
  assert.equal(stopped.finish_reason, 'stop');
});

test('generate --kv-cache q8_0: the KV cache stored as q8_0 (kjv-gpt2)', async () => {
  const out = JSON.parse(await attnlens('generate', '--model', 'kjv-gpt2', '--prompt', 'And God said', '--max-tokens', '8',
                                        '--temperature', '0', '--kv-cache', 'q8_0', '--json'));
  assert.ok(out.text.length > 0);
});

test('bad input: exit code and a precise message', async () => {
  const fails = async (args, code, pattern) => {
    await assert.rejects(run('node', [cli, ...args]), (e) => {
      assert.equal(e.code, code, e.stderr);
      assert.match(e.stderr, pattern);
      return true;
    });
  };
  await fails(['frobnicate'], 2, /unknown command "frobnicate"/);
  await fails(['generate', '--prompt', 'x'], 2, /--model PATH is required/);
  await fails(['generate', '--model', '/no/such/model.bin', '--prompt', 'x'], 2, /no such file or folder/);
  await fails(['generate', '--model', cli, '--prompt', 'x'], 1, /attnlens\.mjs: not a model file/);
  await fails(['generate', '--model', 'kjv-gpt2', '--prompt', 'x', '--kv-cache', 'q4_0'], 2, /--kv-cache must be f32 or q8_0, got "q4_0"/);
  if (noShared) return;
  // stories260K's heads are 8 wide: a q8_0 cache (blocks of 32) cannot hold them
  await fails(['generate', '--model', model, '--tokenizer', tok512, '--prompt', 'x', '--kv-cache', 'q8_0'], 1, /q8_0 KV cache.*llama has head_dim 8/);
  await fails(['generate', '--model', model, '--tokenizer', tok512, '--prompt', 'x', '--temperature=-1'], 1, /temperature must be ≥ 0, got -1/);
  await fails(['generate', '--model', model, '--tokenizer', tok512, '--prompt', 'x', '--top-p', '2'], 1, /topP must be ≤ 1, got 2/);
  await fails(['generate', '--model', model, '--tokenizer', tok512, '--prompt', 'x', '--max-tokens', 'many'], 2, /--max-tokens must be an integer/);
  await fails(['generate', '--model', model, '--prompt', 'x'], 1, /no tokenizer/);
  await fails(['attention', '--model', model, '--tokenizer', tok512, '--prompt', 'x', '--layer', '9', '--json'], 2, /--layer 9 is out of range \[0, 5\)/);
  await fails(['generate', '--model', model, '--tokenizer', tok512, '--prompt', ''], 1, /prompt is empty/);
});
