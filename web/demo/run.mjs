// One run: a prompt, the tokens generated from it, their attention, timings. `generate` drives the
// model's stream and keeps the run up to date, calling onUpdate after every token.
import { AttentionStore } from './attention-store.mjs';

export class Run {
  constructor({ model, encoderDecoder }) {
    this.modelName = model.name;
    this.encoderDecoder = encoderDecoder;
    this.source = null;                               // encoder–decoder: { ids, pieces } of the prompt
    this.target = { ids: [], pieces: [], origin: [] };  // origin: 'prompt' | 'start' | 'generated'
    this.promptLength = 0;
    this.text = '';
    this.store = new AttentionStore();
    this.status = 'running';                          // 'running' | 'done' | 'stopped' | 'error'
    this.finishReason = null;
    this.error = null;
    // tokensPerSecond / msPerToken: as the tokens arrive in the page (what a user sees);
    // engineTokensPerSecond: the engine's own decode rate (result.timings), once the run ends.
    this.stats = { prefillMs: NaN, generated: 0, tokensPerSecond: NaN, msPerToken: NaN, engineTokensPerSecond: NaN, engineTimed: false };
    this.predictions = [];                            // [position] → the top-k that produced the next token
    this.settings = null;
    this.lastRowNote = '';
  }

  /** { ids, pieces } of the queries or keys axis of a kind ('source' | 'target'). */
  tokens(axis) {
    return axis === 'source' ? this.source ?? { ids: [], pieces: [] } : this.target;
  }
}

/**
 * Generates from `prompt` — text, or a conversation [{ role, content }] rendered by the model's chat
 * template (options.chat: how, as encodeChat takes it) — with `model` (the page's model record:
 * { api, name, info }). options:
 * maxNewTokens, temperature, topK, topP, seed; signal stops it. onUpdate(run, what) is called with
 * what = 'start' | 'token' | 'rows' | 'end'. Resolves with the run (status 'error' and run.error on
 * failure, never rejects).
 */
export async function generate(model, prompt, options, { signal, onUpdate = () => {} } = {}) {
  const api = model.api;
  const info = api.info;
  const encoderDecoder = info.kind === 'encoder-decoder';
  const run = new Run({ model, encoderDecoder });
  run.settings = { prompt, ...options };
  try {
    // The ids exactly as generation encodes the prompt (the model's special tokens, an encoder–decoder
    // source's end token), passed to stream() so the tokens shown are the tokens the model read.
    // A conversation: the whole of it as the template renders it, the assistant's turn opened.
    const encoded = Array.isArray(prompt) ? await api.encodeChat(prompt, options.chat ?? { addGenerationPrompt: true }) : await api.encodePrompt(prompt);
    if (!encoded.ids.length) throw new Error('The prompt encodes to no tokens.');
    if (encoded.ids.length > info.contextLength)
      throw new Error(`The prompt is ${encoded.ids.length} tokens long; this model reads at most ${info.contextLength}. Shorten it.`);
    if (encoderDecoder) {
      run.source = encoded;
      const start = api.promptFormat.decoderStartToken;
      run.target = { ids: [start], pieces: await api.pieces([start], { target: true }), origin: ['start'] };
      run.promptLength = 1;
    } else {
      run.target = { ids: [...encoded.ids], pieces: [...encoded.pieces], origin: encoded.ids.map(() => 'prompt') };
      run.promptLength = encoded.ids.length;
    }
    onUpdate(run, 'start');

    const t0 = performance.now();
    let tFirst = 0;
    let first = true;
    // Beam search (numBeams > 1) keeps the likeliest beams: no sampling, and its tokens arrive once
    // the search is over, each with the attention of the pass of the returned beam that chose it.
    // Options the page has no field for (no_repeat_ngram_size, bad words …) are the model's own.
    const beams = options.numBeams ?? 1;
    const stream = api.stream(encoded.ids, {
      attentions: true,
      predictions: 5,
      maxNewTokens: options.maxNewTokens,
      ...(beams > 1 ? { numBeams: beams, temperature: 0 } : { numBeams: 1, temperature: options.temperature, topK: options.topK, topP: options.topP }),
      seed: options.seed,
      signal,
    });
    for await (const step of stream) {
      const now = performance.now();
      if (first) {
        tFirst = now;
        run.stats.prefillMs = now - t0;
      }
      if (step.attentions) run.store.ingest(step.attentions, { origin: first ? 'prefill' : 'step' });
      first = false;
      run.target.ids.push(step.token);
      run.target.pieces.push(step.piece);
      run.target.origin.push('generated');
      if (step.topk) run.predictions[step.position - 1] = step.topk;
      run.text += step.text;
      run.stats.generated++;
      if (run.stats.generated > 1) {
        run.stats.tokensPerSecond = ((run.stats.generated - 1) * 1000) / (now - tFirst);
        run.stats.msPerToken = 1000 / run.stats.tokensPerSecond;
      }
      onUpdate(run, 'token');
    }
    applyResult(run, stream.result);
    run.status = signal?.aborted || run.finishReason === 'aborted' ? 'stopped' : 'done';
    if (!run.finishReason) run.finishReason = signal?.aborted ? 'aborted' : 'length';
    await completeRows(api, run);
    onUpdate(run, 'rows');
  } catch (e) {
    if (signal?.aborted && (e?.name === 'AbortError' || e === signal.reason)) {
      run.status = 'stopped';
      run.finishReason = 'aborted';
      await completeRows(api, run).catch(() => {});
    } else {
      run.status = 'error';
      run.error = e;
    }
  }
  onUpdate(run, 'end');
  return run;
}

/** The engine's own account of the generation (stream.result): finish reason, text, timings. */
function applyResult(run, result) {
  if (!result) return;
  run.finishReason = result.finishReason;
  run.beamScore = result.score ?? null;
  run.text = result.text;
  const t = result.timings;
  if (!t) return;
  run.stats.prefillMs = t.prefillMs;
  if (t.decodedTokens > 0) run.stats.engineTokensPerSecond = t.tokensPerSecond;
  run.stats.engineTimed = true;
}

/**
 * The rows no generation step computed — the last token's (nothing was fed after it), or all of
 * them when the stream yielded nothing — come from one forward pass over the whole sequence. Rows
 * already streamed are kept (the store never replaces a row). A token past the context length has
 * no row at all: the model can never read it.
 */
async function completeRows(api, run) {
  const ctx = api.info.contextLength;
  const n = Math.min(run.target.ids.length, ctx);
  if (n === 0) return;
  const kind = 'self';
  let missing = false;
  for (let q = 0; q < n && !missing; q++) missing = !run.store.hasRow(kind, q);
  if (!missing) {
    run.lastRowNote = run.target.ids.length > ctx ? 'The last token is past the context length: no pass ever reads it, so it has no row.' : '';
    return;
  }
  const target = run.target.ids.slice(0, n);
  const out = await api.forward(run.encoderDecoder ? { source: run.source.ids, target } : target, { attentions: true });
  run.store.ingest(out.attentions, { origin: 'forward' });
  run.lastRowNote =
    (run.stats.generated ? 'The last token’s row comes from one forward pass over all tokens, run after generation (no generation step reads the last token). ' : '') +
    (run.target.ids.length > ctx ? 'The last token is past the context length: no pass ever reads it, so it has no row.' : '');
}
