// The attention explorer: wires the model picker, the prompt and the attention views together.
//
//   state.mjs          what is shown          run.mjs        one generation and its attention
//   catalog.mjs        where models come from engine.mjs     the engine, in a Web Worker
//   views/*.mjs        text, tokens (lines), matrix, overview, model card
//   frame.mjs          one render per animation frame       export.mjs, offline.mjs, controls.mjs
import { ChatPanel } from './chat.mjs';
import { builtinSource, fetchManifest, filesSource, samplingDefaults, SourceError, urlSource } from './catalog.mjs';
import { applySampling, readSampling, rollSeed, setupToolbar, syncToolbar } from './controls.mjs';
import { IN_WORKER, openModel } from './engine.mjs';
import { Analysis } from './analysis.mjs';
import { exportJson, exportPng } from './export.mjs';
import { exportBertviz, exportCircuitsvis } from './interop.mjs';
import { $, clearCssVars, formatBytes, h } from './format.mjs';
import { drawn, invalidate, invalidateSettled, invalidateSoon, painted, startRun } from './frame.mjs';
import { loadErrorText, runErrorText, showMessage } from './messages.mjs';
import { enableOffline } from './offline.mjs';
import { encode } from './encode.mjs';
import { generate } from './run.mjs';
import { HEAD_AVERAGE, State } from './state.mjs';
import { HeatImages } from './views/heat-images.mjs';
import { MatrixView } from './views/matrix.mjs';
import { renderModelCard } from './views/model-card.mjs';
import { OverviewView } from './views/overview.mjs';
import { TextView } from './views/text.mjs';
import { TokensView } from './views/tokens.mjs';

const state = new State();
const images = new HeatImages();
const views = {
  text: new TextView(state, $('#text-view')),
  tokens: new TokensView(state, $('#view-tokens')),
  matrix: new MatrixView(state, images, $('#view-matrix')),
  overview: new OverviewView(state, images, $('#view-overview')),
};
const analysis = new Analysis(state);  // predictions, heads, ablation, patching, rollout
const page = { manifest: null, loading: null, generating: null, defaultName: null };
// Chat mode hides the example prompts (they are texts to continue, not messages).
const chat = new ChatPanel({ onChange: (on) => { $('#examples').hidden = on; } });

// Every change redraws what shows it, once per frame (new rows while streaming: a few times a second).
let toolbarKey = '';
const toolbar = { render() { syncToolbar(state); } };
state.on(null, (changed) => {
  // the toolbar follows the model, the run's kinds and layers, the view — not every streamed row.
  // What a generation changes in it (a new run's empty store disables the exports, its first rows
  // enable them) is drawn with the views' next cycle: changed at once, its controls cost a frame and
  // a task of Chromium's autofill (~4-7 + 2-4 ms on 2 cores, traced) inside the first tokens' decoding.
  const store = state.run?.store;
  const key = `${store?.kindNames.join()}|${store?.layers(state.kind).length}|${!!store?.queryCount(state.kind)}`;
  const asked = ['model', 'kind', 'view', 'layer', 'head'].some((k) => changed.has(k));
  if (asked || changed.has('run') || key !== toolbarKey) {
    toolbarKey = key;
    if (page.generating && !asked) invalidateSoon(toolbar);
    else syncToolbar(state);
  }
  const redraw = changed.size === 1 && changed.has('rows') ? invalidateSoon : invalidate;
  for (const v of Object.values(views)) redraw(v);
});
window.addEventListener('resize', () => Object.values(views).forEach(invalidate));
matchMedia('(prefers-color-scheme: dark)').addEventListener('change', () => {
  clearCssVars();
  images.clear();
  Object.values(views).forEach(invalidate);
});

// ---- models ------------------------------------------------------------------------------------
function setPill(id, text, tone) {
  const pill = $(id);
  pill.textContent = text;
  pill.dataset.state = tone;
}

const engineLabel = (model) => `Engine: ${IN_WORKER ? 'Web Worker' : 'main thread'} · ${model.name}`;

