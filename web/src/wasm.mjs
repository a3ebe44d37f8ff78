// Loads the AttnLens WebAssembly module once per JavaScript realm (page, worker or Node process).
// Two builds sit in dist/wasm/, each its Emscripten glue next to its wasm:
//   attnlens.mjs + .wasm                          single thread: runs everywhere
//   attnlens-mt.mjs + .wasm + .worker.js          pthreads (SharedArrayBuffer): the engine splits its
//                                                 work over threads (core/parallel.h)
// and each again with relaxed SIMD (attnlens-relaxed.*, attnlens-mt-relaxed.*: the kernels' f32
// multiply-adds as f32x4.relaxed_madd, fused where the machine has FMA; CMakeLists.txt).
// The threads build is picked when shared memory is allowed: in Node, and in pages that are
// cross-origin isolated (served with `Cross-Origin-Opener-Policy: same-origin` and
// `Cross-Origin-Embedder-Policy: require-corp`, see README.md); otherwise the single-thread one.
// The relaxed twin is picked where the JavaScript engine runs relaxed SIMD (a probe: Chrome 114+,
// Node 21+), unless loadModel's `simd: 'portable'` (or ATTNLENS_SIMD=portable in Node) says otherwise.
// The files are found relative to this file's URL, so the package works from any page URL, under a
// bundler that understands `new URL(…, import.meta.url)` (Vite, webpack 5, Rollup), and in Node.

import { isNode, nodeImport } from './env.mjs';
import { EngineLostError, FetchError } from './errors.mjs';

// Every file is referenced as `new URL('…', import.meta.url)` with a literal path: bundlers copy
// them as assets and rewrite the URLs. The glue is then imported by URL at run time, not bundled:
// it stays one file next to its wasm, and a worker bundle needs no code splitting (Vite builds
// workers as classic scripts by default) and no top-level await (which the glue has on Node).
const builds = {
  single: {
    glue: new URL('../../dist/wasm/attnlens.mjs', import.meta.url),
    wasm: new URL('../../dist/wasm/attnlens.wasm', import.meta.url),
  },
  threads: {
    glue: new URL('../../dist/wasm/attnlens-mt.mjs', import.meta.url),
    wasm: new URL('../../dist/wasm/attnlens-mt.wasm', import.meta.url),
    // A pthread's Worker. `?no-inline`: Vite (≥ 5.1) would otherwise inline this small file as a
    // data: URL, which a Worker cannot run under a strict CSP (nor import the glue from).
    worker: new URL('../../dist/wasm/attnlens-mt.worker.js?no-inline', import.meta.url),
  },
  'single-relaxed': {
    glue: new URL('../../dist/wasm/attnlens-relaxed.mjs', import.meta.url),
    wasm: new URL('../../dist/wasm/attnlens-relaxed.wasm', import.meta.url),
  },
  'threads-relaxed': {
    glue: new URL('../../dist/wasm/attnlens-mt-relaxed.mjs', import.meta.url),
    wasm: new URL('../../dist/wasm/attnlens-mt-relaxed.wasm', import.meta.url),
    worker: new URL('../../dist/wasm/attnlens-mt-relaxed.worker.js?no-inline', import.meta.url),
  },
};

/**
 * Which build this realm loads: "threads" when shared memory is available (Node; a cross-origin
 * isolated page or worker), else "single". In Node, ATTNLENS_WASM=single|threads overrides it.
 */
export function wasmBuild() {
  const forced = isNode ? process.env.ATTNLENS_WASM : undefined;
  if (forced === 'single' || forced === 'threads') return forced;
  if (typeof SharedArrayBuffer !== 'function' || typeof Atomics !== 'object') return 'single';
  return isNode || globalThis.crossOriginIsolated === true ? 'threads' : 'single';
}

