// The text view: the prompt and its continuation as token chips (source and target for an
// encoder–decoder). Point at a token — or focus the list and use ←/→, Home/End; Enter pins, Esc
// unpins — and every token it attends to lights up by weight, for the chosen layer and head.
import { AXES } from '../attention-store.mjs';
import { formatWeight, h, visibleMarks, visiblePiece } from '../format.mjs';
import { describeHead } from './matrix.mjs';
import { ChipList } from './chips.mjs';
import { focusQuery, focusWeights } from './focus.mjs';

const textLabel = (p) => visibleMarks(p).replace(/\n/g, '↵\n') || '∅';

export class TextView {
  constructor(state, root) {
    this.state = state;
    this.lists = {};
    this.rows = {};
    for (const axis of ['source', 'target']) {
      const list = h('ol', { class: 'seq', role: 'listbox', 'aria-orientation': 'horizontal', dataset: { axis } });
      const label = h('span', { class: 'seq-label', text: axis === 'source' ? 'Source' : 'Target' });
      this.rows[axis] = h('div', { class: 'seq-row', dataset: { axis } }, label, list);
      this.lists[axis] = new ChipList(list, { axis, label: textLabel });
      this.#wire(list, axis);
    }
    this.summary = h('p', { class: 'focus-summary', 'aria-live': 'polite' });
    this.note = h('p', { class: 'row-note' });
    this.empty = h('p', { class: 'empty', text: 'Your text and the model’s continuation appear here, one chip per token.' });
    root.append(this.empty, this.rows.source, this.rows.target, this.summary, this.note);
  }

  #queryAxis() {
    return AXES[this.state.kind].queries;
  }

  #wire(list, axis) {
    const indexOf = (e) => {
      const chip = e.target.closest?.('li[data-i]');
      return chip && list.contains(chip) ? Number(chip.dataset.i) : null;
    };
    list.addEventListener('pointerover', (e) => {
      const i = indexOf(e);
      if (i === null || this.state.pinned) return;
      // A key token of cross-attention (a source token): its column — who attends to it — is shown.
      if (axis === AXES[this.state.kind].keys && axis !== this.#queryAxis()) this.state.set({ key: i, query: null });
      else if (axis === this.#queryAxis()) this.state.set({ query: i, key: null });
    });
    list.addEventListener('pointerleave', () => {
      if (!this.state.pinned) this.state.set({ query: null, key: null });
    });
    list.addEventListener('click', (e) => {
      const i = indexOf(e);
      if (i === null || axis !== this.#queryAxis()) return;
      const s = this.state;
      if (s.pinned && s.query === i) s.set({ pinned: false, query: null });
      else s.set({ query: i, pinned: true });
    });
    list.addEventListener('keydown', (e) => {
      if (axis !== this.#queryAxis()) return;
      const n = this.lists[axis].chips.length;
      if (!n) return;
      const cur = this.state.query ?? focusQuery(this.state) ?? 0;
      let next = null;
      if (e.key === 'ArrowRight' || e.key === 'ArrowDown') next = Math.min(n - 1, cur + 1);
      else if (e.key === 'ArrowLeft' || e.key === 'ArrowUp') next = Math.max(0, cur - 1);
      else if (e.key === 'Home') next = 0;
      else if (e.key === 'End') next = n - 1;
      else if (e.key === 'Enter' || e.key === ' ') next = cur;
      else if (e.key === 'Escape') {
        this.state.set({ pinned: false, query: null });
        e.preventDefault();
        return;
      }
      if (next === null) return;
      e.preventDefault();
      this.state.set({ query: next, pinned: true });
      this.lists[axis].chips[next]?.scrollIntoView({ block: 'nearest' });
    });
  }

  render() {
    const s = this.state;
    const run = s.run;
    this.empty.hidden = !!run;
    this.rows.source.hidden = !(run?.encoderDecoder || run?.encoderOnly);
    this.rows.target.hidden = !run || !!run.encoderOnly;
    if (!run) {
      this.summary.textContent = '';
      this.note.textContent = '';
      return;
    }
    const ax = s.axes(AXES);
    const column = s.key !== null && !s.pinned && ax.queryAxis !== ax.keyAxis ? keyColumn(s, ax, s.key) : null;
    const q = column ? null : focusQuery(s);
    const focus = q === null ? null : focusWeights(s, q, ax.keys.ids.length);
    for (const axis of ['source', 'target']) {
      const list = this.lists[axis];
      list.sync(run.tokens(axis));
      const isQ = axis === ax.queryAxis;
      const isK = axis === ax.keyAxis;
      if (column) list.paint(isQ ? column : null, s.scale, null);
      else list.paint(isK ? focus : null, s.scale, isQ ? q : null);
      list.chips.forEach((c, i) => c.classList.toggle('is-key', !!column && isK && i === s.key));
      list.root.setAttribute('aria-label', isQ ? `${axis} tokens: ←/→ choose the query token, Enter pins it, Esc unpins` : `${axis} tokens`);
      list.root.tabIndex = isQ ? 0 : -1;
      list.root.classList.toggle('is-query-axis', isQ);
    }
    this.summary.textContent = column ? summariseColumn(s, ax, column) : q === null ? '' : summarise(s, ax, focus);
    this.summary.dataset.query = q === null ? '' : String(q);
    this.summary.dataset.key = column ? String(s.key) : '';
    this.note.textContent = run.lastRowNote;
  }
}

/**
 * The other way round (cross-attention): how much every query (target token) gives key k (a source
 * token): { weights over the queries, masked, missing: false, key }.
 */
function keyColumn(s, ax, k) {
  const n = ax.queries.ids.length;
  const weights = new Array(n);
  const masked = new Array(n);
  for (let q = 0; q < n; q++) {
    const v = s.run.store.value(s.kind, s.layer, s.head, q, k);
    masked[q] = Number.isNaN(v);
    weights[q] = masked[q] ? 0 : v;
  }
  return { key: k, weights, masked, missing: false };
}

/** "«2021» #3 (source) ← «20» 0.71 · «21» 0.64 · … (cross-attention, layer 1, average)" */
function summariseColumn(s, ax, col) {
  const piece = visiblePiece(ax.keys.pieces[col.key] ?? '');
  const top = col.weights
    .map((w, q) => ({ w, q }))
    .filter((x) => !col.masked[x.q])
    .sort((a, b) => b.w - a.w)
    .slice(0, 3)
    .map(({ w, q }) => `«${visiblePiece(ax.queries.pieces[q] ?? '')}» #${q} ${formatWeight(w)}`);
  return `«${piece}» #${col.key} (${ax.keyAxis}) ← attended by ${top.join(' · ')} · ${describeHead(s)}`;
}

/** "«God» #2 (pinned) · self-attention, layer 1, head 3 → «And» 0.61 · «said» 0.12 · …" */
export function summarise(s, ax, focus) {
  const piece = visiblePiece(ax.queries.pieces[focus.q] ?? '');
  const head = describeHead(s);
  if (focus.missing) return `«${piece}» #${focus.q} · ${head}: not computed yet (its row arrives with the next token).`;
  const top = focus.weights
    .map((w, k) => ({ w, k }))
    .filter((x) => !focus.masked[x.k])
    .sort((a, b) => b.w - a.w)
    .slice(0, 3)
    .map(({ w, k }) => `«${visiblePiece(ax.keys.pieces[k] ?? '')}» #${k} ${formatWeight(w)}`);
  return `«${piece}» #${focus.q}${s.pinned ? ' (pinned)' : ''} · ${head} → ${top.join(' · ')}`;
}
