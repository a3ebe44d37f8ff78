// Token view, after BertViz's head view: queries in the left column, keys in the right, and from
// the focused query a line to every key it attends to — the line's opacity and width and the key's
// colour show the weight, the number is written next to it. Hover a query to focus it, click to pin
// it; the arrow keys move along the column.
import { AXES } from '../attention-store.mjs';
import { invalidate } from '../frame.mjs';
import { cssVar, h, visiblePiece } from '../format.mjs';
import { ChipList } from './chips.mjs';
import { focusQuery, focusWeights } from './focus.mjs';
import { summarise } from './text.mjs';

// What one frame does at most (the rest in the next frames: frame.mjs): a 100-token run's rows built
// and painted at once made a 21-58 ms main-thread task at its end (CPU; style, layout and paint included).
const NEW_ROWS_PER_FRAME = 40;
const PAINTS_PER_FRAME = 160;  // chips whose weight changes, past the rows on screen

export class TokensView {
  constructor(state, root) {
    this.state = state;
    this.root = root;
    const qList = h('ol', { class: 'col col-q', role: 'listbox', tabindex: '0', 'aria-label': 'Query tokens: ↑/↓ choose one, Esc unpins' });
    const kList = h('ol', { class: 'col col-k', 'aria-label': 'Key tokens, with the weight the query gives each' });
    this.canvas = h('canvas', { class: 'lines-canvas', 'aria-hidden': 'true' });
    this.queries = new ChipList(qList, { axis: 'queries', label: visiblePiece, className: 'tok tok-line' });
    this.keys = new ChipList(kList, { axis: 'keys', label: visiblePiece, weightLabel: true, className: 'tok tok-line' });
    this.head = h('div', { class: 'lines-head' }, h('span', { text: 'Query (attends from)' }), h('span'), h('span', { text: 'Key (attends to)' }));
    this.gutter = h('div', { class: 'lines-gutter' }, this.canvas);
    this.body = h('div', { class: 'lines-body' }, qList, this.gutter, kList);
    this.summary = h('p', { class: 'focus-summary' });
    this.caption = h('p', { class: 'view-caption' });
    this.scroller = h('div', { class: 'lines-scroll' }, this.body);
    // How a piece is written (the engine's labels, model.pieces; visiblePiece adds ␣)
    this.legend = h('p', {
      class: 'view-caption piece-legend',
      text: 'Pieces: ␣ is a space, \\n a newline, \\t a tab, \\u200d an invisible character, ◌ the base of a mark shown alone; <0xF0> is one byte of a character split over several tokens.',
    });
    root.append(this.caption, this.summary, this.head, this.scroller, this.legend);
    this.qList = qList;
    this.kList = kList;
    // The layout is read in measure(), which frame.mjs calls before any view of the frame changes the
    // DOM, never in render(): a read after render()'s own changes forced a second layout in every
    // frame that drew this view (with the views drawn in one frame: 38 ms of a 64-token run's main
    // thread in a JS profile).
    this.geometry = { top: 0, pitch: 24, rowH: 22, width: 0, viewH: 0, maxViewH: NaN, bodyH: 0, scrollTop: 0 };
    this.retried = false;  // render() asked for one more frame, the body not laid out when measured
    this.scroller.addEventListener('scroll', () => invalidate(this), { passive: true });
    this.#wire();
  }

  get visible() {
    return this.state.view === 'tokens';
  }

