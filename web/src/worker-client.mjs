// Worker mode: loadModel(source, { worker: true }) runs the model in a Web Worker (in Node, a
// worker_threads Worker) and returns a proxy with the same methods as Model, all async, so the
// calling thread never runs the model. ArrayBuffers are transferred, not copied: the buffers of a
// source given as ArrayBuffers / typed arrays (they are detached here afterwards: pass
// `buffer.slice(0)` to keep a copy), and the logits and attention arrays coming back.
//
// Bundlers: the worker is created with `new Worker(new URL('./worker.mjs', import.meta.url),
// { type: 'module' })`, the form Vite, webpack 5 and Parcel recognise and bundle. A bundler that
// does not can be handed a Worker instead: `loadModel(src, { worker: new Worker(url) })` where url
// serves attnlens/worker (web/src/worker.mjs); that worker is then yours to terminate.
import { Attentions } from './attentions.mjs';
import { isNode, nodeImport } from './env.mjs';
import { EngineLostError, FetchError, abortError, throwIfAborted } from './errors.mjs';
import { checkSource } from './sources.mjs';
import * as check from './validate.mjs';

const WORKER_FILE = './worker.mjs';  // Node path: a variable, so bundlers do not copy it as an asset
// Steps the worker may run ahead of a stream's consumer: it does not wait for a round trip to the
// consumer's thread after every token (with 1 it did, and the page's redraws stalled the engine);
// abort() drops the steps not handed out, so the consumer sees what an in-thread stream would. With 8,
// a small model's engine in the demo still waited on the page's frames (kjv-gpt2: 54% of Node's
// rate; 32: 70%; bench/README.md, streaming).
const STREAM_WINDOW = 32;
const DISPOSE_TIMEOUT_MS = 5000;
const HELLO_TIMEOUT_MS = 30000;      // a Worker passed in must answer within this (its script loading included)

let nextId = 1;  // request ids, unique in this realm (several models may share a worker)

async function createWorker() {
  if (isNode) {
    const { Worker: NodeWorker } = await nodeImport('node:worker_threads');
    // The worker inherits node's flags; --input-type (node --input-type=module -e …) breaks a file worker.
    const execArgv = process.execArgv.filter((a) => !a.startsWith('--input-type'));
    return new NodeWorker(new URL(WORKER_FILE, import.meta.url), { execArgv });
  }
  if (typeof Worker === 'undefined') throw new Error('loadModel: worker: true needs Web Workers, which this environment lacks');
  return new Worker(new URL('./worker.mjs', import.meta.url), { type: 'module' });
}

// Shared memory for abort(): the worker's engine polls the flag between layers (model.mjs STOP_FLAG),
// so a long prefill stops at once instead of when the worker next reads its messages. Available in
// Node and in cross-origin-isolated pages; elsewhere the worker still stops between prefill chunks.
function newStopFlag() {
  const shared = typeof SharedArrayBuffer === 'function' && (isNode || globalThis.crossOriginIsolated === true);
  return shared ? new Int32Array(new SharedArrayBuffer(4)) : null;
}

function disposedError() {
  return new Error('this model has been disposed');
}

function reviveError(e) {
  let err;
  if (e.name === 'FetchError') {
    err = new FetchError(e.url, e.status, '');
    err.message = e.message;
  } else if (e.name === 'EngineLostError') {
    err = new EngineLostError(e.message);
  } else if (e.name === 'AbortError' && typeof DOMException !== 'undefined') {
    err = new DOMException(e.message, 'AbortError');
  } else {
    const Type = { TypeError, RangeError, SyntaxError, ReferenceError }[e.name] ?? Error;
    err = new Type(e.message);
    if (err.name !== e.name) err.name = e.name;
  }
  for (const key of ['status', 'url', 'code']) if (e[key] !== undefined && !(key in err && err[key] === e[key])) err[key] = e[key];
  if (e.stack) err.workerStack = e.stack;
  return err;
}

function reviveValue(v) {
  if (v && typeof v === 'object' && Array.isArray(v.attentions))
    return { ...v, attentions: v.attentions.map((a) => new Attentions(a.records)) };
  if (v && typeof v === 'object' && v.attentions?.records) return { ...v, attentions: new Attentions(v.attentions.records) };
  return v;
}

