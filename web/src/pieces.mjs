// The piece labels of token ids, asked from the engine once per distinct id: a long text has few
// distinct tokens, and each label crossing the wasm boundary costs far more than a Map lookup.
export class PieceLabels {
  #pieces;
  #cache = new Map();

  /** @param {(ids: number[]) => string[]} pieces the engine's labels of ids (throws on a bad id) */
  constructor(pieces) {
    this.#pieces = pieces;
  }

  /** The label of each id, in order. */
  of(ids) {
    const missing = [];
    for (const id of ids) if (!this.#cache.has(id)) missing.push(id);
    if (missing.length) {
      const distinct = [...new Set(missing)];
      const labels = this.#pieces(distinct);
      distinct.forEach((id, i) => this.#cache.set(id, labels[i]));
    }
    return Array.from(ids, (id) => this.#cache.get(id));
  }
}
