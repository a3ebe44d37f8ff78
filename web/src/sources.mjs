// Turning what a user has into the files of one model: [{ name, bytes: Uint8Array }].
//
//   a URL of a file                      "https://…/stories15M.bin", "./model.gguf"
//   a URL of a Hugging Face-style folder "https://…/kjv-gpt2/"  (ends with "/": config.json,
//                                        tokenizer.json, model.safetensors or the index + shards,
//                                        tokenizer_config.json, chat_template.jinja; without a
//                                        tokenizer.json, a SentencePiece model: spiece.model,
//                                        Marian's source.spm + vocab.json + target.spm (+ target_vocab.json), sentencepiece.bpe.model,
//                                        tokenizer.model)
//   several URLs                         ["…/stories15M.bin", "…/tokenizer.bin"]
//   File / Blob objects (dropped files), ArrayBuffers or typed arrays (named "file0", "file1", …
//   or passed as { name, data }); one file in consecutive pieces as { name, data: [piece, …] }
//   (ArrayBuffers, typed arrays or Blobs: a file over 2 GB never has to be one buffer)
//   in Node: a path of a file or a folder
//
// Downloads report progress (bytes loaded / total), honour an AbortSignal, and with `cache` keep
// their responses in Cache Storage so a second load works offline.
import { isNode, nodeImport } from './env.mjs';
import { FetchError, abortError, throwIfAborted } from './errors.mjs';

export { FetchError };

const CACHE_NAME = 'attnlens-models-v1';
const MODEL_FILE = /\.(bin|gguf|safetensors|json|jinja|model|spm)$/i;

// The name a downloaded file goes by: its last path component, with the folder for a
// sentence-transformers module's config ("1_Pooling/config.json").
function urlFileName(url) {
  const parts = decodeURIComponent(new URL(url).pathname).split('/');
  const last = parts.pop();
  const folder = parts.pop();
  return last === 'config.json' && /^\d+_\w+$/.test(folder ?? '') ? `${folder}/${last}` : last;
}

function baseName(path) {
  return String(path).split(/[\\/]/).filter(Boolean).pop() ?? String(path);
}

function isUrlLike(s) {
  return /^[a-z][a-z0-9+.-]*:/i.test(s) || s.startsWith('./') || s.startsWith('../') || s.startsWith('/');
}

function resolveUrl(s) {
  const base = typeof location !== 'undefined' ? location.href : undefined;
  return new URL(s, base).href;
}

// ---- downloads -------------------------------------------------------------------------------
async function openCache(useCache) {
  if (!useCache || typeof caches === 'undefined') return null;
  try {
    return await caches.open(CACHE_NAME);
  } catch {
    return null;  // e.g. an opaque origin: no Cache Storage, just download
  }
}

/**
 * Reads a response body, reporting each chunk to onChunk(bytes). With the size known (Content-Length
 * of an unencoded body) the bytes land in one buffer allocated up front: no second copy. With
 * `write(chunk, at)` (and the size known), each chunk goes there instead and nothing is kept.
 */
async function readBody(response, signal, onChunk, write = null, expected = 0) {
  if (!response.body?.getReader) {
    const bytes = new Uint8Array(await response.arrayBuffer());
    onChunk(bytes.length);
    if (!write) return bytes;
    if (bytes.length !== expected) throw new Error(`${response.url}: ${bytes.length} bytes arrived, the server announced ${expected}`);
    await write(bytes, 0);  // (a promise from holdingSinks past its limit)
    return null;
  }
  const reader = response.body.getReader();
  let out = write ? null : new Uint8Array(bodySize(response));
  let size = 0;
  try {
    for (;;) {
      const { done, value } = signal?.aborted ? {} : await reader.read();
      // Checked after the read too: a chunk that arrives once the caller has aborted (another file's
      // progress callback may have done it) is dropped, so no progress event follows an abort.
      if (signal?.aborted) throw abortError(signal);
      if (done) break;
      if (write) {
        if (size + value.length > expected) throw new Error(`${response.url}: more bytes arrived than the ${expected} the server announced`);
        // A promise from write() (holdingSinks over its limit): the download waits for it.
        const wait = write(value, size);
        if (wait) await wait;
      } else {
        if (size + value.length > out.length) {  // no or wrong Content-Length: grow geometrically
          const bigger = new Uint8Array(Math.max(out.length * 2, size + value.length, 1 << 16));
          bigger.set(out.subarray(0, size));
          out = bigger;
        }
        out.set(value, size);
      }
      size += value.length;
      onChunk(value.length);
    }
  } catch (e) {
    await reader.cancel().catch(() => {});  // an abort, a failed write (no memory, the engine did not start): the download stops
    throw e;
  }
  if (write) {
    if (size !== expected) throw new Error(`${response.url}: ${size} bytes arrived, the server announced ${expected}`);
    return null;
  }
  return size === out.length ? out : out.slice(0, size);
}

