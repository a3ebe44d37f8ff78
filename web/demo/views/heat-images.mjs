// Attention matrices as images, one pixel per (query, key), kept up to date incrementally: rows are
// immutable once stored (attention-store.mjs) and the colour mapping is a fixed function of the
// weight, so each row is drawn exactly once — a streamed token costs one 1-pixel-high putImageData
// per head, however long the sequence. Masked cells (a causal query's future keys) stay transparent,
// so the views can show them as "cannot attend" rather than as weight 0.

const makeCanvas = (w, h) => {
  if (typeof OffscreenCanvas === 'function') return new OffscreenCanvas(w, h);
  const c = document.createElement('canvas');
  c.width = w;
  c.height = h;
  return c;
};

const grow = (n, min = 32) => {
  let c = min;
  while (c < n) c *= 2;
  return c;
};

export class HeatImages {
  #entries = new Map();
  #store = null;
  #scaleKey = '';

  /**
   * The image of (kind, layer, head) — head < 0 for the average — at one pixel per cell, with
   * every row stored so far drawn. Returns { canvas, queries, keys } (the image may be larger than
   * queries × keys; draw that sub-rectangle). `extent` ({queries, keys}) makes room for the size the
   * matrix will reach, so a view can draw that rectangle while it fills in.
   */
  get(store, kind, layer, head, scale, causal, extent = null) {
    if (store !== this.#store || scale.key !== this.#scaleKey) {
      this.#entries.clear();
      this.#store = store;
      this.#scaleKey = scale.key;
    }
    const queries = store.queryCount(kind);
    const keys = store.keyCount(kind);
    const needK = Math.max(keys, extent?.keys ?? 0);
    const needQ = Math.max(queries, extent?.queries ?? 0);
    const id = `${kind}/${layer}/${head}`;
    let e = this.#entries.get(id);
    if (!e || e.canvas.width < needK || e.canvas.height < needQ) {
      const canvas = makeCanvas(grow(needK), grow(needQ));
      const g = canvas.getContext('2d');
      if (e) g.drawImage(e.canvas, 0, 0);
      e = { canvas, g, drawn: e?.drawn ?? [] };
      this.#entries.set(id, e);
    }
    for (let q = 0; q < queries; q++) {
      if (e.drawn[q]) continue;
      const row = store.row(kind, layer, head, q);
      if (!row) continue;
      e.g.putImageData(rowImage(row, keys, causal ? q + 1 : keys, scale), 0, q);
      e.drawn[q] = true;
    }
    return { canvas: e.canvas, queries, keys };
  }

  clear() {
    this.#entries.clear();
    this.#store = null;
  }
}

function rowImage(row, keys, visible, scale) {
  const img = new ImageData(Math.max(1, keys), 1);
  const px = img.data;
  const lut = scale.lut;
  const n = Math.min(visible, keys);
  for (let k = 0; k < n; k++) {
    const w = k < row.length ? row[k] : 0;
    const i = scale.index(w) * 4;
    px[k * 4] = lut[i];
    px[k * 4 + 1] = lut[i + 1];
    px[k * 4 + 2] = lut[i + 2];
    px[k * 4 + 3] = 255;
  }
  return img;  // cells from n on stay transparent (masked)
}
