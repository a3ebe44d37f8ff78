// A model running in this thread on the AttnLens WebAssembly engine. (worker.mjs runs the same class
// inside a Web Worker / worker_threads and proxies it.)
import { expandTopK, headScores, idsOf, patchMap, selectRecords } from './analysis.mjs';
import { Attentions } from './attentions.mjs';
import { describeModel, renderChat } from './chat.mjs';
import { isNode } from './env.mjs';
import { throwIfAborted } from './errors.mjs';
import { PieceLabels, idArray } from './pieces.mjs';
import { holdingSinks, openSource, readEntries } from './sources.mjs';
import { defaultThreads, getModule, instanceLost, onEngineLost, reserveThreads, threadsFor, trackOwner } from './wasm.mjs';

/**
 * @internal A stream() option only the worker passes: an Int32Array on a SharedArrayBuffer that the
 * client thread sets to 1 on abort(); the engine reads it between layers, so a running pass stops.
 */
export const STOP_FLAG = Symbol('attnlens.stopFlag');
import * as check from './validate.mjs';

// Yields to the event loop without the ≥ 4 ms clamp of nested setTimeout(0), once at least
// YIELD_EVERY_MS have passed since the last time: abort signals, a worker's messages (abort, pull)
// and UI events get through within a few ms, and a small model's steps (kjv-gpt2: ~1 ms) do not each
// pay a turn of the loop (in a browser, a MessageChannel round trip through the browser's message
// pipes). Otherwise a resolved promise: the consumer's microtasks still run between two steps.
const YIELD_EVERY_MS = 4;
const turnOfEventLoop = (() => {
  if (typeof setImmediate === 'function') return () => new Promise((r) => setImmediate(r));
  if (typeof MessageChannel === 'function') {
    const channel = new MessageChannel();
    const queue = [];
    channel.port1.onmessage = () => queue.shift()?.();
    return () => new Promise((r) => { queue.push(r); channel.port2.postMessage(0); });
  }
  return () => new Promise((r) => setTimeout(r, 0));
})();
// Between two prefill chunks it always yields (`always`): a chunk is what an abort waits for at most,
// on any machine, and a chunk's turn of the loop is small beside the chunk (64 tokens).
let lastYield = -Infinity;
async function yieldToEventLoop({ always = false } = {}) {
  if (!always && performance.now() - lastYield < YIELD_EVERY_MS) return;
  await turnOfEventLoop();
  lastYield = performance.now();
}

// Tokens per prefill step of a generation: a long prompt is fed in chunks with a turn of the event
// loop between them, so that an AbortSignal (or a worker's abort message) is seen during the prefill.
// (In a worker with shared memory, abort() also stops the pass that runs, between two layers.)
export const PREFILL_CHUNK = 64;

// What a model's downloads may hold in JS memory while the engine starts (loadModelHere).
const EARLY_BYTES = 64 << 20;

// The attention of a prompt prefilled in chunks, as one pass over it records it: per (kind, layer),
// the chunks' query rows stacked ([head][query][key]), each row zero past the keys its chunk saw.
function stackChunks(chunks) {
  if (chunks.length === 1) return chunks[0];
  const last = chunks[chunks.length - 1];
  return new Attentions(last.records.map((r) => {
    const parts = chunks.map((c) => c.records.find((x) => x.kind === r.kind && x.layer === r.layer)).filter(Boolean);
    if (r.kind !== 'self' || parts.length === 1) return r;
    const queries = parts.reduce((a, p) => a + p.queries, 0);
    const data = new Float32Array(r.heads * queries * r.keys);
    for (let h = 0; h < r.heads; h++) {
      let q0 = 0;
      for (const p of parts) {
        for (let q = 0; q < p.queries; q++) {
          const from = (h * p.queries + q) * p.keys;
          data.set(p.data.subarray(from, from + p.keys), (h * queries + q0 + q) * r.keys);
        }
        q0 += p.queries;
      }
    }
    return { ...r, queries, queryStart: parts[0].queryStart, data };
  }));
}

// The recorded attention, copied out of wasm memory. Views into that memory are detached when the
// heap grows, and building the record list allocates a little: should a view come back detached
// (length 0), the list is read again (no growth the second time). Only the records kept (keep(r),
// select's layers) are copied: the copies share one buffer, which a record left out would hold on to.
function readAttention(s, { select = null, keep = null } = {}) {
  let records = s.attention();
  if (records.some((r) => r.data.length !== (r.batch ?? 1) * r.heads * r.queries * r.keys)) records = s.attention();
  if (keep) records = records.filter(keep);
  if (select?.layers?.length) records = records.filter((r) => select.layers.includes(r.layer));
  const copy = Attentions.copyFrom(records);
  return select?.heads?.length ? new Attentions(selectRecords(copy.records, { heads: select.heads })) : copy;
}

// An encoder batch's records ([input][heads][length][length]) as one Attentions per input.
function splitBatch(att, n) {
  return Array.from({ length: n }, (_, i) => new Attentions(att.records.map((r) => {
    const size = r.heads * r.queries * r.keys;
    const { batch, ...rest } = r;
    return { ...rest, data: r.data.subarray(i * size, (i + 1) * size) };
  })));
}