// One worker's messages, for one model: requests with replies, events in between.
class Channel {
  constructor(worker, owned) {
    this.worker = worker;
    this.owned = owned;
    this.pending = new Map();  // id → { resolve, reject, onEvent }
    this.closed = null;        // the Error that closed it
    this.node = typeof worker.on === 'function' && typeof worker.addEventListener !== 'function';
    this.onMessage = (data) => {
      const p = this.pending.get(data?.id);
      if (!p) return;
      if (data.type === 'result' || data.type === 'error') {
        this.pending.delete(data.id);
        this.updateRef();
        if (data.type === 'result') p.resolve(reviveValue(data.value));
        else p.reject(reviveError(data.error));
      } else {
        p.onEvent?.(data);
      }
    };
    this.onError = (e) => this.close(new Error(`attnlens worker failed: ${e?.message || 'it could not be started (is worker.mjs served as JavaScript?)'}`, { cause: e }));
    this.onExit = (code) => this.close(new Error(`attnlens worker exited (code ${code})`));
    if (this.node) {
      this.listeners = [['message', this.onMessage], ['error', this.onError], ['exit', this.onExit], ['messageerror', this.onError]];
      for (const [type, fn] of this.listeners) worker.on(type, fn);
    } else {
      const onMessage = (event) => this.onMessage(event.data);
      const onError = (event) => {
        event.preventDefault?.();
        this.onError(event);
      };
      this.listeners = [['message', onMessage], ['error', onError], ['messageerror', onError]];
      for (const [type, fn] of this.listeners) worker.addEventListener(type, fn);
    }
    this.updateRef();
  }

  // Node: an idle worker does not keep the process alive (a forgotten dispose() never hangs it).
  updateRef() {
    if (!this.node || !this.owned || this.closed) return;
    if (this.pending.size) this.worker.ref?.();
    else this.worker.unref?.();
  }

  post(message, transfer = []) {
    if (this.closed) throw this.closed;
    try {
      this.worker.postMessage(message, transfer);
    } catch (e) {
      if (!transfer.length) throw e;
      this.worker.postMessage(message);  // an untransferable buffer (e.g. Node's Buffer pool): copy it
    }
  }

  /** Sends a request; resolves with its reply. onEvent(message) sees its progress/step events. */
  request(message, { transfer, onEvent } = {}) {
    const id = nextId++;
    const promise = new Promise((resolve, reject) => {
      if (this.closed) return reject(this.closed);
      this.pending.set(id, { resolve, reject, onEvent });
      try {
        this.post({ ...message, id }, transfer);
      } catch (e) {
        this.pending.delete(id);
        reject(e);
      }
    });
    this.updateRef();
    return { id, promise };
  }

  /** Rejects whatever is pending, detaches, and terminates the worker if it is ours. */
  close(error) {
    if (this.closed) return;
    this.closed = error;
    for (const p of this.pending.values()) p.reject(error);
    this.pending.clear();
    for (const [type, fn] of this.listeners) {
      if (this.node) this.worker.off(type, fn);
      else this.worker.removeEventListener(type, fn);
    }
    if (this.owned) this.worker.terminate();
  }
}

// A source as it travels to the worker: relative URLs made absolute against this page (the worker
// would resolve them against its own URL), URL objects as strings, buffers transferred.
function prepareSource(source) {
  const transfer = [];
  const buffer = (data) => {
    if (data instanceof ArrayBuffer) {
      if (!transfer.includes(data)) transfer.push(data);
      return data;
    }
    // A view of part of a buffer (or of a shared one): send a copy of just that part.
    const whole = data.buffer instanceof ArrayBuffer && data.byteOffset === 0 && data.byteLength === data.buffer.byteLength;
    const view = whole ? new Uint8Array(data.buffer) : new Uint8Array(data.buffer, data.byteOffset, data.byteLength).slice();
    if (!transfer.includes(view.buffer)) transfer.push(view.buffer);
    return view;
  };
  const one = (item) => {
    if (item instanceof URL) return item.href;
    if (typeof item === 'string' && !isNode && !/^[a-z][a-z0-9+.-]*:/i.test(item)) {
      const base = typeof document !== 'undefined' ? document.baseURI : globalThis.location?.href;
      return base ? new URL(item, base).href : item;
    }
    if (typeof item === 'string') return item;
    if (item instanceof ArrayBuffer || ArrayBuffer.isView(item)) return buffer(item);
    // A File's name does not survive structured cloning everywhere (Node turns it into a Blob).
    if (typeof Blob !== 'undefined' && item instanceof Blob) return typeof item.name === 'string' ? { name: item.name, data: item } : item;
    const piece = (d) => (typeof Blob !== 'undefined' && d instanceof Blob ? d : buffer(d));
    return { name: item.name, data: Array.isArray(item.data) ? item.data.map(piece) : piece(item.data) };
  };
  return { source: Array.isArray(source) ? source.map(one) : one(source), transfer };
}

