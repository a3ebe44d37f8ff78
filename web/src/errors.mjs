// The errors the package creates itself (engine errors are plain Errors made in wasm.mjs).

/** Error from a failed download: carries the HTTP status. */
export class FetchError extends Error {
  constructor(url, status, statusText) {
    super(`GET ${url} failed: ${status} ${statusText}`.trim());
    this.name = 'FetchError';
    this.url = url;
    this.status = status;
  }
}

/**
 * The engine's WebAssembly instance failed in a way that leaves its memory untrustworthy (a trap,
 * a stack overflow) and was discarded; the models loaded in it are lost and must be loaded again
 * (the next load starts a fresh instance). `cause` is what the instance threw.
 */
export class EngineLostError extends Error {
  constructor(message, options) {
    super(message, options);
    this.name = 'EngineLostError';
  }
}

/**
 * What an aborted call throws: the signal's reason (as fetch() and signal.throwIfAborted() do), or
 * an AbortError DOMException when there is none.
 */
export function abortError(signal) {
  return signal?.reason ?? new DOMException('This operation was aborted', 'AbortError');
}

/** Throws abortError(signal) if the signal has been aborted. */
export function throwIfAborted(signal) {
  if (signal?.aborted) throw abortError(signal);
}
