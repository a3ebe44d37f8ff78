// One run of an encoder-only model (BERT, RoBERTa, MiniLM / MPNet sentence embedders …): the
// texts encoded as one padded batch with model.embed(), every input's attention kept, the cosine
// similarity of two inputs' embeddings, and — when the text holds the mask token and the model has a
// masked-LM head — model.fillMask()'s candidates. The views show the input chosen in the toolbar
// ("Input"): its special tokens ([CLS], [SEP], <s>, </s>) outlined, its padding up to the batch's
// length dashed (padded keys get exactly zero attention; padded queries still have rows).
import { AttentionStore } from './attention-store.mjs';

export class EncodeRun {
  constructor({ model }) {
    this.modelName = model.name;
    this.encoderDecoder = false;
    this.encoderOnly = true;
    this.inputs = [];  // { label, text, tokens: {ids, pieces, origin}, store, truncated, real }
    this.shown = 0;
    this.source = { ids: [], pieces: [], origin: [] };
    this.target = { ids: [], pieces: [], origin: [] };
    this.store = new AttentionStore();
    this.promptLength = 0;
    this.text = '';
    this.status = 'running';
    this.finishReason = null;
    this.error = null;
    this.stats = { prefillMs: NaN, generated: 0, tokensPerSecond: NaN, msPerToken: NaN, engineTimed: false };
    this.settings = null;
    this.lastRowNote = '';
    this.similarity = null;  // { cosine, pooling, normalize }
    this.fill = null;        // fillMask() result, or { error }
  }

  tokens(axis) {
    return axis === 'source' ? this.source : this.target;
  }

  /** Shows input i in the views. */
  show(i) {
    const x = this.inputs[i];
    if (!x) return;
    this.shown = i;
    this.source = x.tokens;
    this.store = x.store;
    this.lastRowNote = x.length > x.real
      ? `Input ${x.label} has ${x.real} tokens, padded to the batch's ${x.length}: the padding (dashed) gets exactly zero attention from every token; its own rows are computed but mean nothing.`
      : '';
    if (x.truncated) this.lastRowNote += ` ${x.truncated} tokens were cut to fit the model's limit (the closing special token is kept).`;
  }
}

const cosine = (a, b) => {
  let dot = 0, na = 0, nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i] * b[i];
    na += a[i] * a[i];
    nb += b[i] * b[i];
  }
  return dot / Math.sqrt(na * nb);
};

/** Encodes `texts` (one or two) with `model` ({ api, name }); never rejects (status 'error'). */
export async function encode(model, texts) {
  const api = model.api;
  const run = new EncodeRun({ model });
  run.settings = { prompt: texts[0], maxNewTokens: 0 };
  try {
    const t0 = performance.now();
    const r = await api.embed(texts, { attentions: true });
    run.stats.prefillMs = performance.now() - t0;
    const L = r.length;
    texts.forEach((text, i) => {
      const ids = [...r.tokens[i]];
      const pieces = [...r.pieces[i]];
      const origin = r.special[i].map((s) => (s ? 'special' : 'prompt'));
      const real = ids.length;
      while (ids.length < L) {
        ids.push(-1);
        pieces.push('[pad]');
        origin.push('pad');
      }
      const store = new AttentionStore();
      store.ingest(r.attentions[i], { origin: 'forward' });
      run.inputs.push({ label: String.fromCharCode(65 + i), text, tokens: { ids, pieces, origin }, store, truncated: r.truncated[i], real, length: L });
    });
    run.stats.generated = 0;
    if (texts.length === 2) run.similarity = { cosine: cosine(r.embeddings[0], r.embeddings[1]), pooling: r.pooling, normalize: r.normalize };
    const mask = api.promptFormat.maskToken;
    if (mask >= 0 && r.tokens[0].includes(mask)) {
      try {
        run.fill = await api.fillMask(texts[0], { topK: 5 });
      } catch (e) {
        run.fill = { error: e };
      }
    }
    run.show(0);
    run.status = 'done';
    run.finishReason = 'encoded';
  } catch (e) {
    run.status = 'error';
    run.error = e;
  }
  return run;
}