// The k largest of probs, with their ids (ties: lower id first).
function topK(probs, k) {
  const order = Array.from(probs.keys()).sort((a, b) => probs[b] - probs[a] || a - b);
  return order.slice(0, k);
}

export class Model {
  #m;        // the Emscripten module
  #handle;   // C++ ModelHandle
  #labels;   // piece labels, asked once per distinct id: the source side's …
  #targetLabels;  // … and an encoder–decoder's target side's (the decoder's tokenizer)
  #session;  // C++ SessionHandle used by every call
  #queue = Promise.resolve();
  #disposed = false;
  #running = null;  // the generation in progress: { final } (dispose() fills in `final`)
  #lost = null;     // the EngineLostError, once the engine instance holding this model was discarded
  #untrack;

  /** @internal use loadModel() */
  constructor(module, handle, session) {
    this.#m = module;
    this.#handle = handle;
    this.#labels = new PieceLabels((ids) => handle.pieces(ids, false));
    this.#targetLabels = new PieceLabels((ids) => handle.pieces(ids, true));
    this.#session = session;
    this.#untrack = trackOwner(module, this);
    /** The model card: architecture, sizes, memory (built by bindings/model.cpp). */
    this.info = Object.freeze(handle.info(session));
    this.promptFormat = Object.freeze(handle.promptFormat());
  }

  /** @internal Builds a model from its files ({name, bytes}) in JS memory: copies them into wasm memory. */
  static async fromFiles(m, files, options) {
    const set = new m.FileSet();
    try {
      for (const f of files) set.add(f.name, f.bytes.length).set(f.bytes);  // a view of wasm memory, filled at once
      return await Model.fromSet(m, set, options);
    } finally {
      if (!instanceLost(m)) set.delete();
    }
  }

  /** @internal Builds a model from a FileSet already filled (the set stays the caller's to delete). */
  // `threads`: { wanted, starting } (loadModelHere): the threads' Workers, still starting while
  // the model is built on this thread. In Node the model waits for them. In a browser it does not: a
  // Worker starts through tasks of the thread that created it, so these only start once this build
  // (one long task) has ended, which would delay the first token by ~0.1 s (bench/README.md). The
  // session is given the threads asked for, and its passes use those running (core/parallel.h
  // clamps to them; results do not depend on the count) until the rest are up.
  static async fromSet(m, set, { quantize = 'none', contextLength = 0, kvCache = 'f32', threads = { wanted: 1, starting: Promise.resolve(1) } } = {}) {
    let handle = null;
    let session = null;
    try {
      handle = new m.Model(set, quantize);
      session = handle.newSession(contextLength, kvCache);
      if (isNode) {
        session.setThreads(Math.min(threads.wanted, await threads.starting));
      } else {
        session.setThreads(threadsFor(m, threads.wanted));
        threads.starting.catch((e) => {
          if (!instanceLost(m)) console.warn(`AttnLens: this model runs on fewer threads than it asked for: ${e.message}`);
        });
      }
      return new Model(m, handle, session);
    } catch (e) {
      if (!instanceLost(m)) {
        session?.delete();
        handle?.delete();
      }
      throw e;
    }
  }

  /** @internal The engine instance holding this model failed and was discarded (wasm.mjs). */
  [onEngineLost](error) {
    this.#lost = error;
    this.#m = this.#handle = this.#session = null;  // the old instance's memory can be collected
  }

  get disposed() {
    return this.#disposed;
  }

