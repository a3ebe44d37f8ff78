// The text view: the prompt and its continuation as token chips (source and target for an
// encoder–decoder). Point at a token — or focus the list and use ←/→, Home/End; Enter pins, Esc
// unpins — and every token it attends to lights up by weight, for the chosen layer and head.
import { AXES } from '../attention-store.mjs';
import { formatWeight, h, visiblePiece } from '../format.mjs';
import { describeHead } from './matrix.mjs';
import { ChipList } from './chips.mjs';
import { focusQuery, focusWeights } from './focus.mjs';

const textLabel = (p) => p.replace(/\n/g, '↵\n') || '∅';

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
      if (i === null || axis !== this.#queryAxis() || this.state.pinned) return;
      this.state.set({ query: i });
    });
    list.addEventListener('pointerleave', () => {
      if (!this.state.pinned) this.state.set({ query: null });
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
    this.rows.source.hidden = !run?.encoderDecoder;
    this.rows.target.hidden = !run;
    if (!run) {
      this.summary.textContent = '';
      this.note.textContent = '';
      return;
    }
    const ax = s.axes(AXES);
    const q = focusQuery(s);
    const focus = q === null ? null : focusWeights(s, q, ax.keys.ids.length);
    for (const axis of ['source', 'target']) {
      const list = this.lists[axis];
      list.sync(run.tokens(axis));
      const isQ = axis === ax.queryAxis;
      const isK = axis === ax.keyAxis;
      list.paint(isK ? focus : null, s.scale, isQ ? q : null);
      list.root.setAttribute('aria-label', isQ ? `${axis} tokens: ←/→ choose the query token, Enter pins it, Esc unpins` : `${axis} tokens`);
      list.root.tabIndex = isQ ? 0 : -1;
      list.root.classList.toggle('is-query-axis', isQ);
    }
    this.summary.textContent = q === null ? '' : summarise(s, ax, focus);
    this.summary.dataset.query = q === null ? '' : String(q);
    this.note.textContent = run.lastRowNote;
  }
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
