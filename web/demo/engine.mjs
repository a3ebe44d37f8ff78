// The page's one door to the AttnLens engine. With IN_WORKER the model runs in a Web Worker
// (loadModel's worker mode: a proxy with the same async methods, stream included), so the page
// never blocks while the engine computes. Everything else in the demo uses only what the proxy and
// the in-thread Model have in common: info, promptFormat, tokenize, pieces, stream, forward,
// memory, dispose — always awaited.
import { loadModel } from '../src/index.mjs';

export const IN_WORKER = true;

/** Loads a model: source as loadModel takes it; onProgress({loaded, total, file}); signal. */
export function openModel(source, { onProgress, signal } = {}) {
  return loadModel(source, { worker: IN_WORKER, onProgress, signal });
}

/**
 * Token ids of a prompt exactly as generation encodes it (the model's special tokens, the
 * encoder–decoder source's end-of-sequence token), with their pieces: the run passes these ids to
 * stream(), so the tokens shown are the tokens the model read.
 */
export async function encodePrompt(model, text) {
  const pf = model.promptFormat;
  const { ids } = await model.tokenize(text, { addSpecialTokens: pf.addSpecial });
  const out = Array.from(ids);
  if (pf.sourceSuffixEos && pf.eosToken >= 0) out.push(pf.eosToken);
  if (!out.length && pf.emptyPromptToken >= 0) out.push(pf.emptyPromptToken);
  return { ids: out, pieces: out.length ? await model.pieces(out) : [] };
}
