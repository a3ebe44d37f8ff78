// A labelled layer × column grid of coloured cells (heads, or positions), as an HTML table: each
// cell shows its value and, when the grid is interactive, is a button (click or Enter/Space). Used by
// the heads, ablation and patching views.
import { h } from '../format.mjs';

/**
 * rows: labels of the rows (layers); columns: labels of the columns; cell(r, c) → { text, bg, ink,
 * title, pressed?, label } or null; onPick(r, c) makes cells buttons. Returns the <table>.
 */
export function grid({ rows, columns, cell, onPick, caption, className = '' }) {
  const table = h('table', { class: `grid ${className}`.trim() });
  if (caption) table.append(h('caption', { class: 'grid-caption', text: caption }));
  table.append(h('thead', {}, h('tr', {}, h('th', { scope: 'col', class: 'grid-corner' }), columns.map((c) => h('th', { scope: 'col', text: c })))));
  const body = h('tbody');
  rows.forEach((label, r) => {
    const tr = h('tr', {}, h('th', { scope: 'row', text: label }));
    columns.forEach((_, c) => {
      const v = cell(r, c);
      const td = h('td');
      if (v) {
        const el = onPick
          ? h('button', { type: 'button', class: 'grid-cell', title: v.title, 'aria-label': v.label ?? v.title, 'aria-pressed': v.pressed === undefined ? undefined : String(v.pressed), dataset: { row: r, col: c }, onclick: () => onPick(r, c), text: v.text })
          : h('span', { class: 'grid-cell', title: v.title, dataset: { row: r, col: c }, text: v.text });
        paint(el, v.bg, v.ink);
        td.append(el);
      }
      tr.append(td);
    });
    body.append(tr);
  });
  table.append(body);
  return table;
}

/**
 * Sets an element's colours through the CSSOM (the page's Content-Security-Policy allows no inline
 * style attributes). Returns the element.
 */
export function paint(el, background, color) {
  if (background) el.style.background = background;
  if (color) el.style.color = color;
  return el;
}

/** A diverging, colour-blind-safe scale (purple – light grey – orange) for values in [−1, 1]. */
export function diverging(t) {
  const x = Math.max(-1, Math.min(1, Number.isFinite(t) ? t : 0));
  const mid = [240, 240, 236];
  const end = x < 0 ? [94, 60, 153] : [230, 97, 1];
  const a = Math.abs(x);
  const [r, g, b] = mid.map((m, i) => Math.round(m + (end[i] - m) * a));
  const lum = 0.2126 * (r / 255) ** 2.2 + 0.7152 * (g / 255) ** 2.2 + 0.0722 * (b / 255) ** 2.2;
  return { bg: `rgb(${r} ${g} ${b})`, ink: lum > 0.28 ? '#111' : '#fff' };
}
