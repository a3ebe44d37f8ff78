// The model card: what is loaded — architecture, parameters, layers, heads, context length and the
// memory it takes in the engine.
import { formatBytes, formatCount, h } from '../format.mjs';

const KIND = { 'decoder-only': 'decoder-only', 'encoder-decoder': 'encoder–decoder', 'encoder-only': 'encoder-only' };

// What the model holds: model.info at load, or model.memory() now (its KV cache grows with use).
function memoryLine(m) {
  const parts = [`files ${formatBytes(m.fileBytes)}`];
  if (m.ownedBytes) parts.push(`converted copies ${formatBytes(m.ownedBytes)}`);
  parts.push(`KV cache ${formatBytes(m.kvCacheBytes)}`);
  if (m.scratchBytes) parts.push(`scratch ${formatBytes(m.scratchBytes)}`);
  return `${formatBytes(m.modelBytes ?? m.memoryBytes)} (${parts.join(' + ')})`;
}

/** Renders `model` ({name, info, description}) and the engine's memory (model.api.memory()) into el. */
// The vocabulary and its tokenizer; an encoder–decoder with separate source and target vocabularies
// or a target tokenizer of its own (Marian's target.spm) shows both sides.
function vocabularyLine(i) {
  const side = (n, t) => `${n} tokens${t ? ` · ${t.kind}` : ''}`;
  const sourceSize = i.sourceVocabSize ?? i.vocabSize;
  if (!i.targetTokenizer && sourceSize === i.vocabSize) return side(i.vocabSize, i.tokenizer);
  return `source ${side(sourceSize, i.tokenizer)}; target ${side(i.vocabSize, i.targetTokenizer ?? i.tokenizer)}`;
}

export function renderModelCard(el, model, memory = null) {
  if (!model) {
    el.replaceChildren(h('p', { class: 'muted', text: 'No model loaded yet.' }));
    return;
  }
  const i = model.info;
  const layers = i.kind === 'encoder-decoder' ? `${i.encoderLayers} encoder + ${i.layers} decoder` : String(i.layers);
  const heads = i.kvHeads && i.kvHeads !== i.heads ? `${i.heads} (${i.kvHeads} key/value heads)` : String(i.heads);
  const rows = [
    ['Architecture', `${i.architecture} · ${KIND[i.kind] ?? i.kind}`],
    ['Parameters', `${formatCount(i.params)} (${i.weightDtype})`],
    ['Layers', layers],
    ['Heads', `${heads} × ${i.headDim} dims`],
    ['Width', `${i.dModel} (feed-forward ${i.dFF})`],
    ['Context', `${i.contextLength} tokens`],
    ['Vocabulary', vocabularyLine(i)],
    ...(i.tokenizer?.chatTemplates?.length ? [['Chat template', i.tokenizer.chatTemplates.join(', ')]] : []),
    ['Memory', memoryLine(memory ?? i)],
  ];
  if (memory) rows.push(['Engine heap', `${formatBytes(memory.allocatedBytes)} in use of ${formatBytes(memory.heapBytes)} wasm memory`]);
  const dl = h('dl', { class: 'facts' }, rows.map(([k, v]) => [h('dt', { text: k }), h('dd', { text: v, dataset: { fact: k.toLowerCase().replace(/\s+/g, '-') } })]));
  el.replaceChildren(
    h('div', { class: 'card-title' }, h('strong', { text: model.name }), model.builtin ? h('span', { class: 'badge', text: 'built-in' }) : null),
    model.description ? h('p', { class: 'card-desc', text: model.description }) : null,
    dl,
  );
}
