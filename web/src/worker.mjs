// The AttnLens worker: runs models off the main thread. The same file is a browser module worker
// (`new Worker(new URL('./worker.mjs', import.meta.url), { type: 'module' })`) and a Node
// worker_threads worker (`new Worker(new URL('./worker.mjs', import.meta.url))`); worker-client.mjs
// talks to it. One worker can hold several models.
//
// Protocol (all messages are plain objects; ArrayBuffers travel in transfer lists):
//   → { id, op: 'load', source, options }         ← { id, type: 'progress', value } …, then a reply
//   → { id, op: 'call', model, method, args }      (tokenize, encodePrompt, encodeChat, applyChatTemplate, detokenize,
//                                                     pieces, forward, embed, fillMask, memory, patch, patchSweep, detectHeads)
//   → { id, op: 'stream', model, prompt, options, window, stopFlag? } ← { id, type: 'steps', value: [step, …] } …, then a reply
//        (stopFlag: an Int32Array on a SharedArrayBuffer the client sets to 1 on abort; see model.mjs STOP_FLAG;
//        steps come in batches, at most `window` of them not yet pulled)
//   → { id, op: 'pull', n }                         the client took n steps: n more may be sent
//   → { id, op: 'abort' }                           aborts that request (load or stream)
//   → { id, op: 'dispose', model } / { id, op: 'engineInfo' } / { id, op: 'hello' } (is this our worker?)
//   replies: { id, type: 'result', value } or { id, type: 'error', error: { name, message, status, … } }
import { isNode, nodeImport } from './env.mjs';
import { STOP_FLAG, loadModelHere } from './model.mjs';
import { engineInfo } from './wasm.mjs';
// What model.mjs imports, named here too: the worker learns the whole graph in one round (index.mjs).
import '../../node_modules/@huggingface/jinja/dist/index.js';
import './analysis.mjs';
import './attentions.mjs';
import './chat.mjs';
import './errors.mjs';
import './pieces.mjs';
import './sources.mjs';
import './validate.mjs';

let post;  // (message, transfer) => void
const models = new Map();     // model id → Model
const requests = new Map();   // request id → { controller, credit, wake }
let nextModel = 1;
const BATCH_MS = 16;          // a stream's steps made within this long of the last message go in the next one

function serializeError(e) {
  if (!(e instanceof Error) && !(typeof DOMException !== 'undefined' && e instanceof DOMException))
    return { name: 'Error', message: String(e) };
  const out = { name: e.name, message: e.message, stack: e.stack };
  for (const key of ['status', 'url', 'code']) if (e[key] !== undefined && typeof e[key] !== 'function') out[key] = e[key];
  return out;
}

// The ArrayBuffers of a forward() result or a streamed step, to transfer rather than copy.
function buffersOf(value) {
  const list = [];
  const add = (a) => {
    if (a && ArrayBuffer.isView(a) && a.buffer instanceof ArrayBuffer && !list.includes(a.buffer)) list.push(a.buffer);
  };
  if (value && typeof value === 'object') {
    for (const v of Object.values(value)) add(v);  // logits, hidden, hiddenStates, logitLensLogits, rollout
    for (const e of Array.isArray(value.embeddings) ? value.embeddings : []) add(e);
    const atts = Array.isArray(value.attentions) ? value.attentions : [value.attentions];  // embed(): one per input
    for (const a of atts) for (const r of a?.records ?? []) add(r.data);
  }
  return list;
}

// Attentions objects travel as their records (plain objects); the client rebuilds the class.
function plain(value) {
  if (value && typeof value === 'object' && Array.isArray(value.attentions))  // embed(): one per input
    return { ...value, attentions: value.attentions.map((a) => ({ records: a.records })) };
  if (value && typeof value === 'object' && value.attentions?.records) return { ...value, attentions: { records: value.attentions.records } };
  return value;
}

function model(id) {
  const m = models.get(id);
  if (!m) throw new Error('this model has been disposed');
  return m;
}

