// Loads the AttnLens WebAssembly module once per JavaScript realm (page, worker or Node process).
// The module's files sit next to each other in dist/wasm/: attnlens.mjs (Emscripten's glue) and
// attnlens.wasm. They are found relative to this file's URL, so the package works from any page URL,
// under a bundler that understands `new URL(…, import.meta.url)` (Vite, webpack 5, Rollup), and in Node.

import { isNode, nodeImport } from './env.mjs';
import { FetchError } from './errors.mjs';

// Both files are referenced as `new URL('…', import.meta.url)` with a literal path: bundlers copy
// them as assets and rewrite the URLs. The glue is then imported by URL at run time, not bundled:
// it stays one file next to its wasm, and a worker bundle needs no code splitting (Vite builds
// workers as classic scripts by default) and no top-level await (which the glue has on Node).
const glueUrl = new URL('../../dist/wasm/attnlens.mjs', import.meta.url);
const wasmUrl = new URL('../../dist/wasm/attnlens.wasm', import.meta.url);

let modulePromise = null;

// Compiles and instantiates attnlens.wasm for the glue (its `instantiateWasm` hook): read from disk
// in Node, else fetched from wasmUrl (compiled while it downloads when served as application/wasm).
// Doing it here rather than through the glue's locateFile means the URL is used exactly as the
// bundler rewrote it (hashed asset names included), and a failure says which URL and why.
async function instantiate(imports) {
  if (isNode && wasmUrl.protocol === 'file:') {
    const { readFile } = await nodeImport('node:fs/promises');
    const { fileURLToPath } = await nodeImport('node:url');
    return WebAssembly.instantiate(await readFile(fileURLToPath(wasmUrl)), imports);
  }
  let response;
  try {
    response = await fetch(wasmUrl.href, { credentials: 'same-origin' });
  } catch (e) {
    throw new Error(`AttnLens could not download its WebAssembly module from ${wasmUrl.href}: ${e.message}`, { cause: e });
  }
  if (!response.ok) throw new FetchError(wasmUrl.href, response.status, response.statusText);
  if (typeof WebAssembly.instantiateStreaming === 'function' && /^application\/wasm\b/.test(response.headers.get('content-type') ?? ''))
    return WebAssembly.instantiateStreaming(response, imports);
  return WebAssembly.instantiate(await response.arrayBuffer(), imports);  // served with another type
}

// The bindings never throw C++ exceptions into JavaScript (that would leak the exception and the
// call's arguments, see bindings/handles.h): a failed call returns an empty value and leaves its
// message behind. Every bound method and constructor is wrapped here to turn that into an Error.
function throwOnEngineErrors(m) {
  const check = () => {
    if (m.failed()) throw new Error(m.takeError());
  };
  for (const name of Object.keys(m)) {
    const Class = m[name];
    if (typeof Class !== 'function' || typeof Class.prototype?.isDeleted !== 'function') continue;  // not an Embind class
    const proto = Class.prototype;
    for (const method of Object.getOwnPropertyNames(proto)) {
      const fn = proto[method];
      if (method === 'constructor' || typeof fn !== 'function') continue;
      proto[method] = {
        [method](...args) {
          const result = fn.apply(this, args);
          check();
          return result;
        },
      }[method];
    }
    const Checked = function (...args) {
      const object = new Class(...args);
      if (m.failed()) {
        const message = m.takeError();
        object.delete();
        throw new Error(message);
      }
      return object;
    };
    Object.defineProperty(Checked, 'name', { value: Class.name });
    Checked.prototype = proto;
    m[name] = Checked;
  }
  return m;
}

/** The Emscripten module (a singleton). */
export function getModule() {
  if (!modulePromise) {
    modulePromise = (async () => {
      const { default: create } = await import(/* @vite-ignore */ /* webpackIgnore: true */ glueUrl.href);
      let fail;
      const failed = new Promise((_, reject) => { fail = reject; });
      // In Node, Emscripten 3.1.6's glue adds process-wide 'uncaughtException' and
      // 'unhandledRejection' listeners that rethrow: any later uncaught error of the application
      // then exits with code 7 and prints the glue's minified source. A library must not do that:
      // remove what it added (it adds them synchronously, while create() runs).
      const listeners = isNode ? ['uncaughtException', 'unhandledRejection'].map((e) => [e, process.listeners(e)]) : [];
      const module = create({
        instantiateWasm(imports, receive) {
          instantiate(imports).then(({ instance, module: compiled }) => receive(instance, compiled), fail);
          return {};
        },
      });
      for (const [event, before] of listeners)
        for (const fn of process.listeners(event)) if (!before.includes(fn)) process.off(event, fn);
      return throwOnEngineErrors(await Promise.race([module, failed]));
    })();
    modulePromise.catch(() => { modulePromise = null; });
  }
  return modulePromise;
}
