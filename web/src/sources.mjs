// Turning what a user has into the files of one model: [{ name, bytes: Uint8Array }].
//
//   a URL of a file                      "https://…/stories15M.bin", "./model.gguf"
//   a URL of a Hugging Face-style folder "https://…/kjv-gpt2/"  (ends with "/": config.json,
//                                        tokenizer.json, model.safetensors or the index + shards)
//   several URLs                         ["…/stories15M.bin", "…/tokenizer.bin"]
//   File / Blob objects (dropped files), ArrayBuffers or typed arrays (named "file0", "file1", …
//   or passed as { name, data })
//   in Node: a path of a file or a folder
//
// Downloads report progress (bytes loaded / total), honour an AbortSignal, and with `cache` keep
// their responses in Cache Storage so a second load works offline.
import { isNode } from './wasm.mjs';

const CACHE_NAME = 'attnlens-models-v1';
const MODEL_FILE = /\.(bin|gguf|safetensors|json)$/i;

/** Error from a failed download: carries the HTTP status. */
export class FetchError extends Error {
  constructor(url, status, statusText) {
    super(`GET ${url} failed: ${status} ${statusText}`.trim());
    this.name = 'FetchError';
    this.url = url;
    this.status = status;
  }
}

function abortError(signal) {
  return signal?.reason instanceof Error ? signal.reason : new DOMException('The operation was aborted.', 'AbortError');
}

