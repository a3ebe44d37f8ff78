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
      return create(options);
    })();
    modulePromise.catch(() => { modulePromise = null; });
  }
  return modulePromise;
}

export { isNode };