// The size of a response's body as read, if the server said it: Content-Length counts encoded
// bytes, so a compressed response (Content-Encoding: gzip, br, …) has no usable total.
function bodySize(response) {
  const encoding = response.headers.get('content-encoding');
  if (encoding && encoding !== 'identity') return 0;
  return Number(response.headers.get('content-length')) || 0;
}

/**
 * Opens several URLs (cache first, then the network): entries { name, size, read(onChunk) } whose
 * read() returns the body (and, with a cache, stores it once it has been read completely, so the
 * download is not read twice). Later loads are served from Cache Storage, also offline.
 */
async function openUrls(urls, { signal, cache }, kept = null) {
  const store = await openCache(cache);
  const responses = [];
  const cancelAll = () => responses.forEach((r) => r?.cancel());
  throwIfAborted(signal);
  // Every request goes out at once (one round trip, not one per file); entries keep the URLs' order.
  const open = async (url, i) => {
    let response = store ? await store.match(url) : undefined;
    const fromCache = !!response;
    if (!response && kept?.has(url)) {
      response = kept.get(url);  // asked for while the folder was probed (folderUrls), still unread
      kept.delete(url);
    }
    if (!response) {
      try {
        response = await fetch(url, { signal });
      } catch (e) {
        if (signal?.aborted) throw abortError(signal);
        throw new Error(`GET ${url} failed: ${e.message}`, { cause: e });
      }
      if (!response.ok) {
        response.body?.cancel?.().catch(() => {});
        throw new FetchError(url, response.status, response.statusText);
      }
    }
    let unread = true;
    responses[i] = {
      name: urlFileName(url),
      size: bodySize(response),
      streamed: true,  // its chunks are fresh buffers, never reused: they may be held (holdingSinks)
      cancel: () => { if (unread) response.body?.cancel?.().catch(() => {}); },
      async read(onChunk) {
        unread = false;
        const bytes = await readBody(response, signal, onChunk);
        if (store && !fromCache) {
          const headers = { 'content-length': String(bytes.length) };
          const type = response.headers.get('content-type');
          if (type) headers['content-type'] = type;
          await store.put(url, new Response(bytes, { headers })).catch(() => {});  // quota errors: keep going uncached
        }
        return bytes;
      },
      async readInto(write, onChunk) {
        unread = false;
        // Cache Storage reads its own copy of the stream (a tee), so the body is fetched once.
        const stored = store && !fromCache ? store.put(url, response.clone()).catch(() => {}) : null;
        await readBody(response, signal, onChunk, write, this.size);
        await stored;
      },
    };
  };
  const opened = await Promise.allSettled(urls.map(open));
  const failed = opened.find((o) => o.status === 'rejected');
  if (failed) {
    cancelAll();
    throw failed.reason;
  }
  return { entries: responses, cancelAll };
}

async function downloadAll(urls, options) {
  const { entries } = await openUrls(urls, options);
  const files = [];
  for (const e of entries) files.push({ name: e.name, bytes: await e.read(() => {}) });
  return files;
}

// Whether a file is there, by GET rather than HEAD when `kept` is given: a file the folder has is
// downloaded anyway, so its request doubles as the probe (one round trip less before the download
// starts) and the response waits, unread, in `kept` (url → Response) for openUrls.
async function probe(url, signal, store, kept) {
  if (store && (await store.match(url))) return true;
  try {
    const r = await fetch(url, { signal });
    if (!r.ok) {
      r.body?.cancel?.().catch(() => {});
      return false;
    }
    kept.set(url, r);
    return true;
  } catch {
    return false;
  }
}

