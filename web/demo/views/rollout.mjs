// Attention rollout (Abnar & Zuidema 2020): each layer's attention averaged over heads, with the
// residual connection as an identity term (0.5·A + 0.5·I, rows renormalized), multiplied through
// the layers. Row i of the rollout after layer l: how much of position i's representation there
// traces back to each input token. Computed by the engine (forward({ rollout: true })).
import { drawLegend } from '../colour.mjs';
import { invalidate } from '../frame.mjs';
import { cssVar, h, visiblePiece } from '../format.mjs';
import { sizeCanvas } from './matrix.mjs';

const LABEL_FONT = '11px ui-monospace, SFMono-Regular, Menlo, Consolas, "DejaVu Sans Mono", monospace';

export class RolloutView {
  constructor(analysis, root) {
    this.analysis = analysis;
    this.layer = null;  // null = the last layer
    this.layerSelect = h('select', { id: 'rollout-layer' });
    this.layerSelect.addEventListener('change', () => { this.layer = Number(this.layerSelect.value); invalidate(this); });
    this.canvas = h('canvas', { class: 'matrix-canvas rollout-canvas', role: 'img', 'aria-label': 'Attention rollout' });
    this.legend = h('canvas', { class: 'legend', 'aria-hidden': 'true' });
    this.caption = h('p', { class: 'view-caption' });
    this.readout = h('p', { class: 'readout', 'aria-live': 'polite' });
    this.frame = h('div', { class: 'matrix-frame' }, this.canvas);
    root.append(
      h('div', { class: 'toolbar analysis-toolbar' }, h('label', { class: 'tool' }, h('span', { text: 'Through layer' }), this.layerSelect)),
      this.caption, this.frame, h('div', { class: 'legend-row' }, this.legend, this.readout));
    this.layout = null;
    this.canvas.addEventListener('pointermove', (e) => this.#pointer(e));
    this.frameWidth = 0;  // measure()
    new ResizeObserver(() => invalidate(this)).observe(this.frame);
  }

  /** The frame's width, read before any view of the frame changes the DOM (frame.mjs). */
  measure() {
    this.frameWidth = this.frame.clientWidth;
  }

  reset() {
    this.layer = null;
  }

  #pointer(e) {
    const L = this.layout;
    if (!L) return;
    const r = this.canvas.getBoundingClientRect();
    const k = Math.floor((e.clientX - r.left - L.left) / L.cell);
    const q = Math.floor((e.clientY - r.top - L.top) / L.cell);
    if (q < 0 || k < 0 || q >= L.n || k >= L.n) return;
    const v = L.data[q * L.n + k];
    this.readout.textContent = `${visiblePiece(L.pieces[q])} ← ${visiblePiece(L.pieces[k])}: ${v.toFixed(4)}`;
  }

  render() {
    const { state } = this.analysis;
    const run = state.run;
    const r = this.analysis.resultOf(run);
    const value = r?.value;
    if (!value?.rollout) {
      this.caption.textContent = !run ? 'Generate some text to see where each position\u2019s information comes from.'
        : r?.error ? `The forward pass failed: ${r.error.message}` : r ? 'Computing the rollout…' : 'The rollout appears when generation ends.';
      this.layout = null;
      this.layerSelect.replaceChildren();
      this.readout.textContent = '';
      sizeCanvas(this.canvas, 1, 1, 1);
      return;
    }
    const [layers, n] = value.rolloutShape;
    const layer = this.layer === null || this.layer >= layers ? layers - 1 : this.layer;
    this.layerSelect.replaceChildren(...Array.from({ length: layers }, (_, l) => h('option', { value: l, text: l === layers - 1 ? `${l} (all layers)` : String(l) })));
    this.layerSelect.value = String(layer);
    this.caption.textContent = `Rollout through layer ${layer} (${value.heads?.kind ?? 'self'} attention, heads averaged, residual as 0.5·I): row = position, column = input token it draws on.`;
    const data = value.rollout.subarray(layer * n * n, (layer + 1) * n * n);
    const pieces = run.target.pieces.slice(0, n);
    const scale = state.scale;
    const dpr = window.devicePixelRatio || 1;
    const avail = Math.max(200, this.frameWidth - 10);
    const label = 70;
    const cell = Math.max(2, Math.min(24, Math.floor((avail - label) / n)));
    const width = label + cell * n;
    const height = label + cell * n;
    sizeCanvas(this.canvas, width, height, dpr);
    const g = this.canvas.getContext('2d');
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, width, height);
    // Rollout rows are spread thin over many tokens: colour relative to the largest entry.
    let max = 0;
    for (const v of data) if (v > max) max = v;
    const img = g.createImageData(n, n);
    for (let i = 0; i < n * n; i++) {
      const [rr, gg, bb] = scale.rgb(data[i] / (max || 1));
      img.data[i * 4] = rr;
      img.data[i * 4 + 1] = gg;
      img.data[i * 4 + 2] = bb;
      img.data[i * 4 + 3] = 255;
    }
    const tile = document.createElement('canvas');
    tile.width = n;
    tile.height = n;
    tile.getContext('2d').putImageData(img, 0, 0);
    g.imageSmoothingEnabled = false;
    g.drawImage(tile, label, label, cell * n, cell * n);
    if (cell >= 9) {
      g.font = LABEL_FONT;
      g.fillStyle = cssVar('--muted');
      g.textAlign = 'right';
      g.textBaseline = 'middle';
      pieces.forEach((p, i) => g.fillText(visiblePiece(p).slice(0, 9), label - 4, label + (i + 0.5) * cell));
    }
    this.layout = { left: label, top: label, cell, n, data, pieces };
    drawLegend(this.legend, scale, { ink: cssVar('--muted') });
    this.readout.textContent ||= `largest entry ${max.toFixed(3)}`;
  }
}
