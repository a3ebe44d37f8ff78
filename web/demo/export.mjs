// Export: the current run's attention as JSON (every kind, layer and head, with the tokens and
// where each row came from), and the current view as PNG.
import { AXES } from './attention-store.mjs';
import { download } from './format.mjs';

/** The JSON document for a run: plain data, [layer][head][query][key] like Attentions.toJSON(). */
export function attentionDocument(state) {
  const run = state.run;
  const info = state.model?.info ?? {};
  const store = run.store;
  const attentions = {};
  for (const kind of store.kindNames) {
    attentions[kind] = {
      queries: AXES[kind].queries,
      keys: AXES[kind].keys,
      causal: AXES[kind].causal,
      layers: store.layers(kind),
      heads: store.heads(kind),
      rowOrigin: store.origins(kind),
      weights: store.toNested(kind),
    };
  }
  return {
    format: 'attnlens-attention/1',
    layout: 'weights[layer][head][query][key]; post-softmax; causal rows are 0 beyond their query; a missing row is null',
    rowOrigins: {
      prefill: 'the prompt pass of generation',
      step: 'a generation step (the previous token fed back in)',
      forward: 'one forward pass over all tokens after generation (the last token, which no step reads)',
    },
    model: { name: state.model?.name, architecture: info.architecture, kind: info.kind, layers: info.layers, heads: info.heads },
    settings: run.settings,
    finishReason: run.finishReason,
    text: run.text,
    source: run.source ? { ids: run.source.ids, pieces: run.source.pieces } : undefined,
    target: { ids: run.target.ids, pieces: run.target.pieces, origin: run.target.origin },
    selection: { kind: state.kind, layer: state.layer, head: state.head < 0 ? 'average' : state.head, query: state.query },
    attentions,
  };
}

export function exportJson(state) {
  const doc = attentionDocument(state);
  const blob = new Blob([JSON.stringify(doc)], { type: 'application/json' });
  download(blob, `attention-${safeName(state.model?.name)}.json`);
  return doc;
}

export function exportPng(view, state) {
  const canvas = view.exportCanvas();
  return new Promise((resolve, reject) => {
    canvas.toBlob((blob) => {
      if (!blob) return reject(new Error('the browser could not encode the PNG'));
      const head = state.head < 0 ? 'avg' : `h${state.head}`;
      download(blob, `attention-${safeName(state.model?.name)}-${state.view}-${state.kind}-l${state.layer}-${head}.png`);
      resolve(blob);
    }, 'image/png');
  });
}

function safeName(s) {
  return String(s ?? 'model').replace(/[^\w.-]+/g, '_').slice(0, 60);
}
