// Small DOM and formatting helpers shared by the page's modules.

/** document.createElement with attributes ({class, dataset, on*: handlers, …}) and children. */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'class') el.className = v;
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k.startsWith('on') && typeof v === 'function') el.addEventListener(k.slice(2), v);
    else if (k === 'text') el.textContent = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat(Infinity)) if (c !== null && c !== undefined && c !== false) el.append(c);
  return el;
}

export const $ = (sel, root = document) => root.querySelector(sel);
export const $$ = (sel, root = document) => [...root.querySelectorAll(sel)];

/**
 * A row of role="tab" buttons (WAI-ARIA tabs): a click selects a tab, ← and → move the focus to the
 * previous or next one (wrapping) and select it. `select(tab)` shows the tab's panel.
 */
export function tabList(tabs, select) {
  for (const tab of tabs) {
    tab.addEventListener('click', () => select(tab));
    tab.addEventListener('keydown', (e) => {
      const step = e.key === 'ArrowRight' ? 1 : e.key === 'ArrowLeft' ? -1 : 0;
      if (!step) return;
      e.preventDefault();
      const next = tabs[(tabs.indexOf(tab) + step + tabs.length) % tabs.length];
      next.focus();
      select(next);
    });
  }
}

/** 1234567 → "1.23 MB" (decimal units, as file sizes are usually shown). */
export function formatBytes(n) {
  if (!Number.isFinite(n)) return '–';
  const units = ['B', 'kB', 'MB', 'GB', 'TB'];
  let i = 0;
  while (Math.abs(n) >= 1000 && i < units.length - 1) {
    n /= 1000;
    i++;
  }
  return `${i === 0 ? n : n.toFixed(n < 10 ? 2 : n < 100 ? 1 : 0)} ${units[i]}`;
}

/** 2222208 → "2.22 M". */
export function formatCount(n) {
  if (!Number.isFinite(n)) return '–';
  if (n >= 1e9) return `${(n / 1e9).toFixed(2)} B`;
  if (n >= 1e6) return `${(n / 1e6).toFixed(2)} M`;
  if (n >= 1e3) return `${(n / 1e3).toFixed(1)} k`;
  return String(n);
}

/**
 * The shortest decimal that reads back as the same float32: the exact value the engine computed,
 * without float64 noise (0.1f shows as 0.1, not 0.100000001).
 */
export function formatWeight(v) {
  if (!Number.isFinite(v)) return String(v);
  if (v === 0) return '0';
  const f = Math.fround(v);
  for (let p = 1; p <= 9; p++) {
    const s = f.toPrecision(p);
    if (Math.fround(Number(s)) === f) return String(Number(s));
  }
  return String(f);
}

const MARK_FIRST = /^\p{M}/u;
const ONLY_INVISIBLE = /^\p{Cf}+$/u;

/**
 * A piece whose characters would not show on their own made visible: one that starts with a
 * combining mark is drawn on a dotted circle ("◌̈", as Unicode's charts show a mark alone); one of
 * invisible format characters only (a ZWJ, a soft hyphen …) is written as their escapes ("\u200d").
 */
export function visibleMarks(s) {
  if (ONLY_INVISIBLE.test(s)) {
    return [...s].map((c) => {
      const cp = c.codePointAt(0).toString(16);
      return cp.length <= 4 ? `\\u${cp.padStart(4, '0')}` : `\\u{${cp}}`;
    }).join('');
  }
  return MARK_FIRST.test(s) ? `◌${s}` : s;
}

/** A token piece made visible as a label: spaces, newlines, tabs and control bytes shown. */
export function visiblePiece(s) {
  if (s === '') return '∅';
  return visibleMarks(s)
    .replace(/ /g, '␣')
    .replace(/\n/g, '↵')
    .replace(/\r/g, '␍')
    .replace(/\t/g, '⇥')
    .replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

/** Downloads a Blob under a file name. */
export function download(blob, name) {
  const url = URL.createObjectURL(blob);
  const a = h('a', { href: url, download: name });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

const cssCache = new Map();

/**
 * A CSS custom property of the page (:root), for canvas drawing. Cached: reading computed style
 * every frame would force a style recalculation; clearCssVars() when the colour scheme changes.
 */
export function cssVar(name) {
  let v = cssCache.get(name);
  if (v === undefined) {
    v = getComputedStyle(document.documentElement).getPropertyValue(name).trim();
    cssCache.set(name, v);
  }
  return v;
}

export function clearCssVars() {
  cssCache.clear();
}
