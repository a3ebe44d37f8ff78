// Ablation: click heads to switch them off (their output before W_O replaced by 0, or by its mean
// over the prompt's positions) inside the engine's forward pass. The continuation is generated again
// with them off (same prompt, seed and sampling) and shown against the original, token by token,
// with the next-token predictions after the prompt before and after.
import { invalidate } from '../frame.mjs';
import { h, visiblePiece } from '../format.mjs';
import { grid } from './grid.mjs';

const DELAY_MS = 250;  // clicks in quick succession make one new run

export class AblationView {
  constructor(analysis, root) {
    this.analysis = analysis;
    this.off = new Set();  // "kind:layer:head"
    this.kind = 'self';
    this.mode = 'zero';
    this.result = null;  // { key, pending, value, error }
    this.timer = 0;
    this.kindSelect = h('select', { id: 'ablation-kind' });
    this.kindSelect.addEventListener('change', () => { this.kind = this.kindSelect.value; invalidate(this); });
    const modeSelect = h('select', { id: 'ablation-mode' },
      h('option', { value: 'zero', text: 'Zero' }),
      h('option', { value: 'mean', text: 'Mean over positions' }));
    modeSelect.addEventListener('change', () => { this.mode = modeSelect.value; this.#schedule(); });
    const clear = h('button', { type: 'button', class: 'button small', id: 'ablation-clear', text: 'Switch all back on', onclick: () => { this.off.clear(); this.#schedule(); } });
    this.kindTool = h('label', { class: 'tool' }, h('span', { text: 'Heads of' }), this.kindSelect);
    root.append(
      h('div', { class: 'toolbar analysis-toolbar' }, this.kindTool, h('label', { class: 'tool' }, h('span', { text: 'Replace by' }), modeSelect), h('span', { class: 'toolbar-gap' }), clear),
      h('p', { class: 'view-caption', text: 'Click heads to switch them off inside the forward pass; the text is generated again without them (same prompt, seed and sampling).' }),
      this.gridFrame = h('div', { class: 'grid-frame' }),
      this.out = h('div', { class: 'ablation-out', 'aria-live': 'polite' }));
  }

  reset() {
    this.off.clear();
    this.result = null;
  }

  #kinds() {
    const info = this.analysis.state.model?.info;
    return info?.kind === 'encoder-decoder' ? ['self', 'cross', 'encoder'] : info?.kind === 'encoder-only' ? ['encoder'] : ['self'];
  }

  #ablate() {
    return [...this.off].sort().map((k) => {
      const [kind, layer, head] = k.split(':');
      return { kind, layer: Number(layer), head: Number(head), mode: this.mode };
    });
  }

  #schedule() {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = 0;
      this.#compute();
    }, DELAY_MS);
    invalidate(this);
  }

