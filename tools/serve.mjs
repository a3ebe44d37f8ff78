#!/usr/bin/env node
// A small static file server for the demo and the browser tests (node:http, no dependencies).
//
//   - serves a folder (the repository root by default) with correct Content-Types (.mjs as
//     text/javascript, .wasm as application/wasm, …), Content-Length, ETag / If-None-Match;
//   - sends a strict Content-Security-Policy plus COOP/COEP (crossOriginIsolated) on every response,
//     so whatever runs here also runs on a careful site;
//   - `/` redirects to /web/demo/, a folder URL serves its index.html, a folder without the slash
//     redirects to it;
//   - sends `Service-Worker-Allowed: /` for service worker scripts (sw.js), so the demo's worker can
//     control the whole origin (the inference worker lives in /web/src/, outside /web/demo/).
//
//   node tools/serve.mjs [--port 8080] [--host 127.0.0.1] [--root .]
//   import { startServer } from './tools/serve.mjs';  const s = await startServer({ port: 0 }); s.url; await s.close();
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import { createServer } from 'node:http';
import { extname, join, normalize, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

export const repoRoot = resolve(fileURLToPath(new URL('..', import.meta.url)));

export const MIME_TYPES = {
  '.html': 'text/html; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.webmanifest': 'application/manifest+json; charset=utf-8',
  '.wasm': 'application/wasm',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.txt': 'text/plain; charset=utf-8',
  '.md': 'text/markdown; charset=utf-8',
  '.ts': 'text/plain; charset=utf-8',
  '.bin': 'application/octet-stream',
  '.gguf': 'application/octet-stream',
  '.safetensors': 'application/octet-stream',
};

// Scripts only from this origin (+ compiling WebAssembly), no inline script or style, models may be
// fetched from any https origin (the page's "load from URL").
export const STRICT_CSP = [
  "default-src 'self'",
  "script-src 'self' 'wasm-unsafe-eval'",
  "style-src 'self'",
  "img-src 'self' data: blob:",
  "connect-src 'self' https:",
  "worker-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

export const DEFAULT_HEADERS = {
  'Content-Security-Policy': STRICT_CSP,
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Embedder-Policy': 'require-corp',
  'Cross-Origin-Resource-Policy': 'same-origin',
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
};

/**
 * A request handler serving `root`. Options: headers (added to / overriding DEFAULT_HEADERS; a
 * value of null removes one), index ('/' redirects there), log (function(line)).
 */
export function staticHandler({ root = repoRoot, headers = {}, index = '/web/demo/', log = null } = {}) {
  const base = resolve(root);
  const common = { ...DEFAULT_HEADERS, ...headers };
  for (const [k, v] of Object.entries(common)) if (v === null || v === undefined) delete common[k];

  const send = (res, status, extra, body) => {
    res.writeHead(status, { ...common, ...extra });
    res.end(body);
  };

  return async function handle(req, res) {
    const done = (status) => log?.(`${status} ${req.method} ${req.url}`);
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      send(res, 405, { Allow: 'GET, HEAD', 'Content-Type': 'text/plain; charset=utf-8' }, 'method not allowed\n');
      return done(405);
    }
    let pathname;
    try {
      pathname = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    } catch {
      send(res, 400, { 'Content-Type': 'text/plain; charset=utf-8' }, 'bad request\n');
      return done(400);
    }
    if (pathname === '/' && index !== '/') {
      // the query comes along: /?model=date-normalizer opens that model (README)
      const q = req.url.indexOf('?');
      send(res, 302, { Location: index + (q >= 0 ? req.url.slice(q) : '') });
      return done(302);
    }
    const file = normalize(join(base, pathname));
    if (file !== base && !file.startsWith(base + sep)) {
      send(res, 403, { 'Content-Type': 'text/plain; charset=utf-8' }, 'forbidden\n');
      return done(403);
    }
    let path = file;
    let info = await stat(path).catch(() => null);
    if (info?.isDirectory()) {
      if (!pathname.endsWith('/')) {
        const q = req.url.indexOf('?');
        send(res, 301, { Location: pathname + '/' + (q >= 0 ? req.url.slice(q) : '') });
        return done(301);
      }
      path = join(path, 'index.html');
      info = await stat(path).catch(() => null);
    }
    if (!info?.isFile()) {
      send(res, 404, { 'Content-Type': 'text/plain; charset=utf-8' }, `not found: ${pathname}\n`);
      return done(404);
    }
    const etag = `"${info.size.toString(16)}-${Math.floor(info.mtimeMs).toString(16)}"`;
    const extra = {
      'Content-Type': MIME_TYPES[extname(path).toLowerCase()] ?? 'application/octet-stream',
      'Cache-Control': 'no-cache',  // always revalidate: a rebuilt wasm or retrained model shows up at once
      ETag: etag,
      'Last-Modified': new Date(info.mtimeMs).toUTCString(),
    };
    if (/(^|\/)sw\.js$/.test(pathname)) extra['Service-Worker-Allowed'] = '/';
    if (req.headers['if-none-match'] === etag) {
      send(res, 304, extra);
      return done(304);
    }
    res.writeHead(200, { ...common, ...extra, 'Content-Length': info.size });
    if (req.method === 'HEAD') {
      res.end();
      return done(200);
    }
    const stream = createReadStream(path);
    stream.on('error', () => res.destroy());
    stream.pipe(res);
    done(200);
  };
}

/**
 * Starts a server; resolves when it listens. port 0 picks a free port.
 * @returns {Promise<{server: import('node:http').Server, url: string, port: number, close: () => Promise<void>}>}
 */
export function startServer({ port = 0, host = '127.0.0.1', ...options } = {}) {
  const server = createServer(staticHandler(options));
  const sockets = new Set();
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  return new Promise((resolveStart, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => {
      server.off('error', reject);
      const actual = server.address().port;
      const shownHost = host.includes(':') ? `[${host}]` : host;
      resolveStart({
        server,
        port: actual,
        url: `http://${shownHost}:${actual}`,
        close: () => new Promise((r) => {
          server.close(() => r());
          for (const s of sockets) s.destroy();  // keep-alive connections (a browser) would hold close() open
        }),
      });
    });
  });
}

function argValue(args, name, fallback) {
  const i = args.indexOf(name);
  if (i >= 0 && i + 1 < args.length) return args[i + 1];
  const eq = args.find((a) => a.startsWith(`${name}=`));
  return eq ? eq.slice(name.length + 1) : fallback;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const port = Number(argValue(args, '--port', process.env.PORT ?? 8080));
  const host = argValue(args, '--host', '127.0.0.1');
  const root = resolve(argValue(args, '--root', repoRoot));
  const s = await startServer({ port, host, root, log: args.includes('--verbose') ? console.log : null });
  console.log(`Serving ${root} at ${s.url}/`);
}
