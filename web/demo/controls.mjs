// The page's form controls: sampling settings (read and checked, with a message naming the field
// that is wrong) and the attention toolbar (kind, layer, head, colours), kept in step with the state.
import { AXES, KIND_LABELS } from './attention-store.mjs';
import { CONTRASTS, ColourScale, SCALES } from './colour.mjs';
import { $, $$, h, tabList } from './format.mjs';
import { circuitsvisRefusal } from './interop.mjs';
import { HEAD_AVERAGE } from './state.mjs';

const CIRCUITSVIS_TITLE = 'Every layer of this attention kind, as CircuitsVis attention_heads arguments (JSON)';

// ---- sampling --------------------------------------------------------------------------------
const FIELDS = {
  temperature: { el: '#temperature', label: 'Temperature', integer: false, min: 0, max: 5 },
  topK: { el: '#top-k', label: 'Top-k', integer: true, min: 0, max: 1e6 },
  topP: { el: '#top-p', label: 'Top-p', integer: false, min: 0.001, max: 1 },
  seed: { el: '#seed', label: 'Seed', integer: true, min: 0, max: 2 ** 32 - 1 },
  maxNewTokens: { el: '#max-tokens', label: 'New tokens', integer: true, min: 1, max: 1 << 16 },
  numBeams: { el: '#num-beams', label: 'Beams', integer: true, min: 1, max: 16 },
};

/** The sampling settings, or { error } naming the field that is not a valid value. */
export function readSampling(contextLength) {
  const out = {};
  for (const [key, f] of Object.entries(FIELDS)) {
    const input = $(f.el);
    const raw = input.value.trim();
    const v = Number(raw);
    const max = key === 'maxNewTokens' && contextLength ? contextLength : f.max;
    if (raw === '' || !Number.isFinite(v) || (f.integer && !Number.isInteger(v)) || v < f.min || v > max) {
      input.setAttribute('aria-invalid', 'true');
      input.focus();
      return { error: `${f.label} must be ${f.integer ? 'a whole number' : 'a number'} from ${f.min} to ${max}${raw === '' ? '' : `, not “${raw}”`}.` };
    }
    input.removeAttribute('aria-invalid');
    out[key] = v;
  }
  return out;
}

/** Puts a model's suggested defaults (generation_config.json) into the fields. */
export function applySampling(defaults) {
  for (const [key, v] of Object.entries(defaults)) if (FIELDS[key]) $(FIELDS[key].el).value = String(v);
}

export function rollSeed() {
  $('#seed').value = String(Math.floor(Math.random() * 2 ** 32));
}

// ---- attention toolbar -------------------------------------------------------------------------
function fill(select, options, value) {
  const key = options.map(([v, t]) => `${v}:${t}`).join('|');
  if (select.dataset.options !== key) {
    select.replaceChildren(...options.map(([v, t]) => h('option', { value: String(v), text: t })));
    select.dataset.options = key;
  }
  if (select.value !== String(value)) select.value = String(value);
}

export function setupToolbar(state) {
  $('#input-select').addEventListener('change', (e) => {
    state.run?.show?.(Number(e.target.value));
    state.set({ input: Number(e.target.value), query: null, pinned: false, key: null });
    state.emit(['run']);
  });
  fill($('#scale-select'), SCALES.map((s) => [s, s]), state.scale.name);
  fill($('#contrast-select'), Object.entries(CONTRASTS), state.scale.contrast);
  $('#kind-select').addEventListener('change', (e) => {
    const kind = e.target.value;
    const layers = state.run?.store.layers(kind) ?? [];
    state.set({ kind, query: null, pinned: false, layer: layers.includes(state.layer) ? state.layer : layers[0] ?? 0 });
  });
  $('#layer-select').addEventListener('change', (e) => state.set({ layer: Number(e.target.value) }));
  $('#head-select').addEventListener('change', (e) => state.set({ head: Number(e.target.value) }));
  const setScale = () => state.set({ scale: new ColourScale($('#scale-select').value, $('#contrast-select').value) });
  $('#scale-select').addEventListener('change', setScale);
  $('#contrast-select').addEventListener('change', setScale);

  tabList($$('#attention [role="tab"]'), (tab) => state.set({ view: tab.dataset.view }));
}

/** Makes the toolbar and tabs show the state (options follow the model / run). */
export function syncToolbar(state) {
  const info = state.model?.info;
  const store = state.run?.store;
  const kinds = store?.kindNames.length ? store.kindNames
    : info?.kind === 'encoder-decoder' ? ['cross', 'self', 'encoder'] : info?.kind === 'encoder-only' ? ['encoder'] : ['self'];
  fill($('#kind-select'), kinds.map((k) => [k, KIND_LABELS[k]]), state.kind);
  const inputs = state.run?.inputs ?? [];
  fill($('#input-select'), inputs.map((x, i) => [i, x.label]), state.run?.shown ?? 0);
  $('#input-tool').hidden = inputs.length < 2;
  $('#kind-tool').hidden = kinds.length < 2;
  const layerCount = state.kind === 'encoder' ? info?.encoderLayers ?? 0 : info?.layers ?? 0;
  const layers = store?.layers(state.kind).length ? store.layers(state.kind) : Array.from({ length: layerCount }, (_, i) => i);
  fill($('#layer-select'), layers.map((l) => [l, `Layer ${l}`]), state.layer);
  const heads = store?.heads(state.kind) || info?.heads || 0;
  fill($('#head-select'), [[HEAD_AVERAGE, 'Average of heads'], ...Array.from({ length: heads }, (_, i) => [i, `Head ${i}`])], state.head);
  $('#layer-select').disabled = !layers.length;
  $('#head-select').disabled = !heads;
  const hasRows = !!store?.queryCount(state.kind);
  for (const id of ['#export-json', '#export-png', '#export-bertviz', '#export-circuitsvis']) $(id).disabled = !hasRows;
  const refused = circuitsvisRefusal(state.kind);
  if (refused) $('#export-circuitsvis').disabled = true;
  $('#export-circuitsvis').title = refused ?? CIRCUITSVIS_TITLE;
  for (const tab of document.querySelectorAll('#attention [role="tab"]')) {
    const on = tab.dataset.view === state.view;
    tab.setAttribute('aria-selected', String(on));
    tab.tabIndex = on ? 0 : -1;
    $(`#${tab.getAttribute('aria-controls')}`).hidden = !on;
  }
  return AXES[state.kind];
}
