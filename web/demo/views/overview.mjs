// Model overview: every layer × head of the chosen attention kind as a small heatmap (plus each
// layer's average over heads), drawn on one canvas from the incremental heat images. Click a
// thumbnail (or move with the arrow keys and press Enter) to open it in the matrix view.
import { AXES } from '../attention-store.mjs';
import { invalidate } from '../frame.mjs';
import { cssVar, h } from '../format.mjs';
import { HEAD_AVERAGE } from '../state.mjs';
import { extent } from './focus.mjs';
import { sizeCanvas } from './matrix.mjs';

const FONT = '11px system-ui, -apple-system, "Segoe UI", sans-serif';

export class OverviewView {
  constructor(state, images, root) {
    this.state = state;
    this.images = images;
    this.canvas = h('canvas', { class: 'overview-canvas', tabindex: '0', role: 'img', 'aria-label': 'All layers and heads' });
    this.caption = h('p', { class: 'view-caption' });
    this.frame = h('div', { class: 'overview-frame' }, this.canvas);
    this.readout = h('p', { class: 'readout', 'aria-live': 'polite' });
    root.append(this.caption, this.frame, this.readout);
    this.hover = null;  // {layer, head}
    this.cursor = null;
    this.layout = null;
    this.canvas.addEventListener('pointermove', (e) => {
      this.hover = this.#at(e);
      this.canvas.classList.toggle('is-pointing', !!this.hover);
      invalidate(this);
    });
    this.canvas.addEventListener('pointerleave', () => {
      this.hover = null;
      invalidate(this);
    });
    this.canvas.addEventListener('click', (e) => {
      const t = this.#at(e);
      if (t) this.#open(t);
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
    return this.state.view === 'overview';
  }

  #columns() {
    const heads = this.state.run?.store.heads(this.state.kind) ?? 0;
    return [...Array.from({ length: heads }, (_, i) => i), HEAD_AVERAGE];
  }

  #at(e) {
    const L = this.layout;
    if (!L) return null;
    const r = this.canvas.getBoundingClientRect();
    const x = e.clientX - r.left - L.left;
    const y = e.clientY - r.top - L.top;
    const c = Math.floor(x / L.pitch);
    const row = Math.floor(y / L.pitch);
    if (x < 0 || y < 0 || c >= L.columns.length || row >= L.layers.length) return null;
    if (x - c * L.pitch > L.size || y - row * L.pitch > L.size) return null;
    return { layer: L.layers[row], head: L.columns[c] };
  }

  #open(t) {
    this.state.set({ layer: t.layer, head: t.head, view: 'matrix' });
  }

  #key(e) {
    const L = this.layout;
    if (!L) return;
    const cur = this.cursor ?? { layer: this.state.layer, head: this.state.head };
    let row = Math.max(0, L.layers.indexOf(cur.layer));
    let col = Math.max(0, L.columns.indexOf(cur.head));
    if (e.key === 'ArrowUp') row--;
    else if (e.key === 'ArrowDown') row++;
    else if (e.key === 'ArrowLeft') col--;
    else if (e.key === 'ArrowRight') col++;
    else if (e.key === 'Enter' || e.key === ' ') {
      e.preventDefault();
      this.#open(cur);
      return;
    } else return;
    e.preventDefault();
    row = Math.max(0, Math.min(L.layers.length - 1, row));
    col = Math.max(0, Math.min(L.columns.length - 1, col));
    this.cursor = { layer: L.layers[row], head: L.columns[col] };
    this.readout.textContent = `Layer ${this.cursor.layer}, ${this.cursor.head === HEAD_AVERAGE ? 'average of heads' : `head ${this.cursor.head}`} — Enter opens it`;
    invalidate(this);
  }

  render() {
    if (!this.visible) return;
    const s = this.state;
    const run = s.run;
    const layers = run?.store.layers(s.kind) ?? [];
    if (!run || !layers.length || !run.store.queryCount(s.kind)) {
      this.layout = null;
      sizeCanvas(this.canvas, 0, 0, 1);
      this.caption.textContent = run ? 'Waiting for the first attention rows…' : 'Generate some text to see every head of every layer.';
      return;
    }
    const columns = this.#columns();
    const dpr = globalThis.devicePixelRatio || 1;
    const left = 64;
    const top = 22;
    const gap = 6;
    const avail = Math.max(240, this.frameWidth - 2);
    const size = Math.max(24, Math.min(120, Math.floor((avail - left) / columns.length) - gap));
    const pitch = size + gap;
    const width = left + columns.length * pitch;
    const height = top + layers.length * pitch;
    this.layout = { left, top, size, pitch, layers, columns };
    sizeCanvas(this.canvas, width, height, dpr);
    const g = this.canvas.getContext('2d');
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, width, height);
    g.font = FONT;
    g.textBaseline = 'middle';
    const ink = cssVar('--ink');
    const muted = cssVar('--muted');
    const accent = cssVar('--accent');
    const masked = cssVar('--masked');
    g.fillStyle = muted;
    g.textAlign = 'center';
    columns.forEach((c, i) => g.fillText(c === HEAD_AVERAGE ? 'avg' : `H${c}`, left + i * pitch + size / 2, top / 2));
    g.textAlign = 'right';
    const causal = AXES[s.kind].causal;
    const ext = extent(s);
    layers.forEach((l, r) => {
      const y = top + r * pitch;
      g.fillStyle = muted;
      g.fillText(`Layer ${l}`, left - 10, y + size / 2);
      columns.forEach((c, i) => {
        const x = left + i * pitch;
        const img = this.images.get(run.store, s.kind, l, c, s.scale, causal, ext);
        g.fillStyle = masked;
        g.fillRect(x, y, size, size);
        g.imageSmoothingEnabled = ext.queries > size;  // smooth when shrinking, crisp cells when enlarging
        g.drawImage(img.canvas, 0, 0, ext.keys, ext.queries, x, y, size, size);
      });
    });
    const outline = (t, colour, w) => {
      if (!t) return;
      const r = layers.indexOf(t.layer);
      const i = columns.indexOf(t.head);
      if (r < 0 || i < 0) return;
      g.strokeStyle = colour;
      g.lineWidth = w;
      g.strokeRect(left + i * pitch - w / 2 - 1, top + r * pitch - w / 2 - 1, size + w + 2, size + w + 2);
    };
    outline({ layer: s.layer, head: s.head }, accent, 2.5);
    outline(this.hover, ink, 1.5);
    outline(this.cursor, ink, 1.5);
    this.canvas.dataset.layers = String(layers.length);
    this.canvas.dataset.heads = String(columns.length - 1);
    Object.assign(this.canvas.dataset, { left: String(left), top: String(top), pitch: String(pitch), size: String(size) });
    this.canvas.setAttribute('aria-label', `Overview: ${layers.length} layers × ${columns.length - 1} heads and their averages. Arrow keys choose one, Enter opens it in the matrix view.`);
    this.caption.textContent = `${layers.length} layers × ${columns.length - 1} heads · ${run.store.queryCount(s.kind)} tokens · click one to open it`;
  }

  exportCanvas() {
    const out = document.createElement('canvas');
    const pad = 16 * (globalThis.devicePixelRatio || 1);
    out.width = this.canvas.width + 2 * pad;
    out.height = this.canvas.height + 2 * pad;
    const g = out.getContext('2d');
    g.fillStyle = cssVar('--surface');
    g.fillRect(0, 0, out.width, out.height);
    g.drawImage(this.canvas, pad, pad);
    return out;
  }
}
