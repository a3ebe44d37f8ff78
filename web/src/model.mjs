// A model running in this thread on the AttnLens WebAssembly engine. (worker.mjs runs the same class
// inside a Web Worker / worker_threads and proxies it.)
import { Attentions } from './attentions.mjs';
import { getModule } from './wasm.mjs';
import * as check from './validate.mjs';

// Yields to the event loop without the ≥ 4 ms clamp of nested setTimeout(0): abort signals and UI
// events get through between two tokens.
const yieldToEventLoop = (() => {
  if (typeof setImmediate === 'function') return () => new Promise((r) => setImmediate(r));
  if (typeof MessageChannel === 'function') {
    const channel = new MessageChannel();
    const queue = [];
    channel.port1.onmessage = () => queue.shift()?.();
    return () => new Promise((r) => { queue.push(r); channel.port2.postMessage(0); });
  }
  return () => new Promise((r) => setTimeout(r, 0));
})();

function camelInfo(d, kvCacheBytes) {
  return {
    architecture: d.architecture,
    kind: d.kind,
    format: d.format,
    params: d.params,
    dModel: d.d_model,
    layers: d.layers,
    encoderLayers: d.encoder_layers,
    heads: d.heads,
    kvHeads: d.kv_heads,
    headDim: d.head_dim,
    dFF: d.d_ff,
    vocabSize: d.vocab_size,
    contextLength: d.context_length,
    positions: d.positions,
    weightDtype: d.weight_dtype,
    weightBytes: d.weight_bytes,
    fileBytes: d.file_bytes,
    kvCacheBytes,
    memoryBytes: d.file_bytes + kvCacheBytes,
    files: d.files,
    tokenizer: d.tokenizer && {
      kind: d.tokenizer.kind, vocabSize: d.tokenizer.vocab_size, bosId: d.tokenizer.bos_id, eosId: d.tokenizer.eos_id,
    },
  };
}

export class Model {
  #m;        // the Emscripten module
  #handle;   // C++ ModelHandle
  #session;  // C++ SessionHandle used by every call
  #queue = Promise.resolve();
  #disposed = false;
  #disposing = false;  // set by dispose(): a running generation stops at its next token

  /** @internal use loadModel() */
  constructor(module, handle, session) {
    this.#m = module;
    this.#handle = handle;
    this.#session = session;
    const card = JSON.parse(handle.describe());
    /** The model card: architecture, sizes, memory. */
    this.info = Object.freeze(camelInfo(card, session.kvCacheBytes()));
    this.promptFormat = Object.freeze(JSON.parse(handle.promptFormat()));
  }

  /** @internal Builds a model from its files ({name, bytes}). */
  static async fromFiles(files, { quantize = 'none', contextLength = 0 } = {}) {
    const m = await getModule();
    const set = new m.FileSet();
    let handle = null;
    try {
      for (const f of files) set.add(f.name, f.bytes.length).set(f.bytes);  // straight into wasm memory
      handle = new m.Model(set, quantize);
      const session = handle.newSession(contextLength);
      return new Model(m, handle, session);
    } catch (e) {
      handle?.delete();
      throw e;
    } finally {
      set.delete();
    }
  }

  get disposed() {
    return this.#disposed;
  }

  #alive() {
    if (this.#disposed) throw new Error('this model has been disposed');
  }

  // Calls into the engine run one at a time, in order; a stream holds the model until it ends.
  // Resolves, when it is this caller's turn, with the function that ends the turn.
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

  /** Text → token ids and the text piece of each (special tokens as the model adds them). */
  async tokenize(text, { addSpecialTokens = true } = {}) {
    check.string(text, 'text');
    return this.#exclusive(() => {
      const ids = Array.from(this.#handle.tokenize(text, !!addSpecialTokens));
      return { ids, pieces: this.#handle.pieces(ids) };
    });
  }

  /** Token ids → text. */
  async detokenize(ids) {
    const list = check.tokenIds(ids, 'ids', this.info.vocabSize);
    return this.#exclusive(() => this.#handle.detokenize(list));
  }

  /** The text piece of each token id (labels for a UI). */
  async pieces(ids) {
    const list = check.tokenIds(ids, 'ids', this.info.vocabSize);
    return this.#exclusive(() => this.#handle.pieces(list));
  }