async function exists(url, signal, store) {
  if (store && (await store.match(url))) return true;
  try {
    const r = await fetch(url, { method: 'HEAD', signal });
    return r.ok;
  } catch {
    return false;
  }
}

/**
 * A Hugging Face-style folder URL: config.json, tokenizer.json, weights (one file or sharded), the
 * tokenizer's configuration (tokenizer_config.json, and chat_template.jinja when the configuration
 * has no chat_template: newer transformers save the template there).
 */
async function folderUrls(folder, { signal, cache }, kept) {
  const store = await openCache(cache);
  const at = (f) => new URL(f, folder).href;
  // Which files the folder has, asked all at once (each by the GET that downloads it, see probe;
  // config.json, always needed, in the same round); the shard index only when there is no single
  // weights file (each missing file costs a 404, which browsers print in the console).
  const names = ['config.json', 'model.safetensors', 'tokenizer.json', 'generation_config.json', 'tokenizer_config.json',
    'modules.json', 'sentence_bert_config.json'];
  const has = Object.fromEntries(
    await Promise.all(names.map(async (n) => [n, await probe(at(n), signal, store, kept)])),
  );
  // A small JSON file of the folder, read here to decide what else to fetch; the copy in `kept`
  // stays unread for openUrls.
  const readSmall = async (name) => {
    const r = kept.get(at(name));
    if (r) return new Uint8Array(await r.clone().arrayBuffer());
    return (await downloadAll([at(name)], { signal, cache }))[0].bytes;
  };
  if (!has['model.safetensors']) {
    has['model.safetensors.index.json'] = await exists(at('model.safetensors.index.json'), signal, store);
  }
  const urls = [at('config.json')];
  if (has['model.safetensors']) {
    urls.push(at('model.safetensors'));
  } else if (has['model.safetensors.index.json']) {
    const indexFile = (await downloadAll([at('model.safetensors.index.json')], { signal, cache }))[0];
    const index = JSON.parse(new TextDecoder().decode(indexFile.bytes));
    const shards = [...new Set(Object.values(index.weight_map ?? {}))];
    urls.push(at('model.safetensors.index.json'), ...shards.map(at));
  } else {
    throw new FetchError(at('model.safetensors'), 404, 'Not Found (no model.safetensors or model.safetensors.index.json in this folder)');
  }
  if (has['tokenizer.json']) {
    urls.push(at('tokenizer.json'));
  } else {  // a SentencePiece model: T5/ALBERT spiece.model, Marian's source.spm (+ vocab.json), XLM-R, Llama 1/2
    const spm = ['spiece.model', 'source.spm', 'sentencepiece.bpe.model', 'tokenizer.model'];
    const found = await Promise.all(spm.map((n) => exists(at(n), signal, store)));
    for (const [i, n] of spm.entries()) if (found[i]) urls.push(at(n));
    if (found[1]) {  // Marian: vocab.json, target.spm (reads the output) and, with separate vocabularies, target_vocab.json
      const marian = ['vocab.json', 'target.spm', 'target_vocab.json'];
      const here = await Promise.all(marian.map((n) => exists(at(n), signal, store)));
      for (const [i, n] of marian.entries()) if (here[i]) urls.push(at(n));
    }
  }
  if (has['generation_config.json']) urls.push(at('generation_config.json'));
  if (has['tokenizer_config.json']) {
    urls.push(at('tokenizer_config.json'));
    const configBytes = await readSmall('tokenizer_config.json');
    let config = null;
    try {
      config = JSON.parse(new TextDecoder().decode(configBytes));
    } catch {
      // the engine reports what is wrong with it
    }
    if (config && typeof config === 'object' && !('chat_template' in config) && (await exists(at('chat_template.jinja'), signal, store)))
      urls.push(at('chat_template.jinja'));
  }
  if (has['sentence_bert_config.json']) urls.push(at('sentence_bert_config.json'));
  if (has['modules.json']) {
    const modules = await readSmall('modules.json');
    urls.push(at('modules.json'));
    const text = new TextDecoder().decode(modules);
    for (const rel of await moduleConfigs(async () => text)) urls.push(at(rel));
  }
  return urls;
}

