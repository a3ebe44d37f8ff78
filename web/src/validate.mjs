// Argument checks of the public API: wrong types throw TypeError, values out of range RangeError,
// both naming the argument.

export function string(v, name) {
  if (typeof v !== 'string') throw new TypeError(`${name} must be a string, got ${typeName(v)}`);
  return v;
}

function typeName(v) {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (ArrayBuffer.isView(v)) return `a ${v.constructor.name}`;
  return typeof v;
}

/** An options argument: undefined (→ {}) or a plain object. */
export function options(o, fn) {
  if (o === undefined) return {};
  if (o === null || typeof o !== 'object' || Array.isArray(o)) throw new TypeError(`${fn}: options must be an object, got ${typeName(o)}`);
  return o;
}

/**
 * Which side of the text an options object asks for ({ target: true }: an encoder–decoder's target
 * side, the decoder's text, as transformers' text_target / as_target_tokenizer) → { target, vocab }:
 * whether it is the target side and how many ids that side has (info.sourceVocabSize for the source).
 */
export function textSide(o, fn, info) {
  const target = boolean(o.target ?? false, `${fn}: target`);
  if (target && info.kind !== 'encoder-decoder')
    throw new TypeError(`${fn}: { target: true } asks for the decoder's text of an encoder-decoder model; ${info.architecture} is ${info.kind}: its one tokenizer reads all its text`);
  return { target, vocab: target ? info.vocabSize : info.sourceVocabSize ?? info.vocabSize };
}

export function tokenIds(v, name, vocab, { allowEmpty = false } = {}) {
  if (!(Array.isArray(v) || v instanceof Int32Array || v instanceof Uint32Array || v instanceof Uint16Array || v instanceof Uint8Array))
    throw new TypeError(`${name} must be an array of token ids, got ${typeName(v)}`);
  if (!v.length && !allowEmpty) throw new RangeError(`${name} is empty`);
  const out = Array.from(v);
  out.forEach((id, i) => {
    if (!Number.isInteger(id)) throw new TypeError(`${name}[${i}] must be an integer token id, got ${id}`);
    if (id < 0 || id >= vocab) throw new RangeError(`${name}[${i}] = ${id} is out of range [0, ${vocab})`);
  });
  return out;
}

function number(v, name, { min, max, integer = false, minExclusive = false } = {}) {
  if (typeof v !== 'number' || Number.isNaN(v)) throw new TypeError(`${name} must be a number, got ${typeof v === 'number' ? 'NaN' : typeName(v)}`);
  if (!Number.isFinite(v)) throw new RangeError(`${name} must be finite, got ${v}`);
  if (integer && !Number.isInteger(v)) throw new TypeError(`${name} must be an integer, got ${v}`);
  if (min !== undefined && (minExclusive ? v <= min : v < min))
    throw new RangeError(`${name} must be ${minExclusive ? '>' : '≥'} ${min}, got ${v}`);
  if (max !== undefined && v > max) throw new RangeError(`${name} must be ≤ ${max}, got ${v}`);
  return v;
}

export function prompt(p) {
  if (typeof p === 'string') {
    if (!p.length) throw new RangeError('prompt is empty: give some text to continue (or token ids)');
    return;
  }
  if (isMessages(p)) {
    messages(p);
    return;
  }
  if (!(Array.isArray(p) || ArrayBuffer.isView(p)))
    throw new TypeError(`prompt must be a string or an array of token ids, got ${typeName(p)} (a conversation is an array of { role, content } messages)`);
}

/** { layers?: number[], heads?: number[] } | null from true / false / an object. */
export function attentionOption(v, name) {
  if (v === undefined || v === false || v === null) return null;
  if (v === true) return { layers: [], heads: [] };
  if (typeof v !== 'object' || Array.isArray(v)) throw new TypeError(`${name} must be true, false or { layers, heads }`);
  const list = (x, what) => {
    if (x === undefined) return [];
    if (!Array.isArray(x) || !x.every((i) => Number.isInteger(i) && i >= 0))
      throw new TypeError(`${name}.${what} must be an array of non-negative integers`);
    return x;
  };
  return { layers: list(v.layers, 'layers'), heads: list(v.heads, 'heads') };
}

/** attentionOption() checked against a model's layer and head counts (info as Model.info). */
export function attentionOptionFor(v, name, info) {
  const att = attentionOption(v, name);
  if (!att) return null;
  const layers = Math.max(info.layers, info.encoderLayers || 0);
  for (const l of att.layers) if (l >= layers) throw new RangeError(`${name}.layers: layer ${l} is out of range [0, ${layers})`);
  for (const h of att.heads) if (h >= info.heads) throw new RangeError(`${name}.heads: head ${h} is out of range [0, ${info.heads})`);
  return att;
}

