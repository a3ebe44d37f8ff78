// Messages on the page: specific, visible, dismissible — and what an error means in words.
import { h } from './format.mjs';

/** Shows `text` in a message box (tone 'error' | 'info'); null hides it. */
export function showMessage(el, text, tone = 'error') {
  if (!text) {
    el.hidden = true;
    el.replaceChildren();
    delete el.dataset.kind;
    return;
  }
  el.dataset.tone = tone;
  el.replaceChildren(
    h('span', { class: 'message-text', text }),
    h('button', { type: 'button', class: 'dismiss', 'aria-label': 'Dismiss', text: '×', onclick: () => showMessage(el, null) }),
  );
  el.hidden = false;
}

/** A model that failed to load, explained. */
export function loadErrorText(e, label) {
  const msg = String(e?.message ?? e);
  if (e?.name === 'SourceError') return msg;
  if (e?.name === 'AbortError') return 'Loading was cancelled; the previous model is still loaded.';
  if (e?.name === 'FetchError') {
    const hint = e.status === 404 ? ' Check the address: nothing is there.' : e.status === 403 ? ' The server refused.' : '';
    return `Could not download the model: ${msg}.${hint}`;
  }
  if (/failed to fetch|networkerror|fetch failed|load failed/i.test(msg))
    return `Could not download ${label}: the request failed (offline, a wrong host, a server that does not allow cross-origin requests, or a plain-http URL this page's Content-Security-Policy does not allow). ${msg}`;
  if (/content security policy|refused to connect/i.test(msg)) return `This page is not allowed to fetch ${label} (Content-Security-Policy): ${msg}`;
  if (/bad_alloc|out of memory|memory access out of bounds|cannot enlarge memory|allocation failed|Aborted\(OOM/i.test(msg))
    return `${label} does not fit in the engine's WebAssembly memory (at most 4 GiB for weights, KV cache and scratch together): ${msg}`;
  return `Could not load ${label}: ${msg}`;
}

/** A generation that failed, explained. */
export function runErrorText(e) {
  const msg = String(e?.message ?? e);
  if (/disposed/.test(msg)) return 'The model was replaced while it was generating. Generate again.';
  return `Generation failed: ${msg}`;
}