// Two functions, as wat2wasm --enable-relaxed-simd writes them: f(a, b, c) = lane 0 of
// f32x4.relaxed_madd of the three splatted, g(a, b) = lane 0 of i16x8.relaxed_dot_i8x16_i7x16_s of
// i8x16.splat(a) and i8x16.splat(b) (2·a·b): the two relaxed instructions the relaxed build uses.
const RELAXED_PROBE = new Uint8Array([
  0, 97, 115, 109, 1, 0, 0, 0, 1, 14, 2, 96, 3, 125, 125, 125, 1, 125, 96, 2, 127, 127, 1, 127, 3, 3, 2, 0, 1, 7, 9,
  2, 1, 102, 0, 0, 1, 103, 0, 1, 10, 39, 2, 20, 0, 32, 0, 253, 19, 32, 1, 253, 19, 32, 2, 253, 19, 253, 133, 2, 253,
  31, 0, 11, 16, 0, 32, 0, 253, 15, 32, 1, 253, 15, 253, 146, 2, 253, 24, 0, 11]);
let relaxedWorks;

/**
 * True when this JavaScript engine compiles relaxed SIMD and computes it as the relaxed build needs:
 * run, not only validated (Node 20 behind --experimental-wasm-relaxed-simd validates every relaxed
 * opcode but computes i32x4.relaxed_dot_i8x16_i7x16_add_s wrong, which the build does not use,
 * bench/README.md).
 */
export function relaxedSimdWorks() {
  if (relaxedWorks === undefined) {
    try {
      const { exports } = new WebAssembly.Instance(new WebAssembly.Module(RELAXED_PROBE));
      relaxedWorks = exports.f(2, 3, 1) === 7 && exports.f(-1.5, 4, 0.25) === -5.75 &&
        exports.g(-100, 50) === -10000 && exports.g(-128, 127) === -32512 && exports.g(127, 127) === 32258;
    } catch {
      relaxedWorks = false;
    }
  }
  return relaxedWorks;
}

/** loadModel's `simd` values. */
export const SIMD_CHOICES = ['auto', 'relaxed', 'portable'];

// "relaxed" or "portable" for `wanted` ("auto": relaxed where it works); in Node ATTNLENS_SIMD overrides.
function simdVariant(wanted) {
  const forced = isNode ? process.env.ATTNLENS_SIMD : undefined;
  const w = SIMD_CHOICES.includes(forced) ? forced : wanted;
  if (w === 'portable') return 'portable';
  if (w === 'relaxed' && !relaxedSimdWorks())
    throw new Error('simd: "relaxed" was asked for, but this JavaScript engine does not run WebAssembly relaxed SIMD (Chrome 114+, Node 21+ do); use "auto" or "portable"');
  return relaxedSimdWorks() ? 'relaxed' : 'portable';
}

let modulePromise = null;  // the live instance (a new one is made after a trap)
const compiled = {};       // build → the promise of its compiled WebAssembly.Module, reused by every instance

