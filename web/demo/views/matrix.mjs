// Matrix view: the heatmap of one layer and head (or the average over heads) on a canvas — rows are
// queries, columns keys, both labelled with the token pieces — with the exact weight on hover (and
// for the keyboard: arrow keys move a cell cursor), the selected query's row outlined, and a colour
// legend.
import { AXES } from '../attention-store.mjs';
import { drawLegend } from '../colour.mjs';
import { invalidate } from '../frame.mjs';
import { cssVar, formatWeight, h, visiblePiece } from '../format.mjs';
import { HEAD_AVERAGE } from '../state.mjs';
import { extent } from './focus.mjs';

const MAX_CELL = 30;
const MIN_CELL = 2;
const LABEL_FONT = '11px ui-monospace, SFMono-Regular, Menlo, Consolas, "DejaVu Sans Mono", monospace';

export class MatrixView {
  constructor(state, images, root) {
    this.state = state;
    this.images = images;
    this.canvas = h('canvas', { class: 'matrix-canvas', tabindex: '0', role: 'img', 'aria-label': 'Attention matrix' });
    this.tip = h('div', { class: 'tooltip', role: 'status', hidden: true });
    this.readout = h('p', { class: 'readout', 'aria-live': 'polite' });
    this.legend = h('canvas', { class: 'legend', 'aria-hidden': 'true' });
    this.caption = h('p', { class: 'view-caption' });
    this.frame = h('div', { class: 'matrix-frame' }, this.canvas, this.tip);
    root.append(this.caption, this.frame, h('div', { class: 'legend-row' }, this.legend, this.readout));
    this.root = root;
    this.hover = null;   // {q, k} under the pointer
    this.cursor = null;  // {q, k} keyboard cursor
    this.layout = null;
    this.labels = new Map();

    this.canvas.addEventListener('pointermove', (e) => this.#pointer(e));
    this.canvas.addEventListener('pointerleave', () => {
      this.hover = null;
      this.tip.hidden = true;
      invalidate(this);
    });
    this.canvas.addEventListener('click', (e) => {
      const c = this.#cellAt(e);
      if (c) this.state.set({ query: c.q, pinned: true });
    });
    this.canvas.addEventListener('keydown', (e) => this.#key(e));
    this.frameWidth = 0;  // measure()
    new ResizeObserver(() => invalidate(this)).observe(this.frame);
  }

  /** The frame's width, read before any view of the frame changes the DOM (frame.mjs). */
  measure() {
    if (!this.visible) return;
    this.frameWidth = this.frame.clientWidth;
  }

  get visible() {
    return this.state.view === 'matrix';
  }

  #cellAt(e) {
    const L = this.layout;
    if (!L) return null;
    const r = this.canvas.getBoundingClientRect();
    const x = e.clientX - r.left - L.left;
    const y = e.clientY - r.top - L.top;
    const k = Math.floor(x / L.cell);
    const q = Math.floor(y / L.cell);
    if (x < 0 || y < 0 || q >= L.queries || k >= L.keys) return null;
    return { q, k };
  }

  #pointer(e) {
    const c = this.#cellAt(e);
    this.hover = c;
    this.pointer = [e.clientX, e.clientY];
    if (c) this.#showTip(c, e.clientX, e.clientY);
    else this.tip.hidden = true;
    invalidate(this);
  }

  /** The weight of a cell and what it means: { w, masked, missing }. */
  cell(q, k) {
    const s = this.state;
    const store = s.run.store;
    const causal = AXES[s.kind].causal;
    if (causal && k > q) return { w: 0, masked: true, missing: false };
    const w = store.value(s.kind, s.layer, s.head, q, k);
    return { w, masked: false, missing: Number.isNaN(w) };
  }