function checkAborted(signal) {
  if (signal?.aborted) throw abortError(signal);
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

/** Reads a response body, reporting each chunk to onChunk(bytes). */
async function readBody(response, signal, onChunk) {
  if (!response.body?.getReader) {
    const bytes = new Uint8Array(await response.arrayBuffer());
    onChunk(bytes.length);
    return bytes;
  }
  const reader = response.body.getReader();
  const chunks = [];
  let size = 0;
  for (;;) {
    if (signal?.aborted) {
      await reader.cancel().catch(() => {});
      throw abortError(signal);
    }
    const { done, value } = await reader.read();
    if (done) break;
    chunks.push(value);
    size += value.length;
    onChunk(value.length);
  }
  const out = new Uint8Array(size);
  let offset = 0;
  for (const c of chunks) {
    out.set(c, offset);
    offset += c.length;
  }
  return out;
}

/** Downloads several URLs with one progress stream: onProgress({loaded, total, file}). */
async function downloadAll(urls, { signal, onProgress, cache }) {
  const store = await openCache(cache);
  const responses = [];
  for (const url of urls) {
    checkAborted(signal);
    let response = store ? await store.match(url) : undefined;
    const fromCache = !!response;
    if (!response) {
      try {
        response = await fetch(url, { signal });
      } catch (e) {
        if (signal?.aborted) throw abortError(signal);
        throw new Error(`GET ${url} failed: ${e.message}`, { cause: e });
      }
      if (!response.ok) throw new FetchError(url, response.status, response.statusText);
      if (store) {
        await store.put(url, response.clone()).catch(() => {});  // quota errors: keep going uncached
      }
    }
    responses.push({ url, response, fromCache });
  }
  const sizes = responses.map(({ response }) => Number(response.headers.get('content-length')) || 0);
  const total = sizes.every((s) => s > 0) ? sizes.reduce((a, b) => a + b, 0) : undefined;
  let loaded = 0;
  const files = [];
  for (const { url, response } of responses) {
    const name = baseName(new URL(url).pathname);
    const bytes = await readBody(response, signal, (n) => {
      loaded += n;
      onProgress?.({ loaded, total, file: name });
    });
    files.push({ name, bytes });
  }
  return files;
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

/** A Hugging Face-style folder URL: config.json, tokenizer.json, weights (one file or sharded). */
async function folderUrls(folder, { signal, cache }) {
  const store = await openCache(cache);
  const at = (f) => new URL(f, folder).href;
  const urls = [];
  if (await exists(at('model.safetensors'), signal, store)) {
    urls.push(at('config.json'), at('model.safetensors'));
  } else if (await exists(at('model.safetensors.index.json'), signal, store)) {
    const indexFile = (await downloadAll([at('model.safetensors.index.json')], { signal, cache }))[0];
    const index = JSON.parse(new TextDecoder().decode(indexFile.bytes));
    const shards = [...new Set(Object.values(index.weight_map ?? {}))];
    urls.push(at('config.json'), at('model.safetensors.index.json'), ...shards.map(at));
  } else {
    throw new FetchError(at('model.safetensors'), 404, 'Not Found (no model.safetensors or model.safetensors.index.json in this folder)');
  }
  if (await exists(at('tokenizer.json'), signal, store)) urls.push(at('tokenizer.json'));
  if (await exists(at('generation_config.json'), signal, store)) urls.push(at('generation_config.json'));
  return urls;
}

// ---- Node paths --------------------------------------------------------------------------------
async function readNodePath(path, { signal, onProgress }) {
  const fs = await import('node:fs/promises');
  const pathMod = await import('node:path');
  const stat = await fs.stat(path).catch((e) => {
    throw new Error(`${path}: ${e.code === 'ENOENT' ? 'no such file or folder' : e.message}`, { cause: e });
  });
  let paths = [path];
  if (stat.isDirectory()) {
    paths = (await fs.readdir(path)).filter((f) => MODEL_FILE.test(f)).sort().map((f) => pathMod.join(path, f));
    if (!paths.length) throw new Error(`${path}: the folder holds no model files (.bin, .gguf, .safetensors, .json)`);
  }
  const sizes = await Promise.all(paths.map(async (p) => (await fs.stat(p)).size));
  const total = sizes.reduce((a, b) => a + b, 0);
  let loaded = 0;
  const files = [];
  for (const p of paths) {
    checkAborted(signal);
    const bytes = new Uint8Array(await fs.readFile(p));
    loaded += bytes.length;
    onProgress?.({ loaded, total, file: baseName(p) });
    files.push({ name: baseName(p), bytes });
  }
  return files;
}

// ---- in-memory sources -------------------------------------------------------------------------
async function fromBlob(blob, index, { signal, onProgress }) {
  checkAborted(signal);
  const bytes = new Uint8Array(await blob.arrayBuffer());
  onProgress?.({ loaded: bytes.length, total: blob.size, file: blob.name ?? `file${index}` });
  return { name: blob.name ?? `file${index}`, bytes };
}

function fromBuffer(data, name) {
  if (data instanceof ArrayBuffer) return { name, bytes: new Uint8Array(data) };
  if (ArrayBuffer.isView(data)) return { name, bytes: new Uint8Array(data.buffer, data.byteOffset, data.byteLength) };
  return null;
}

/**
 * Resolves a model source into its files.
 * @returns {Promise<Array<{name: string, bytes: Uint8Array}>>}
 */
export async function resolveSource(source, options = {}) {
  const { signal } = options;
  checkAborted(signal);
  const list = Array.isArray(source) ? source : [source];
  if (!list.length) throw new TypeError('loadModel: source is an empty array');
  const files = [];
  const urls = [];
  for (let i = 0; i < list.length; i++) {
    const item = list[i];
    if (typeof item === 'string' || item instanceof URL) {
      const s = String(item);
      if (isNode && !/^(https?|data|blob):/i.test(s)) {
        const path = s.startsWith('file:') ? (await import('node:url')).fileURLToPath(s) : s;
        files.push(...(await readNodePath(path, options)));
      } else if (!isUrlLike(s) && !isNode && typeof location === 'undefined') {
        throw new TypeError(`loadModel: "${s}" is not a URL`);
      } else {
        const url = resolveUrl(s);
        if (url.endsWith('/')) urls.push(...(await folderUrls(url, options)));
        else urls.push(url);
      }
    } else if (typeof Blob !== 'undefined' && item instanceof Blob) {
      files.push(await fromBlob(item, i, options));
    } else if (fromBuffer(item, `file${i}`)) {
      files.push(fromBuffer(item, `file${i}`));
    } else if (item && typeof item === 'object' && typeof item.name === 'string' && fromBuffer(item.data, item.name)) {
      files.push(fromBuffer(item.data, item.name));
    } else {
      throw new TypeError(
        `loadModel: source ${Array.isArray(source) ? `[${i}] ` : ''}must be a URL, a path (Node), a File/Blob, an ArrayBuffer, a typed array or {name, data}; got ${item === null ? 'null' : typeof item}`,
      );
    }
  }
  if (urls.length) files.push(...(await downloadAll(urls, options)));
  return files;
}