// The options a generation sends to the worker (functions and signals stay here).
function generationOptions(o) {
  const out = {};
  for (const key of ['maxNewTokens', 'temperature', 'topK', 'topP', 'repetitionPenalty', 'seed', 'stop', 'attentions', 'chat',
    'numBeams', 'lengthPenalty', 'earlyStopping', 'noRepeatNgramSize', 'minNewTokens', 'badWordsIds', 'forcedBosTokenId',
    'forcedEosTokenId', 'predictions', 'ablate'])
    if (o[key] !== undefined) out[key] = o[key];
  return out;
}

const FORWARD_OPTIONS = ['attentions', 'tokenTypes', 'topK', 'logitLens', 'hiddenStates', 'heads', 'rollout', 'ablate'];

// Options as they travel to the worker: without functions and signals.
function plainOptions(o) {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => typeof v !== 'function' && !(typeof AbortSignal !== 'undefined' && v instanceof AbortSignal)));
}

// A stream's result as the consumer saw it: the worker runs up to `window` steps ahead, and after an
// abort the steps it had already sent are dropped (the consumer never sees them), so their tokens
// are cut from the result too: tokens, pieces and text end with the last step handed out, and the
// finish reason is "aborted" — what the same abort gives in the calling thread (model.mjs #steps).
// `text` is the handed-out steps' text joined. Timings stay the engine's own, dropped steps included.
function trimResult(result, dropped, text) {
  if (!dropped || !result || !Array.isArray(result.tokens)) return result;
  const keep = Math.max(result.promptTokens, result.tokens.length - dropped);
  return { ...result, tokens: result.tokens.slice(0, keep), pieces: result.pieces?.slice(0, keep), text, finishReason: 'aborted' };
}

/** The proxy loadModel(…, { worker }) returns: Model's API, every method async. */
export class WorkerModel {
  #channel;
  #key;
  #disposed = false;
  #stopFlags = new Set();  // of the streams running: dispose() sets them

  /** @internal */
  constructor(channel, reply) {
    this.#channel = channel;
    this.#key = reply.model;
    /** The model card (as Model.info). */
    this.info = Object.freeze(reply.info);
    this.promptFormat = Object.freeze(reply.promptFormat);
  }

  /** The Worker (or worker_threads Worker) running this model. */
  get worker() {
    return this.#channel.worker;
  }

  get disposed() {
    return this.#disposed;
  }

  #alive() {
    if (this.#disposed) throw disposedError();
  }