  async #compute() {
    const { state } = this.analysis;
    const run = state.run;
    if (!run || run.status === 'running' || !state.model) return;
    const ablate = this.#ablate();
    const key = JSON.stringify(ablate);
    if (!ablate.length) {
      this.result = null;
      invalidate(this);
      return;
    }
    const entry = { key, run, pending: true };
    this.result = entry;
    invalidate(this);
    try {
      const api = state.model.api;
      const s = run.settings;
      const promptIds = run.encoderDecoder ? run.source.ids : run.target.ids.slice(0, run.promptLength);
      const input = run.encoderDecoder ? { source: run.source.ids, target: run.target.ids.slice(0, run.promptLength) } : promptIds;
      const [gen, plain, ablated] = await Promise.all([
        api.generate(promptIds, { maxNewTokens: Math.max(1, run.stats.generated), temperature: s.temperature, topK: s.topK, topP: s.topP, seed: s.seed, ablate }),
        api.forward(input, { topK: 5 }),
        api.forward(input, { topK: 5, ablate }),
      ]);
      entry.value = { gen, before: plain.topk.at(-1), after: ablated.topk.at(-1) };
    } catch (e) {
      entry.error = e;
    }
    entry.pending = false;
    if (this.result === entry) invalidate(this);
  }

  render() {
    const { state } = this.analysis;
    const info = state.model?.info;
    if (!info) {
      this.gridFrame.replaceChildren();
      this.out.replaceChildren();
      return;
    }
    const kinds = this.#kinds();
    if (!kinds.includes(this.kind)) this.kind = kinds[0];
    this.kindSelect.replaceChildren(...kinds.map((k) => h('option', { value: k, text: { self: 'Self-attention', cross: 'Cross-attention', encoder: 'Encoder' }[k] })));
    this.kindSelect.value = this.kind;
    this.kindTool.hidden = kinds.length < 2;
    const layers = this.kind === 'encoder' && info.kind === 'encoder-decoder' ? info.encoderLayers : info.layers;
    this.gridFrame.replaceChildren(grid({
      rows: Array.from({ length: layers }, (_, l) => `L${l}`),
      columns: Array.from({ length: info.heads }, (_, hd) => `H${hd}`),
      className: 'ablation-grid',
      cell: (l, hd) => {
        const off = this.off.has(`${this.kind}:${l}:${hd}`);
        return { text: off ? 'off' : 'on', bg: off ? 'var(--danger-soft)' : 'var(--surface-2)', ink: off ? 'var(--danger)' : 'var(--muted)', pressed: off, title: `layer ${l}, head ${hd}: ${off ? 'switched off' : 'on'}`, label: `Switch layer ${l} head ${hd} ${off ? 'on' : 'off'}` };
      },
      onPick: (l, hd) => {
        const k = `${this.kind}:${l}:${hd}`;
        if (this.off.has(k)) this.off.delete(k);
        else this.off.add(k);
        this.#schedule();
      },
    }));
    this.#renderOut(state.run);
  }

  #renderOut(run) {
    const r = this.result;
    if (!run) return this.out.replaceChildren(h('p', { class: 'view-caption', text: 'Generate some text first.' }));
    if (run.status === 'running') return this.out.replaceChildren(h('p', { class: 'view-caption', text: 'Waiting for the generation to end.' }));
    if (!this.off.size) return this.out.replaceChildren(h('p', { class: 'view-caption', text: 'Every head is on: the text above is the model\u2019s own.' }));
    if (!r || r.run !== run || r.key !== JSON.stringify(this.#ablate())) {
      if (!this.timer) this.#schedule();  // a new run, or heads changed: generate again
      return this.out.replaceChildren(h('p', { class: 'view-caption', text: 'Generating with those heads off…' }));
    }
    if (r.pending) return this.out.replaceChildren(h('p', { class: 'view-caption', text: 'Generating with those heads off…' }));
    if (r.error) return this.out.replaceChildren(h('p', { class: 'message', text: `Ablation failed: ${r.error.message}` }));
    const original = run.target.pieces.slice(run.promptLength);
    const originalIds = run.target.ids.slice(run.promptLength);
    const newIds = r.value.gen.tokens.slice(r.value.gen.promptTokens);
    const newPieces = r.value.gen.pieces.slice(r.value.gen.promptTokens);
    let first = -1;
    for (let i = 0; i < Math.max(originalIds.length, newIds.length) && first < 0; i++) if (originalIds[i] !== newIds[i]) first = i;
    const chips = (pieces, ids, other) => h('div', { class: 'seq diff-seq' }, pieces.map((p, i) =>
      h('span', { class: `tok${ids[i] !== other[i] ? ' diff-changed' : ''}`, text: visiblePiece(p) })));
    const before = new Map(r.value.before.map((e) => [e.id, e]));
    const rows = r.value.after.map((e, i) => {
      const was = before.get(e.id);
      const delta = was ? e.prob - was.prob : null;
      const b = r.value.before[i];
      return h('tr', {},
        h('td', { text: `#${i + 1}` }),
        h('td', { text: `${visiblePiece(b.piece)} ${(b.prob * 100).toFixed(1)}%` }),
        h('td', { class: b.id !== e.id ? 'diff-changed' : '', text: `${visiblePiece(e.piece)} ${(e.prob * 100).toFixed(1)}%` }),
        h('td', { class: delta === null ? 'diff-changed' : delta < 0 ? 'delta-down' : 'delta-up', text: delta === null ? 'new' : `${delta >= 0 ? '+' : '−'}${Math.abs(delta * 100).toFixed(1)} pts` }));
    });
    this.out.replaceChildren(
      h('p', { class: 'view-caption', text: first < 0 ? `${this.off.size} head(s) off: the continuation is unchanged.` : `${this.off.size} head(s) off: the continuation changes from token ${first + 1} on (marked).` }),
      h('div', { class: 'seq-row' }, h('span', { class: 'seq-label', text: 'Before' }), chips(original, originalIds, newIds)),
      h('div', { class: 'seq-row' }, h('span', { class: 'seq-label', text: 'After' }), chips(newPieces, newIds, originalIds)),
      h('table', { class: 'topk-diff' },
        h('caption', { class: 'grid-caption', text: 'Next-token predictions after the prompt' }),
        h('thead', {}, h('tr', {}, ['rank', 'all heads on', 'with heads off', 'change'].map((t) => h('th', { scope: 'col', text: t })))),
        h('tbody', {}, rows)));
  }
}
