// The page's one door to the AttnLens engine. With IN_WORKER the model runs in a Web Worker
// (loadModel's worker mode: a proxy with the same async methods, stream included), so the page
// never blocks while the engine computes. Everything else in the demo uses only what the proxy and
// the in-thread Model have in common: info, promptFormat, tokenize, encodePrompt, pieces, stream,
// forward, memory, dispose — always awaited.
import { loadModel } from '../src/index.mjs';

export const IN_WORKER = true;

// ?threads=N (1–16) in the page's URL: how many threads the engine splits its work over (the
// package's default otherwise: loadModel's threads option).
const wantedThreads = Number(new URLSearchParams(globalThis.location?.search ?? '').get('threads'));
const threads = Number.isInteger(wantedThreads) && wantedThreads >= 1 && wantedThreads <= 16 ? wantedThreads : undefined;

/** Loads a model: source as loadModel takes it; onProgress({loaded, total, file}); signal. */
export function openModel(source, { onProgress, signal } = {}) {
  return loadModel(source, { worker: IN_WORKER, onProgress, signal, ...(threads ? { threads } : {}) });
}

