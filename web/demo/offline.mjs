// Offline support: registers the service worker (sw.js) over the whole served tree — the page, the
// JS API in /web/src/, the wasm in /dist/wasm/ and the models in /models/ — and reports its state.
// The scope is the tree's root, above sw.js's folder, so the server must send
// "Service-Worker-Allowed: /" for sw.js (tools/serve.mjs does); if it does not, the worker
// registers for /web/demo/ only and the page says offline use is partial.

const SW_URL = new URL('./sw.js', import.meta.url);
const ROOT_SCOPE = new URL('../../', import.meta.url).pathname;

/** onStatus(status, detail): 'unsupported' | 'installing' | 'ready' | 'partial' | 'error'. */
export async function enableOffline(onStatus) {
  if (!('serviceWorker' in navigator)) {
    onStatus('unsupported', 'This browser has no service workers: the page needs the network.');
    return;
  }
  let partial = false;
  try {
    try {
      await navigator.serviceWorker.register(SW_URL, { scope: ROOT_SCOPE });
    } catch (e) {
      if (e?.name !== 'SecurityError') throw e;
      partial = true;
      await navigator.serviceWorker.register(SW_URL);
    }
    if (!navigator.serviceWorker.controller) onStatus('installing', 'Saving the page, the engine and the built-in models for offline use…');
    await navigator.serviceWorker.ready;
    onStatus(partial ? 'partial' : 'ready', partial ? 'The server does not allow a site-wide service worker: offline use is partial.' : 'The page, the engine and the built-in models are saved: this page works offline.');
  } catch (e) {
    onStatus('error', `Offline use is not available: ${e?.message ?? e}`);
  }
}