async function load(source) {
  page.loading?.abort();
  const ac = new AbortController();
  page.loading = ac;
  showMessage($('#model-message'), null);
  const bar = $('#load-bar');
  const label = $('#load-label');
  $('#load-progress').hidden = false;
  bar.removeAttribute('value');
  label.textContent = `Loading ${source.label}…`;
  setPill('#engine-pill', 'Engine: loading', 'busy');
  document.body.dataset.loading = 'true';
  const t0 = performance.now();
  try {
    const api = await openModel(source.load, {
      signal: ac.signal,
      onProgress: ({ loaded, total, file }) => {
        if (total) bar.value = loaded / total;
        label.textContent = `${file ?? source.label}: ${formatBytes(loaded)}${total ? ` of ${formatBytes(total)}` : ''}`;
      },
    });
    if (!api.info.tokenizer) {
      await api.dispose();
      throw new SourceError(`${source.label} has no tokenizer, so it cannot read text. Load it together with its tokenizer (tokenizer.bin for llama2.c, tokenizer.json for safetensors).`);
    }
    const gen = await source.generationConfig();
    const previous = state.model;
    if (page.generating) page.generating.abort();
    const model = {
      api,
      name: source.name,
      label: source.label,
      info: api.info,
      builtin: source.kind === 'builtin',
      description: source.entry?.description,
      examples: source.entry?.example_prompts ?? [],
      loadMs: performance.now() - t0,
    };
    // An encoder–decoder's own settings (generation_config.json: greedy, beams) come with the model.
    const own = api.info.kind === 'encoder-decoder' ? api.promptFormat.generation ?? {} : {};
    applySampling({
      temperature: 0.8, topK: 40, topP: 1, numBeams: 1, maxNewTokens: Math.min(100, api.info.contextLength), ...samplingDefaults(gen),
      ...(own.temperature !== undefined ? { temperature: own.temperature } : {}),
      ...(own.numBeams !== undefined ? { numBeams: Math.min(own.numBeams, 16) } : {}),
      ...(own.maxNewTokens !== undefined ? { maxNewTokens: Math.min(own.maxNewTokens, 100, api.info.contextLength) } : {}),
    });
    const encoderOnly = api.info.kind === 'encoder-only';
    $('#generate').textContent = encoderOnly ? 'Encode' : 'Generate';
    $('#sampling').hidden = encoderOnly;
    $('#compare-field').hidden = !encoderOnly;
    $('#encode-result').hidden = true;
    $('#prompt').placeholder = encoderOnly
      ? `Type a text to encode${api.promptFormat.maskToken >= 0 ? ' (put the mask token in it to see what the model would fill in)' : ''}…`
      : 'Type something for the model to continue…';
    showExamples(model, previous);
    state.set({
      model,
      run: null,
      kind: api.info.kind === 'encoder-decoder' ? 'cross' : encoderOnly ? 'encoder' : 'self',
      input: 0,
      key: null,
      layer: 0,
      head: HEAD_AVERAGE,
      query: null,
      pinned: false,
    });
    chat.setModel(model);
    if (source.kind === 'builtin') $('#model-select').value = source.name;
    else $('#model-select').value = '';
    await refreshCard();
    setPill('#engine-pill', engineLabel(model), 'ok');
    $('#generate').disabled = false;
    if (previous && previous.api !== api) await previous.api.dispose();  // only once the new one works
  } catch (e) {
    showMessage($('#model-message'), loadErrorText(e, source.label));
    setPill('#engine-pill', state.model ? engineLabel(state.model) : 'Engine: no model', state.model ? 'ok' : 'warn');
    if (state.model?.builtin) $('#model-select').value = state.model.name;
    else $('#model-select').value = '';
  } finally {
    if (page.loading === ac) {
      page.loading = null;
      $('#load-progress').hidden = true;
      delete document.body.dataset.loading;
    }
  }
}

async function refreshCard() {
  const m = state.model;
  let memory = null;
  try {
    memory = m ? await m.api.memory() : null;
  } catch {
    memory = null;
  }
  renderModelCard($('#model-card'), m, memory);
}

function showExamples(model, previous) {
  const box = $('#examples');
  box.replaceChildren(
    ...model.examples.map((p) =>
      h('button', { type: 'button', class: 'example', text: p, onclick: () => { $('#prompt').value = p; $('#prompt').focus(); } }),
    ),
  );
  const prompt = $('#prompt');
  const wasExample = !prompt.value || previous?.examples.includes(prompt.value);
  if (wasExample && model.examples.length) prompt.value = model.examples[0];
}

