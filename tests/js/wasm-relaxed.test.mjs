// The relaxed-SIMD modules (dist/wasm/attnlens[-mt]-relaxed.*, CMakeLists.txt ATTNLENS_WASM_RELAXED):
//   - tools/wasm-relaxed.mjs, which carries clang 19's relaxed instructions through binaryen 108 and
//     back, rewrites exactly those instructions: not an immediate that happens to hold their bytes,
//     not an opcode it does not know (it stops), not a module where the target opcode already means
//     something else;
//   - the built relaxed modules hold the standard opcodes only, and differ from their portable twins
//     in nothing but the kernels;
//   - the package picks the relaxed build only where the JavaScript engine runs it (Node 20 does not
//     unless started with --experimental-wasm-relaxed-simd), computes within float rounding of the
//     portable build there, and refuses a simd choice that contradicts the engine already running.
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { RELAXED, count, forEachSimd, rewrite } from '../../tools/wasm-relaxed.mjs';
import { kjv, noKjv, root } from './fixtures/models.mjs';

const hasWat2wasm = spawnSync('sh', ['-c', 'command -v wat2wasm'], { stdio: 'ignore' }).status === 0;
const noWabt = !hasWat2wasm && 'wat2wasm (wabt) is not installed';
const dir = mkdtempSync(join(tmpdir(), 'attnlens-relaxed-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function wat(text, name) {
  writeFileSync(join(dir, `${name}.wat`), text);
  execFileSync('wat2wasm', ['--enable-relaxed-simd', join(dir, `${name}.wat`), '-o', join(dir, `${name}.wasm`)]);
  return readFileSync(join(dir, `${name}.wasm`));
}

// Every relaxed instruction the rewriter handles, and immediates that hold their exact bytes: a
// v128.const whose 16 bytes are fd 85 02 …, an i32.const whose LEB128 is fd 85 02 (33533), a memarg
// offset (0x105).
const TEXT = `(module
  (memory 1)
  (func (export "madd") (param v128 v128 v128) (result v128)
    (f32x4.relaxed_madd (local.get 0) (local.get 1) (local.get 2)))
  (func (export "nmadd") (param v128 v128 v128) (result v128)
    (f32x4.relaxed_nmadd (local.get 0) (local.get 1) (local.get 2)))
  (func (export "dot") (param v128 v128 v128) (result v128)
    (i32x4.dot_i8x16_i7x16_add_s (local.get 0) (local.get 1) (local.get 2)))
  (func (export "imm") (result v128)
    (drop (i32.const 33533))
    (drop (v128.load offset=0x105 (i32.const 0)))
    (v128.const i8x16 0xfd 0x85 0x02 0xfd 0x93 0x02 0xfd 0x86 0x02 0 0 0 0 0 0 0)))`;

test('the rewriter turns exactly the relaxed instructions into binaryen\'s prototype opcodes and back', { skip: noWabt }, () => {
  const original = wat(TEXT, 'all');
  const bytes = Buffer.from(original);
  assert.deepEqual([...count(bytes)].sort(), [
    ['f32x4.relaxed_madd (standard)', 1], ['f32x4.relaxed_nmadd (standard)', 1], ['i32x4.relaxed_dot_i8x16_i7x16_add_s (standard)', 1]]);
  assert.equal(rewrite(bytes, 'prototype'), 3);
  // Only three opcodes' LEB128 bytes changed; every immediate is as it was.
  const changed = [...bytes.keys()].filter((i) => bytes[i] !== original[i]);
  const ops = [];
  forEachSimd(bytes, (start, sub) => { if (RELAXED.some((e) => e.prototype === sub)) ops.push(start); });
  assert.equal(ops.length, 3);
  for (const i of changed) assert.ok(ops.some((s) => i === s + 1 || i === s + 2), `byte ${i} changed outside an opcode`);
  assert.deepEqual([...count(bytes)].sort(), [
    ['f32x4.relaxed_madd (prototype)', 1], ['f32x4.relaxed_nmadd (prototype)', 1], ['i32x4.relaxed_dot_i8x16_i7x16_add_s (prototype)', 1]]);
  assert.equal(rewrite(bytes, 'standard'), 3);
  assert.deepEqual(bytes, original);
});

test('the rewriter refuses what it cannot rewrite without changing the meaning', { skip: noWabt }, () => {
  const std = wat(TEXT, 'clash');
  // Standard → prototype twice: the second pass finds prototype opcodes where standard ones are expected.
  const once = Buffer.from(std);
  rewrite(once, 'prototype');
  assert.throws(() => rewrite(once, 'prototype'), /already means another instruction/);
  // An opcode the walker does not know (0xFD 0x7F 0x7F … is not an instruction): it stops, it never guesses.
  const bad = Buffer.from(std);
  const at = bad.indexOf(Buffer.from([0xfd, 0x85, 0x02]));
  bad[at + 1] = 0xff; bad[at + 2] = 0x03;  // 0x1ff
  assert.throws(() => rewrite(bad, 'standard'), /unknown SIMD opcode 0x1ff/);
  assert.throws(() => rewrite(Buffer.from('not wasm'), 'standard'), /not a wasm binary/);
  assert.throws(() => rewrite(Buffer.from(std), 'sideways'), /prototype or standard/);
});

const pairs = [['attnlens.wasm', 'attnlens-relaxed.wasm'], ['attnlens-mt.wasm', 'attnlens-mt-relaxed.wasm']];
for (const [portable, relaxed] of pairs) {
  const files = [portable, relaxed].map((f) => join(root, 'dist/wasm', f));
  const notBuilt = !files.every(existsSync) && 'dist/wasm is not built (node tools/build.mjs --wasm)';
  test(`${relaxed}: standard relaxed opcodes only, valid wasm; ${portable} has none`, { skip: notBuilt }, () => {
    const [p, r] = files.map((f) => readFileSync(f));
    const inRelaxed = count(r);
    assert.ok((inRelaxed.get('f32x4.relaxed_madd (standard)') ?? 0) >= 20, JSON.stringify([...inRelaxed]));
    assert.deepEqual([...inRelaxed.keys()].filter((k) => k.includes('prototype')), []);
    assert.deepEqual([...count(p)], []);
    // The two differ only in the kernels: within 1% of each other's size.
    assert.ok(Math.abs(r.length - p.length) < 0.01 * p.length, `${r.length} vs ${p.length} bytes`);
    // wabt's validator (independent of binaryen and V8) accepts it, and only with relaxed SIMD on.
    if (hasWat2wasm) {
      const flags = ['--enable-exceptions', '--enable-threads'];
      execFileSync('wasm-validate', [...flags, '--enable-relaxed-simd', files[1]]);
      assert.notEqual(spawnSync('wasm-validate', [...flags, files[1]]).status, 0, 'valid without relaxed SIMD: no relaxed instruction in it');
    }
  });
}

// A child Node process (flags and environment of its own) that loads kjv-gpt2 and prints the engine
// it got and the logits of one forward pass.
const CHILD = `
import { loadModel, engineInfo } from ${JSON.stringify(join(root, 'web/src/index.mjs'))};
const simd = process.env.WANT_SIMD || undefined;
try {
  const m = await loadModel(${JSON.stringify(kjv.dir)}, { threads: 1, simd });
  const { ids } = await m.tokenize('And God said, Let there be light: and there was light.');
  const f = await m.forward(ids, { attentions: true });
  const g = await m.generate('And God said', { maxNewTokens: 24, temperature: 0 });
  const info = await engineInfo();
  let second = null;
  try { await loadModel(${JSON.stringify(kjv.dir)}, { simd: info.relaxedSimd ? 'portable' : 'relaxed' }); } catch (e) { second = e.message; }
  process.stdout.write(JSON.stringify({ info, logits: Array.from(f.logits), attention: Array.from(f.attentions.records.at(-1).data), text: g.text, second }));
} catch (e) {
  process.stdout.write(JSON.stringify({ error: e.message }));
}`;
writeFileSync(join(dir, 'child.mjs'), CHILD);
function child(flags, env = {}) {
  const out = execFileSync(process.execPath, [...flags, join(dir, 'child.mjs')], { env: { ...process.env, ...env }, encoding: 'utf8' });
  return JSON.parse(out);
}

const relaxedBuilt = ['attnlens-relaxed.wasm', 'attnlens-mt-relaxed.wasm'].every((f) => existsSync(join(root, 'dist/wasm', f)));
const skipRun = noKjv || (!relaxedBuilt && 'dist/wasm is not built (node tools/build.mjs --wasm)');

test('Node picks the build its engine runs: portable without relaxed SIMD, relaxed with it, within float rounding of each other', { skip: skipRun, timeout: 120_000 }, (t) => {
  for (const build of ['single', 'threads']) {
    const portable = child([], { ATTNLENS_WASM: build });
    assert.equal(portable.error, undefined, portable.error);
    const relaxed = child(['--experimental-wasm-relaxed-simd'], { ATTNLENS_WASM: build });
    assert.equal(relaxed.error, undefined, relaxed.error);
    assert.equal(portable.info.relaxedSimd, false);
    assert.equal(portable.info.simd, 'sse4.1');
    assert.equal(relaxed.info.relaxedSimd, true);
    assert.equal(relaxed.info.simd, 'sse4.1+relaxed');
    assert.equal(relaxed.info.build, build);
    // A second load asking for the other variant is refused by name (the first load decided).
    assert.match(portable.second, /simd: "relaxed" was asked for, but this thread's engine already runs the portable build/);
    assert.match(relaxed.second, /simd: "portable" was asked for, but this thread's engine already runs the relaxed build/);
    // One rounding less per multiply-add: logits within 1e-5 of the largest |logit| (float32 rounding
    // of sums over a few hundred terms, times the depth), attention weights within 1e-5.
    const scale = Math.max(...portable.logits.map(Math.abs));
    let dl = 0, same = 0;
    portable.logits.forEach((v, i) => { dl = Math.max(dl, Math.abs(v - relaxed.logits[i])); if (v === relaxed.logits[i]) same++; });
    let da = 0;
    portable.attention.forEach((v, i) => { da = Math.max(da, Math.abs(v - relaxed.attention[i])); });
    t.diagnostic(`${build}: logits max |Δ| ${dl.toExponential(2)} (max |logit| ${scale.toFixed(2)}), ${same}/${portable.logits.length} equal; attention max |Δ| ${da.toExponential(2)}`);
    assert.ok(dl <= 1e-5 * scale, `logits differ by ${dl}`);
    assert.ok(da <= 1e-5, `attention differs by ${da}`);
    assert.equal(relaxed.text, portable.text, 'greedy text');
    // Forced portable with the flag: the portable build's bits.
    const forced = child(['--experimental-wasm-relaxed-simd'], { ATTNLENS_WASM: build, WANT_SIMD: 'portable' });
    assert.equal(forced.info.relaxedSimd, false);
    assert.deepEqual(forced.logits, portable.logits);
  }
});

test('simd: "relaxed" where the engine cannot run it is refused with the reason', { skip: skipRun, timeout: 60_000 }, () => {
  const r = child([], { WANT_SIMD: 'relaxed' });
  assert.match(r.error, /simd: "relaxed" was asked for, but this JavaScript engine does not run WebAssembly relaxed SIMD/);
});

test('loadModel(…, { simd }) takes "auto", "relaxed" or "portable", by name', { skip: noKjv }, async () => {
  const { loadModel } = await import(join(root, 'web/src/index.mjs'));
  for (const simd of ['fast', '', 1, null])
    await assert.rejects(loadModel(kjv.dir, { simd }), (e) => e instanceof RangeError && /simd must be "auto", "relaxed" or "portable"/.test(e.message));
});
