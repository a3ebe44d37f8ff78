// Heads: every layer × head coloured by one score — TransformerLens' detectors (previous-token,
// duplicate-token, induction), attention entropy or first-token (sink) mass — of this text's
// attention, or of the repeated random-token probe (BOS + r + r, where induction heads show). Click
// a head to open its attention matrix.
import { ColourScale } from '../colour.mjs';
import { invalidate } from '../frame.mjs';
import { h } from '../format.mjs';
import { grid } from './grid.mjs';

const SCORES = {
  previousToken: ['Previous token', 'share of attention on the token just before'],
  duplicateToken: ['Duplicate token', 'share of attention on earlier copies of the current token'],
  induction: ['Induction', 'share of attention on the token after an earlier copy of the current token'],
  entropy: ['Entropy', 'mean entropy of the attention rows, in nats (low: focused; ln(n): uniform)'],
  sink: ['First token (sink)', 'mean weight on the first token'],
};

export class HeadsView {
  constructor(analysis, root) {
    this.analysis = analysis;
    this.scale = new ColourScale('viridis', 'linear');
    this.score = 'induction';
    this.source = 'text';
    this.probe = null;  // { promise, value, error, model }
    const scoreSelect = h('select', { id: 'heads-score' }, Object.entries(SCORES).map(([k, [label]]) => h('option', { value: k, text: label })));
    scoreSelect.value = this.score;
    scoreSelect.addEventListener('change', () => { this.score = scoreSelect.value; invalidate(this); });
    const sourceSelect = h('select', { id: 'heads-source' },
      h('option', { value: 'text', text: 'This text' }),
      h('option', { value: 'probe', text: 'Repeated random tokens' }));
    sourceSelect.addEventListener('change', () => { this.source = sourceSelect.value; invalidate(this); });
    this.toolbar = h('div', { class: 'toolbar analysis-toolbar' },
      h('label', { class: 'tool' }, h('span', { text: 'Score' }), scoreSelect),
      h('label', { class: 'tool' }, h('span', { text: 'Of' }), sourceSelect));
    this.caption = h('p', { class: 'view-caption' });
    this.body = h('div', { class: 'grid-frame' });
    this.note = h('p', { class: 'readout', 'aria-live': 'polite' });
    root.append(this.toolbar, this.caption, this.body, this.note);
  }

  reset() {
    this.probe = null;
  }

  #probeResult() {
    const model = this.analysis.state.model;
    if (!this.probe || this.probe.model !== model) {
      const p = { model, pending: true };
      p.promise = model.api.detectHeads({ batch: 4 })
        .then((value) => { p.value = value; }, (error) => { p.error = error; })
        .finally(() => { p.pending = false; invalidate(this); });
      this.probe = p;
    }
    return this.probe;
  }

  render() {
    const { state } = this.analysis;
    const [label, what] = SCORES[this.score];
    let scores = null;
    let status = '';
    if (!state.model) status = 'Load a model.';
    else if (this.source === 'probe') {
      const p = this.#probeResult();
      if (p.error) status = `The probe failed: ${p.error.message}`;
      else if (!p.value) status = 'Running the probe: BOS + 4 × (random tokens repeated once)…';
      else {
        scores = p.value.heads;
        const loss = p.value.loss;
        this.note.textContent = `${p.value.sequences.length} sequences of BOS + ${p.value.length} random tokens repeated once (${p.value.kind} attention).` +
          (loss ? ` Loss on the first copy ${loss.firstCopy.toFixed(2)} nats/token, on the repeated copy ${loss.secondCopy.toFixed(2)} (a model with induction heads predicts the repeated copy far better).` : '');
      }
    } else {
      const r = this.analysis.resultOf(state.run);
      if (!state.run) status = 'Generate some text, or choose “Repeated random tokens”.';
      else if (!r) status = 'The scores of this text appear when generation ends.';
      else if (r.error) status = `The forward pass failed: ${r.error.message}`;
      else if (!r.value) status = 'Computing…';
      else {
        scores = r.value.heads;
        this.note.textContent = `Over the ${r.value.heads.entropyPerPosition?.[0]?.[0]?.length ?? ''} tokens of this text (${scores.kind} attention). Click a head to open its matrix.`;
      }
    }
    this.caption.textContent = `${label}: ${what}.`;
    if (!scores) {
      this.body.replaceChildren(h('p', { class: 'view-caption', text: status }));
      if (status) this.note.textContent = '';
      return;
    }
    const table = scores[this.score];
    const max = this.score === 'entropy' ? Math.max(1e-9, ...table.flat()) : 1;
    this.body.replaceChildren(grid({
      rows: table.map((_, l) => `L${l}`),
      columns: table[0].map((_, hd) => `H${hd}`),
      className: 'heads-grid',
      cell: (l, hd) => {
        const v = table[l][hd];
        const w = v / max;
        return { text: v.toFixed(2), bg: this.scale.css(w), ink: this.scale.ink(w), title: `layer ${l}, head ${hd}: ${label} ${v.toFixed(4)}`, label: `Layer ${l} head ${hd}, ${label} ${v.toFixed(2)}: open its attention` };
      },
      onPick: (l, hd) => this.analysis.openHead(scores.kind, l, hd),
    }));
  }
}
