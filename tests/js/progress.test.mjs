// Download progress: { loaded, total, file } events, `loaded` never decreasing and ending at the
// sum of the file sizes, `total` that sum when every Content-Length is known (and undefined when
// not, or when the body is compressed).
import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { loadModel } from '../../web/src/index.mjs';
import { kjv, noKjv, noStories, reportSkips, stories } from './fixtures/models.mjs';
import { serve } from './fixtures/server.mjs';

reportSkips(noStories, noKjv);

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

test('http with Content-Length: monotonic loaded, total the sum of both files, many events', { skip: noStories }, async () => {
  const server = await serve({ '/m/': stories.dir }, { chunkSize: 32768, chunkDelayMs: 1 });
  try {
    const bytes = size(stories.bin) + size(stories.tok);
    const events = await load([server.url('/m/stories260K.bin'), server.url('/m/tok512.bin')]);
    checkMonotonic(events, bytes, bytes);
    assert.ok(events.length >= 10, `${events.length} events`);
    assert.deepEqual([...new Set(events.map((e) => e.file))], ['stories260K.bin', 'tok512.bin']);
  } finally {
    await server.close();
  }
});

test('http without Content-Length, and gzip-encoded: total undefined, loaded still exact', { skip: noStories }, async () => {
  const bytes = size(stories.bin) + size(stories.tok);
  for (const options of [{ contentLength: false }, { gzip: true }]) {
    const server = await serve({ '/m/': stories.dir }, options);
    try {
      const events = await load([server.url('/m/stories260K.bin'), server.url('/m/tok512.bin')]);
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

test('paths, buffers and Blobs report progress too', { skip: noStories }, async () => {
  const bytes = size(stories.bin) + size(stories.tok);
  checkMonotonic(await load(stories.paths), bytes, bytes);
  checkMonotonic(await load(stories.buffers()), bytes, bytes);
  checkMonotonic(await load(stories.buffers().map((b) => new Blob([b]))), bytes, bytes);
});