// A sentence-transformers folder: its modules.json lists module folders ("1_Pooling") whose
// config.json the engine needs too, named "<folder>/config.json". read(name) → text or null.
async function moduleConfigs(read) {
  const text = await read('modules.json');
  if (!text) return [];
  let modules;
  try {
    modules = JSON.parse(text);
  } catch {
    return [];  // the engine reports the bad file
  }
  if (!Array.isArray(modules)) return [];
  return modules.filter((m) => typeof m?.path === 'string' && /^[\w.-]+$/.test(m.path) && /Pooling|Dense/.test(m.type ?? ''))
    .map((m) => `${m.path}/config.json`);
}

async function nodePathEntries(path) {
  const fs = await nodeImport('node:fs/promises');
  const pathMod = await nodeImport('node:path');
  const stat = await fs.stat(path).catch((e) => {
    throw new Error(`${path}: ${e.code === 'ENOENT' ? 'no such file or folder' : e.message}`, { cause: e });
  });
  let paths = [path];
  const names = new Map();  // path → the name the engine sees (a module's config keeps its folder)
  if (stat.isDirectory()) {
    let files = (await fs.readdir(path)).filter((f) => MODEL_FILE.test(f));
    // A folder with tokenizer.json may also keep the SentencePiece model it was converted from
    // (T5's spiece.model): the tokenizer.json is the one loaded, as from a folder URL.
    if (files.includes('tokenizer.json')) files = files.filter((f) => !/\.(model|spm)$/i.test(f));
    paths = files.sort().map((f) => pathMod.join(path, f));
    if (!paths.length) throw new Error(`${path}: the folder holds no model files (.bin, .gguf, .safetensors, .json, .model)`);
    for (const rel of await moduleConfigs(async (f) => fs.readFile(pathMod.join(path, f), 'utf8').catch(() => null))) {
      const p = pathMod.join(path, ...rel.split('/'));
      if (await fs.stat(p).catch(() => null)) {
        paths.push(p);
        names.set(p, rel);
      }
    }
  }
  return Promise.all(paths.map(async (p) => {
    const size = (await fs.stat(p)).size;
    return {
      name: names.get(p) ?? baseName(p),
      size,
      async read(onChunk, signal) {  // in 4 MB chunks: progress and abort within a big file
        const fh = await fs.open(p, 'r');
        try {
          const bytes = new Uint8Array(size);
          for (let at = 0; at < size;) {
            throwIfAborted(signal);
            const { bytesRead } = await fh.read(bytes, at, Math.min(4 << 20, size - at), at);
            if (!bytesRead) throw new Error(`${p}: the file shrank while being read`);
            at += bytesRead;
            onChunk(bytesRead);
          }
          return bytes;
        } finally {
          await fh.close();
        }
      },
      async readInto(write, onChunk, signal) {  // through a 4 MB buffer: write() copies it where it goes
        const fh = await fs.open(p, 'r');
        try {
          const chunk = new Uint8Array(Math.min(4 << 20, Math.max(size, 1)));
          for (let at = 0; at < size;) {
            throwIfAborted(signal);
            const { bytesRead } = await fh.read(chunk, 0, Math.min(chunk.length, size - at), at);
            if (!bytesRead) throw new Error(`${p}: the file shrank while being read`);
            write(chunk.subarray(0, bytesRead), at);
            at += bytesRead;
            onChunk(bytesRead);
          }
        } finally {
          await fh.close();
        }
      },
    };
  }));
}

// ---- in-memory sources -------------------------------------------------------------------------
function blobEntry(blob, index, name = blob.name ?? `file${index}`) {
  return {
    name,
    size: blob.size,
    async read(onChunk) {
      const bytes = new Uint8Array(await blob.arrayBuffer());
      onChunk(bytes.length);
      return bytes;
    },
    // In 16 MB slices: a file of several GB never becomes one ArrayBuffer.
    async readInto(write, onChunk, signal) {
      for (let at = 0; at < blob.size;) {
        throwIfAborted(signal);
        const piece = new Uint8Array(await blob.slice(at, Math.min(blob.size, at + (16 << 20))).arrayBuffer());
        if (!piece.length) throw new Error(`${name}: the file shrank while being read`);
        write(piece, at);
        at += piece.length;
        onChunk(piece.length);
      }
    },
  };
}

