// The run's attention in the input formats of two Python tools, to open it there:
//
//   BertViz    head_view(**doc) / model_view(**doc): `attention` a list over layers of
//              [batch = 1][head][query][key] (torch.tensor each layer: [torch.tensor(a) for a in
//              doc["attention"]]) with `tokens`; an encoder–decoder model gives encoder_attention,
//              decoder_attention, cross_attention with encoder_tokens and decoder_tokens instead.
//   CircuitsVis circuitsvis.attention.attention_heads(**layer) for each entry of the list: one
//              layer's `attention` [head][destination][source], `tokens` (both axes),
//              `attention_head_names` and `mask_upper_tri` (true for causal self-attention, false for
//              the encoder's). attention_heads has one token list for both axes, so cross-attention
//              (target rows, source columns) has no CircuitsVis form: exporting it is refused.
// Missing rows (a token past the context length) are all 0. tests/js/fixtures/interop-formats.mjs
// checks both documents against what those tools accept.
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

export const circuitsvisRefusal = (kind) =>
  kind === 'cross' ? "CircuitsVis' attention_heads takes one token list for both axes, so it cannot show cross-attention: choose the decoder's or the encoder's self-attention." : null;

export function circuitsvisDocument(state) {
  const run = state.run;
  const kind = state.kind;
  const refused = circuitsvisRefusal(kind);
  if (refused) throw new Error(refused);
  const store = run.store;
  const tokens = kind === 'self' ? run.target.pieces : run.source.pieces;
  return square(store, kind).map((heads, i) => {
    const layer = store.layers(kind)[i];
    return {
      attention: heads,
      tokens: tokens.slice(0, heads[0]?.length ?? 0),
      attention_head_names: heads.map((_, hd) => `L${layer}H${hd}`),
      mask_upper_tri: kind === 'self',
    };
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
