// Loads the AttnLens WebAssembly module once per JavaScript realm (page, worker or Node process).
// The module's files sit next to each other in dist/wasm/: attnlens.mjs (Emscripten's glue) and
// attnlens.wasm. They are found relative to this file's URL, so the package works from any page URL,
// under a bundler that understands `new URL(…, import.meta.url)` (Vite, webpack 5, Rollup), and in Node.

import { isNode, nodeImport } from './env.mjs';
import { EngineLostError, FetchError } from './errors.mjs';

// Both files are referenced as `new URL('…', import.meta.url)` with a literal path: bundlers copy
// them as assets and rewrite the URLs. The glue is then imported by URL at run time, not bundled:
// it stays one file next to its wasm, and a worker bundle needs no code splitting (Vite builds
// workers as classic scripts by default) and no top-level await (which the glue has on Node).
const glueUrl = new URL('../../dist/wasm/attnlens.mjs', import.meta.url);
const wasmUrl = new URL('../../dist/wasm/attnlens.wasm', import.meta.url);

let modulePromise = null;  // the live instance (a new one is made after a trap)
let compiled = null;       // the compiled WebAssembly.Module, reused by every instance

// Compiles and instantiates attnlens.wasm for the glue (its `instantiateWasm` hook): read from disk
// in Node, else fetched from wasmUrl (compiled while it downloads when served as application/wasm).
// Doing it here rather than through the glue's locateFile means the URL is used exactly as the
// bundler rewrote it (hashed asset names included), and a failure says which URL and why. After a
// trap, the next instance is made from the module compiled the first time: no second download.
async function instantiate(imports) {
  if (compiled) return { instance: await WebAssembly.instantiate(compiled, imports), module: compiled };
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

/**
 * The method objects holding engine handles (Model, Tokenizer) implement to hear that their
 * instance was lost: they drop their handles (so the old instance's memory can be collected) and
 * fail every later call with `error`.
 */
export const onEngineLost = Symbol('attnlens.onEngineLost');

const STATE = Symbol('attnlens.instance');

/** True once instance `m` was discarded (its handles must not be used, not even deleted). */
export function instanceLost(m) {
  return !!m[STATE].lost;
}

/** Registers `owner` (it implements [onEngineLost]) with the instance its handles live in. */
export function trackOwner(m, owner) {
  const ref = new WeakRef(owner);
  m[STATE].owners.add(ref);
  return () => m[STATE].owners.delete(ref);
}

// A throw out of a wasm call that is not an engine error (those come back through failed()): a trap
// (WebAssembly.RuntimeError: unreachable, memory access out of bounds, an abort()), the JS engine's
// stack overflowing inside wasm (RangeError, InternalError), or an exception thrown through wasm
// frames. None of them ran the C++ destructors or finished what the call had started, so the
// instance's memory can no longer be trusted. Only Embind's argument checks (BindingError), which
// throw before entering wasm, leave it intact.
function poisons(m, e) {
  return !(e instanceof m.BindingError);
}

// Discards instance `m` after `cause` escaped from `label`: the next getModule() makes a new
// instance; every object holding handles into `m` is told, and fails from now on.
function loseInstance(m, cause, label) {
  const state = m[STATE];
  const what = `${cause?.name ?? 'Error'}: ${cause?.message ?? String(cause)}`;
  state.lost = { label, what, cause };
  if (modulePromise && state.promise === modulePromise) modulePromise = null;
  const owners = [...state.owners].map((r) => r.deref()).filter(Boolean);
  state.owners.clear();
  const lostOne = new EngineLostError(
    `this model was lost: the AttnLens engine failed in another call (${label}: ${what}); its WebAssembly instance ` +
      'was discarded. Load the model again.',
    { cause },
  );
  for (const o of owners) o[onEngineLost](lostOne);
  return new EngineLostError(
    `the AttnLens engine failed inside ${label} (${what}). Its WebAssembly instance was discarded ` +
      (owners.length ? `with the ${owners.length} model${owners.length > 1 ? 's and tokenizers' : ' or tokenizer'} loaded in it, which must be loaded again; ` : '; ') +
      'the next load starts a fresh instance.',
    { cause },
  );
}

// The bindings never throw C++ exceptions into JavaScript (that would leak the exception and the
// call's arguments, see bindings/handles.h): a failed call returns an empty value and leaves its
// message behind. Every bound function, method and constructor is wrapped here to turn that into an
// Error, and to catch a trap (see poisons) so that it costs the instance, not the page.
function guardCalls(m) {
  m[STATE] = { lost: null, owners: new Set(), promise: null };
  const call = (fn, self, args, label) => {
    const lost = m[STATE].lost;
    if (lost) throw new EngineLostError(`the AttnLens engine instance this object lives in was discarded after it failed in ${lost.label} (${lost.what}); load the model again`, { cause: lost.cause });
    let result;
    try {
      result = fn.apply(self, args);
    } catch (e) {
      if (!poisons(m, e)) throw e;
      throw loseInstance(m, e, label);
    }
    if (m.failed()) throw new Error(m.takeError());
    return result;
  };
  for (const name of ['memoryStats', 'simdArch', 'debugTrap']) {
    const fn = m[name];
    m[name] = (...args) => call(fn, undefined, args, name);
  }
  for (const name of Object.keys(m)) {
    const Class = m[name];
    if (typeof Class !== 'function' || typeof Class.prototype?.isDeleted !== 'function') continue;  // not an Embind class
    const proto = Class.prototype;
    for (const method of Object.getOwnPropertyNames(proto)) {
      const fn = proto[method];
      if (method === 'constructor' || typeof fn !== 'function') continue;
      const label = `${name}.${method}`;
      proto[method] = { [method](...args) { return call(fn, this, args, label); } }[method];
    }
    const Checked = function (...args) {
      let object = null;
      try {
        call(() => { object = new Class(...args); }, undefined, [], `new ${name}`);
        return object;
      } catch (e) {
        if (object && !m[STATE].lost) object.delete();  // constructed, but the engine reported an error
        throw e;
      }
    };
    Object.defineProperty(Checked, 'name', { value: Class.name });
    Checked.prototype = proto;
    m[name] = Checked;
  }
  return m;
}

/** The Emscripten module (one live instance; after a trap, a fresh one). */
export function getModule() {
  if (!modulePromise) {
    const promise = (async () => {
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
          instantiate(imports).then(({ instance, module: wasm }) => {
            compiled = wasm;
            receive(instance, wasm);
          }, fail);
          return {};
        },
      });
      for (const [event, before] of listeners)
        for (const fn of process.listeners(event)) if (!before.includes(fn)) process.off(event, fn);
      const m = guardCalls(await Promise.race([module, failed]));
      m[STATE].promise = promise;
      return m;
    })();
    modulePromise = promise;
    promise.catch(() => { if (modulePromise === promise) modulePromise = null; });
  }
  return modulePromise;
}
