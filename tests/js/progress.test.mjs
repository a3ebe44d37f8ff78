// Download progress: { loaded, total, file } events, `loaded` never decreasing and ending at the
// sum of the file sizes, `total` that sum when every Content-Length is known (and undefined when
// not, or when the body is compressed).
import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { loadModel } from '../../web/src/index.mjs';
import { kjv, noKjv, noSmall, reportSkips, small } from './fixtures/models.mjs';
import { serve } from './fixtures/server.mjs';

reportSkips(noSmall, noKjv);
console.log(`model: ${small.name}`);
const urls = (server) => small.files.map((f) => server.url(`/m/${f}`));

const size = (p) => statSync(p).size;

async function load(source, options = {}) {
  const events = [];
  const m = await loadModel(source, { ...options, onProgress: (p) => events.push({ ...p }) });
  await m.dispose();
  return events;
}

function checkMonotonic(events, expectedBytes, total) {
  assert.ok(events.length >= 1);
  for (let i = 1; i < events.length; i++) assert.ok(events[i].loaded >= events[i - 1].loaded, `event ${i} went back`);
  assert.equal(events.at(-1).loaded, expectedBytes);
  for (const e of events) {
    assert.equal(e.total, total);
    assert.equal(typeof e.file, 'string');
    if (total !== undefined) assert.ok(e.loaded <= total);
  }
}

test('http with Content-Length: monotonic loaded, total the sum of all files, many events', { skip: noSmall }, async () => {
  const server = await serve({ '/m/': small.dir }, { chunkSize: 32768, chunkDelayMs: 1 });
  try {
    const bytes = small.bytes;
    const events = await load(urls(server));
    checkMonotonic(events, bytes, bytes);
    assert.ok(events.length >= 10, `${events.length} events`);
    assert.deepEqual([...new Set(events.map((e) => e.file))].sort(), [...small.files].sort());
  } finally {
    await server.close();
  }
});

test('http without Content-Length, and gzip-encoded: total undefined, loaded still exact', { skip: noSmall }, async () => {
  const bytes = small.bytes;
  for (const options of [{ contentLength: false }, { gzip: true }]) {
    const server = await serve({ '/m/': small.dir }, options);
    try {
      const events = await load(urls(server));
      checkMonotonic(events, bytes, undefined);
    } finally {
      await server.close();
    }
  }
});

test('a Hugging Face folder URL: one progress stream over its files', { skip: noKjv }, async () => {
  const server = await serve({ '/kjv/': kjv.dir });
  try {
    const files = ['config.json', 'model.safetensors', 'tokenizer.json', 'generation_config.json'];
    const bytes = files.reduce((a, f) => a + size(join(kjv.dir, f)), 0);
    const events = await load(server.url('/kjv/'));
    checkMonotonic(events, bytes, bytes);
  } finally {
    await server.close();
  }
});

test('paths, buffers and Blobs report progress too', { skip: noSmall }, async () => {
  const bytes = small.bytes;
  checkMonotonic(await load(small.paths), bytes, bytes);
  checkMonotonic(await load(small.buffers()), bytes, bytes);
  checkMonotonic(await load(small.buffers().map((b) => new File([b.data], b.name))), bytes, bytes);
});