/**
 * Generation options → what the engine takes (defaults filled in, every value checked). `defaults`
 * are the model's own generation settings (promptFormat.generation: an encoder–decoder model's
 * generation_config.json / config.json), used for the options the caller leaves out.
 */
export function generateOptions(p, o, defaults = {}) {
  prompt(p);
  options(o, 'generate');
  const pick = (k) => (o[k] !== undefined ? o[k] : defaults[k]);
  const numBeams = number(pick('numBeams') ?? 1, 'numBeams', { min: 1, integer: true, max: 256 });
  const engine = {
    maxNewTokens: number(pick('maxNewTokens') ?? 128, 'maxNewTokens', { min: 0, integer: true, max: 1 << 20 }),
    // beam search picks the likeliest beams: greedy unless the caller asks for sampling
    temperature: number(pick('temperature') ?? (numBeams > 1 ? 0 : 1), 'temperature', { min: 0 }),
    topK: number(pick('topK') ?? 0, 'topK', { min: 0, integer: true, max: 2 ** 31 - 1 }),
    topP: number(pick('topP') ?? 1, 'topP', { min: 0, max: 1, minExclusive: true }),
    repetitionPenalty: number(pick('repetitionPenalty') ?? 1, 'repetitionPenalty', { min: 0, minExclusive: true }),
    seed: number(o.seed ?? Math.floor(Math.random() * 2 ** 32), 'seed', { min: 0, integer: true, max: Number.MAX_SAFE_INTEGER }),
    stop: o.stop === undefined ? [] : Array.isArray(o.stop) ? o.stop : [o.stop],
    numBeams,
    lengthPenalty: number(pick('lengthPenalty') ?? 1, 'lengthPenalty', {}),
    earlyStopping: pick('earlyStopping') ?? false,
    noRepeatNgramSize: number(pick('noRepeatNgramSize') ?? 0, 'noRepeatNgramSize', { min: 0, integer: true, max: 1 << 20 }),
    minNewTokens: number(pick('minNewTokens') ?? 0, 'minNewTokens', { min: 0, integer: true, max: 1 << 20 }),
    badWordsIds: pick('badWordsIds') ?? [],
  };
  for (const k of ['forcedBosTokenId', 'forcedEosTokenId']) {
    const v = pick(k);
    if (v !== undefined && v !== null) engine[k] = number(v, k, { min: 0, integer: true, max: 2 ** 31 - 1 });
  }
  if (!engine.stop.every((s) => typeof s === 'string')) throw new TypeError('stop must be a string or an array of strings');
  if (![true, false, 'never'].includes(engine.earlyStopping))
    throw new TypeError(`earlyStopping must be true, false or 'never', got ${String(engine.earlyStopping)}`);
  if (!Array.isArray(engine.badWordsIds) || !engine.badWordsIds.every((w) => Array.isArray(w) && w.length && w.every(Number.isInteger)))
    throw new TypeError('badWordsIds must be an array of non-empty arrays of token ids');
  if (numBeams > 1 && engine.temperature > 0)
    throw new RangeError(`numBeams ${numBeams} with temperature ${engine.temperature}: beam search keeps the likeliest beams (temperature 0); sampling within beams is not supported`);
  if (numBeams > 1 && engine.stop.length) throw new RangeError('stop strings are not supported with beam search (numBeams > 1)');
  if (o.signal !== undefined && !(typeof o.signal === 'object' && o.signal !== null && 'aborted' in o.signal))
    throw new TypeError('signal must be an AbortSignal');
  const conversation = isMessages(p);
  if (o.chat !== undefined && !conversation) throw new TypeError('chat options apply to a prompt given as { role, content } messages');
  // A conversation is rendered with the generation prompt (the assistant's turn opened) by default.
  const chat = conversation ? chatOptions(o.chat, 'chat', { addGenerationPrompt: true }) : null;
  return { prompt: typeof p === 'string' ? p : null, engine, chat };
}

/** True when a prompt is a conversation: an array holding objects (messages) rather than token ids. */
export function isMessages(p) {
  return Array.isArray(p) && p.some((x) => x !== null && typeof x === 'object');
}

/**
 * A conversation: a non-empty array of { role, content } (content a string, an array of content
 * parts, or null beside tool_calls; other fields such as tool_calls or name pass to the template).
 */
