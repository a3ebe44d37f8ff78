// The attention of one run (a prompt and its continuation), assembled row by row as the engine
// delivers it.
//
// A row is one query token's post-softmax weights over the keys, for every head of one layer of one
// kind ("self", "encoder", "cross"). Rows arrive from model.stream(…, { attentions: true }):
//   step 1        the prompt's rows (the prefill pass: queries 0 … P−1);
//   step k ≥ 2    one row, the query at position P+k−2 (the token sampled at step k−1, fed back in);
// so when generation ends, every token has its row except the last one, which no pass has read
// yet. The run then asks for one more forward pass over all tokens and takes ONLY the rows still
// missing from it: a row, once stored, is never replaced, so every other row stays exactly as
// streamed (and the encoder's rows, which every step of an encoder–decoder repeats, are kept once).
// Each row remembers where it came from (`origin`), and the JSON export says so.
// Immutable rows also let the views draw incrementally.

/** Which token sequence the queries and keys of a kind run over. */
export const AXES = {
  self: { queries: 'target', keys: 'target', causal: true },
  encoder: { queries: 'source', keys: 'source', causal: false },
  cross: { queries: 'target', keys: 'source', causal: false },
};

export const KIND_LABELS = {
  self: 'Self-attention',
  encoder: 'Encoder self-attention',
  cross: 'Cross-attention (target → source)',
};

class Row {
  constructor(heads, keys, data, origin) {
    this.heads = heads;
    this.keys = keys;      // number of keys stored; keys beyond are 0 (masked, or future positions)
    this.data = data;      // Float32Array [head][key]
    this.origin = origin;  // 'prefill' | 'step' | 'forward'
    this.meanCache = null;
  }

  head(h) {
    return this.data.subarray(h * this.keys, (h + 1) * this.keys);
  }

  /** The average over heads, summed in float32 in head order like Attentions.mean(). */
  mean() {
    if (!this.meanCache) {
      const out = new Float32Array(this.keys);
      for (let h = 0; h < this.heads; h++) {
        const m = this.head(h);
        for (let k = 0; k < this.keys; k++) out[k] += m[k];
      }
      for (let k = 0; k < this.keys; k++) out[k] /= this.heads;
      this.meanCache = out;
    }
    return this.meanCache;
  }
}

class KindStore {
  constructor(kind) {
    this.kind = kind;
    this.heads = 0;
    this.layerRows = new Map();  // layer → Row[] (sparse, indexed by query position)
    this.queryCount = 0;         // 1 + highest query position stored
    this.keyCount = 0;           // widest row
  }

  get layers() {
    return [...this.layerRows.keys()].sort((a, b) => a - b);
  }

  rows(layer) {
    let r = this.layerRows.get(layer);
    if (!r) this.layerRows.set(layer, (r = []));
    return r;
  }
}

export class AttentionStore {
  constructor() {
    this.kinds = new Map();  // kind → KindStore
    this.version = 0;        // bumps whenever rows are added
  }

  /** Kinds present, in display order (self, cross, encoder). */
  get kindNames() {
    return ['self', 'cross', 'encoder'].filter((k) => this.kinds.has(k));
  }

  kind(kind) {
    return this.kinds.get(kind) ?? null;
  }

  layers(kind) {
    return this.kinds.get(kind)?.layers ?? [];
  }

  heads(kind) {
    return this.kinds.get(kind)?.heads ?? 0;
  }

  /** Number of query rows the matrix spans (some may still be missing). */
  queryCount(kind) {
    return this.kinds.get(kind)?.queryCount ?? 0;
  }

  keyCount(kind) {
    return this.kinds.get(kind)?.keyCount ?? 0;
  }

  /**
   * Adds the rows of one pass: an Attentions object (or its `records` array) as model.stream /
   * model.forward return it (the store may keep views of its arrays: do not modify them after). origin: 'prefill' | 'step' | 'forward'. Rows already stored are left
   * as they are. Returns the list of {kind, query} added (one per kind and query).
   */
  ingest(attentions, { origin = 'step' } = {}) {
    const records = Array.isArray(attentions) ? attentions : attentions.records;
    const added = new Map();  // "kind:query" → {kind, query}
    for (const r of records) {
      let ks = this.kinds.get(r.kind);
      if (!ks) this.kinds.set(r.kind, (ks = new KindStore(r.kind)));
      ks.heads = Math.max(ks.heads, r.heads);
      const rows = ks.rows(r.layer);
      const perHead = r.queries * r.keys;
      for (let q = 0; q < r.queries; q++) {
        const pos = r.queryStart + q;
        if (rows[pos]) continue;
        // one query: the record's [head][1][key] already is a row's [head][key] (no copy)
        let data = r.queries === 1 ? r.data.subarray(0, r.heads * r.keys) : null;
        if (!data) {
          data = new Float32Array(r.heads * r.keys);
          for (let h = 0; h < r.heads; h++) {
            const from = h * perHead + q * r.keys;
            data.set(r.data.subarray(from, from + r.keys), h * r.keys);
          }
        }
        rows[pos] = new Row(r.heads, r.keys, data, origin);
        ks.queryCount = Math.max(ks.queryCount, pos + 1);
        ks.keyCount = Math.max(ks.keyCount, r.keys);
        added.set(`${r.kind}:${pos}`, { kind: r.kind, query: pos });
      }
    }
    if (added.size) this.version++;
    return [...added.values()];
  }

  /** The stored Row of (kind, layer, query), or null. */
  rowObject(kind, layer, query) {
    return this.kinds.get(kind)?.layerRows.get(layer)?.[query] ?? null;
  }

  hasRow(kind, query) {
    const ks = this.kinds.get(kind);
    if (!ks) return false;
    const first = ks.layers[0];
    return first !== undefined && !!ks.layerRows.get(first)[query];
  }

  /**
   * Weights of one query over its keys for a head (head < 0: the average over heads), as a
   * Float32Array of the row's stored keys, or null when the row is not there (yet).
   */
  row(kind, layer, head, query) {
    const row = this.rowObject(kind, layer, query);
    if (!row) return null;
    return head < 0 ? row.mean() : row.head(head);
  }

  /** One weight (0 beyond the stored keys), or NaN when the row is missing. */
  value(kind, layer, head, query, key) {
    const r = this.row(kind, layer, head, query);
    if (!r) return NaN;
    return key < r.length ? r[key] : 0;
  }

  /** Where each row of a kind came from: array over queries of 'prefill' | 'step' | 'forward' | null. */
  origins(kind) {
    const ks = this.kinds.get(kind);
    if (!ks) return [];
    const rows = ks.layerRows.get(ks.layers[0]) ?? [];
    return Array.from({ length: ks.queryCount }, (_, q) => rows[q]?.origin ?? null);
  }

  /**
   * Nested arrays [layer][head][query][key] of one kind; missing rows are null, causal rows are
   * padded with 0 up to the key count (for JSON export).
   */
  toNested(kind) {
    const ks = this.kinds.get(kind);
    if (!ks) return [];
    return ks.layers.map((l) => {
      const rows = ks.layerRows.get(l);
      return Array.from({ length: ks.heads }, (_, h) =>
        Array.from({ length: ks.queryCount }, (_, q) => {
          const row = rows[q];
          if (!row) return null;
          const out = new Array(ks.keyCount).fill(0);
          const w = row.head(h);
          for (let k = 0; k < w.length; k++) out[k] = w[k];
          return out;
        }),
      );
    });
  }
}