  #describe({ q, k }) {
    const s = this.state;
    const ax = s.axes(AXES);
    const qp = visiblePiece(ax.queries.pieces[q] ?? '?');
    const kp = visiblePiece(ax.keys.pieces[k] ?? '?');
    const c = this.cell(q, k);
    const value = c.masked ? 'masked (a token cannot attend to later ones)' : c.missing ? 'not computed yet' : formatWeight(c.w);
    return { text: `«${qp}» #${q} → «${kp}» #${k}: ${value}`, c };
  }

  #showTip(cell, clientX, clientY) {
    const { text, c } = this.#describe(cell);
    this.tip.textContent = text;
    this.tip.dataset.query = String(cell.q);
    this.tip.dataset.key = String(cell.k);
    this.tip.dataset.weight = c.masked ? '0' : c.missing ? '' : String(c.w);
    this.tip.hidden = false;
    const fr = this.frame.getBoundingClientRect();
    const x = Math.min(clientX - fr.left + 14, fr.width - 220);
    const y = clientY - fr.top + 16;
    this.tip.style.transform = `translate(${Math.max(0, x)}px, ${y}px)`;
  }

  #key(e) {
    const L = this.layout;
    if (!L || !L.queries) return;
    const c = this.cursor ?? { q: this.state.query ?? 0, k: 0 };
    const moves = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] };
    if (moves[e.key]) {
      const [dq, dk] = moves[e.key];
      this.cursor = { q: clamp(c.q + dq, 0, L.queries - 1), k: clamp(c.k + dk, 0, L.keys - 1) };
    } else if (e.key === 'Home') this.cursor = { q: c.q, k: 0 };
    else if (e.key === 'End') this.cursor = { q: c.q, k: L.keys - 1 };
    else if (e.key === 'Enter' || e.key === ' ') {
      this.state.set({ query: c.q, pinned: true });
    } else return;
    e.preventDefault();
    this.readout.textContent = this.#describe(this.cursor ?? c).text;
    invalidate(this);
  }

  render() {
    if (!this.visible) return;
    const s = this.state;
    const run = s.run;
    const g = this.canvas.getContext('2d');
    const dpr = globalThis.devicePixelRatio || 1;
    const legendKey = `${s.scale.key}|${cssVar('--ink')}`;
    if (this.legendKey !== legendKey) {
      drawLegend(this.legend, s.scale, { width: 300, ink: cssVar('--ink') });
      this.legendKey = legendKey;
    }
    if (!run || !run.store.queryCount(s.kind)) {
      this.layout = null;
      this.canvas.width = this.canvas.height = 0;
      this.canvas.style.width = this.canvas.style.height = '0px';
      this.caption.textContent = run ? 'Waiting for the first attention rows…' : 'Generate some text to see its attention matrix.';
      return;
    }
    const ax = s.axes(AXES);
    const size = extent(s);
    const img = this.images.get(run.store, s.kind, s.layer, s.head, s.scale, ax.causal, size);
    const Q = size.queries;
    const K = size.keys;
    const avail = Math.max(200, this.frameWidth - 2);
    g.font = LABEL_FONT;
    const labelW = (list) => Math.min(110, 8 + Math.max(16, ...list.slice(0, 400).map((p) => this.#label(g, p).width)));
    const left = labelW(ax.queries.pieces);
    const top = labelW(ax.keys.pieces);
    const cell = clamp(Math.floor((avail - left - 4) / K), MIN_CELL, MAX_CELL);
    const width = left + K * cell + 4;
    const height = top + Q * cell + 4;
    this.layout = { left, top, cell, queries: Q, keys: K };
    sizeCanvas(this.canvas, width, height, dpr);
    this.canvas.dataset.kind = s.kind;
    this.canvas.dataset.layer = String(s.layer);
    this.canvas.dataset.head = String(s.head);
    this.canvas.dataset.queries = String(img.queries);
    this.canvas.dataset.keys = String(img.keys);
    Object.assign(this.canvas.dataset, { left: String(left), top: String(top), cell: String(cell) });  // geometry, for tools and tests
    this.canvas.setAttribute('aria-label', `Attention matrix, ${describeHead(s)}: ${Q} query rows × ${K} key columns. Arrow keys move a cell cursor and read its weight.`);
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    this.#draw(g, img, ax, { left, top, cell, Q, K, width, height });
    this.caption.textContent = `${describeHead(s)} · rows: queries (${img.queries}), columns: keys (${img.keys})`;
    if (this.hover && this.pointer) this.#showTip(this.hover, ...this.pointer);
  }

  // Label text and width per piece, measured once (pieces never change).
  #label(g, piece, maxWidth = Infinity) {
    let e = this.labels.get(piece);
    if (!e) {
      const text = visiblePiece(piece);
      e = { text, width: g.measureText(text).width, clipped: new Map() };
      this.labels.set(piece, e);
    }
    if (maxWidth === Infinity || e.width <= maxWidth) return e;
    let c = e.clipped.get(maxWidth);
    if (c === undefined) {
      c = clip(g, e.text, maxWidth);
      e.clipped.set(maxWidth, c);
    }
    return { text: c, width: maxWidth };
  }

  #draw(g, img, ax, { left, top, cell, Q, K, width, height }) {
    const s = this.state;
    g.clearRect(0, 0, width, height);
    g.fillStyle = cssVar('--masked');
    g.fillRect(left, top, K * cell, Q * cell);
    g.imageSmoothingEnabled = false;
    g.drawImage(img.canvas, 0, 0, K, Q, left, top, K * cell, Q * cell);
    if (cell >= 8) {
      g.strokeStyle = cssVar('--grid');
      g.lineWidth = 1;
      g.beginPath();
      for (let q = 0; q <= Q; q++) {
        g.moveTo(left, top + q * cell + 0.5);
        g.lineTo(left + K * cell, top + q * cell + 0.5);
      }
      for (let k = 0; k <= K; k++) {
        g.moveTo(left + k * cell + 0.5, top);
        g.lineTo(left + k * cell + 0.5, top + Q * cell);
      }
      g.stroke();
    }
    // labels: every token if there is room, else every n-th
    const ink = cssVar('--ink');
    const muted = cssVar('--muted');
    const accent = cssVar('--accent');
    g.font = LABEL_FONT;
    g.textBaseline = 'middle';
    const every = Math.max(1, Math.ceil(11 / cell));
    const sel = this.state.query;
    g.textAlign = 'right';
    for (let q = 0; q < Q; q++) {
      if (q % every && q !== sel) continue;
      g.fillStyle = q === sel ? accent : ax.queryAxis === 'target' && s.run.target.origin[q] === 'generated' ? ink : muted;
      if (q < ax.queries.pieces.length) g.fillText(this.#label(g, ax.queries.pieces[q], left - 8).text, left - 4, top + q * cell + cell / 2);
    }
    g.save();
    g.translate(left, top - 4);
    g.rotate(-Math.PI / 2);
    g.textAlign = 'left';
    for (let k = 0; k < K; k++) {
      if (k % every) continue;
      g.fillStyle = ax.keyAxis === 'target' && s.run.target.origin[k] === 'generated' ? ink : muted;
      if (k < ax.keys.pieces.length) g.fillText(this.#label(g, ax.keys.pieces[k], top - 8).text, 0, k * cell + cell / 2);
    }
    g.restore();
    // the selected query's row, the hovered / cursor cell
    if (sel !== null && sel < Q) {
      g.strokeStyle = accent;
      g.lineWidth = 2;
      g.strokeRect(left - 1, top + sel * cell - 1, K * cell + 2, cell + 2);
    }
    for (const c of [this.hover, this.cursor]) {
      if (!c || c.q >= Q || c.k >= K) continue;
      g.strokeStyle = ink;
      g.lineWidth = 2;
      g.strokeRect(left + c.k * cell, top + c.q * cell, cell, cell);
    }
  }

  /** A canvas of the current view for PNG export (page background, legend included). */
  exportCanvas() {
    const dpr = globalThis.devicePixelRatio || 1;
    const pad = 16 * dpr;
    const w = this.canvas.width + 2 * pad;
    const h2 = this.canvas.height + this.legend.height + 3 * pad + 20 * dpr;
    const out = document.createElement('canvas');
    out.width = w;
    out.height = h2;
    const g = out.getContext('2d');
    g.fillStyle = cssVar('--surface');
    g.fillRect(0, 0, w, h2);
    g.fillStyle = cssVar('--ink');
    g.font = `${13 * dpr}px system-ui, sans-serif`;
    g.textBaseline = 'top';
    g.fillText(this.caption.textContent, pad, pad);
    g.drawImage(this.canvas, pad, pad + 20 * dpr);
    g.drawImage(this.legend, pad, 2 * pad + 20 * dpr + this.canvas.height);
    return out;
  }
}

export function describeHead(s) {
  const kind = { self: 'self-attention', cross: 'cross-attention', encoder: 'encoder self-attention' }[s.kind];
  return `${kind}, layer ${s.layer}, ${s.head === HEAD_AVERAGE ? 'average of all heads' : `head ${s.head}`}`;
}

/** Sets a canvas's backing store and CSS size (only when they change: resizing reallocates). */
export function sizeCanvas(canvas, width, height, dpr) {
  const w = Math.round(width * dpr);
  const h2 = Math.round(height * dpr);
  if (canvas.width !== w) canvas.width = w;
  if (canvas.height !== h2) canvas.height = h2;
  const cw = `${width}px`;
  const ch = `${height}px`;
  if (canvas.style.width !== cw) canvas.style.width = cw;
  if (canvas.style.height !== ch) canvas.style.height = ch;
}

function clamp(x, lo, hi) {
  return Math.max(lo, Math.min(hi, x));
}

function clip(g, text, maxWidth) {
  if (g.measureText(text).width <= maxWidth) return text;
  let t = text;
  while (t.length > 1 && g.measureText(`${t}…`).width > maxWidth) t = t.slice(0, -1);
  return `${t}…`;
}