async function setupModelPicker() {
  const select = $('#model-select');
  try {
    page.manifest = await fetchManifest();
  } catch (e) {
    select.replaceChildren(h('option', { value: '', text: 'No built-in models' }));
    showMessage($('#model-message'), loadErrorText(e, 'the model list'));
    setPill('#engine-pill', 'Engine: no model', 'warn');
    return;
  }
  const entries = page.manifest.models;
  select.replaceChildren(
    ...entries.map((m) => h('option', { value: m.name, text: `${m.name} — ${m.task ?? m.architecture}` })),
    h('option', { value: '', text: 'Other (URL or files)', disabled: true }),
  );
  select.disabled = false;
  select.addEventListener('change', () => {
    const entry = entries.find((m) => m.name === select.value);
    if (entry) load(builtinSource(entry));
  });
  // ?model=NAME picks a built-in model; ?url=… loads one from a URL (handy for links and tests).
  const params = new URLSearchParams(location.search);
  const wanted = params.get('model') ?? page.manifest.default ?? entries[0]?.name;
  page.defaultName = wanted;
  if (params.get('url')) return load(urlSource(params.get('url')));
  const entry = entries.find((m) => m.name === wanted) ?? entries[0];
  if (entry) {
    select.value = entry.name;
    await load(builtinSource(entry));
  }
}

$('#url-form').addEventListener('submit', (e) => {
  e.preventDefault();
  try {
    load(urlSource($('#model-url').value));
  } catch (err) {
    showMessage($('#model-message'), loadErrorText(err, 'that URL'));
  }
});

$('#load-cancel').addEventListener('click', () => page.loading?.abort());

// files: the drop zone (click / Enter opens the picker), or anywhere on the page
function loadFiles(list) {
  try {
    load(filesSource(list));
  } catch (err) {
    showMessage($('#model-message'), loadErrorText(err, 'those files'));
  }
}
const dropzone = $('#dropzone');
const fileInput = $('#file-input');
dropzone.addEventListener('click', () => fileInput.click());
dropzone.addEventListener('keydown', (e) => {
  if (e.key === 'Enter' || e.key === ' ') {
    e.preventDefault();
    fileInput.click();
  }
});
fileInput.addEventListener('change', () => {
  if (fileInput.files.length) loadFiles(fileInput.files);
  fileInput.value = '';
});
let dragDepth = 0;
const overlay = $('#drop-overlay');
const hasFiles = (e) => [...(e.dataTransfer?.types ?? [])].includes('Files');
document.addEventListener('dragenter', (e) => {
  if (!hasFiles(e)) return;
  dragDepth++;
  overlay.hidden = false;
  dropzone.classList.add('is-over');
});
document.addEventListener('dragleave', () => {
  if (--dragDepth <= 0) {
    dragDepth = 0;
    overlay.hidden = true;
    dropzone.classList.remove('is-over');
  }
});
document.addEventListener('dragover', (e) => {
  if (hasFiles(e)) e.preventDefault();
});
document.addEventListener('drop', (e) => {
  if (!hasFiles(e)) return;
  e.preventDefault();
  dragDepth = 0;
  overlay.hidden = true;
  dropzone.classList.remove('is-over');
  loadFiles(e.dataTransfer.files);
});

// ---- generation --------------------------------------------------------------------------------
function showStats(run) {
  const s = run?.stats;
  const fmt = (v, d = 1) => (Number.isFinite(v) ? v.toFixed(d) : '–');
  $('#stat-tps').textContent = fmt(s?.tokensPerSecond, 0);
  $('#stat-engine-tps').textContent = fmt(s?.engineTokensPerSecond, 0);
  $('#stat-ms').textContent = fmt(s?.msPerToken, 1);
  $('#stat-prefill').textContent = fmt(s?.prefillMs, 0);
  $('#stat-tokens').textContent = run ? String(s.generated) : '–';
  let note = '';
  if (run?.status === 'running') note = 'Generating… (rates measured as tokens arrive)';
  else if (run) {
    const why = { eos: 'the model ended the text', length: 'reached the token limit', stop: 'hit a stop string', context: 'the context is full', aborted: 'stopped' }[run.finishReason] ?? run.finishReason;
    note = `Finished: ${why}. tokens/s as the tokens reached this page${s.engineTimed ? '; engine tokens/s as the engine timed its decoding' : ''}.`;
    if (run.beamScore !== null && run.beamScore !== undefined)
      note += ` Beam search: the tokens came once the search was over (score ${run.beamScore.toFixed(3)}, counted over every beam's tokens).`;
    if (page.longestTask === null) note += ' No main-thread task over 50 ms while generating.';
    else if (page.longestTask !== undefined) note += ` Longest main-thread task while generating: ${page.longestTask.toFixed(0)} ms.`;
  }
  $('#stat-note').textContent = note;
  const stats = $('#stats');
  stats.dataset.status = run?.status ?? '';
  stats.dataset.generated = run ? String(s.generated) : '';
}

