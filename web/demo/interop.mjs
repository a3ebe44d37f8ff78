// The run's attention in the input formats of two Python tools, to open it there:
//
//   BertViz    head_view(**doc) / model_view(**doc): `attention` a list over layers of
//              [batch = 1][head][query][key] (torch.tensor each layer: [torch.tensor(a) for a in
//              doc["attention"]]) with `tokens`; an encoder–decoder model gives encoder_attention,
//              decoder_attention, cross_attention with encoder_tokens and decoder_tokens instead.
//   CircuitsVis circuitsvis.attention.attention_heads(**layer) for each entry of the list: one
//              layer's `attention` [head][destination][source], `tokens` and `attention_head_names`.
// Missing rows (a token past the context length) are all 0.
import { download } from './format.mjs';

function square(store, kind) {
  return store.toNested(kind).map((heads) => heads.map((rows) => rows.map((row, q) => row ?? new Array(rows[0]?.length ?? q + 1).fill(0))));
}

export function bertvizDocument(state) {
  const run = state.run;
  const store = run.store;
  const batch = (layers) => layers.map((heads) => [heads]);  // [layer][1][head][q][k]
  if (run.encoderDecoder) {
    return {
      encoder_attention: batch(square(store, 'encoder')),
      decoder_attention: batch(square(store, 'self')),
      cross_attention: batch(square(store, 'cross')),
      encoder_tokens: run.source.pieces,
      decoder_tokens: run.target.pieces.slice(0, store.queryCount('self')),
    };
  }
  return { attention: batch(square(store, 'self')), tokens: run.target.pieces.slice(0, store.queryCount('self')) };
}

export function circuitsvisDocument(state) {
  const run = state.run;
  const kind = state.kind;
  const store = run.store;
  const keys = kind === 'self' ? run.target.pieces : run.source.pieces;
  const queries = kind === 'encoder' ? run.source.pieces : run.target.pieces;
  return square(store, kind).map((heads, i) => {
    const layer = store.layers(kind)[i];
    const n = heads[0]?.length ?? 0;
    const doc = { attention: heads, tokens: keys.slice(0, heads[0]?.[0]?.length ?? 0), attention_head_names: heads.map((_, hd) => `L${layer}H${hd}`) };
    if (kind === 'cross') doc.query_tokens = queries.slice(0, n);  // cross-attention: rows are the target's
    return doc;
  });
}

const safe = (s) => String(s ?? 'model').replace(/[^\w.-]+/g, '_').slice(0, 60);

export function exportBertviz(state) {
  const doc = bertvizDocument(state);
  download(new Blob([JSON.stringify(doc)], { type: 'application/json' }), `bertviz-${safe(state.model?.name)}.json`);
  return doc;
}

export function exportCircuitsvis(state) {
  const doc = circuitsvisDocument(state);
  download(new Blob([JSON.stringify(doc)], { type: 'application/json' }), `circuitsvis-${safe(state.model?.name)}-${state.kind}.json`);
  return doc;
}