const handlers = {
  async load({ id, source, options }) {
    const controller = new AbortController();
    requests.set(id, { controller });
    try {
      const m = await loadModelHere(source, {
        ...options,
        signal: controller.signal,
        onProgress: options.progress ? (p) => post({ id, type: 'progress', value: p }) : undefined,
      });
      const key = nextModel++;
      models.set(key, m);
      return { model: key, info: m.info, promptFormat: m.promptFormat };
    } finally {
      requests.delete(id);
    }
  },

  async call({ model: key, method, args }) {
    const m = model(key);
    if (!['tokenize', 'encodePrompt', 'encodeChat', 'applyChatTemplate', 'detokenize', 'pieces', 'forward', 'embed', 'fillMask',
      'memory', 'patch', 'patchSweep', 'detectHeads'].includes(method))
      throw new TypeError(`unknown method ${method}`);
    return m[method](...args);
  },

  async stream({ id, model: key, prompt, options, window = 4, stopFlag }) {
    const m = model(key);
    const controller = new AbortController();
    let end;
    const request = { controller, credit: window, wake: null, model: key, finished: new Promise((r) => { end = r; }) };
    requests.set(id, request);
    // Steps made faster than a frame travel together: one message (and one task on the receiving
    // thread) per BATCH_MS instead of one per token. The first step, and any step after a pause of
    // BATCH_MS or more, goes at once; the last one flushes the batch. A batch also goes once it holds
    // half the window: the consumer's pull for it can then come back while this thread makes the
    // other half, instead of this thread stopping at every window's end for a round trip (kjv-gpt2 in
    // a Node worker: 5-8% more tokens per second).
    let batch = [];
    let transfer = [];
    let sentAt = -Infinity;
    const half = Math.max(1, Math.floor(window / 2));
    const flush = () => {
      if (!batch.length) return;
      post({ id, type: 'steps', value: batch }, transfer);
      batch = [];
      transfer = [];
      sentAt = performance.now();
    };
    try {
      // stopFlag (shared memory, when the client has it): set by the client's abort(), read by the
      // engine between layers, so a running prefill stops without waiting for this thread's turn.
      const stream = m.stream(prompt, { ...options, signal: controller.signal, ...(stopFlag ? { [STOP_FLAG]: stopFlag } : {}) });
      for await (const step of stream) {
        batch.push(plain(step));
        for (const b of buffersOf(step)) transfer.push(b);
        request.credit--;
        if (request.credit <= 0 || batch.length >= half || step.result || performance.now() - sentAt >= BATCH_MS) flush();
        // Flow control: stay at most `window` steps ahead of the consumer.
        while (request.credit <= 0 && !controller.signal.aborted) await new Promise((r) => { request.wake = r; });
      }
      flush();
      return stream.result;
    } finally {
      requests.delete(id);
      end();
    }
  },

  pull({ id, n = 1 }) {
    const r = requests.get(id);
    if (r && 'credit' in r) {
      r.credit += n;
      r.wake?.();
      r.wake = null;
    }
    return undefined;
  },

  abort({ id }) {
    const r = requests.get(id);
    if (r) {
      r.controller.abort();
      r.wake?.();
    }
    return undefined;
  },

  async dispose({ model: key }) {
    const m = models.get(key);
    models.delete(key);
    // A stream of this model waiting for the consumer would never finish: let it see the end.
    await m?.dispose();
    // Its streams end at their next token (with finishReason "aborted"): let them send their
    // results before this reply, after which the client may terminate the worker.
    const streams = [...requests.values()].filter((r) => r.model === key);
    for (const r of streams) r.wake?.();
    await Promise.all(streams.map((r) => r.finished));
    return undefined;
  },

  hello() {
    return { attnlens: true };
  },

  engineInfo,
};

const silent = new Set(['pull', 'abort']);  // no reply

async function onMessage(message) {
  const { id, op } = message ?? {};
  const handler = handlers[op];
  if (!handler) {
    post({ id, type: 'error', error: { name: 'Error', message: `attnlens worker: unknown request ${JSON.stringify(op)}` } });
    return;
  }
  if (silent.has(op)) {
    handler(message);
    return;
  }
  try {
    const value = await handler(message);
    post({ id, type: 'result', value: plain(value) }, buffersOf(value));
  } catch (e) {
    post({ id, type: 'error', error: serializeError(e) });
  }
}

// No top-level await: bundlers may build the worker as a classic script (Vite's default).
if (isNode) {
  // Messages that arrive before the listener is attached wait in the port.
  nodeImport('node:worker_threads').then(({ parentPort }) => {
    if (!parentPort) throw new Error('attnlens: worker.mjs is meant to run in a worker (node:worker_threads or a Web Worker)');
    post = (message, transfer) => parentPort.postMessage(message, transfer);
    parentPort.on('message', onMessage);
  });
} else {
  post = (message, transfer) => self.postMessage(message, transfer ?? []);
  self.addEventListener('message', (event) => onMessage(event.data));
}
