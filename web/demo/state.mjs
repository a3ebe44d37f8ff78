// The page's state, in one place: the loaded model, the current run, what the attention views show
// (kind, layer, head, query token, view, colour scale). Modules change it with set() and listen with
// on(); listeners hear which keys changed.
import { ColourScale } from './colour.mjs';

export const HEAD_AVERAGE = -1;

export class State {
  #listeners = new Set();

  constructor() {
    this.model = null;       // { api, name, label, info, examples }
    this.loading = null;     // { label, loaded, total } while a model loads
    this.run = null;         // Run (run.mjs)
    this.view = 'tokens';    // 'tokens' | 'matrix' | 'overview'
    this.kind = 'self';      // 'self' | 'cross' | 'encoder'
    this.layer = 0;
    this.head = HEAD_AVERAGE;
    this.query = null;       // index of the selected query token, or null
    this.key = null;         // cross-attention: a key token pointed at (its column is shown), or null
    this.input = 0;          // encoder models: which input of the batch is shown
    this.pinned = false;     // the query was clicked (hover no longer moves it)
    this.scale = new ColourScale('viridis', 'sqrt');
  }

  /** Assigns the keys of `patch` that change and tells the listeners which. */
  set(patch) {
    const changed = new Set();
    for (const [k, v] of Object.entries(patch)) {
      if (this[k] !== v) {
        this[k] = v;
        changed.add(k);
      }
    }
    if (changed.size) this.emit(changed);
  }

  /** Tells the listeners that `keys` changed (for changes inside objects, e.g. new rows of a run). */
  emit(keys) {
    const set = keys instanceof Set ? keys : new Set([].concat(keys));
    for (const fn of this.#listeners) fn(set, this);
  }

  /** Calls fn(changedKeys, state) when any of `keys` changes (all keys if omitted). */
  on(keys, fn) {
    const want = keys ? new Set(keys) : null;
    const listener = (changed, s) => {
      if (!want || [...changed].some((k) => want.has(k))) fn(changed, s);
    };
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** The query and key tokens of the current kind: { queries: {ids, pieces}, keys: {…}, causal }. */
  axes(axesTable) {
    const run = this.run;
    const a = axesTable[this.kind];
    if (!run || !a) return null;
    return { queries: run.tokens(a.queries), keys: run.tokens(a.keys), causal: a.causal, queryAxis: a.queries, keyAxis: a.keys };
  }
}
