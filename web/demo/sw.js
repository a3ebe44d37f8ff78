// AttnLens demo service worker: makes the attention explorer work offline.
//
// Installs (and is "ready" only once it has saved):
//   - the page and every module it loads: found by following the static and dynamic imports and
//     `new URL('…', import.meta.url)` references from app.mjs (so the JS API, its worker and the
//     wasm engine come along without a hand-kept list);
//   - the built-in models listed in models/manifest.json, under URLs that carry each file's sha256
//     (…/model.safetensors?v=ad80168b…): a retrained model gets a new URL, never a stale copy.
// Serves:
//   - model files with a ?v= hash: cache first (they never change under one URL);
//   - everything else under the served root: network first (a rebuilt wasm or an edited page shows
//     at once), refreshing the cache, and from the cache when the network fails.

const VERSION = 'attnlens-demo-v1';
const SHELL = `${VERSION}-shell`;
const MODELS = `${VERSION}-models`;
const ROOT = new URL('../../', self.location.href);  // the served tree: web/demo/sw.js → its root
const DEMO = new URL('./', self.location.href);
const ENTRY_FILES = ['./', 'index.html', 'app.css', 'favicon.svg'].map((p) => new URL(p, DEMO).href);
const ENTRY_MODULES = ['app.mjs'].map((p) => new URL(p, DEMO).href);
const MANIFEST = new URL('models/manifest.json', ROOT).href;

const SPECIFIER = /(?:\bimport\s*(?:[\w*{}\s,]+\s*from\s*)?|\bexport\s*[\w*{}\s,]+\s*from\s*|\bimport\s*\(\s*)(['"])([^'"\n]+)\1|\bnew\s+URL\s*\(\s*(['"])([^'"\n]+)\3\s*,\s*import\.meta\.url\s*\)/g;

/** Every same-tree file the modules reference, transitively (import specifiers must be relative). */
async function crawlModules(entries) {
  const seen = new Set();
  const queue = [...entries];
  while (queue.length && seen.size < 200) {
    const url = queue.shift();
    if (seen.has(url)) continue;
    seen.add(url);
    if (!/\.m?js$/.test(new URL(url).pathname)) continue;
    const r = await fetch(url, { cache: 'no-cache' }).catch(() => null);
    if (!r?.ok) continue;
    const text = await r.text();
    for (const m of text.matchAll(SPECIFIER)) {
      const spec = m[2] ?? m[4];
      const isImport = m[2] !== undefined;
      if (isImport && !/^(\.{1,2}\/|\/)/.test(spec)) continue;  // bare specifiers: packages, not ours
      if (/^[a-z][a-z0-9+.-]*:/i.test(spec)) continue;          // absolute URLs (node:fs, https:…)
      const next = new URL(spec, url);
      if (next.origin === ROOT.origin && next.href.startsWith(ROOT.href)) queue.push(next.href.split('#')[0]);
    }
  }
  return [...seen];
}

async function modelUrls() {
  const r = await fetch(MANIFEST, { cache: 'no-cache' });
  if (!r.ok) throw new Error(`${MANIFEST}: HTTP ${r.status}`);
  const manifest = await r.json();
  const urls = [];
  for (const m of manifest.models ?? []) {
    for (const f of m.files ?? []) {
      const u = new URL(f.path, MANIFEST);
      if (f.sha256) u.searchParams.set('v', f.sha256.slice(0, 16));
      urls.push(u.href);
    }
  }
  return urls;
}

async function put(cacheName, url, { required }) {
  const cache = await caches.open(cacheName);
  if (cacheName === MODELS && (await cache.match(url))) return;
  const r = await fetch(url, { cache: 'no-cache' }).catch((e) => {
    if (required) throw e;
    return null;
  });
  if (!r?.ok) {
    if (required) throw new Error(`${url}: HTTP ${r?.status}`);
    return;
  }
  await cache.put(url, r);
}

async function install() {
  const modules = await crawlModules(ENTRY_MODULES);
  await Promise.all([
    ...ENTRY_FILES.map((u) => put(SHELL, u, { required: true })),
    put(SHELL, MANIFEST, { required: true }),
    // crawled references that do not exist (a commented-out import) are skipped, not fatal
    ...modules.map((u) => put(SHELL, u, { required: ENTRY_MODULES.includes(u) })),
  ]);
  for (const u of await modelUrls()) await put(MODELS, u, { required: true });
}

self.addEventListener('install', (event) => {
  event.waitUntil(install().then(() => self.skipWaiting()));
});

self.addEventListener('activate', (event) => {
  event.waitUntil(
    (async () => {
      for (const name of await caches.keys()) if (name.startsWith('attnlens-demo-') && !name.startsWith(VERSION)) await caches.delete(name);
      // models no longer in the manifest
      const keep = new Set(await modelUrls().catch(() => []));
      if (keep.size) {
        const cache = await caches.open(MODELS);
        for (const req of await cache.keys()) if (!keep.has(req.url)) await cache.delete(req);
      }
      await self.clients.claim();
    })(),
  );
});

function headOnly(response) {
  return new Response(null, { status: response.status, statusText: response.statusText, headers: response.headers });
}

async function cacheFirst(request) {
  const cache = await caches.open(MODELS);
  const hit = await cache.match(request.url);
  if (hit) return request.method === 'HEAD' ? headOnly(hit) : hit;
  const r = await fetch(request);
  if (r.ok && request.method === 'GET') await cache.put(request.url, r.clone());
  return r;
}

async function networkFirst(request, url) {
  try {
    const r = await fetch(request);
    if (r.ok && request.method === 'GET' && r.type === 'basic') {
      const copy = r.clone();
      caches.open(SHELL).then((c) => c.put(request.url, copy)).catch(() => {});
    }
    return r;
  } catch (e) {
    const hit = (await caches.match(request.url)) ?? (request.mode === 'navigate' ? await caches.match(request.url, { ignoreSearch: true }) : undefined);
    if (hit) return request.method === 'HEAD' ? headOnly(hit) : hit;
    if (request.mode === 'navigate' && url.pathname === ROOT.pathname) return Response.redirect(new URL('web/demo/', ROOT).href, 302);
    return new Response(`offline, and ${url.pathname} was not saved for offline use\n`, {
      status: 503,
      statusText: 'Offline',
      headers: { 'Content-Type': 'text/plain; charset=utf-8' },
    });
  }
}

self.addEventListener('fetch', (event) => {
  const request = event.request;
  if (request.method !== 'GET' && request.method !== 'HEAD') return;
  if (request.headers.has('range')) return;
  const url = new URL(request.url);
  if (url.origin !== ROOT.origin || !url.href.startsWith(ROOT.href)) return;
  const isModel = url.pathname.startsWith(new URL('models/', ROOT).pathname) && url.searchParams.has('v');
  event.respondWith(isModel ? cacheFirst(request) : networkFirst(request, url));
});
