// AttnLens: run small transformer models in the browser (or Node) and get every attention weight.
//
//   import { loadModel } from 'attnlens';
//   const model = await loadModel('https://example.com/kjv-gpt2/', { onProgress: (p) => … });
//   for await (const step of model.stream('And God said', { attentions: true })) …
//
// See README.md for the whole API and how attention arrays are laid out.
import { Model, loadModelHere } from './model.mjs';
import { EngineLostError } from './errors.mjs';
import { checkSource, resolveSource, FetchError } from './sources.mjs';
import { Tokenizer } from './tokenizer.mjs';
import { SIMD_CHOICES } from './wasm.mjs';
import { loadModelInWorker } from './worker-client.mjs';
// The modules the ones above import, named here too: a page that imports this file without a
// bundler then learns the whole graph in one round trip instead of one per level of imports
// (a cold page load of the graph took 300 ms over four levels: bench/browser.mjs --only start).
// (chat.mjs's Jinja is imported statically, not on demand: a dynamic import would make bundlers
// split the worker's code, which Vite's default classic-script workers cannot take.)
import '../../node_modules/@huggingface/jinja/dist/index.js';
import './analysis.mjs';
import './attentions.mjs';
import './chat.mjs';
import './env.mjs';
import './pieces.mjs';
import './validate.mjs';

export { Attentions } from './attentions.mjs';
export { EngineLostError, FetchError, Model, Tokenizer };

function checkLoadOptions(o) {
  if (o === null || typeof o !== 'object' || Array.isArray(o)) throw new TypeError('loadModel: options must be an object');
  if (o.cache !== undefined && typeof o.cache !== 'boolean') throw new TypeError('loadModel: cache must be true or false');
  if (o.worker !== undefined && typeof o.worker !== 'boolean' && !(o.worker && typeof o.worker.postMessage === 'function'))
    throw new TypeError('loadModel: worker must be true, false or a Worker running attnlens/worker');
  if (o.onProgress !== undefined && typeof o.onProgress !== 'function') throw new TypeError('loadModel: onProgress must be a function');
  if (o.quantize !== undefined && !['q8_0', 'q4_0', 'q4_k', 'none'].includes(o.quantize))
    throw new RangeError(`loadModel: quantize must be "q8_0", "q4_0", "q4_k" or "none", got ${JSON.stringify(o.quantize)}`);
  if (o.kvCache !== undefined && !['f32', 'q8_0'].includes(o.kvCache))
    throw new RangeError(`loadModel: kvCache must be "f32" or "q8_0", got ${JSON.stringify(o.kvCache)}`);
  if (o.contextLength !== undefined && !(Number.isInteger(o.contextLength) && o.contextLength > 0))
    throw new RangeError(`loadModel: contextLength must be a positive integer, got ${o.contextLength}`);
  if (o.threads !== undefined && !(Number.isInteger(o.threads) && o.threads >= 1 && o.threads <= 16))
    throw new RangeError(`loadModel: threads must be an integer from 1 to 16, got ${o.threads}`);
  if (o.simd !== undefined && !SIMD_CHOICES.includes(o.simd))
    throw new RangeError(`loadModel: simd must be "auto", "relaxed" or "portable", got ${JSON.stringify(o.simd)}`);
  if (o.signal !== undefined && !(o.signal && typeof o.signal === 'object' && 'aborted' in o.signal))
    throw new TypeError('loadModel: signal must be an AbortSignal');
}

/**
 * Loads a model: a URL (file or Hugging Face-style folder ending in "/"), several URLs, File/Blob
 * objects, ArrayBuffers / typed arrays, or (in Node) a path. Options: onProgress({loaded, total,
 * file}), signal, cache (keep downloads in Cache Storage), quantize ("q8_0", "q4_0" or "q4_k" quantizes
 * f32/f16/bf16 weight matrices at load), contextLength (KV cache size; default the model's), kvCache
 * ("f32" or "q8_0": how the KV cache stores keys and values; q8_0 is a quarter of the bytes), threads (how many threads the engine
 * splits its work over; default the physical cores, at most 4; only where shared memory is allowed —
 * Node, cross-origin isolated pages — elsewhere 1; model.info.threads says what it got), simd ("auto": the
 * relaxed-SIMD build where the JavaScript engine runs it, else the portable one; "portable": results
 * the same on every machine; "relaxed"; the first load of a thread decides for its engine), worker (true: run it in a Web Worker /
 * worker_threads, every method then runs off this thread; or a Worker you created on
 * attnlens/worker, for bundlers that want to see the worker's URL).
 */
export async function loadModel(source, options = {}) {
  checkLoadOptions(options);
  if (source === undefined || source === null) throw new TypeError('loadModel: source is required');
  checkSource(source);
  if (options.worker) return loadModelInWorker(source, options);
  return loadModelHere(source, options);
}

/**
 * Loads a tokenizer alone: tokenizer.bin (llama2.c; pass vocabSize if the file has extra records),
 * tokenizer.json with its configuration files if you have them (tokenizer_config.json,
 * special_tokens_map.json, chat_template.jinja), or a GGUF (its embedded tokenizer and template).
 * Same sources as loadModel.
 */
export async function loadTokenizer(source, options = {}) {
  checkLoadOptions(options);
  if (source === undefined || source === null) throw new TypeError('loadTokenizer: source is required');
  checkSource(source, 'loadTokenizer');
  const files = await resolveSource(source, options);
  return Tokenizer.fromFiles(files, options.vocabSize ?? 0);
}

/**
 * Engine facts: the SIMD instruction set the kernels were compiled for, which build runs ("threads"
 * or "single"), whether it is the relaxed-SIMD one, how many threads it has started, wasm memory in use.
 */
export { engineInfo } from './wasm.mjs';
