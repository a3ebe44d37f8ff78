// Where models come from: the built-in ones (models/manifest.json), a URL, or files dropped on the
// page. Each is turned into a "source" the engine loads, after checks that give a specific message
// for the common mistakes (a file that is not a model, a missing tokenizer, a model that cannot fit
// in WebAssembly memory).

export const MANIFEST_URL = new URL('../../models/manifest.json', import.meta.url);

// The engine's wasm32 memory is capped at 4 GiB (-sMAXIMUM_MEMORY=4GB in CMakeLists.txt); the model's
// bytes must fit in it along with the KV cache and scratch buffers.
export const WASM_MEMORY_LIMIT = 4 * 1024 ** 3;
const HEADROOM = 64 * 1024 ** 2;

export class SourceError extends Error {
  constructor(message) {
    super(message);
    this.name = 'SourceError';
  }
}

/** The built-in models: { default, models: [...] } from the manifest. */
export async function fetchManifest() {
  const r = await fetch(MANIFEST_URL);
  if (!r.ok) throw new SourceError(`Could not read the list of built-in models (${MANIFEST_URL.pathname}: HTTP ${r.status}).`);
  const m = await r.json();
  if (!Array.isArray(m.models)) throw new SourceError(`${MANIFEST_URL.pathname} has no "models" list.`);
  return m;
}

/** The URL of one file of a built-in model; the sha256 prefix in the query busts stale caches. */
export function builtinFileUrl(file) {
  const url = new URL(file.path, MANIFEST_URL);
  if (file.sha256) url.searchParams.set('v', file.sha256.slice(0, 16));
  return url.href;
}

/** A source for a built-in model entry of the manifest. */
export function builtinSource(entry) {
  return {
    kind: 'builtin',
    name: entry.name,
    label: entry.name,
    load: entry.files.map(builtinFileUrl),
    bytes: entry.files.reduce((a, f) => a + (f.bytes ?? 0), 0),
    entry,
    generationConfig: () => {
      const f = entry.files.find((x) => x.path.endsWith('generation_config.json'));
      return f ? fetch(builtinFileUrl(f)).then((r) => (r.ok ? r.json() : null)).catch(() => null) : Promise.resolve(null);
    },
  };
}

/** A source for a URL typed by the user: a file, or a Hugging Face-style folder ending in "/". */
export function urlSource(text) {
  const s = text.trim();
  if (!s) throw new SourceError('Type the URL of a model file (.gguf, .bin, .safetensors) or of a folder ending in “/”.');
  let url;
  try {
    url = new URL(s, location.href);
  } catch {
    throw new SourceError(`“${s}” is not a URL.`);
  }
  if (!/^https?:$/.test(url.protocol)) throw new SourceError(`Only http(s) URLs can be loaded, not ${url.protocol}`);
  const name = url.pathname.split('/').filter(Boolean).pop() ?? url.host;
  return { kind: 'url', name, label: url.href, load: url.href, bytes: 0, generationConfig: () => Promise.resolve(null) };
}

const KIND_BY_NAME = [
  [/\.gguf$/i, 'gguf'],
  [/\.safetensors$/i, 'safetensors'],
  [/^tokenizer\.bin$|tok\d*\.bin$/i, 'tokenizer.bin'],
  [/\.bin$/i, 'bin'],
  [/^config\.json$/i, 'config'],
  [/^tokenizer\.json$/i, 'tokenizer.json'],
  [/^generation_config\.json$/i, 'generation_config'],
  [/\.safetensors\.index\.json$/i, 'index'],
  [/\.json$/i, 'json'],
  [/\.jinja$/i, 'jinja'],  // chat_template.jinja
  [/\.(model|spm)$/i, 'sentencepiece'],  // spiece.model, Marian's source.spm / target.spm
];

function classify(file) {
  return KIND_BY_NAME.find(([re]) => re.test(file.name))?.[1] ?? 'other';
}

/**
 * A source for dropped / picked files (File objects). Throws SourceError with what is wrong or
 * missing before anything is read.
 */
export function filesSource(fileList) {
  const files = [...fileList];
  if (!files.length) throw new SourceError('No files were dropped.');
  const kinds = files.map(classify);
  const names = files.map((f) => f.name).join(', ');
  const other = files.filter((_, i) => kinds[i] === 'other');
  if (other.length)
    throw new SourceError(
      `${other.map((f) => f.name).join(', ')}: not a model file. Drop a llama2.c checkpoint (.bin) with its tokenizer.bin, a .gguf file, or model.safetensors with config.json and tokenizer.json.`,
    );
  const empty = files.find((f) => f.size === 0);
  if (empty) throw new SourceError(`${empty.name} is empty (0 bytes).`);
  const has = (k) => kinds.includes(k);
  if (!has('gguf') && !has('bin') && !has('safetensors'))
    throw new SourceError(`${names}: no weights among these files. Add the model itself (.gguf, a llama2.c .bin, or model.safetensors).`);
  if (has('safetensors') && !has('config'))
    throw new SourceError('model.safetensors needs its config.json (and tokenizer.json to generate text): drop them together.');
  const bytes = files.reduce((a, f) => a + f.size, 0);
  if (bytes + HEADROOM > WASM_MEMORY_LIMIT)
    throw new SourceError(
      `This model is too large for the browser: its files hold ${(bytes / 1024 ** 3).toFixed(2)} GiB, and WebAssembly memory is limited to 4 GiB (weights, KV cache and scratch together). Try a smaller or quantized (q8_0) model.`,
    );
  const weights = files.find((_, i) => ['gguf', 'bin', 'safetensors'].includes(kinds[i]));
  const genFile = files.find((_, i) => kinds[i] === 'generation_config');
  return {
    kind: 'files',
    name: weights.name,
    label: names,
    load: files,
    bytes,
    generationConfig: () => (genFile ? genFile.text().then(JSON.parse).catch(() => null) : Promise.resolve(null)),
  };
}

/** Sampling defaults from a generation_config.json (Hugging Face names), for the controls. */
export function samplingDefaults(gen) {
  if (!gen || typeof gen !== 'object') return {};
  const out = {};
  if (gen.do_sample === false) out.temperature = 0;
  else if (typeof gen.temperature === 'number') out.temperature = gen.temperature;
  if (Number.isInteger(gen.top_k)) out.topK = gen.top_k;
  if (typeof gen.top_p === 'number') out.topP = gen.top_p;
  if (Number.isInteger(gen.max_new_tokens)) out.maxNewTokens = gen.max_new_tokens;
  return out;
}
