// The piece labels of token ids, asked from the engine once per distinct id: a long text has few
// distinct tokens, and each label crossing the wasm boundary costs far more than a lookup here.
export class PieceLabels {
  #pieces;
  #cache = [];  // id -> label (an array: a Map lookup per token took 5x longer on a 1 MB text)

  /** @param {(ids: number[]) => string[]} pieces the engine's labels of ids (throws on a bad id) */
  constructor(pieces) {
    this.#pieces = pieces;
  }

  /** The label of each id, in order. */
  of(ids) {
    const cache = this.#cache;
    const out = new Array(ids.length);
    let missing = null;
    for (let i = 0; i < ids.length; i++) {
      const label = cache[ids[i]];
      if (label === undefined) (missing ??= new Set()).add(ids[i]);
      out[i] = label;
    }
    if (missing) {
      const distinct = [...missing];
      const labels = this.#pieces(distinct);
      distinct.forEach((id, i) => { cache[id] = labels[i]; });
      for (let i = 0; i < ids.length; i++) if (out[i] === undefined) out[i] = cache[ids[i]];
    }
    return out;
  }
}

/** The engine's ids (an Int32Array) as a plain array (a loop: Array.from over a typed array is 5x slower in V8). */
export function idArray(typed) {
  const out = new Array(typed.length);
  for (let i = 0; i < typed.length; i++) out[i] = typed[i];
  return out;
}