export function messages(v, name = 'messages') {
  if (!Array.isArray(v)) throw new TypeError(`${name} must be an array of { role, content } messages, got ${typeName(v)}`);
  if (!v.length) throw new RangeError(`${name} is empty: give at least one { role, content } message`);
  v.forEach((m, i) => {
    if (m === null || typeof m !== 'object' || Array.isArray(m))
      throw new TypeError(`${name}[${i}] must be a { role, content } object, got ${typeName(m)}`);
    if (typeof m.role !== 'string' || !m.role)
      throw new TypeError(`${name}[${i}].role must be a non-empty string ("system", "user", "assistant", …), got ${m.role === undefined ? 'nothing' : typeName(m.role)}`);
    const c = m.content;
    if (c === undefined && !Array.isArray(m.tool_calls))
      throw new TypeError(`${name}[${i}].content is missing (a string, or an array of content parts)`);
    if (c !== undefined && c !== null && typeof c !== 'string' && !Array.isArray(c))
      throw new TypeError(`${name}[${i}].content must be a string or an array of content parts, got ${typeName(c)}`);
  });
  return v;
}

/** Chat options → { addGenerationPrompt, tools, documents, templateName, template, variables }. */
export function chatOptions(o, fn, { addGenerationPrompt = false } = {}) {
  const c = options(o, fn);
  const bool = (k, fallback) => {
    if (c[k] === undefined) return fallback;
    if (typeof c[k] !== 'boolean') throw new TypeError(`${fn}: ${k} must be true or false, got ${typeName(c[k])}`);
    return c[k];
  };
  const list = (k) => {
    if (c[k] === undefined || c[k] === null) return null;
    if (!Array.isArray(c[k])) throw new TypeError(`${fn}: ${k} must be an array, got ${typeName(c[k])}`);
    return c[k];
  };
  const text = (k) => {
    if (c[k] === undefined) return null;
    if (typeof c[k] !== 'string' || !c[k]) throw new TypeError(`${fn}: ${k} must be a non-empty string, got ${typeName(c[k])}`);
    return c[k];
  };
  if (c.variables !== undefined && (c.variables === null || typeof c.variables !== 'object' || Array.isArray(c.variables)))
    throw new TypeError(`${fn}: variables must be an object of template variables, got ${typeName(c.variables)}`);
  const out = {
    addGenerationPrompt: bool('addGenerationPrompt', addGenerationPrompt),
    tools: list('tools'),
    documents: list('documents'),
    templateName: text('templateName'),
    template: text('template'),
    variables: c.variables ?? {},
  };
  if (out.template && out.templateName) throw new TypeError(`${fn}: give template or templateName, not both`);
  return out;
}

/** A probe seed: an integer in [0, 2^31 − 1] (the engine's ProbeOptions). */
export function probeSeed(v, name) {
  return number(v, name, { min: 0, max: 2 ** 31 - 1, integer: true });
}

/** A top-k count: undefined / 0 / false → 0 (off), else an integer in [1, 1000]. */
export function topK(v, name) {
  if (v === undefined || v === 0 || v === false || v === null) return 0;
  return number(v, name, { min: 1, max: 1000, integer: true });
}

function layersOf(info, kind) {
  return kind === 'encoder' && info.kind === 'encoder-decoder' ? info.encoderLayers : info.layers;
}

const KINDS_BY_MODEL = { 'decoder-only': ['self'], 'encoder-only': ['encoder'], 'encoder-decoder': ['self', 'encoder', 'cross'] };

/** The attention kind whose layers an option addresses (default: the model's main stack). */
export function kindOf(v, name, info) {
  const allowed = KINDS_BY_MODEL[info.kind] ?? ['self'];
  if (v === undefined) return allowed[0] === 'encoder' ? 'encoder' : 'self';
  if (!allowed.includes(v)) throw new RangeError(`${name} must be ${allowed.map((k) => `"${k}"`).join(' or ')} for this ${info.kind} model, got ${JSON.stringify(v)}`);
  return v;
}