  /**
   * One forward pass over token ids, from position 0.
   *   decoder-only:     ids → logits [ids.length][vocab] (every position), attentions "self"
   *   encoder-only:     ids (+ tokenTypes) → hidden [n][dModel] and, with a masked-LM head, logits
   *   encoder–decoder:  { source, target } → logits of every target position, attentions
   *                     "encoder", "self" and "cross"
   */
  async forward(input, options = {}) {
    const att = check.attentionOption(options.attentions, 'attentions');
    return this.#exclusive(() => {
      const s = this.#session;
      s.reset();
      s.setAttention(!!att, att?.layers ?? [], att?.heads ?? []);
      try {
        const vocab = this.info.vocabSize;
        const out = {};
        if (this.info.kind === 'encoder-decoder') {
          if (!input || typeof input !== 'object' || Array.isArray(input) || ArrayBuffer.isView(input))
            throw new TypeError('forward: an encoder-decoder model takes { source: ids, target: ids }');
          const source = check.tokenIds(input.source, 'source', vocab);
          const target = check.tokenIds(input.target, 'target', vocab);
          s.encode(source, null);
          out.logits = s.decode(target, true).slice();
          out.shape = [target.length, vocab];
        } else if (this.info.kind === 'encoder-only') {
          const ids = check.tokenIds(Array.isArray(input) || ArrayBuffer.isView(input) ? input : input?.ids, 'ids', vocab);
          const types = options.tokenTypes ?? input?.tokenTypes;
          out.hidden = s.encode(ids, types ? check.tokenIds(types, 'tokenTypes', 1 << 16) : null).slice();
          out.hiddenShape = [ids.length, this.info.dModel];
          try {
            out.logits = s.mlmLogits().slice();
            out.shape = [ids.length, vocab];
          } catch {
            out.logits = null;  // a BertModel without the masked-LM head
          }
        } else {
          const ids = check.tokenIds(input, 'ids', vocab);
          out.logits = s.decode(ids, true).slice();
          out.shape = [ids.length, vocab];
        }
        out.attentions = att ? Attentions.copyFrom(s.attention()) : null;
        return out;
      } finally {
        s.setAttention(false, [], []);
      }
    });
  }

  /**
   * Generates text. Resolves with { text, tokens, pieces, promptTokens, finishReason, seed,
   * timings: { prefillMs, decodeMs, tokensPerSecond } }. An AbortSignal stops it within one token
   * (finishReason "aborted", the tokens so far kept).
   */
  async generate(prompt, options = {}) {
    let last = null;
    for await (const step of this.stream(prompt, { ...options, attentions: false })) {
      options.onToken?.(step);
      last = step;
    }
    return last?.result ?? this.#lastResult;
  }

  #lastResult = null;

  /**
   * Streams generation: yields { token, piece, text, position, attentions? } for every new token;
   * the last step also carries `result` (as generate() returns). `attentions` (if asked for) are
   * the weights of the forward pass that produced the token: the prompt's rows at the first step,
   * then one row (the previous token's query) per step.
   */
  stream(prompt, options = {}) {
    const opts = check.generateOptions(prompt, options);
    const att = check.attentionOption(options.attentions, 'attentions');
    const promptIds = typeof prompt === 'string' ? null : check.tokenIds(prompt, 'prompt', this.info.vocabSize);
    const model = this;
    return {
      async *[Symbol.asyncIterator]() {
        const release = await model.#acquire();
        try {
          yield* model.#generateSteps(promptIds, opts, att, options.signal);
        } finally {
          release();
        }
      },
    };
  }

  async *#generateSteps(promptIds, opts, att, signal) {
    const s = this.#session;
    const h = this.#handle;
    const ids = promptIds ?? Array.from(h.encodePrompt(opts.prompt));
    s.setAttention(!!att, att?.layers ?? [], att?.heads ?? []);
    try {
      if (signal?.aborted) throw signal.reason ?? new DOMException('aborted', 'AbortError');
      s.start(ids, JSON.stringify(opts.engine));
      for (;;) {
        const attentions = att ? Attentions.copyFrom(s.attention()) : undefined;
        const stop = signal?.aborted || this.#disposing;
        const ev = stop ? null : s.step();
        if (stop) s.abort();
        if (!ev) break;
        const step = { token: ev.token, piece: h.pieces([ev.token])[0], text: ev.text, position: ev.position };
        if (attentions) step.attentions = attentions;
        if (ev.done) step.result = this.#result(opts.engine.seed);
        yield step;
        if (ev.done) return;
        await yieldToEventLoop();
      }
      this.#lastResult = this.#result(opts.engine.seed);
    } finally {
      s.setAttention(false, [], []);
    }
  }

  #result(seed) {
    const r = JSON.parse(this.#session.result());
    const h = this.#handle;
    return {
      text: r.text,
      tokens: r.tokens,
      pieces: h.pieces(r.tokens),
      source: r.source.length ? r.source : undefined,
      promptTokens: r.promptTokens,
      finishReason: r.finishReason,
      seed,
      timings: {
        prefillMs: r.prefillMs,
        decodeMs: r.decodeMs,
        decodedTokens: r.decoded,
        tokensPerSecond: r.decodeMs > 0 ? (r.decoded * 1000) / r.decodeMs : 0,
      },
    };
  }

  /** Memory now: the wasm heap, what the engine holds, this model's KV cache. */
  memory() {
    this.#alive();
    const stats = this.#m.memoryStats();
    return { ...stats, kvCacheBytes: this.#session.kvCacheBytes(), fileBytes: this.info.fileBytes };
  }

  /** Frees the model's wasm memory. Using the model afterwards throws. */
  async dispose() {
    if (this.#disposed) return;
    this.#disposing = true;
    await this.#queue;
    if (this.#disposed) return;
    this.#disposed = true;
    this.#session.delete();
    this.#handle.delete();
  }
}
