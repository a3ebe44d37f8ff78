// Predictions: for every token, the model's top-k guesses for the token after it (bars of their
// probability; the token that did come next is marked). Point at a token (or focus it) to see its
// logit lens: what each layer's residual stream would predict through the final norm and the
// unembedding, as a layer × rank grid.
//
// While generating, the generated tokens' bars come from the stream (each step's predictions); when
// the run ends, one forward pass gives every position's, with the logit lens.
import { ColourScale } from '../colour.mjs';
import { h, visiblePiece } from '../format.mjs';
import { paint } from './grid.mjs';

const CARDS_PER_FRAME = 8;

const pct = (p) => (p >= 0.995 ? '100%' : p >= 0.1 ? `${(p * 100).toFixed(0)}%` : p >= 0.001 ? `${(p * 100).toFixed(1)}%` : '<0.1%');

// A probability bar's fill: how far its gradient reaches (--p, app.css .pred-bar), set through the
// CSSOM (no inline style attributes under the page's CSP).
function fill(el, p) {
  el.style.setProperty('--p', `${Math.max(1, p * 100).toFixed(1)}%`);
  return el;
}

export class PredictionsView {
  constructor(analysis, root) {
    this.analysis = analysis;
    this.scale = new ColourScale('viridis', 'linear');
    this.caption = h('p', { class: 'view-caption', text: 'Generate some text: each token then shows what the model expected next.' });
    this.strip = h('div', { class: 'pred-strip', role: 'list', 'aria-label': 'Top predictions after each token' });
    this.lens = h('div', { class: 'lens-panel', 'aria-live': 'polite' });
    root.append(this.caption, this.strip, this.lens);
    this.cards = [];  // per position: { el, key }
    this.run = null;
    this.focus = null;  // position whose lens is shown
    const pick = (e) => {
      const card = e.target.closest?.('.pred-card');
      if (card) this.#showLens(Number(card.dataset.pos));
    };
    this.strip.addEventListener('pointerover', pick);
    this.strip.addEventListener('focusin', pick);
  }

  reset() {
    this.cards = [];
    this.strip.replaceChildren();
    this.lens.replaceChildren();
    this.run = null;
    this.focus = null;
  }

  render() {
    const run = this.analysis.state.run;
    if (run !== this.run) {
      this.reset();
      this.run = run;
    }
    if (!run) {
      this.caption.textContent = 'Generate some text: each token then shows what the model expected next.';
      return;
    }
    const result = this.analysis.resultOf(run);
    const forward = result?.value ?? null;
    const ids = run.target.ids;
    const n = Math.min(ids.length, this.analysis.state.model.info.contextLength);
    // Cards are rebuilt only when their data changes: a streamed token adds one card. At most
    // CARDS_PER_FRAME per frame (render() returns true: the rest in the next frames, frame.mjs), so
    // that the main thread never runs long when a whole run's predictions arrive at once.
    let built = 0;
    for (let p = 0; p < n; p++) {
      const top = forward?.topk[p] ?? run.predictions?.[p] ?? null;
      const next = p + 1 < ids.length ? ids[p + 1] : null;
      const key = `${forward ? 'f' : top ? 's' : '-'}:${next}`;
      const have = this.cards[p];
      if (have && have.key === key) continue;
      if (built++ === CARDS_PER_FRAME) break;
      const el = this.#card(p, run.target.pieces[p], top, next);
      if (have) have.el.replaceWith(el);
      else this.strip.append(el);
      this.cards[p] = { el, key };
    }
    const drawing = built > CARDS_PER_FRAME;  // cards left for the next frames
    // The caption says the predictions are there once every card shows them.
    this.caption.textContent = forward && !drawing
      ? `The model's top ${forward.topk[0]?.length ?? 0} guesses for the next token after each token (probability at temperature 1); the marked one came next. Point at a token for its logit lens.`
      : result?.error
        ? `The forward pass failed: ${result.error.message}`
        : run.status === 'running'
          ? 'Generating: each new token shows the guesses it was drawn from. The prompt\u2019s guesses and the logit lens follow when the run ends.'
          : 'Computing the predictions and the logit lens of every position…';
    if (this.focus !== null && !drawing) this.#showLens(this.focus);
    return drawing;
  }

  #card(p, piece, top, next) {
    const bars = top
      ? h('ol', { class: 'pred-bars' }, top.map((e) =>
          fill(h('li', { class: `pred-bar${e.id === next ? ' is-next' : ''}`, title: `${visiblePiece(e.piece)} · p = ${e.prob.toFixed(4)} · logit ${e.logit.toFixed(3)}` },
            h('span', { class: 'pred-piece', text: visiblePiece(e.piece) }),
            h('span', { class: 'pred-prob', text: pct(e.prob) })), e.prob)))
      : h('p', { class: 'pred-none', text: next === null ? '…' : '–' });
    return h('div', { class: 'pred-card', role: 'listitem', tabindex: '0', dataset: { pos: p } },
      h('div', { class: 'pred-tok', text: visiblePiece(piece) }),
      bars);
  }

  #showLens(p) {
    this.focus = p;
    for (const c of this.cards) c?.el.classList.toggle('is-focus', c.el.dataset.pos === String(p));
    const run = this.run;
    const forward = this.analysis.resultOf(run)?.value;
    const piece = visiblePiece(run.target.pieces[p] ?? '');
    const next = run.target.ids[p + 1];
    if (!forward?.logitLens) {
      this.lens.replaceChildren(h('p', { class: 'view-caption', text: `Logit lens after “${piece}”: it appears when the run ends.` }));
      return;
    }
    const layers = forward.logitLens;
    const k = layers[0][p].length;
    const head = h('tr', {}, h('th', { scope: 'col', text: 'layer' }), Array.from({ length: k }, (_, r) => h('th', { scope: 'col', text: `#${r + 1}` })));
    const rows = layers.map((layer, l) => h('tr', {},
      h('th', { scope: 'row', text: l === layers.length - 1 ? `${l} (output)` : String(l) }),
      layer[p].map((e) => paint(h('td', {
        class: e.id === next ? 'is-next' : '',
        title: `p = ${e.prob.toFixed(4)}, logit ${e.logit.toFixed(3)}`,
      }, h('span', { class: 'lens-piece', text: visiblePiece(e.piece) }), h('span', { class: 'lens-prob', text: pct(e.prob) })), this.scale.css(e.prob), this.scale.ink(e.prob)))));
    this.lens.replaceChildren(
      h('p', { class: 'view-caption', text: `Logit lens after “${piece}” (position ${p}): each layer's residual stream read through the final norm and the unembedding.` }),
      h('table', { class: 'lens-grid' }, h('thead', {}, head), h('tbody', {}, rows)));
  }
}