  #wire() {
    const indexOf = (e) => {
      const chip = e.target.closest?.('li[data-i]');
      return chip && this.qList.contains(chip) ? Number(chip.dataset.i) : null;
    };
    this.qList.addEventListener('pointerover', (e) => {
      const i = indexOf(e);
      if (i !== null && !this.state.pinned) this.state.set({ query: i });
    });
    this.qList.addEventListener('pointerleave', () => {
      if (!this.state.pinned) this.state.set({ query: null });
    });
    this.qList.addEventListener('click', (e) => {
      const i = indexOf(e);
      if (i === null) return;
      const s = this.state;
      if (s.pinned && s.query === i) s.set({ pinned: false, query: null });
      else s.set({ query: i, pinned: true });
    });
    this.qList.addEventListener('keydown', (e) => {
      const n = this.queries.chips.length;
      if (!n) return;
      const cur = this.state.query ?? focusQuery(this.state) ?? 0;
      const next = { ArrowDown: cur + 1, ArrowRight: cur + 1, ArrowUp: cur - 1, ArrowLeft: cur - 1, Home: 0, End: n - 1, Enter: cur, ' ': cur }[e.key];
      if (e.key === 'Escape') {
        e.preventDefault();
        this.state.set({ pinned: false, query: null });
        return;
      }
      if (next === undefined) return;
      e.preventDefault();
      const q = Math.max(0, Math.min(n - 1, next));
      this.state.set({ query: q, pinned: true });
      this.queries.chips[q]?.scrollIntoView({ block: 'nearest' });
    });
  }

  /** Draws the view; true when rows are left for the next frames (frame.mjs). */
  render() {
    if (!this.visible) return false;
    const s = this.state;
    const run = s.run;
    if (!run) {
      this.caption.textContent = 'Generate some text, then point at a token to see where it looks.';
      this.body.hidden = this.head.hidden = true;
      this.summary.textContent = '';
      return false;
    }
    this.body.hidden = this.head.hidden = false;
    // The rows on screen get their weights first. While tokens stream in, only they do: the focused
    // query is the newest token, so every redraw would otherwise restyle every row (bench/README.md,
    // streaming); once the run is over, the other rows follow, PAINTS_PER_FRAME a frame.
    const ax = s.axes(AXES);
    const queriesBuilt = this.queries.sync(ax.queries, NEW_ROWS_PER_FRAME);
    const keysBuilt = this.keys.sync(ax.keys, NEW_ROWS_PER_FRAME);
    const layout = this.#layout();
    const onScreen = this.#rowsOnScreen(layout);
    const q = focusQuery(s);
    const focus = q === null ? null : focusWeights(s, q, ax.keys.ids.length);
    this.queries.paint(null, s.scale, q, onScreen);
    this.keys.paint(focus, s.scale, null, onScreen);
    let painted = true;
    if (run.status !== 'running') {
      const queriesPainted = this.queries.paint(null, s.scale, q, null, PAINTS_PER_FRAME);
      const keysPainted = this.keys.paint(focus, s.scale, null, null, PAINTS_PER_FRAME);
      painted = queriesPainted && keysPainted;
    }
    this.body.dataset.query = q === null ? '' : String(q);
    this.body.dataset.kind = s.kind;
    this.body.dataset.layer = String(s.layer);
    this.body.dataset.head = String(s.head);
    setText(this.summary, focus ? summarise(s, ax, focus) : '');
    setText(this.caption, 'Lines from the query token to every key it attends to; opacity and width ∝ weight.');
    this.accent = cssVar('--accent');
    this.#lines(focus, layout);
    // measured while the body was hidden (a run's first frame): draw the lines again once it is laid out
    const unmeasured = !(layout.width > 0) && !this.retried;
    this.retried = unmeasured;
    return !(queriesBuilt && keysBuilt && painted) || unmeasured;
  }

  /**
   * Reads the layout this frame's render() draws from (frame.mjs calls it before any view of the
   * frame changes the DOM). Rows are fixed-size boxes (app.css .tok-line): row i starts at
   * top + i × pitch in the body's coordinates.
   */
  measure() {
    if (!this.visible || this.body.hidden) return;
    const g = this.geometry;
    const chips = this.queries.chips;
    g.top = chips[0]?.offsetTop ?? 0;
    if (chips.length > 1) g.pitch = chips[1].offsetTop - chips[0].offsetTop;
    if (chips.length) g.rowH = chips[0].offsetHeight;
    g.width = this.gutter.clientWidth;
    g.viewH = this.scroller.clientHeight;
    // the most it shows before it scrolls (app.css: max-height, with its border and scrollbar)
    g.maxViewH = parseFloat(getComputedStyle(this.scroller).maxHeight) - (this.scroller.offsetHeight - g.viewH);
    g.bodyH = this.body.offsetHeight;
    g.scrollTop = this.scroller.scrollTop;
  }

  // What this frame draws with: the last measurement and the rows there are now. The lines canvas
  // covers the rows' height, up to what the scroller shows (its height when it scrolled, else its
  // max-height): taken from the rows, not from the body, whose height the canvas itself holds up (a
  // short run after a long one would keep the long one's height).
  #layout() {
    const g = this.geometry;
    const rowsH = g.top + this.queries.chips.length * g.pitch;
    const shown = g.viewH < g.bodyH ? g.viewH : g.maxViewH || Infinity;
    return { top: g.top, pitch: g.pitch, rowH: g.rowH, width: g.width, height: Math.min(rowsH, shown), scrollTop: g.scrollTop };
  }

  // The rows in the scroller's viewport and a viewport's height on either side (the scroll handler
  // redraws as it moves). null before two rows exist (all rows).
  #rowsOnScreen({ top, pitch, height, scrollTop }) {
    if (this.queries.chips.length < 2 || !(pitch > 0) || !(height > 0)) return null;
    const view = Math.ceil(height / pitch);
    const first = Math.floor((scrollTop - top) / pitch);
    return { from: first - view, to: first + 2 * view + 1 };
  }

  // The lines canvas covers only the visible part of the scrolling columns (it is sticky in the
  // gutter), and chip positions come from the row pitch, not from reading every chip's layout:
  // the cost per frame stays flat however many tokens stream in.
  #lines(focus, { top, pitch, rowH, width, height, scrollTop }) {
    const dpr = globalThis.devicePixelRatio || 1;
    const chips = this.queries.chips;
    const bw = Math.round(width * dpr);
    const bh = Math.round(height * dpr);
    if (this.canvas.width !== bw) this.canvas.width = bw;
    if (this.canvas.height !== bh) this.canvas.height = bh;
    const ch = `${height}px`;
    if (this.canvas.style.height !== ch) this.canvas.style.height = ch;
    const g = this.canvas.getContext('2d');
    g.setTransform(dpr, 0, 0, dpr, 0, 0);
    g.clearRect(0, 0, width, height);
    if (!focus || focus.missing || !chips[focus.q]) return;
    const yOf = (i) => top + i * pitch + rowH / 2 - scrollTop;
    const y0 = yOf(focus.q);
    g.strokeStyle = this.accent;
    g.lineCap = 'round';
    const s = this.state;
    for (let k = 0; k < focus.weights.length; k++) {
      const w = focus.weights[k];
      if (focus.masked[k] || w <= 0 || k >= this.keys.chips.length) continue;
      const p = s.scale.position(w);
      if (p < 0.02) continue;
      const y1 = yOf(k);
      if ((y0 < 0 && y1 < 0) || (y0 > height && y1 > height)) continue;
      g.globalAlpha = Math.min(1, 0.1 + p);
      g.lineWidth = 0.75 + 3.25 * p;
      g.beginPath();
      g.moveTo(0, y0);
      g.bezierCurveTo(width * 0.5, y0, width * 0.5, y1, width, y1);
      g.stroke();
    }
    g.globalAlpha = 1;
  }

  /** The view drawn on one canvas (chips, lines, numbers) for PNG export. */
  exportCanvas() {
    const dpr = globalThis.devicePixelRatio || 1;
    const body = this.body.getBoundingClientRect();
    const pad = 16;
    const out = document.createElement('canvas');
    const W = body.width + 2 * pad;
    const H = this.body.scrollHeight + 2 * pad + 24;
    out.width = Math.round(W * dpr);
    out.height = Math.round(H * dpr);
    const g = out.getContext('2d');
    g.scale(dpr, dpr);
    g.fillStyle = cssVar('--surface');
    g.fillRect(0, 0, W, H);
    g.fillStyle = cssVar('--ink');
    g.font = '13px system-ui, sans-serif';
    g.textBaseline = 'top';
    g.fillText(this.summary.textContent, pad, pad, W - 2 * pad);
    const top = pad + 24;
    const chipFont = '12px ui-monospace, Menlo, Consolas, monospace';
    for (const list of [this.queries, this.keys]) {
      for (const chip of list.chips) {
        const x = chip.offsetLeft + pad;
        const y = chip.offsetTop + top;
        const cs = getComputedStyle(chip);
        g.fillStyle = cs.backgroundColor;
        g.fillRect(x, y, chip.offsetWidth, chip.offsetHeight - 2);
        g.fillStyle = cs.color;
        g.font = chipFont;
        g.textBaseline = 'middle';
        g.fillText(chip.textContent, x + 6, y + chip.offsetHeight / 2 - 1, chip.offsetWidth - 8);
      }
    }
    // the lines again, over the whole height (the on-screen canvas only covers the visible part)
    const focus = focusWeights(this.state, focusQuery(this.state), this.keys.chips.length);
    const chips = this.queries.chips;
    const from = chips[focus.q];
    if (from && !focus.missing) {
      const x0 = this.gutter.offsetLeft + pad;
      const x1 = x0 + this.gutter.clientWidth;
      const y0 = top + from.offsetTop + from.offsetHeight / 2;
      g.strokeStyle = cssVar('--accent');
      g.lineCap = 'round';
      focus.weights.forEach((w, k) => {
        const to = this.keys.chips[k];
        const p = this.state.scale.position(w);
        if (!to || focus.masked[k] || p < 0.02) return;
        const y1 = top + to.offsetTop + to.offsetHeight / 2;
        g.globalAlpha = Math.min(1, 0.1 + p);
        g.lineWidth = 0.75 + 3.25 * p;
        g.beginPath();
        g.moveTo(x0, y0);
        g.bezierCurveTo((x0 + x1) / 2, y0, (x0 + x1) / 2, y1, x1, y1);
        g.stroke();
      });
      g.globalAlpha = 1;
    }
    return out;
  }
}

function setText(el, text) {
  if (el.textContent !== text) el.textContent = text;
}