// The build's compiled .wasm, for the glue's `instantiateWasm` hook: read from disk in Node, else
// fetched from its URL (compiled while it downloads when served as application/wasm). Asked for
// before the glue is imported, so that the download and the glue's own (85 KB of script) go side by
// side instead of one after the other. Doing it here rather than through the glue's locateFile means
// the URL is used exactly as the bundler rewrote it (hashed asset names included), and a failure says
// which URL and why. After a trap, the next instance is made from the module compiled the first
// time: no second download. A failed compile is forgotten, so that a later load tries again.
function compileBuild(build) {
  if (!compiled[build]) {
    const promise = (async () => {
      const wasmUrl = builds[build].wasm;
      if (isNode && wasmUrl.protocol === 'file:') {
        const { readFile } = await nodeImport('node:fs/promises');
        const { fileURLToPath } = await nodeImport('node:url');
        return WebAssembly.compile(await readFile(fileURLToPath(wasmUrl)));
      }
      let response;
      try {
        response = await fetch(wasmUrl.href, { credentials: 'same-origin' });
      } catch (e) {
        throw new Error(`AttnLens could not download its WebAssembly module from ${wasmUrl.href}: ${e.message}`, { cause: e });
      }
      if (!response.ok) throw new FetchError(wasmUrl.href, response.status, response.statusText);
      if (typeof WebAssembly.compileStreaming === 'function' && /^application\/wasm\b/.test(response.headers.get('content-type') ?? ''))
        return WebAssembly.compileStreaming(response);
      return WebAssembly.compile(await response.arrayBuffer());  // served with another type
    })();
    compiled[build] = promise;
    promise.catch(() => { if (compiled[build] === promise) delete compiled[build]; });
  }
  return compiled[build];
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
  // The threads build: its pthreads' Workers share the lost memory and wait for work that will never
  // come; end them (not through the glue, which would call into the lost instance).
  const P = m.PThread;
  if (P) {
    for (const w of [...P.runningWorkers, ...P.unusedWorkers]) {
      try {
        w.terminate();
      } catch {
        // already gone
      }
    }
    P.runningWorkers.length = 0;
    P.unusedWorkers.length = 0;
  }
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
  for (const name of ['memoryStats', 'requireMemory', 'simdArch', 'debugTrap', 'maxThreads', 'reserveThreads']) {
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

let realmVariant = null;  // "relaxed" | "portable": chosen by the realm's first instance, kept after a trap

/**
 * The Emscripten module (one live instance; after a trap, a fresh one of the same build). `simd`:
 * "auto" (default), "relaxed" or "portable"; the realm's first call decides, and a later call that
 * asks for the other variant is refused (a model in a Worker has its own).
 */
export function getModule({ simd = 'auto' } = {}) {
  if (!SIMD_CHOICES.includes(simd)) throw new RangeError(`simd must be "auto", "relaxed" or "portable", got ${JSON.stringify(simd)}`);
  if (realmVariant && simd !== 'auto' && simd !== realmVariant) {
    throw new Error(`simd: "${simd}" was asked for, but this thread's engine already runs the ${realmVariant} build ` +
      '(the first load of a thread decides; loadModel(…, { worker: true }) gives a model its own engine)');
  }
  if (!modulePromise) {
    const variant = realmVariant ?? simdVariant(simd);
    realmVariant = variant;
    const promise = (async () => {
      const build = wasmBuild();
      const key = variant === 'relaxed' ? `${build}-relaxed` : build;
      const files = builds[key];
      const wasm = compileBuild(key);  // (its failure is handled inside; instantiateWasm below awaits it)
      const { default: create } = await import(/* @vite-ignore */ /* webpackIgnore: true */ files.glue.href);
      let fail;
      const failed = new Promise((_, reject) => { fail = reject; });
      const options = {
        instantiateWasm(imports, receive) {
          wasm.then(async (module) => receive(await WebAssembly.instantiate(module, imports), module)).catch(fail);
          return {};
        },
      };
      if (files.worker) {
        // Each pthread runs in a Worker on attnlens-mt.worker.js, which imports the glue again: both
        // by the URLs above (as a bundler rewrote them), not by the glue's own guesses. Node's
        // worker_threads wants a path.
        const workerPath = isNode ? (await nodeImport('node:url')).fileURLToPath(files.worker) : files.worker.href;
        options.locateFile = (path) => (path.endsWith('.worker.js') ? workerPath : path);
        options.mainScriptUrlOrBlob = files.glue.href;
      }
      // In Node, Emscripten 3.1.6's glue adds process-wide 'uncaughtException' and
      // 'unhandledRejection' listeners that rethrow: any later uncaught error of the application
      // then exits with code 7 and prints the glue's minified source. A library must not do that:
      // remove what it added (it adds them synchronously, while create() runs).
      const listeners = isNode ? ['uncaughtException', 'unhandledRejection'].map((e) => [e, process.listeners(e)]) : [];
      const module = create(options);
      for (const [event, before] of listeners)
        for (const fn of process.listeners(event)) if (!before.includes(fn)) process.off(event, fn);
      const m = guardCalls(await Promise.race([module, failed]));
      m[STATE].promise = promise;
      m.attnlensBuild = build;
      m.attnlensRelaxed = variant === 'relaxed';
      return m;
    })();
    modulePromise = promise;
    promise.catch(() => { if (modulePromise === promise) modulePromise = null; });
  }
  return modulePromise;
}

/**
 * engineInfo() (index.mjs, and worker.mjs for a model in a Worker): the SIMD set, the build and its
 * threads, memory. It first waits for any threads still starting (in a browser a model does not,
 * Model.fromSet), so that the count and the memory, which each new thread adds to, are settled.
 */
export async function engineInfo() {
  const m = await getModule();
  await growing;
  return { simd: m.simdArch(), build: m.attnlensBuild, relaxedSimd: m.attnlensRelaxed, threads: m.reserveThreads(1), ...m.memoryStats() };
}

// ---- threads ------------------------------------------------------------------------------------

const MAX_THREADS = 16;
const DEFAULT_CAP = 4;  // decode is bound by memory bandwidth, which a few cores already fill

/**
 * The default number of threads: the physical cores (in Node on Linux, from sysfs; in a browser,
 * half the logical cores once there are 4 or more, as they usually come in SMT pairs), at most 4.
 */
export async function defaultThreads() {
  let cores = 1;
  if (isNode) {
    const os = await nodeImport('node:os');
    cores = typeof os.availableParallelism === 'function' ? os.availableParallelism() : os.cpus().length;
    try {
      const { readFileSync } = await nodeImport('node:fs');
      const siblings = new Set();
      for (let i = 0; i < os.cpus().length; i++)
        siblings.add(readFileSync(`/sys/devices/system/cpu/cpu${i}/topology/thread_siblings_list`, 'utf8').trim());
      if (siblings.size > 0) cores = Math.min(cores, siblings.size);
    } catch {
      // not Linux: the logical count
    }
  } else {
    const logical = globalThis.navigator?.hardwareConcurrency ?? 1;
    cores = logical >= 4 ? Math.floor(logical / 2) : logical;
  }
  return Math.max(1, Math.min(DEFAULT_CAP, cores));
}

/** The threads reserveThreads(m, n) gives (unless a Worker fails to start): 1 with the single-thread build. */
export function threadsFor(m, n) {
  return m.attnlensBuild === 'threads' && n > 1 ? Math.min(n, MAX_THREADS, m.maxThreads()) : 1;
}

let growing = null;  // the reservation in progress, if any: the next one waits for it

/**
 * Makes `n` threads available to the engine (the calling thread and n − 1 pthreads) and resolves
 * with the number it got: 1 with the single-thread build. The pthreads' Workers are loaded here,
 * before the engine starts threads on them: a Worker cannot finish loading while the engine keeps
 * this thread busy. They are created before this returns (unless another reservation is under
 * way). In Node they load meanwhile, so a caller may keep this thread busy (loading a model) and find
 * them ready after; in a browser a Worker only starts once this thread is free (Model.fromSet does
 * not wait for them there). In Node they are unref()ed, so that they never keep a process alive.
 */
export function reserveThreads(m, n) {
  const want = threadsFor(m, n);
  if (want === 1) return Promise.resolve(1);
  const run = async () => {
    const P = m.PThread;
    const missing = want - m.reserveThreads(1) - P.unusedWorkers.length;  // reserveThreads(1): the pool's size now
    const loads = [];
    for (let i = 0; i < missing; i++) {
      P.allocateUnusedWorker();
      const w = P.unusedWorkers[P.unusedWorkers.length - 1];
      loads.push(new Promise((resolve, reject) => {
        P.loadWasmModuleToWorker(w, resolve);
        if (isNode) w.once('error', reject);
        else w.addEventListener('error', (e) => reject(new Error(`AttnLens could not start a thread from ${builds.threads.worker.href}: ${e.message ?? 'error'}`)));
      }));
    }
    await Promise.all(loads);
    if (isNode) for (const w of [...P.unusedWorkers, ...P.runningWorkers]) w.unref?.();
    return m.reserveThreads(want);
  };
  const step = growing ? growing.then(run) : run();  // an async function runs up to its first await at once
  const mine = step.catch(() => {}).then(() => { if (growing === mine) growing = null; });
  growing = mine;
  return step;
}