// The rates while the run streams. Once its tokens are in, the run still completes its last rows
// (run.mjs completeRows) before Generate comes back: its final status is finalStats' to publish.
const liveStats = { run: null, render() { if (this.run && this.run === state.run && this.run.status === 'running') showStats(this.run); } };

// Long tasks (> 50 ms) on the main thread during generation, shown under the stats.
const longTasks = [];
const observingLongTasks = !!PerformanceObserver.supportedEntryTypes?.includes('longtask');
if (observingLongTasks) {
  new PerformanceObserver((list) => longTasks.push(...list.getEntries())).observe({ type: 'longtask' });
}

// The outcome of an encoder run: the similarity of the two inputs, the mask's candidates.
function showEncodeResult(run) {
  const box = $('#encode-result');
  const parts = [];
  if (run?.similarity) {
    const sim = run.similarity;
    parts.push(h('p', { class: 'similarity' }, 'Similarity of A and B: ', h('strong', { text: sim.cosine.toFixed(4) }),
      h('span', { class: 'hint', text: ` cosine of their ${sim.pooling}-pooled${sim.normalize ? ', normalised' : ''} embeddings` })));
  }
  if (run?.fill?.error) parts.push(h('p', { text: `Fill-mask: ${run.fill.error.message}` }));
  else if (run?.fill) {
    for (const m of run.fill.masks)
      parts.push(h('table', {}, h('caption', { text: `Mask at #${m.position}: the model would write` }),
        ...m.candidates.map((c) => h('tr', {}, h('td', { text: c.piece }), h('td', { text: `${(100 * c.score).toFixed(1)} %` }), h('td', { class: 'hint', text: c.sequence })))));
  }
  if (run?.inputs) {
    const t = run.inputs.filter((x) => x.truncated).map((x) => `${x.label}: ${x.truncated} tokens cut`);
    if (t.length) parts.push(h('p', { text: `Truncated to the model's limit — ${t.join(', ')}.` }));
  }
  box.replaceChildren(...parts);
  box.hidden = !parts.length;
}

async function onEncode(model, runMessage) {
  const texts = [$('#prompt').value, $('#prompt-b').value].filter((t) => t.trim());
  $('#generate').disabled = true;
  $('#stats').dataset.status = 'starting';
  const run = await encode(model, texts);
  $('#generate').disabled = !state.model;
  if (run.status === 'error') {
    showMessage(runMessage, runErrorText(run.error));
    $('#stats').dataset.status = 'error';
    return;
  }
  state.set({ run, input: 0, query: null, pinned: false, key: null, kind: 'encoder' });
  state.emit(['rows']);
  showEncodeResult(run);
  $('#stat-prefill').textContent = run.stats.prefillMs.toFixed(0);
  $('#stat-tokens').textContent = String(run.inputs.reduce((n, x) => n + x.real, 0));
  $('#stat-note').textContent = `Encoded ${run.inputs.length === 1 ? 'the text' : 'both texts in one batch'}.`;
  $('#stats').dataset.status = 'done';
  refreshCard();
}

