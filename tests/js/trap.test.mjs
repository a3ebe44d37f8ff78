// A wasm trap of any kind (unreachable, an out-of-bounds access, the stack overflowing inside wasm)
// costs the engine instance, not the page: the call that trapped rejects with an EngineLostError,
// every model loaded in that instance is reported lost (its calls reject the same way), the next
// load starts a fresh instance that works, and the old instance's memory can be collected.
// The traps come from the module's debugTrap binding (bindings/module.cpp), which exists for this test.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { EngineLostError, engineInfo, loadModel } from '../../web/src/index.mjs';
import { getModule } from '../../web/src/wasm.mjs';
import { noSmall, reportSkips, small } from './fixtures/models.mjs';

reportSkips(noSmall);
setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc');

for (const kind of ['unreachable', 'memory', 'stack']) {
  test(`a trap (${kind}): the call rejects with EngineLostError, loaded models are lost, a new load works`, { skip: noSmall }, async () => {
    const buffers = small.buffers();
    const a = await loadModel(buffers);
    const b = await loadModel(buffers);
    const want = await a.generate(small.prompt, { maxNewTokens: 6, temperature: 0 });
    const before = await getModule();
    let trapped;
    assert.throws(() => before.debugTrap(kind), (e) => {
      trapped = e;
      return e instanceof EngineLostError && /the AttnLens engine failed inside debugTrap/.test(e.message) && /2 models/.test(e.message);
    });
    assert.ok(trapped.cause, 'the error carries what the instance threw');
    // Both models are lost, explicitly; dispose() is harmless.
    for (const m of [a, b]) {
      await assert.rejects(m.generate(small.prompt, { maxNewTokens: 2 }), (e) => e instanceof EngineLostError && /this model was lost/.test(e.message));
      await assert.rejects(m.tokenize('x'), EngineLostError);
      assert.throws(() => m.memory(), EngineLostError);
      await m.dispose();
    }
    // The old instance's calls keep failing cleanly (they never touch its memory again).
    assert.throws(() => before.memoryStats(), EngineLostError);
    // A fresh instance: loads, generates the same tokens, reports its own memory.
    const after = await getModule();
    assert.notEqual(after, before);
    const c = await loadModel(buffers);
    const got = await c.generate(small.prompt, { maxNewTokens: 6, temperature: 0 });
    assert.deepEqual(got.tokens, want.tokens);
    assert.ok((await engineInfo()).allocatedBytes > 0);
    await c.dispose();
  });
}

test('the discarded instance is garbage: nothing keeps its memory alive', { skip: noSmall }, async () => {
  // Everything that refers to the instance lives in this function; only a WeakRef comes out.
  const trapOne = async () => {
    const model = await loadModel(small.buffers());
    const m = await getModule();
    const memory = new WeakRef(m.wasmMemory ?? m.HEAPU8.buffer);
    assert.throws(() => m.debugTrap('unreachable'), EngineLostError);
    await assert.rejects(model.forward([1, 2]), EngineLostError);
    return memory;
  };
  const old = await trapOne();
  // (no deref() before the collections: a WeakRef's target is kept until the end of the job that read it)
  for (let i = 0; i < 5; i++) {
    await new Promise((r) => setTimeout(r, 20));
    gc();
  }
  assert.equal(old.deref(), undefined, 'the old wasm memory is still reachable');
});

test('an engine error is not a trap: the instance and its models live on', { skip: noSmall }, async () => {
  const m = await loadModel(small.buffers());
  const before = await getModule();
  await assert.rejects(m.forward([1, 2, 3], { attentions: { layers: [999] } }), RangeError);
  await assert.rejects(loadModel([new Uint8Array([1, 2, 3])]), (e) => !(e instanceof EngineLostError) && /not a model file/.test(e.message));
  assert.equal(await getModule(), before);
  assert.ok((await m.generate(small.prompt, { maxNewTokens: 2 })).tokens.length > 0);
  await m.dispose();
});

// A trap in the middle of a pass: the call rejects with the error that says where the engine failed,
// not with one from the clean-up after it (which would call into the discarded instance). The trap is
// set off from inside the session's own method, as a fault in the engine's pass would be.
for (const [what, method, call] of [
  ['forward', 'decode', (m) => m.forward([1, 2, 3], { attentions: true })],
  ['forward with an analysis', 'analyze', (m) => m.forward([1, 2, 3], { attentions: true, topK: 3 })],
  ['patch', 'patch', (m) => m.patch({ clean: [1, 2, 3], corrupted: [1, 4, 3], site: { point: 'resid', layer: 0, position: 1 }, metric: { correct: 5, incorrect: 6 } })],
]) {
  test(`a trap inside ${what}: the call rejects with the trap's own EngineLostError`, { skip: noSmall }, async () => {
    const model = await loadModel(small.buffers());
    const m = await getModule();
    const proto = m.Session.prototype;
    const original = proto[method];
    proto[method] = function (...args) {
      m.debugTrap('unreachable');
      return original.apply(this, args);
    };
    try {
      await assert.rejects(call(model), (e) => e instanceof EngineLostError && /the AttnLens engine failed inside debugTrap/.test(e.message));
    } finally {
      proto[method] = original;
    }
    await assert.rejects(model.forward([1, 2]), (e) => e instanceof EngineLostError && /this model was lost/.test(e.message));
    const fresh = await loadModel(small.buffers());
    assert.equal((await fresh.forward([1, 2])).shape[0], 2);
    await fresh.dispose();
  });
}
