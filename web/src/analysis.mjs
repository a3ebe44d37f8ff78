// The interpretability results as JavaScript sees them: the engine hands back flat typed arrays
// (bindings/interp.cpp); these helpers give them their nested, labelled shape.

/** Flat top-k {rows, k, ids, logits, probs} → [row][k] of { id, piece, prob, logit }. */
export function expandTopK(t, pieceOf) {
  const out = new Array(t.rows);
  for (let r = 0; r < t.rows; r++) {
    const row = new Array(t.k);
    for (let j = 0; j < t.k; j++) {
      const i = r * t.k + j;
      const id = t.ids[i];
      row[j] = { id, piece: pieceOf(id), prob: t.probs[i], logit: t.logits[i] };
    }
    out[r] = row;
  }
  return out;
}

/** Every id of some flat top-k results, once (to ask the tokenizer for their pieces in one call). */
export function idsOf(list) {
  const set = new Set();
  for (const t of list) if (t) for (const id of t.ids) set.add(id);
  return [...set];
}

function nest(flat, ...dims) {
  if (dims.length === 1) return Array.from(flat.subarray(0, dims[0]));
  const [n, ...rest] = dims;
  const size = rest.reduce((a, b) => a * b, 1);
  return Array.from({ length: n }, (_, i) => nest(flat.subarray(i * size, (i + 1) * size), ...rest));
}

/**
 * The engine's head scores → { kind, previousToken, duplicateToken, induction, entropy, sink } [layer][head],
 * with entropyPerPosition and sinkPerPosition [layer][head][position].
 */
export function headScores(s, kind) {
  const L = s.layers;
  const H = s.heads;
  const out = {
    kind,
    previousToken: nest(s.previousToken, L, H),
    duplicateToken: nest(s.duplicateToken, L, H),
    induction: nest(s.induction, L, H),
    entropy: nest(s.entropy, L, H),
    sink: nest(s.sink, L, H),
  };
  if (s.positions && s.entropyPerPosition.length) {
    out.entropyPerPosition = nest(s.entropyPerPosition, L, H, s.positions);
    out.sinkPerPosition = nest(s.sinkPerPosition, L, H, s.positions);
  }
  return out;
}

/** A patching map's values [layer][column] and its normalized effect (1 = the clean value restored). */
export function patchMap(r, direction) {
  const patched = nest(r.patched, r.layers, r.columns);
  const span = r.clean - r.corrupted;
  const normalized = patched.map((row) => row.map((v) => (direction === 'noise' ? (r.clean - v) / span : (v - r.corrupted) / span)));
  return { clean: r.clean, corrupted: r.corrupted, point: r.point, kind: r.kind, layers: r.layers, columns: r.columns, patched, normalized };
}

/** Keeps only the selected layers and heads of some attention records (unselected heads become 0). */
export function selectRecords(records, { layers = [], heads = [] } = {}) {
  return records
    .filter((r) => !layers.length || layers.includes(r.layer))
    .map((r) => {
      if (!heads.length) return r;
      const size = r.queries * r.keys;
      for (let h = 0; h < r.heads; h++) if (!heads.includes(h)) r.data.fill(0, h * size, (h + 1) * size);
      return r;
    });
}