async function onGenerate() {
  const runMessage = $('#run-message');
  showMessage(runMessage, null);
  const model = state.model;
  if (!model) return showMessage(runMessage, 'Load a model first.');
  if (model.info.kind === 'encoder-only') {
    if (!$('#prompt').value.trim()) {
      $('#prompt').focus();
      return showMessage(runMessage, 'The text is empty: type something for the model to encode.');
    }
    return onEncode(model, runMessage);
  }
  const text = $('#prompt').value;
  const conversation = chat.active;
  const prompt = conversation ? chat.messages(text) : text;
  if (!text.trim()) {
    $('#prompt').focus();
    if (conversation) return showMessage(runMessage, 'The message is empty: write something to the model.');
    return showMessage(runMessage, model.info.kind === 'encoder-decoder' ? 'The prompt is empty: type the text for the model to read (for example a date).' : 'The prompt is empty: type some text for the model to continue.');
  }
  showEncodeResult(null);
  const settings = readSampling(model.info.contextLength);
  if (settings.error) return showMessage(runMessage, settings.error);
  if (conversation) settings.chat = chat.options();
  const ac = new AbortController();
  page.generating = ac;
  showStats(null);  // the last run's rates go now, in the frame painted before the run starts
  $('#stat-note').textContent = 'Starting…';
  $('#stats').dataset.status = 'starting';
  $('#generate').disabled = true;
  $('#stop').disabled = false;
  document.body.dataset.generating = 'true';
  await painted();  // that state on screen before the engine takes the cores (frame.mjs)
  const t0 = performance.now();
  const run = await generate(model, prompt, settings, {
    signal: ac.signal,
    onUpdate: (r, what) => {
      // the live rates are redrawn with the views (a few times a second), not at every token
      liveStats.run = r;
      if (what === 'start') {
        // the views and the rates draw the new run in its first cycle (frame.mjs startRun): a frame
        // drawn now would fall in the first tokens' decoding (~9 ms of the main thread on 2 cores)
        startRun(() => state.set({ run: r, query: state.pinned ? state.query : null }));
        invalidateSoon(liveStats);
      } else {
        state.emit(['rows']);
        invalidateSoon(liveStats);
      }
    },
  });
  const during = longTasks.filter((t) => t.startTime >= t0);
  page.longestTask = !observingLongTasks ? undefined : during.length ? Math.max(...during.map((t) => t.duration)) : null;
  if (page.generating === ac) page.generating = null;
  $('#generate').disabled = !state.model;
  $('#stop').disabled = true;
  delete document.body.dataset.generating;
  if (conversation) chat.commit(text, run);
  if (run.status === 'error') {
    showMessage(runMessage, runErrorText(run.error));
    if (state.run === run && !run.store.queryCount('self')) state.set({ run: null });
  }
  // The finished run's status and rates are published in the frame that draws the views' last rows
  // (the cycle after a run draws one view a frame; invalidateSettled waits for the last of them):
  // whoever waits for #stats[data-status="done"] — a user, a test, a script — then sees every token
  // drawn.
  liveStats.run = null;
  state.emit(['rows']);
  invalidateSettled(finalStats);
  refreshCard();
}

// a new generation started before that frame shows its own stats instead
const finalStats = { render() { if (!page.generating) showStats(state.run); } };

$('#generate').addEventListener('click', onGenerate);
$('#stop').addEventListener('click', () => page.generating?.abort());
$('#prompt').addEventListener('keydown', (e) => {
  if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
    e.preventDefault();
    if (!$('#generate').disabled) onGenerate();
  }
});
$('#seed-roll').addEventListener('click', rollSeed);

// ---- views, export -----------------------------------------------------------------------------
setupToolbar(state);
syncToolbar(state);
$('#export-json').addEventListener('click', () => exportJson(state));
$('#export-png').addEventListener('click', () => exportPng(views[state.view], state).catch((e) => showMessage($('#run-message'), `PNG export failed: ${e.message}`)));
$('#export-bertviz').addEventListener('click', () => exportBertviz(state));
$('#export-circuitsvis').addEventListener('click', () => exportCircuitsvis(state));

// ---- start -------------------------------------------------------------------------------------
window.attnlens = { state, views, analysis, drawn };  // for the console and the browser tests
enableOffline((status, detail) => {
  const text = { ready: navigator.onLine ? 'Works offline' : 'Offline · running from cache', installing: 'Offline: saving…', partial: 'Offline: partial', unsupported: 'Online only', error: 'Online only' }[status];
  setPill('#offline-pill', text, status === 'ready' ? 'ok' : status === 'installing' ? 'busy' : 'warn');
  $('#offline-pill').title = detail;
  document.documentElement.dataset.offline = status;
});
window.addEventListener('offline', () => setPill('#offline-pill', document.documentElement.dataset.offline === 'ready' ? 'Offline · running from cache' : 'You are offline', 'warn'));
window.addEventListener('online', () => setPill('#offline-pill', 'Works offline', 'ok'));
renderModelCard($('#model-card'), null);
setupModelPicker();