// One file given as consecutive pieces (buffers or Blobs): read piece by piece where it goes.
function piecesEntry(pieces, name) {
  const parts = pieces.map((p) => (isBlob(p) ? p : fromBuffer(p, name).bytes));
  const size = parts.reduce((a, p) => a + (isBlob(p) ? p.size : p.length), 0);
  const readInto = async (write, onChunk, signal) => {
    let at = 0;
    for (const p of parts) {
      if (isBlob(p)) {
        await blobEntry(p, 0, name).readInto((chunk, o) => write(chunk, at + o), onChunk, signal);
        at += p.size;
      } else {
        throwIfAborted(signal);
        write(p, at);
        at += p.length;
        onChunk(p.length);
      }
    }
  };
  return {
    name,
    size,
    async read(onChunk, signal) {  // one buffer: only where a file must be (a tokenizer's, a size not known)
      const bytes = new Uint8Array(size);
      await readInto((chunk, at) => bytes.set(chunk, at), onChunk, signal);
      return bytes;
    },
    readInto,
  };
}

function fromBuffer(data, name) {
  if (data instanceof ArrayBuffer) return { name, bytes: new Uint8Array(data) };
  if (ArrayBuffer.isView(data)) return { name, bytes: new Uint8Array(data.buffer, data.byteOffset, data.byteLength) };
  return null;
}

function isBufferLike(item) {
  return item instanceof ArrayBuffer || ArrayBuffer.isView(item);
}

function isBlob(item) {
  return typeof Blob !== 'undefined' && item instanceof Blob;
}

function isPieceList(data) {
  return Array.isArray(data) && data.length > 0 && data.every((p) => isBufferLike(p) || isBlob(p));
}

/** Checks the shape of a source (throws TypeError), without reading anything. */
export function checkSource(source, caller = 'loadModel') {
  const list = Array.isArray(source) ? source : [source];
  if (!list.length) throw new TypeError(`${caller}: source is an empty array`);
  list.forEach((item, i) => {
    const ok = typeof item === 'string' || item instanceof URL || isBlob(item) || isBufferLike(item) ||
      (item && typeof item === 'object' && typeof item.name === 'string' && (isBufferLike(item.data) || isBlob(item.data) || isPieceList(item.data)));
    if (!ok)
      throw new TypeError(
        `${caller}: source ${Array.isArray(source) ? `[${i}] ` : ''}must be a URL, a path (Node), a File/Blob, an ArrayBuffer, a typed array or {name, data} (data: a buffer, a Blob or a non-empty array of them, the file's consecutive pieces); got ${item === null ? 'null' : Array.isArray(item) ? 'an array' : typeof item}`,
      );
    if (typeof item === 'string' && !item.length) throw new TypeError(`${caller}: source ${Array.isArray(source) ? `[${i}] ` : ''}is an empty string`);
  });
}

/**
 * Opens a model source: its files as entries { name, size (0 when unknown), read(onChunk, signal) →
 * Uint8Array, readInto(write, onChunk, signal) }, with `cancel()` to give up the ones not read.
 * Sizes come first (file system, Blob, HTTP headers), the bytes only when an entry is read.
 */