  async #call(method, args) {
    this.#alive();
    return this.#channel.request({ op: 'call', model: this.#key, method, args }).promise;
  }

  async tokenize(text, options = {}) {
    this.#alive();
    check.string(text, 'text');
    check.options(options, 'tokenize');
    const { target } = check.textSide(options, 'tokenize', this.info);
    return this.#call('tokenize', [text, { addSpecialTokens: options.addSpecialTokens ?? true, target }]);
  }

  async encodePrompt(text) {
    this.#alive();
    check.string(text, 'text');
    return this.#call('encodePrompt', [text]);
  }

  /** A conversation → its prompt text (as Model.applyChatTemplate; rendered in the worker). */
  async applyChatTemplate(messages, options = {}) {
    this.#alive();
    check.messages(messages);
    check.chatOptions(options, 'applyChatTemplate');
    return this.#call('applyChatTemplate', [messages, options]);
  }

  /** A conversation → { text, ids, pieces } (as Model.encodeChat). */
  async encodeChat(messages, options = {}) {
    this.#alive();
    check.messages(messages);
    check.chatOptions(options, 'encodeChat');
    return this.#call('encodeChat', [messages, options]);
  }

  async detokenize(ids, options = {}) {
    this.#alive();
    const { target, vocab } = check.textSide(check.options(options, 'detokenize'), 'detokenize', this.info);
    return this.#call('detokenize', [check.tokenIds(ids, 'ids', vocab, { allowEmpty: true }), { target }]);
  }

  async pieces(ids, options = {}) {
    this.#alive();
    const { target, vocab } = check.textSide(check.options(options, 'pieces'), 'pieces', this.info);
    return this.#call('pieces', [check.tokenIds(ids, 'ids', vocab, { allowEmpty: true }), { target }]);
  }

  async forward(input, options = {}) {
    this.#alive();
    check.options(options, 'forward');
    check.attentionOptionFor(options.attentions, 'attentions', this.info);
    check.analysisOptions(options, this.info);
    const o = {};
    for (const key of FORWARD_OPTIONS) if (options[key] !== undefined) o[key] = options[key];
    return this.#call('forward', [input, o]);
  }

  /** Sentence embeddings (as Model.embed()). */
  async embed(inputs, options = {}) {
    this.#alive();
    check.options(options, 'embed');
    if (options.attentions !== undefined) check.attentionOptionFor(options.attentions, 'attentions', this.info);
    return this.#call('embed', [inputs, options]);
  }

  /** Masked-token prediction (as Model.fillMask()). */
  async fillMask(input, options = {}) {
    this.#alive();
    check.options(options, 'fillMask');
    if (options.attentions !== undefined) check.attentionOptionFor(options.attentions, 'attentions', this.info);
    return this.#call('fillMask', [typeof input === 'string' ? input : Array.from(input), options]);
  }

  /** Activation patching at one site (as Model.patch). */
  async patch(options = {}) {
    this.#alive();
    check.patchOptions(options, this.info, 'patch');
    check.patchSite(options.site, this.info);
    check.attentionOptionFor(options.attentions, 'attentions', this.info);
    return this.#call('patch', [plainOptions(options)]);
  }

  /** The patching map over every head or every (layer, position) (as Model.patchSweep). */
  async patchSweep(options = {}) {
    this.#alive();
    check.patchOptions(options, this.info, 'patchSweep');
    return this.#call('patchSweep', [plainOptions(options)]);
  }

  /** The head detectors on the repeated random-token probe (as Model.detectHeads). */
  async detectHeads(options = {}) {
    this.#alive();
    check.options(options, 'detectHeads');
    check.ablations(options.ablate, 'ablate', this.info);
    return this.#call('detectHeads', [plainOptions(options)]);
  }

  /** Memory now (as Model.memory(), here a Promise). */
  async memory() {
    return this.#call('memory', []);
  }

  /** Engine facts of the worker's wasm instance (as engineInfo()). */
  async engineInfo() {
    this.#alive();
    return this.#channel.request({ op: 'engineInfo' }).promise;
  }

  #checkGeneration(prompt, options) {
    this.#alive();
    check.options(options, 'generate');
    check.generateOptions(prompt, options, this.promptFormat.generation ?? {});
    check.attentionOptionFor(options.attentions, 'attentions', this.info);
    check.topK(options.predictions, 'predictions');
    check.ablations(options.ablate, 'ablate', this.info);
    if (typeof prompt !== 'string' && !check.isMessages(prompt)) check.tokenIds(prompt, 'prompt', this.info.sourceVocabSize);
  }

  async generate(prompt, options = {}) {
    this.#checkGeneration(prompt, options);
    if (options.onToken !== undefined && typeof options.onToken !== 'function') throw new TypeError('onToken must be a function');
    // With onToken, the worker runs at most STREAM_WINDOW steps ahead of the callback (as stream()
    // does), and an abort from onToken drops those steps; without it, it runs freely.
    const stream = this.#stream(prompt, { ...options, attentions: false }, options.onToken ? STREAM_WINDOW : Infinity);
    for await (const step of stream) options.onToken?.(step);
    return stream.result;
  }

  stream(prompt, options = {}) {
    this.#checkGeneration(prompt, options);
    return this.#stream(prompt, options, STREAM_WINDOW);
  }

  #stream(prompt, options, window) {
    const channel = this.#channel;
    const key = this.#key;
    const model = this;
    const signal = options.signal;
    const sent = { prompt: typeof prompt === 'string' ? prompt : Array.from(prompt), options: generationOptions(options) };
    const stream = {
      result: null,
      async *[Symbol.asyncIterator]() {
        model.#alive();
        throwIfAborted(signal);
        const steps = [];     // sent by the worker, not yet handed to the consumer
        let received = 0;     // steps the worker sent
        let delivered = 0;    // steps handed to the consumer
        let text = '';        // their text
        let stopped = false;  // abort(): no step is handed out after it
        let notify = null;
        let settled = null;
        const wake = () => {
          notify?.();
          notify = null;
        };
        const stopFlag = newStopFlag();
        const { id, promise } = channel.request(
          { op: 'stream', model: key, prompt: sent.prompt, options: sent.options, window: window === Infinity ? 1e9 : window, ...(stopFlag ? { stopFlag } : {}) },
          {
            onEvent: (m) => {
              if (m.type !== 'steps') return;
              received += m.value.length;
              if (stopped) return;
              for (const step of m.value) steps.push(step);
              wake();
            },
          },
        );
        if (stopFlag) model.#stopFlags.add(stopFlag);
        promise.then((value) => { settled = { value }; wake(); }, (error) => { settled = { error }; wake(); });
        const abort = () => {
          stopped = true;
          steps.length = 0;  // what the worker ran ahead stays there
          if (stopFlag) Atomics.store(stopFlag, 0, 1);
          try { channel.post({ op: 'abort', id }); } catch {}
        };
        signal?.addEventListener('abort', abort, { once: true });
        let complete = false;
        let unacked = 0;  // steps taken and not yet reported to the worker (one 'pull' per batch, not per step)
        try {
          for (;;) {
            if (steps.length) {
              const step = steps.shift();
              if (window !== Infinity && (++unacked >= window / 2 || !steps.length)) {
                try { channel.post({ op: 'pull', id, n: unacked }); } catch {}
                unacked = 0;
              }
              delivered++;
              text += step.text ?? '';
              yield reviveValue(step);
              continue;
            }
            if (settled) {
              if (settled.error) throw settled.error;
              stream.result = trimResult(settled.value, received - delivered, text);
              complete = true;
              return;
            }
            await new Promise((r) => { notify = r; });
          }
        } finally {
          signal?.removeEventListener('abort', abort);
          if (stopFlag) model.#stopFlags.delete(stopFlag);
          if (!complete && !settled) {
            abort();  // the consumer left the loop: stop the worker's generation
            await promise.catch(() => {});
          }
        }
      },
    };
    return stream;
  }

  /**
   * Frees the model's memory in the worker and terminates the worker (unless it is one you passed
   * in). A generation in progress ends with finishReason "aborted"; later calls throw.
   */
  async dispose() {
    if (this.#disposed) return;
    this.#disposed = true;
    for (const flag of this.#stopFlags) Atomics.store(flag, 0, 1);  // a running pass stops now
    const channel = this.#channel;
    if (!channel.closed) {
      const { promise } = channel.request({ op: 'dispose', model: this.#key });
      let timer;
      await Promise.race([promise.catch(() => {}), new Promise((r) => { timer = setTimeout(r, DISPOSE_TIMEOUT_MS); })]);
      clearTimeout(timer);
    }
    channel.close(disposedError());
  }
}

/** loadModel(source, { worker }) — options as loadModel's; `worker`: true or a Worker of attnlens/worker. */
export async function loadModelInWorker(source, options = {}) {
  checkSource(source);
  const { signal, onProgress } = options;
  throwIfAborted(signal);
  const owned = !(options.worker && typeof options.worker === 'object');
  const worker = owned ? await createWorker() : options.worker;
  const channel = new Channel(worker, owned);
  let abort = null;
  try {
    if (!owned) {
      // A Worker passed in might run something else, which would never answer: ask first.
      const { promise } = channel.request({ op: 'hello' });
      let timer;
      const late = new Promise((_, reject) => {
        timer = setTimeout(() => reject(new Error(`loadModel: the worker passed as options.worker did not answer within ${HELLO_TIMEOUT_MS / 1000} s; it must run attnlens/worker (web/src/worker.mjs)`)), HELLO_TIMEOUT_MS);
      });
      try {
        const hello = await Promise.race([promise, late]);
        if (!hello?.attnlens) throw new Error('loadModel: the worker passed as options.worker does not run attnlens/worker');
      } finally {
        clearTimeout(timer);
      }
    }
    const prepared = prepareSource(source);
    const sent = { progress: typeof onProgress === 'function' };
    for (const key of ['cache', 'quantize', 'contextLength', 'kvCache', 'threads', 'simd']) if (options[key] !== undefined) sent[key] = options[key];
    const { id, promise } = channel.request(
      { op: 'load', source: prepared.source, options: sent },
      { transfer: prepared.transfer, onEvent: (m) => { if (m.type === 'progress' && !signal?.aborted) onProgress?.(m.value); } },  // none after an abort
    );
    abort = () => { try { channel.post({ op: 'abort', id }); } catch {} };
    signal?.addEventListener('abort', abort, { once: true });
    const reply = await promise;
    return new WorkerModel(channel, reply);
  } catch (e) {
    channel.close(e);
    throwIfAborted(signal);
    throw e;
  } finally {
    if (abort) signal?.removeEventListener('abort', abort);
  }
}