/** [{ layer, head, kind?, mode? }] → checked copies with kind and mode filled in. */
export function ablations(v, name, info) {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw new TypeError(`${name} must be an array of { layer, head, mode } objects`);
  return v.map((a, i) => {
    if (!a || typeof a !== 'object') throw new TypeError(`${name}[${i}] must be an object { layer, head, mode }`);
    const kind = kindOf(a.kind, `${name}[${i}].kind`, info);
    const layer = number(a.layer, `${name}[${i}].layer`, { min: 0, max: layersOf(info, kind) - 1, integer: true });
    const head = number(a.head, `${name}[${i}].head`, { min: 0, max: info.heads - 1, integer: true });
    const mode = a.mode ?? 'zero';
    if (mode !== 'zero' && mode !== 'mean') throw new RangeError(`${name}[${i}].mode must be "zero" or "mean", got ${JSON.stringify(mode)}`);
    return { kind, layer, head, mode };
  });
}

/** forward()'s analysis options → what the engine's analyze() takes, or null when none is asked for. */
export function analysisOptions(o, info) {
  const out = {
    topK: topK(o.topK, 'topK'),
    lensTopK: 0,
    lensLogits: false,
    hiddenStates: o.hiddenStates === undefined ? false : boolean(o.hiddenStates, 'hiddenStates'),
    heads: o.heads === undefined ? false : boolean(o.heads, 'heads'),
    rollout: o.rollout === undefined ? false : boolean(o.rollout, 'rollout'),
    ablate: ablations(o.ablate, 'ablate', info),
  };
  const lens = o.logitLens;
  if (lens === true) out.lensTopK = 5;
  else if (lens !== undefined && lens !== false && lens !== null) {
    if (typeof lens !== 'object' || Array.isArray(lens)) throw new TypeError('logitLens must be true or { topK, logits }');
    out.lensTopK = lens.topK === undefined ? (lens.logits ? 0 : 5) : topK(lens.topK, 'logitLens.topK');
    out.lensLogits = lens.logits === undefined ? false : boolean(lens.logits, 'logitLens.logits');
  }
  const any = out.topK || out.lensTopK || out.lensLogits || out.hiddenStates || out.heads || out.rollout || out.ablate.length;
  return any ? out : null;
}

function boolean(v, name) {
  if (typeof v !== 'boolean') throw new TypeError(`${name} must be true or false, got ${typeName(v)}`);
  return v;
}

/** A token given as an id or as text that is exactly one token (tokenize: text → ids). */
export function oneToken(v, name, vocab) {
  if (typeof v === 'number') return number(v, name, { min: 0, max: vocab - 1, integer: true });
  if (typeof v !== 'string') throw new TypeError(`${name} must be a token id or a one-token string, got ${typeName(v)}`);
  return v;
}

/** Patching options → { metric, site|point, kind, direction } (token strings are resolved later). */
export function patchOptions(o, info, fn) {
  options(o, fn);
  if (o.clean === undefined || o.corrupted === undefined) throw new TypeError(`${fn}: clean and corrupted inputs are required`);
  const m = o.metric;
  if (!m || typeof m !== 'object') throw new TypeError(`${fn}: metric { correct, incorrect, position } is required`);
  const metric = {
    correct: oneToken(m.correct, 'metric.correct', info.vocabSize),
    incorrect: oneToken(m.incorrect, 'metric.incorrect', info.vocabSize),
    position: m.position === undefined ? -1 : number(m.position, 'metric.position', { min: -1, integer: true }),
  };
  const direction = o.direction ?? 'denoise';
  if (direction !== 'denoise' && direction !== 'noise') throw new RangeError(`${fn}: direction must be "denoise" or "noise", got ${JSON.stringify(direction)}`);
  return { metric, direction };
}

const POINTS = ['heads', 'attn', 'mlp', 'resid'];

export function patchPoint(v, name) {
  if (!POINTS.includes(v)) throw new RangeError(`${name} must be one of ${POINTS.map((p) => `"${p}"`).join(', ')}, got ${JSON.stringify(v)}`);
  return v;
}

/** A patching site { point, layer, head?, position?, kind? }. */
export function patchSite(s, info) {
  if (!s || typeof s !== 'object') throw new TypeError('patch: site { point, layer, head, position } is required');
  const point = patchPoint(s.point, 'site.point');
  const kind = kindOf(s.kind, 'site.kind', info);
  const layer = number(s.layer, 'site.layer', { min: 0, max: layersOf(info, kind) - 1, integer: true });
  const head = s.head === undefined ? -1 : number(s.head, 'site.head', { min: -1, max: info.heads - 1, integer: true });
  if (head >= 0 && point !== 'heads') throw new RangeError(`patch: site.head is for point "heads", not "${point}"`);
  const position = s.position === undefined ? -1 : number(s.position, 'site.position', { min: -1, integer: true });
  return { point, kind, layer, head, position };
}
