// Activation patching: a clean and a corrupted prompt of the same length, and a logit difference
// (correct − incorrect token, at the last position). The corrupted prompt is run again with one
// activation taken from the clean run — every head's output in turn, then the residual stream at
// every (layer, position) — and the share of the clean logit difference each patch restores is shown
// as a heat map (1: fully restored, 0: no effect, negative: the other way).
import { h, visiblePiece } from '../format.mjs';
import { diverging, grid, paint } from './grid.mjs';

// Pairs that show something on our built-in models (the user edits them freely).
const EXAMPLES = {
  'kjv-gpt2': { clean: 'And Abraham begat Isaac; and Isaac begat Jacob. And Jacob', corrupted: 'And Abraham begat Isaac; and Isaac begat Moses. And Jacob', correct: ' begat', incorrect: ' said' },
  'date-normalizer': { clean: 'Wednesday, 3rd of March 2021', corrupted: 'Wednesday, 4th of March 2021', target: '2021-03-0', correct: '3', incorrect: '4' },
};

export class PatchingView {
  constructor(analysis, root) {
    this.analysis = analysis;
    this.model = null;
    const field = (id, label, attrs = {}) => h('label', { class: 'field patch-field' }, h('span', { text: label }), h('input', { id, type: 'text', spellcheck: 'false', autocomplete: 'off', ...attrs }));
    this.form = h('form', { class: 'patch-form', novalidate: true },
      field('patch-clean', 'Clean prompt'),
      field('patch-corrupted', 'Corrupted prompt (same number of tokens)'),
      this.targetField = field('patch-target', 'Decoder output so far (after its start token)'),
      h('div', { class: 'patch-metric' },
        field('patch-correct', 'Correct next token'),
        field('patch-incorrect', 'Incorrect next token'),
        h('button', { type: 'submit', class: 'button primary', id: 'patch-run', text: 'Patch' })));
    this.form.addEventListener('submit', (e) => {
      e.preventDefault();
      this.#run();
    });
    this.status = h('p', { class: 'view-caption', 'aria-live': 'polite', text: 'Metric: logit(correct) − logit(incorrect) at the last position. Each cell: the corrupted run with that one activation taken from the clean run.' });
    this.out = h('div', { class: 'patch-out' });
    root.append(this.form, this.status, this.out);
  }

  #input(id) {
    return this.form.querySelector(`#${id}`);
  }

  reset() {
    this.model = null;
    this.out.replaceChildren();
  }

  render() {
    const model = this.analysis.state.model;
    if (!model || model === this.model) return;
    this.model = model;
    const encdec = model.info.kind === 'encoder-decoder';
    this.targetField.hidden = !encdec;
    this.#input('patch-clean').previousSibling.textContent = encdec ? 'Clean source' : 'Clean prompt';
    this.#input('patch-corrupted').previousSibling.textContent = encdec ? 'Corrupted source (same number of tokens)' : 'Corrupted prompt (same number of tokens)';
    const ex = EXAMPLES[model.name] ?? { clean: this.analysis.state.run?.settings?.prompt ?? '', corrupted: '', target: '', correct: '', incorrect: '' };
    for (const k of ['clean', 'corrupted', 'target', 'correct', 'incorrect']) this.#input(`patch-${k}`).value = ex[k] ?? '';
    this.out.replaceChildren();
  }

  async #run() {
    const model = this.analysis.state.model;
    if (!model) return;
    const api = model.api;
    const encdec = model.info.kind === 'encoder-decoder';
    const v = (k) => this.#input(`patch-${k}`).value;
    const wrap = (text) => (encdec ? { source: text, target: v('target') } : text);
    const opts = { clean: wrap(v('clean')), corrupted: wrap(v('corrupted')), metric: { correct: v('correct'), incorrect: v('incorrect') } };
    const run = this.#input('patch-run');
    run.disabled = true;
    this.status.textContent = 'Patching every head, then every (layer, position)…';
    try {
      const [heads, resid] = await Promise.all([
        api.patchSweep({ ...opts, over: 'heads', kind: encdec ? 'cross' : 'self' }),
        api.patchSweep({ ...opts, over: 'resid', kind: encdec ? 'encoder' : 'self' }),
      ]);
      const tokens = await api.encodePrompt(v('clean'));  // the positions of the map (an encoder's: the source)
      this.status.textContent = `Logit difference: clean ${heads.clean.toFixed(3)}, corrupted ${heads.corrupted.toFixed(3)}. Colour: the share of the difference a patch restores.`;
      this.#show(heads, resid, tokens.pieces);
    } catch (e) {
      this.status.textContent = `Patching failed: ${e.message}`;
      this.out.replaceChildren();
    } finally {
      run.disabled = false;
    }
  }

  #show(heads, resid, pieces) {
    const cell = (map) => (r, c) => {
      const x = map.normalized[r][c];
      const { bg, ink } = diverging(x);
      return { text: Number.isFinite(x) ? x.toFixed(2) : '–', bg, ink, title: `layer ${r}, ${map.point === 'heads' ? `head ${c}` : `position ${c} (${visiblePiece(pieces[c] ?? '')})`}: metric ${map.patched[r][c].toFixed(3)}, restored ${Number.isFinite(x) ? x.toFixed(3) : '–'}` };
    };
    this.out.replaceChildren(
      grid({
        caption: `Each head's output (${heads.kind === 'cross' ? 'cross-attention' : 'attention'} heads)`,
        rows: heads.patched.map((_, l) => `L${l}`),
        columns: heads.patched[0].map((_, hd) => `H${hd}`),
        className: 'patch-grid patch-heads',
        cell: cell(heads),
      }),
      grid({
        caption: `The residual stream after each layer, at each position (${resid.kind === 'encoder' ? 'encoder' : 'decoder'})`,
        rows: resid.patched.map((_, l) => `L${l}`),
        columns: resid.patched[0].map((_, p) => visiblePiece(pieces[p] ?? String(p))),
        className: 'patch-grid patch-resid',
        cell: cell(resid),
      }),
      h('p', { class: 'legend-row' },
        paint(h('span', { class: 'swatch' }), diverging(-1).bg), ' −1 (the other way) ',
        paint(h('span', { class: 'swatch' }), diverging(0).bg), ' 0 (no effect) ',
        paint(h('span', { class: 'swatch' }), diverging(1).bg), ' 1 (fully restored)'),
    );
  }
}
