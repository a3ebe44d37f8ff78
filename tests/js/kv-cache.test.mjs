// loadModel(…, { kvCache }): the KV cache's storage type (nn/kv_cache.h) travels from the options to
// the engine, here and through the Worker proxy; model.info says what it got; bad values are errors.
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { loadModel } from '../../web/src/index.mjs';

const kjv = join(fileURLToPath(new URL('../../models/kjv-gpt2/', import.meta.url)));
// kjv-gpt2: 4 layers, 6 heads of 32, 256 positions: a full cache of keys and values.
const positions = 2 * 4 * 256;
const F32_BYTES = positions * 192 * 4;
const Q8_BYTES = positions * (192 / 32) * 34;

test('kvCache "q8_0": info.kvCache and kvCacheBytes, memory() as it fills, generation runs', async () => {
  const m = await loadModel(kjv + '/', { kvCache: 'q8_0', threads: 1 });
  try {
    assert.equal(m.info.kvCache, 'q8_0');
    assert.equal(m.info.kvCacheBytes, Q8_BYTES);
    const r = await m.generate('And God said', { maxNewTokens: 12, temperature: 0 });
    assert.ok(r.text.length > 0);
    const mem = await m.memory();
    assert.equal(mem.kvCacheBytes % (2 * 4 * 6 * 34), 0);  // whole q8_0 positions
    assert.ok(mem.kvCacheBytes > 0 && mem.kvCacheBytes <= Q8_BYTES);
  } finally {
    await m.dispose();
  }
  const d = await loadModel(kjv + '/', { threads: 1 });
  try {
    assert.equal(d.info.kvCache, 'f32');  // the default
    assert.equal(d.info.kvCacheBytes, F32_BYTES);
  } finally {
    await d.dispose();
  }
});

test('kvCache through the Worker proxy', async () => {
  const m = await loadModel(kjv + '/', { kvCache: 'q8_0', worker: true, threads: 1 });
  try {
    assert.equal(m.info.kvCache, 'q8_0');
    assert.equal(m.info.kvCacheBytes, Q8_BYTES);
  } finally {
    await m.dispose();
  }
});

test('kvCache: values other than "f32" and "q8_0" are errors naming the option', async () => {
  for (const bad of ['q4_0', 'F32', 8, null]) {
    await assert.rejects(loadModel(kjv + '/', { kvCache: bad }), (e) => e instanceof RangeError && /kvCache/.test(e.message));
  }
});
