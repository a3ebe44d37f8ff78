// The analysis panel: predictions and logit lens, head scores, ablation, activation patching,
// attention rollout — each view in its own module (views/predictions.mjs, heads.mjs, ablation.mjs,
// patching.mjs, rollout.mjs). Everything is computed by the engine in its Web Worker; this module
// keeps what a run's analysis returned (one forward pass with top-k, logit lens, head scores and
// rollout, asked for once the run has ended) and switches the tabs.
import { invalidate, invalidateSoon } from './frame.mjs';
import { $, $$, tabList } from './format.mjs';
import { AblationView } from './views/ablation.mjs';
import { HeadsView } from './views/heads.mjs';
import { PatchingView } from './views/patching.mjs';
import { PredictionsView } from './views/predictions.mjs';
import { RolloutView } from './views/rollout.mjs';

export const TOP_K = 5;

export class Analysis {
  #results = new WeakMap();  // run → { promise, value, error }

  constructor(state) {
    this.state = state;
    this.tab = 'predictions';
    this.views = {
      predictions: new PredictionsView(this, $('#aview-predictions')),
      heads: new HeadsView(this, $('#aview-heads')),
      ablation: new AblationView(this, $('#aview-ablation')),
      patching: new PatchingView(this, $('#aview-patching')),
      rollout: new RolloutView(this, $('#aview-rollout')),
    };
    tabList($$('#analysis [role="tab"]'), (tab) => this.show(tab.dataset.analysis));
    // The visible view follows the model and the run (new tokens while streaming: a few times a second),
    // while the panel is on screen: off screen it draws nothing and asks the engine for nothing (the
    // page stays light while generating), and catches up when it scrolls into view.
    this.onScreen = false;
    new IntersectionObserver((entries) => {
      this.onScreen = entries.at(-1).isIntersecting;
      if (this.onScreen) invalidate(this.views[this.tab]);
    }).observe($('#analysis'));
    const redraw = (soon) => () => {
      if (this.onScreen) (soon ? invalidateSoon : invalidate)(this.views[this.tab]);
    };
    state.on(['model', 'run'], redraw(false));
    state.on(['rows'], redraw(true));
    state.on(['model'], () => Object.values(this.views).forEach((v) => v.reset?.()));
    this.show(this.tab);
  }

  show(name) {
    this.tab = name;
    for (const tab of $$('#analysis [role="tab"]')) {
      const on = tab.dataset.analysis === name;
      tab.setAttribute('aria-selected', String(on));
      tab.tabIndex = on ? 0 : -1;
      $(`#${tab.getAttribute('aria-controls')}`).hidden = !on;
    }
    invalidate(this.views[name]);
  }

  /** The run's input to a forward pass: ids, or { source, target } (at most the context length). */
  inputOf(run) {
    const n = Math.min(run.target.ids.length, this.state.model.info.contextLength);
    const target = run.target.ids.slice(0, n);
    return run.encoderDecoder ? { source: run.source.ids, target } : target;
  }

  /**
   * The analysis of a finished run: forward over all its tokens with top-k, the logit lens, head
   * scores and rollout. null while the run is generating; a settled entry afterwards ({ value } or
   * { error }), or { pending } while the worker computes it (the views are redrawn when it arrives).
   */
  resultOf(run) {
    if (!run || run.status === 'running' || !run.target.ids.length) return null;
    let r = this.#results.get(run);
    if (!r) {
      r = { pending: true };
      const api = this.state.model.api;
      r.promise = api.forward(this.inputOf(run), { topK: TOP_K, logitLens: { topK: TOP_K }, heads: true, rollout: true })
        .then((value) => { r.value = value; }, (error) => { r.error = error; })
        .finally(() => {
          r.pending = false;
          invalidate(this.views[this.tab]);  // the others draw it when shown
        });
      this.#results.set(run, r);
    }
    return r;
  }

  /** Opens one head in the attention panel's matrix view. */
  openHead(kind, layer, head) {
    this.state.set({ view: 'matrix', kind, layer, head });
    const panel = $('#attention');
    panel.scrollIntoView({ block: 'start' });
    panel.focus({ preventScroll: true });
  }
}
