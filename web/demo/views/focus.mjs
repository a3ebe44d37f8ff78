// The query token the token views show, and its weights. With no token chosen the views follow the
// newest query that has a row, so attention updates live as tokens stream in.
import { AXES } from '../attention-store.mjs';

/** The query index shown: the chosen one, else the newest with a row; null if there is none. */
export function focusQuery(state) {
  const run = state.run;
  if (!run) return null;
  const n = run.store.queryCount(state.kind);
  if (state.query !== null && state.query < run.tokens(AXES[state.kind].queries).ids.length) return state.query;
  for (let q = n - 1; q >= 0; q--) if (run.store.hasRow(state.kind, q)) return q;
  return null;
}

/**
 * The weights query q gives every key of the current kind/layer/head:
 * { q, weights: number[] (0 for masked keys), masked: boolean[], missing } — missing when the row
 * is not computed (yet).
 */
export function focusWeights(state, q, keyCount) {
  const run = state.run;
  const causal = AXES[state.kind].causal;
  const row = q === null ? null : run.store.row(state.kind, state.layer, state.head, q);
  const weights = new Array(keyCount);
  const masked = new Array(keyCount);
  for (let k = 0; k < keyCount; k++) {
    masked[k] = causal && k > q;
    weights[k] = !row || masked[k] ? 0 : k < row.length ? row[k] : 0;
  }
  return { q, weights, masked, missing: !row };
}

/**
 * The size to lay a matrix of the current kind out at: while a run streams, the size it will have
 * when it ends (prompt + the new tokens asked for, within the context), so the views fill in row by
 * row instead of rescaling at every token; afterwards, its actual size.
 */
export function extent(state) {
  const run = state.run;
  const store = run.store;
  let queries = store.queryCount(state.kind);
  let keys = store.keyCount(state.kind);
  if (run.status === 'running' && run.settings) {
    const final = Math.min(run.promptLength + run.settings.maxNewTokens, state.model?.info.contextLength ?? Infinity);
    const a = AXES[state.kind];
    if (a.queries === 'target') queries = Math.max(queries, final);
    if (a.keys === 'target') keys = Math.max(keys, final);
  }
  return { queries, keys };
}