  #alive() {
    if (this.#disposed) throw new Error('this model has been disposed');
    if (this.#lost) throw new this.#lost.constructor(this.#lost.message, { cause: this.#lost.cause });
  }

  // Calls into the engine run one at a time, in order; a stream holds the model until it ends.
  // Resolves, when it is this caller's turn, with the function that ends the turn. (Engine calls
  // are synchronous, so dispose() never lands in the middle of one; it only has to stop a stream
  // that is suspended between two tokens, and to fail the calls still waiting for their turn.)
  async #acquire() {
    this.#alive();
    let release;
    const held = new Promise((r) => { release = r; });
    let entered;
    const ready = new Promise((r) => { entered = r; });
    const turn = this.#queue.then(() => {
      this.#alive();
      entered();
      return held;
    });
    this.#queue = turn.catch(() => {});
    await Promise.race([ready, turn]);  // `turn` rejects if the model was disposed while waiting
    this.#alive();
    return release;
  }

  async #exclusive(fn) {
    const release = await this.#acquire();
    try {
      return fn();
    } finally {
      release();
    }
  }

  // One pass of the engine (forward, its analyses, patch, embed): fn(session) holding the model, on
  // a reset session that records the attention `att` selects ({ layers, heads }; null: none; with
  // `all`, every layer and head, the caller keeping its selection). The recording is switched off
  // afterwards, unless the call cost the engine instance (nothing left to switch off, and a call
  // into it would replace the error that says what failed).
  #pass(att, fn, { all = false } = {}) {
    return this.#exclusive(() => {
      const s = this.#session;
      s.reset();
      s.setAttention(!!att || all, all ? [] : att?.layers ?? [], all ? [] : att?.heads ?? []);
      try {
        return fn(s);
      } finally {
        if (!this.#lost) s.setAttention(false, [], []);
      }
    });
  }

  // The piece labels of one side of the text.
  #labelsOf(target) {
    return target ? this.#targetLabels : this.#labels;
  }

  /**
   * Text → token ids and the text piece of each (special tokens as the model adds them). The model's
   * input (an encoder–decoder's source), or with { target: true } an encoder–decoder's target side:
   * the decoder's text, read by its own tokenizer when it has one (Marian's target.spm), as
   * transformers' tokenizer(text_target=…) does.
   */
  async tokenize(text, options = {}) {
    this.#alive();
    check.string(text, 'text');
    check.options(options, 'tokenize');
    const { target } = check.textSide(options, 'tokenize', this.info);
    return this.#exclusive(() => {
      const ids = idArray(this.#handle.tokenize(text, options.addSpecialTokens ?? true, target));
      return { ids, pieces: this.#labelsOf(target).of(ids) };
    });
  }

  /**
   * The token ids generation feeds for this prompt (the model's special tokens; for an
   * encoder–decoder model the source, with its end-of-sequence token), with their pieces.
   */
  async encodePrompt(text) {
    this.#alive();
    check.string(text, 'text');
    return this.#exclusive(() => {
      const ids = idArray(this.#handle.encodePrompt(text));
      return { ids, pieces: this.#labels.of(ids) };
    });
  }

  // What renderChat needs to know of this model.
  #chatModel() {
    return { templates: this.promptFormat.chatTemplates, tokenizer: this.info.tokenizer, owner: describeModel(this.info) };
  }

  /**
   * A conversation [{ role, content }, …] → the prompt text of the model's chat template.
   * options: addGenerationPrompt (default false: open the assistant's turn), tools, documents,
   * templateName ("default", "tool_use", …), template (a template of your own), variables (more
   * template variables, e.g. { enable_thinking: false }).
   */
  async applyChatTemplate(messages, options = {}) {
    this.#alive();
    return renderChat(this.#chatModel(), messages, check.chatOptions(options, 'applyChatTemplate'));
  }

  /**
   * A conversation → { text, ids, pieces, special }: the rendered text and its tokens as generation
   * feeds them (tokenized without adding special tokens: the template writes those it wants, as
   * transformers.js' apply_chat_template does); special[i] is true for the special tokens
   * (<|im_start|>, <bos>, …) the template wrote.
   */
  async encodeChat(messages, options = {}) {
    this.#alive();
    const text = renderChat(this.#chatModel(), messages, check.chatOptions(options, 'encodeChat'));
    return this.#exclusive(() => {
      const ids = idArray(this.#handle.tokenize(text, false, false));
      return { text, ids, pieces: this.#labels.of(ids), special: ids.length ? this.#handle.special(ids, false) : [] };
    });
  }

  /** Token ids → text (of the source side, or with { target: true } of an encoder–decoder's decoder). */
  async detokenize(ids, options = {}) {
    this.#alive();
    const { target, vocab } = check.textSide(check.options(options, 'detokenize'), 'detokenize', this.info);
    const list = check.tokenIds(ids, 'ids', vocab, { allowEmpty: true });
    return this.#exclusive(() => (list.length ? this.#handle.detokenize(list, target) : ''));
  }

  /** The text piece of each token id (labels for a UI); { target: true }: an encoder–decoder's decoder tokens. */
  async pieces(ids, options = {}) {
    this.#alive();
    const { target, vocab } = check.textSide(check.options(options, 'pieces'), 'pieces', this.info);
    const list = check.tokenIds(ids, 'ids', vocab, { allowEmpty: true });
    return this.#exclusive(() => this.#labelsOf(target).of(list));
  }

  #attentionOption(v) {
    return check.attentionOptionFor(v, 'attentions', this.info);
  }

  /**
   * One forward pass over token ids, from position 0.
   *   decoder-only:     ids → logits [ids.length][vocab] (every position), attentions "self"
   *   encoder-only:     ids (+ tokenTypes) → hidden [n][dModel] and, with a masked-LM head, logits
   *   encoder–decoder:  { source, target } → logits of every target position, attentions
   *                     "encoder", "self" and "cross" (source: ids, or text encoded as generation
   *                     does; target: ids, or the decoder's text after its start token, read by
   *                     the target side's tokenizer)
   */
  async forward(input, options = {}) {
    this.#alive();
    check.options(options, 'forward');
    const att = this.#attentionOption(options.attentions);
    const analysis = check.analysisOptions(options, this.info);
    if (analysis) return this.#analyze(input, options, att, analysis);
    const vocab = this.info.vocabSize;
    // Arguments are checked before the model is touched.
    let run;
    if (this.info.kind === 'encoder-decoder') {
      const pair = this.#pairInput(input, 'forward', '');
      run = (s, out) => {
        const { source, tokens: target } = pair();
        s.encode(source, null);  // its "encoder" attention records stay through the decode below
        out.logits = s.decode(target, true).slice();
        out.shape = [target.length, vocab];
      };
    } else if (this.info.kind === 'encoder-only') {
      const ids = check.tokenIds(Array.isArray(input) || ArrayBuffer.isView(input) ? input : input?.ids, 'ids', vocab);
      const rawTypes = options.tokenTypes ?? input?.tokenTypes;
      const types = rawTypes === undefined || rawTypes === null ? null : check.tokenIds(rawTypes, 'tokenTypes', 1 << 16);
      if (types && types.length !== ids.length) throw new RangeError(`tokenTypes has ${types.length} entries for ${ids.length} tokens`);
      run = (s, out) => {
        out.hidden = s.encode(ids, types).slice();
        out.hiddenShape = [ids.length, this.info.dModel];
        const logits = s.mlmLogits();  // null: a BertModel without the masked-LM head
        out.logits = logits?.slice() ?? null;
        out.shape = logits ? [ids.length, vocab] : null;
      };
    } else {
      const ids = check.tokenIds(input, 'ids', vocab);
      run = (s, out) => {
        out.logits = s.decode(ids, true).slice();
        out.shape = [ids.length, vocab];
      };
    }
    return this.#pass(att, (s) => {
      const out = {};
      run(s, out);
      out.attentions = att ? readAttention(s) : null;
      return out;
    });
  }

  /**
   * An encoder–decoder pass's input { source, target } (source: ids, or text encoded as generation
   * does; target: ids, or the decoder's text after its start token, read by the target side's
   * tokenizer) → a function giving { source, tokens } when the model is held (ids are checked now,
   * texts are tokenized then). `prefix` names the fields in errors ("clean." …).
   */
  #pairInput(v, what, prefix) {
    if (!v || typeof v !== 'object' || Array.isArray(v) || ArrayBuffer.isView(v))
      throw new TypeError(`${what}: an encoder-decoder model takes { source, target } (token ids or text)`);
    if (v.source === '') throw new RangeError(`${what}: ${prefix}source is empty`);
    const source = typeof v.source === 'string' ? null : check.tokenIds(v.source, `${prefix}source`, this.info.sourceVocabSize);
    const target = typeof v.target === 'string' ? null : check.tokenIds(v.target, `${prefix}target`, this.info.vocabSize);
    if (target === null && !(this.promptFormat.decoderStartToken >= 0))
      throw new Error(`${what}: ${prefix}target text follows the decoder start token, but this model has none (its config.json or generation_config.json gives no decoder_start_token_id): give target token ids`);
    return () => {
      const h = this.#handle;
      return {
        source: source ?? idArray(h.encodePrompt(v.source)),
        tokens: target ?? [this.promptFormat.decoderStartToken, ...h.tokenize(v.target, false, true)],
      };
    };
  }

  // The input of one pass as the engine's analyze() takes it: { tokens, source?, tokenTypes? }
  // (an encoder–decoder's: a function giving it when the model is held, see #pairInput).
  #passInput(input, options, what = 'forward') {
    const vocab = this.info.vocabSize;
    if (this.info.kind === 'encoder-decoder') return this.#pairInput(input, what, '');
    if (this.info.kind === 'encoder-only') {
      const ids = check.tokenIds(Array.isArray(input) || ArrayBuffer.isView(input) ? input : input?.ids, 'ids', vocab);
      const rawTypes = options.tokenTypes ?? input?.tokenTypes;
      const types = rawTypes === undefined || rawTypes === null ? null : check.tokenIds(rawTypes, 'tokenTypes', 1 << 16);
      if (types && types.length !== ids.length) throw new RangeError(`tokenTypes has ${types.length} entries for ${ids.length} tokens`);
      return types ? { tokens: ids, tokenTypes: types } : { tokens: ids };
    }
    return { tokens: check.tokenIds(input, 'ids', vocab) };
  }

  // forward() with predictions, logit lens, hidden states, head scores, rollout or ablations.
  async #analyze(input, options, att, analysis) {
    const given = this.#passInput(input, options);
    const encdec = this.info.kind === 'encoder-decoder';
    // Head scores and rollout need every head of every layer: record all, then keep the selection.
    const all = analysis.heads || analysis.rollout;
    return this.#pass(att, (s) => {
      const h = this.#handle;
      const pass = typeof given === 'function' ? given() : given;
      const r = s.analyze(pass, analysis);
      const n = r.positions;
      const out = {};
      if (r.logits) {
        out.logits = r.logits;
        out.shape = [n, r.vocab];
      } else {
        out.logits = null;
        out.shape = null;
      }
      if (this.info.kind === 'encoder-only' && r.hidden) {
        out.hidden = r.hidden.slice((r.layers - 1) * n * r.dModel);
        out.hiddenShape = [n, r.dModel];
      }
      const tops = [r.topk, ...(r.lens ?? [])];
      const ids = idsOf(tops);
      // the predicted tokens are the decoder's (an encoder–decoder's target side); a model read as ids: piece null
      const pieces = ids.length && this.info.tokenizer ? h.pieces(ids, encdec) : [];
      const byId = new Map(ids.map((id, i) => [id, pieces[i]]));
      const pieceOf = (id) => byId.get(id) ?? null;
      if (r.topk) out.topk = expandTopK(r.topk, pieceOf);
      if (r.lens) out.logitLens = r.lens.map((t) => expandTopK(t, pieceOf));
      if (r.lensLogits) {
        out.logitLensLogits = r.lensLogits;
        out.logitLensShape = [r.layers, n, r.vocab];
      }
      if (analysis.hiddenStates) {
        out.hiddenStates = r.hidden;
        out.hiddenStatesShape = [r.layers, n, r.dModel];
      }
      if (r.heads) out.heads = headScores(r.heads, r.kind);
      if (r.rollout) {
        out.rollout = r.rollout;
        out.rolloutShape = [r.layers, n, n];
      }
      out.attentions = att ? readAttention(s, { select: all ? att : null }) : null;
      return out;
    }, { all });
  }

  // A patching input (clean or corrupted): text (tokenized as generation does), token ids, or for an
  // encoder–decoder model { source, target } (#pairInput; target text is the decoder's, after its start token).
  #patchInput(v, name) {
    const h = this.#handle;
    const vocab = this.info.vocabSize;
    if (this.info.kind === 'encoder-decoder') {
      if (!v || typeof v !== 'object' || Array.isArray(v)) throw new TypeError(`${name} must be { source, target } for an encoder-decoder model`);
      return this.#pairInput(v, name, `${name}.`)();
    }
    if (typeof v === 'string') {
      if (!v.length) throw new RangeError(`${name} is empty`);
      return { tokens: idArray(h.encodePrompt(v)) };
    }
    return { tokens: check.tokenIds(v, name, vocab) };
  }

  // A metric token: an id, or text that is one token of the logits' side (an encoder–decoder's target side).
  #tokenOf(v, name) {
    if (typeof v === 'number') return v;
    const ids = idArray(this.#handle.tokenize(v, false, this.info.kind === 'encoder-decoder'));
    if (ids.length !== 1) throw new RangeError(`${name}: "${v}" is ${ids.length} tokens, not one (give a token id)`);
    return ids[0];
  }

  #metricOf(m) {
    return { correct: this.#tokenOf(m.correct, 'metric.correct'), incorrect: this.#tokenOf(m.incorrect, 'metric.incorrect'), position: m.position };
  }

  /**
   * Activation patching at one site: runs `clean` and `corrupted` (same length), then one of them with
   * the activation at `site` taken from the other, and measures metric = logit[correct] − logit[incorrect]
   * at metric.position (default the last). Resolves with { clean, corrupted, patched, normalized,
   * attentions? } (normalized: 1 = the patch fully restores the clean value (denoise) / fully breaks it (noise)).
   */
  async patch(options = {}) {
    this.#alive();
    const { metric, direction } = check.patchOptions(options, this.info, 'patch');
    const site = check.patchSite(options.site, this.info);
    const att = this.#attentionOption(options.attentions);
    return this.#pass(att, (s) => {
      const clean = this.#patchInput(options.clean, 'clean');
      const corrupted = this.#patchInput(options.corrupted, 'corrupted');
      const r = s.patch(clean, corrupted, { metric: this.#metricOf(metric), site, direction });
      const span = r.clean - r.corrupted;
      const normalized = direction === 'noise' ? (r.clean - r.patched) / span : (r.patched - r.corrupted) / span;
      return { clean: r.clean, corrupted: r.corrupted, patched: r.patched, normalized, attentions: att ? readAttention(s) : null };
    });
  }

  /**
   * Patches every head (over: 'heads') or every (layer, position) of one activation ('resid', 'attn',
   * 'mlp') in turn: { clean, corrupted, point, kind, layers, columns, patched [layer][column],
   * normalized [layer][column] }.
   */
  async patchSweep(options = {}) {
    this.#alive();
    const { metric, direction } = check.patchOptions(options, this.info, 'patchSweep');
    const point = check.patchPoint(options.over ?? 'heads', 'over');
    const kind = check.kindOf(options.kind, 'kind', this.info);
    return this.#exclusive(() => {
      const clean = this.#patchInput(options.clean, 'clean');
      const corrupted = this.#patchInput(options.corrupted, 'corrupted');
      this.#session.reset();
      const r = this.#session.patchSweep(clean, corrupted, { metric: this.#metricOf(metric), point, kind, direction });
      return patchMap(r, direction);
    });
  }

  /**
   * The head detectors (TransformerLens' previous-token, duplicate-token and induction scores) on the
   * repeated random-token probe, with entropy and first-token (sink) mass, averaged over `batch`
   * sequences of BOS + r + r (r: `length` random non-special tokens; 0 = min(50, (context − 1) / 2)).
   * Resolves with { heads, kind, length, sequences, loss: { firstCopy, secondCopy } } (loss: mean
   * next-token cross-entropy in nats on each copy; null for an encoder-only model). `ablate` runs the
   * probe with those heads switched off.
   */
  async detectHeads(options = {}) {
    this.#alive();
    check.options(options, 'detectHeads');
    const o = {
      length: options.length === undefined ? 0 : check.topK(options.length, 'length'),
      batch: options.batch === undefined ? 4 : check.topK(options.batch, 'batch'),
      seed: options.seed === undefined ? 0 : check.probeSeed(options.seed, 'seed'),
      ablate: check.ablations(options.ablate, 'ablate', this.info),
    };
    return this.#exclusive(() => {
      this.#session.reset();
      const r = this.#session.probe(o);
      return {
        heads: headScores(r.heads, r.kind),
        kind: r.kind,
        length: r.length,
        sequences: r.sequences.map((q) => idArray(q)),
        loss: r.lossFirst === null ? null : { firstCopy: r.lossFirst, secondCopy: r.lossSecond },
      };
    });
  }

  /**
   * Sentence embeddings (encoder-only models): one Float32Array per input, the inputs (texts, or
   * token-id arrays) run as one batch padded to the longest; padded keys get exactly zero attention
   * and are recorded so. Pooling and normalisation default to the model's own (sentence-transformers'
   * Pooling / Normalize modules, a GGUF's pooling_type), else mean and none. Texts longer than the
   * model's limit (sentence_bert_config's max_seq_length, else its positions) are truncated, keeping
   * the closing special token: `truncated[i]` says how many tokens were dropped. With
   * `attentions`, `attentions[i]` holds input i's weights over the padded length (`length`).
   */
  async embed(inputs, options = {}) {
    this.#alive();
    check.options(options, 'embed');
    if (this.info.kind !== 'encoder-only') throw new TypeError(`embed: ${this.info.architecture} is not an encoder-only model`);
    const list = typeof inputs === 'string' ? [inputs] : inputs;
    if (!Array.isArray(list) || !list.length) throw new TypeError('embed: inputs must be a string or a non-empty array of strings or token-id arrays');
    const texts = list.every((t) => typeof t === 'string');
    const items = texts ? list : list.map((ids, i) => check.tokenIds(ids, `inputs[${i}]`, this.info.vocabSize));
    if (options.pooling !== undefined && !['mean', 'cls', 'max'].includes(options.pooling))
      throw new RangeError(`pooling must be 'mean', 'cls' or 'max', got ${String(options.pooling)}`);
    if (options.normalize !== undefined && typeof options.normalize !== 'boolean') throw new TypeError('normalize must be true or false');
    const att = this.#attentionOption(options.attentions);
    const engine = {};
    if (options.pooling !== undefined) engine.pooling = options.pooling;
    if (options.normalize !== undefined) engine.normalize = options.normalize;
    return this.#pass(att, (s) => {
      const r = s.embed(items, engine);
      r.pieces = r.tokens.map((ids) => this.#handle.pieces(ids, false));
      r.attentions = att ? splitBatch(readAttention(s), items.length) : null;
      return r;
    });
  }

  /**
   * Masked-token prediction (encoder-only models with a masked-LM head): text with the model's mask
   * token ("[MASK]" / "<mask>") — or token ids holding it — → for each mask, its topK candidates
   * {token, piece, score (probability), sequence (the text with it filled in)}.
   */
  async fillMask(input, options = {}) {
    this.#alive();
    check.options(options, 'fillMask');
    const k = options.topK ?? 5;
    if (!Number.isInteger(k) || k < 1 || k > this.info.vocabSize) throw new RangeError(`topK must be an integer from 1 to ${this.info.vocabSize}, got ${k}`);
    const mask = this.promptFormat.maskToken;
    if (this.info.kind !== 'encoder-only') throw new TypeError(`fillMask: ${this.info.architecture} is not an encoder-only model`);
    if (mask === undefined || mask < 0) throw new Error('fillMask: the tokenizer has no mask token ([MASK] or <mask>)');
    const ids = typeof input === 'string' ? (await this.tokenize(input)).ids : check.tokenIds(input, 'ids', this.info.vocabSize);
    const positions = ids.flatMap((t, i) => (t === mask ? [i] : []));
    if (!positions.length) throw new RangeError(`fillMask: the input holds no mask token (${(await this.pieces([mask]))[0]})`);
    if (ids.length > this.info.contextLength)
      throw new RangeError(`fillMask: ${ids.length} tokens exceed the model's ${this.info.contextLength} positions`);
    const out = await this.forward(ids, { attentions: options.attentions });
    if (!out.logits) throw new Error(`fillMask: this ${this.info.architecture} model has no masked-LM head`);
    const V = this.info.vocabSize;
    const masks = [];
    for (const p of positions) {
      const row = out.logits.subarray(p * V, (p + 1) * V);
      let max = -Infinity;
      for (const x of row) max = Math.max(max, x);
      const probs = new Float64Array(V);
      let z = 0;
      for (let i = 0; i < V; i++) z += probs[i] = Math.exp(row[i] - max);
      for (let i = 0; i < V; i++) probs[i] /= z;
      const best = topK(probs, k);
      const pieces = await this.pieces(best);
      const candidates = [];
      for (let j = 0; j < best.length; j++) {
        const filled = ids.slice();
        filled[p] = best[j];
        candidates.push({ token: best[j], piece: pieces[j], score: probs[best[j]], sequence: await this.detokenize(filled) });
      }
      masks.push({ position: p, candidates });
    }
    return { tokens: ids, pieces: await this.pieces(ids), masks, attentions: out.attentions };
  }

  /**
   * Generates text from a prompt: text, token ids, or a conversation [{ role, content }, …] rendered
   * by the model's chat template (options.chat: addGenerationPrompt (default true), tools,
   * documents, templateName, template, variables, as applyChatTemplate takes them). Resolves with { text, tokens, pieces, promptTokens, finishReason, seed,
   * timings: { prefillMs, decodeMs, tokensPerSecond } }. An AbortSignal stops it within one token
   * (finishReason "aborted", the tokens so far kept). options.onToken(step) sees every new token.
   */
  async generate(prompt, options = {}) {
    this.#alive();
    const plan = this.#plan(prompt, { ...check.options(options, 'generate'), attentions: false });
    if (options.onToken !== undefined && typeof options.onToken !== 'function') throw new TypeError('onToken must be a function');
    const release = await this.#acquire();
    try {
      const it = this.#steps(plan);
      for (;;) {
        const r = await it.next();
        if (r.done) return r.value;
        options.onToken?.(r.value);
      }
    } finally {
      release();
    }
  }

  #plan(prompt, options) {
    const opts = check.generateOptions(prompt, options, this.promptFormat.generation ?? {});
    opts.engine.predictions = check.topK(options.predictions, 'predictions');
    const ablate = check.ablations(options.ablate, 'ablate', this.info);
    const att = this.#attentionOption(options.attentions);
    // A conversation is rendered now (template errors throw before the model is touched) and
    // tokenized without adding special tokens, as encodeChat() does.
    const chatText = opts.chat ? renderChat(this.#chatModel(), prompt, opts.chat) : null;
    // (an encoder–decoder's prompt is its source: ids of the source vocabulary)
    const promptIds = typeof prompt === 'string' || opts.chat ? null : check.tokenIds(prompt, 'prompt', this.info.sourceVocabSize);
    return { opts, att, ablate, promptIds, chatText, signal: options.signal, stopFlag: options[STOP_FLAG] };
  }

  /**
   * Streams generation: an async iterable of { token, piece, text, position, attentions? } for
   * every new token; the last step also carries `result` (as generate() returns it), and once the
   * iteration is over `stream.result` holds it too (also after an abort). `attentions` (if asked
   * for) are the weights of the forward pass that produced the token: the prompt's rows at the
   * first step (for an encoder–decoder model also the encoder's), then one row per step.
   * Breaking out of the loop stops the generation.
   */
  stream(prompt, options = {}) {
    this.#alive();
    const plan = this.#plan(prompt, check.options(options, 'stream'));
    const model = this;
    const stream = {
      result: null,
      async *[Symbol.asyncIterator]() {
        const release = await model.#acquire();
        try {
          stream.result = yield* model.#steps(plan);
        } finally {
          release();
        }
      },
    };
    return stream;
  }

  // The generation loop: yields the steps, returns the result. The caller holds the model.
  async *#steps({ opts, att, ablate, promptIds, chatText, signal, stopFlag }) {
    const s = this.#session;
    const h = this.#handle;
    throwIfAborted(signal);
    const ids = promptIds ?? idArray(chatText !== null ? h.tokenize(chatText, false, false) : h.encodePrompt(opts.prompt));
    const run = { final: null };
    s.setAttention(!!att, att?.layers ?? [], att?.heads ?? []);
    s.setAblations(ablate);
    let finished = false;
    try {
      if (stopFlag) s.setStopFlag(stopFlag);
      // A mean ablation replaces a head's output by its mean over the prompt (src/interp/interventions.h):
      // the prompt then goes in as one pass, not in chunks.
      const chunk = ablate.some((a) => a.mode === 'mean') ? 0 : PREFILL_CHUNK;
      s.start(ids, { ...opts.engine, prefillChunk: chunk });
      this.#running = run;
      let first = true;
      const prefill = [];  // the attention of each prefill chunk
      for (;;) {
        if (this.#disposed) return run.final;  // dispose() stopped it
        if (signal?.aborted) s.abort();
        // The weights of the pass that produced this step's token: the previous step's (one row),
        // or for the first token the prefill's chunks stacked. The encoder runs once, at prefill:
        // its weights come with the first step only.
        let attentions;
        // (While a beam search runs, steps choose nothing and there is no attention to hand out;
        // then the returned beam's tokens come one per step, each with its own pass's weights.)
        if (att && !first && !s.searching()) attentions = readAttention(s, { keep: (r) => r.kind !== 'encoder' });
        const ev = s.step();
        if (!ev) break;
        if (ev.pending) {  // a beam search step
          if (ev.done) break;
          await yieldToEventLoop();
          continue;
        }
        if (ev.token < 0) {  // a prefill step: the prompt (or a chunk of it) went in; no token yet
          if (att) prefill.push(readAttention(s));
          if (!ev.done) await yieldToEventLoop({ always: true });
          continue;
        }
        if (att && first) attentions = stackChunks(prefill);
        first = false;
        const step = { token: ev.token, piece: ev.piece, text: ev.text, position: ev.position };
        if (attentions) step.attentions = attentions;
        if (ev.topk) step.topk = topOfStep(ev.topk, this.#labelsOf(this.info.kind === 'encoder-decoder'));
        if (ev.done) step.result = s.result();
        yield step;
        if (this.#disposed) return run.final;
        if (ev.done) {
          finished = true;
          return step.result;
        }
        await yieldToEventLoop();
      }
      finished = true;
      return s.result();
    } finally {
      if (this.#running === run) this.#running = null;
      if (!this.#disposed && !this.#lost) {
        if (!finished) s.abort();  // the consumer left the loop (or an error): stop the generation
        s.setAttention(false, [], []);
        if (stopFlag) s.setStopFlag(null);
        if (ablate.length) s.setAblations([]);
      }
    }
  }

  /**
   * Memory now: the wasm heap and what the engine has allocated (memoryStats), and what this model
   * holds (files, owned weight copies and tables, KV cache, scratch; modelBytes is their sum).
   */
  memory() {
    this.#alive();
    return { ...this.#m.memoryStats(), ...this.#session.memory() };
  }

  /**
   * Frees the model's wasm memory, at once. A generation in progress stops at its next token
   * (it resolves with finishReason "aborted"); calls waiting for their turn, and any later use
   * of the model, throw.
   */
  async dispose() {
    if (this.#disposed) return;
    if (this.#lost) {  // nothing left to free: its instance is gone
      this.#disposed = true;
      return;
    }
    this.#untrack();
    const run = this.#running;
    if (run) {
      this.#session.abort();
      run.final = this.#session.result();
    }
    this.#disposed = true;
    this.#session.delete();
    this.#handle.delete();
  }
}

// A generation step's predictions: [{ id, piece, prob, logit }], most likely first (labels: the
// decoder's PieceLabels).
function topOfStep(t, labels) {
  const ids = idArray(t.ids);
  const pieces = labels.of(ids);
  return ids.map((id, j) => ({ id, piece: pieces[j], prob: t.probs[j], logit: t.logits[j] }));
}

/**
 * @internal loadModel() in this thread (options already checked). The engine and its threads'
 * Workers start while the files are opened; when every file's size is known up front (files, Blobs,
 * buffers, HTTP with Content-Length), the wasm memory for all of them is allocated first — refused
 * with the sizes if it cannot fit — and each file is read into it in chunks, with no copy in JS
 * memory: a file of several GB never has to be one ArrayBuffer. Downloads do not wait for the
 * engine (in a browser its glue, wasm and threads take ~0.2–0.3 s, as long as a small model's
 * weights): until it is up, their first EARLY_BYTES are held in JS memory (holdingSinks).
 */
export async function loadModelHere(source, options = {}) {
  const wanted = options.threads ?? await defaultThreads();
  const engine = getModule({ simd: options.simd });
  // The threads' Workers start loading as soon as the module is there (this callback runs before
  // the awaits below resume); the model is built meanwhile (Model.fromSet).
  const threads = { wanted, starting: engine.then((m) => reserveThreads(m, wanted)) };
  engine.catch(() => {});  // awaited below
  threads.starting.catch(() => {});  // handled by Model.fromSet
  const opened = await openSource(source, options);
  const { entries } = opened;
  const direct = entries.every((e) => e.size > 0 && typeof e.readInto === 'function');
  const early = direct && entries.every((e) => e.streamed) ? holdingSinks(entries.length, EARLY_BYTES) : null;
  const reading = early && readEntries(opened, options, early.sinks);
  reading?.catch(() => {});  // awaited below
  // Drops what was opened or is being read, then throws `error`.
  const giveUp = async (error) => {
    if (early) {
      early.fail(error);
      await reading.catch(() => {});
    } else {
      opened.cancel();
    }
    throw error;
  };
  let m;
  try {
    // A download that fails first fails the load at once, without waiting for the engine.
    m = await (reading ? Promise.race([engine, reading.then(() => engine)]) : engine);
  } catch (e) {
    await giveUp(e);
  }
  const build = { quantize: options.quantize ?? 'none', contextLength: options.contextLength ?? 0, kvCache: options.kvCache ?? 'f32', threads };
  if (!direct) {
    const files = await readEntries(opened, options);
    throwIfAborted(options.signal);
    return await Model.fromFiles(m, files, build);
  }
  const set = new m.FileSet();
  try {
    try {
      // All the files at once first, then each: refused, with the sizes, before anything is allocated.
      const total = entries.reduce((a, e) => a + e.size, 0);
      if (entries.length > 1) {
        m.requireMemory(total, `the ${entries.length} files of this model together (${entries.map((e) => e.name).join(', ')})`);
      }
      for (const e of entries) set.add(e.name, e.size);
    } catch (e) {
      await giveUp(e);
    }
    // A view is detached when the heap grows (the single-thread build): fetch it again then.
    const sinks = entries.map((e, i) => {
      let view = set.view(i);
      return (chunk, at) => {
        if (view.byteLength === 0) view = set.view(i);
        view.set(chunk, at);
      };
    });
    if (early) {
      try {
        early.open(sinks);
      } catch (e) {
        await giveUp(e);
      }
      await reading;
    } else {
      await readEntries(opened, options, sinks);
    }
    throwIfAborted(options.signal);
    return await Model.fromSet(m, set, build);
  } finally {
    if (!instanceLost(m)) set.delete();
  }
}
