// Loads the AttnLens WebAssembly module once per JavaScript realm (page, worker or Node process).
// The module's files sit next to each other in dist/wasm/: attnlens.mjs (Emscripten's glue) and
// attnlens.wasm. They are found relative to this file's URL, so the package works from any page URL,
// under a bundler that understands `new URL(…, import.meta.url)` (Vite, webpack 5, Rollup), and in Node.

const isNode = typeof process === 'object' && typeof process.versions?.node === 'string' && typeof window === 'undefined';
const wasmUrl = new URL('../../dist/wasm/attnlens.wasm', import.meta.url);

let modulePromise = null;

async function wasmBytesInNode() {
  const { readFile } = await import('node:fs/promises');
  const { fileURLToPath } = await import('node:url');
  return readFile(fileURLToPath(wasmUrl));
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
      const { default: create } = await import('../../dist/wasm/attnlens.mjs');
      const options = {};
      if (isNode && wasmUrl.protocol === 'file:') {
        options.wasmBinary = await wasmBytesInNode();
      } else {
        options.locateFile = (path) => new URL(path, wasmUrl).href;
      }
      return throwOnEngineErrors(await create(options));
    })();
    modulePromise.catch(() => { modulePromise = null; });
  }
  return modulePromise;
}

export { isNode };
