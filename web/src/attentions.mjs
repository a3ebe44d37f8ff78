// Attention weights as JavaScript sees them.
//
// One forward pass (or one generation step) records, for each attention kind and layer, the
// post-softmax weights of every head: a Float32Array laid out [head][query][key], with
//   queries   the tokens processed by that pass (the whole prompt at prefill, 1 per decode step),
//   keys      every position they could attend to (0 … queryStart + queries − 1 for self-attention,
//             the source tokens for cross-attention); causal rows are 0 beyond their own position,
//   queryStart the position of the first query.
// Kinds: "self" (decoder / decoder-only self-attention), "encoder" (encoder self-attention),
// "cross" (decoder → encoder).

export class Attentions {
  /** @param {Array<{kind: string, layer: number, heads: number, queries: number, keys: number, queryStart: number, data: Float32Array}>} records */
  constructor(records) {
    this.records = records;
  }

  /** Kinds present, e.g. ["self"] or ["encoder", "self", "cross"]. */
  get kinds() {
    return [...new Set(this.records.map((r) => r.kind))];
  }

  /** Layers recorded for a kind, ascending. */
  layers(kind = 'self') {
    return this.records.filter((r) => r.kind === kind).map((r) => r.layer).sort((a, b) => a - b);
  }

  /** The record of one layer: {heads, queries, keys, queryStart, data [head][query][key]}. */
  layer(layer, kind = 'self') {
    const r = this.records.find((x) => x.kind === kind && x.layer === layer);
    if (!r) throw new RangeError(`no ${kind} attention recorded for layer ${layer} (recorded: ${this.layers(kind).join(', ') || 'none'})`);
    return r;
  }

  /** Weights of one head: Float32Array [query][key] (a view into the layer's array). */
  get(layer, head, kind = 'self') {
    const r = this.layer(layer, kind);
    if (!Number.isInteger(head) || head < 0 || head >= r.heads) throw new RangeError(`head ${head} is out of range [0, ${r.heads})`);
    const size = r.queries * r.keys;
    return r.data.subarray(head * size, (head + 1) * size);
  }

  /** One row: how query `query` (index within this pass) attends to every key. */
  row(layer, head, query, kind = 'self') {
    const r = this.layer(layer, kind);
    const m = this.get(layer, head, kind);
    if (!Number.isInteger(query) || query < 0 || query >= r.queries) throw new RangeError(`query ${query} is out of range [0, ${r.queries})`);
    return m.subarray(query * r.keys, (query + 1) * r.keys);
  }

  /** The average over heads of one layer: Float32Array [query][key]. */
  mean(layer, kind = 'self') {
    const r = this.layer(layer, kind);
    const size = r.queries * r.keys;
    const out = new Float32Array(size);
    for (let h = 0; h < r.heads; h++) {
      const m = r.data.subarray(h * size, (h + 1) * size);
      for (let i = 0; i < size; i++) out[i] += m[i];
    }
    for (let i = 0; i < size; i++) out[i] /= r.heads;
    return out;
  }

  /** Nested arrays [layer][head][query][key] of one kind (for JSON export). */
  toArray(kind = 'self') {
    return this.layers(kind).map((l) => {
      const r = this.layer(l, kind);
      return Array.from({ length: r.heads }, (_, h) => {
        const m = this.get(l, h, kind);
        return Array.from({ length: r.queries }, (_, q) => Array.from(m.subarray(q * r.keys, (q + 1) * r.keys)));
      });
    });
  }

  toJSON() {
    return Object.fromEntries(this.kinds.map((k) => [k, this.toArray(k)]));
  }

  /** The ArrayBuffers (for postMessage transfer lists), each once (records may share one). */
  get buffers() {
    return [...new Set(this.records.map((r) => r.data.buffer))];
  }

  /**
   * Copies the records out of wasm memory (views die at the next call into the engine), into one
   * buffer: a generation step copies every layer's record, and one allocation (and one transfer to
   * the thread that asked) costs less than one per record.
   */
  static copyFrom(records) {
    const all = new Float32Array(records.reduce((n, r) => n + r.data.length, 0));
    let at = 0;
    return new Attentions(records.map((r) => {
      const data = all.subarray(at, at + r.data.length);
      data.set(r.data);
      at += r.data.length;
      return { ...r, data };
    }));
  }
}