export async function openSource(source, options = {}) {
  const { signal } = options;
  throwIfAborted(signal);
  checkSource(source);
  const list = Array.isArray(source) ? source : [source];
  const groups = [];  // per item: entries, or a URL list opened together below
  const keptAll = [];  // responses of folder probes (url → Response), handed to openUrls
  // Bodies of probe responses nobody takes are cancelled (a failed open, a file not used).
  const dropKept = () => keptAll.forEach((k) => { for (const r of k.values()) r.body?.cancel?.().catch(() => {}); k.clear(); });
  try {
    for (let i = 0; i < list.length; i++) {
      const item = list[i];
      throwIfAborted(signal);
      if (typeof item === 'string' || item instanceof URL) {
        const s = String(item);
        if (isNode && !/^(https?|data|blob):/i.test(s)) {
          const path = s.startsWith('file:') ? (await nodeImport('node:url')).fileURLToPath(s) : s;
          groups.push(await nodePathEntries(path));
        } else if (!isUrlLike(s) && !isNode && typeof location === 'undefined') {
          throw new TypeError(`loadModel: "${s}" is not a URL`);
        } else {
          const url = resolveUrl(s);
          if (!url.endsWith('/')) {
            groups.push({ urls: [url] });
          } else {
            const kept = new Map();
            keptAll.push(kept);
            groups.push({ urls: await folderUrls(url, options, kept), kept });
          }
        }
      } else if (isBlob(item)) {
        groups.push([blobEntry(item, i)]);
      } else if (isBlob(item.data)) {
        groups.push([blobEntry(item.data, i, item.name)]);
      } else if (Array.isArray(item.data)) {
        groups.push([piecesEntry(item.data, item.name)]);
      } else {
        const file = fromBuffer(item, `file${i}`) ?? fromBuffer(item.data, item.name);
        groups.push([{
          name: file.name,
          size: file.bytes.length,
          read: async (onChunk) => (onChunk(file.bytes.length), file.bytes),
          readInto: async (write, onChunk) => (write(file.bytes, 0), onChunk(file.bytes.length)),
        }]);
      }
    }
    const opened = [];
    try {
      for (let g = 0; g < groups.length; g++) {
        if (groups[g].urls) {
          const o = await openUrls(groups[g].urls, options, groups[g].kept);
          opened.push(o);
          groups[g] = o.entries;
        }
      }
    } catch (e) {
      opened.forEach((o) => o.cancelAll());
      throw e;
    }
    const entries = groups.flat();
    return { entries, cancel: () => entries.forEach((e) => e.cancel?.()) };
  } finally {
    dropKept();
  }
}

/**
 * Reads the entries of openSource(): each into JS memory, or with `sinks` (one write(chunk, at) per
 * entry, every size known) straight where it belongs. One progress stream over all files, `loaded`
 * growing to `total`; the bodies are read concurrently (the transfers overlap).
 */
export async function readEntries({ entries, cancel }, { signal, onProgress } = {}, sinks = null) {
  const total = entries.every((e) => e.size > 0) ? entries.reduce((a, e) => a + e.size, 0) : undefined;
  let loaded = 0;
  const progress = (e) => (n) => {
    loaded += n;
    onProgress?.({ loaded, total, file: e.name });
  };
  try {
    throwIfAborted(signal);
    if (sinks) {
      await Promise.all(entries.map((e, i) => e.readInto(sinks[i], progress(e), signal)));
      return null;
    }
    const bytes = await Promise.all(entries.map((e) => e.read(progress(e), signal)));
    return entries.map((e, i) => ({ name: e.name, bytes: bytes[i] }));
  } catch (err) {
    cancel();
    throw err;
  }
}

/**
 * Sinks for readEntries() that can be handed out before the place the bytes go exists: a download
 * starts at once, and what arrives is held in JS memory (up to `limit` bytes; beyond it a write()
 * returns a promise and the reader waits) until open(sinks) gives the real sinks, which first get
 * what was held, in order. fail(error) makes every held and later write() throw it (the readers stop).
 * Only for entries whose chunks are fresh buffers (`streamed`): a held chunk is kept, not copied.
 */
export function holdingSinks(count, limit) {
  let real = null, failure = null, held = 0, release;
  const opened = new Promise((resolve) => { release = resolve; });
  const queues = Array.from({ length: count }, () => []);
  const sinks = queues.map((queue, i) => (chunk, at) => {
    if (failure) throw failure;
    if (real) return real[i](chunk, at);
    queue.push([chunk, at]);
    held += chunk.length;
    return held < limit ? undefined : opened.then(() => { if (failure) throw failure; });
  });
  // Each sink keeps its queue while the download runs: emptied, not dropped, so the held chunks
  // can be collected as soon as they are written (or given up).
  const drop = () => queues.forEach((queue) => { queue.length = 0; });
  return {
    sinks,
    open(to) {
      queues.forEach((queue, i) => { for (const [chunk, at] of queue) to[i](chunk, at); });
      drop();
      real = to;
      release();
    },
    fail(error) {
      failure = error;
      drop();
      release();
    },
  };
}

/**
 * Resolves a model source into its files, in JS memory.
 * @returns {Promise<Array<{name: string, bytes: Uint8Array}>>}
 */
export async function resolveSource(source, options = {}) {
  return readEntries(await openSource(source, options), options);
}
