#!/usr/bin/env node
// The README's main command (`npm start`): makes sure the build tools are there, builds the
// WebAssembly engine if dist/wasm is missing or older than its sources, and serves the attention
// explorer at http://127.0.0.1:8080/ (the repository root, `/` redirecting to /web/demo/).
//   node tools/demo.mjs [--port 8080] [--host 127.0.0.1] [--no-build]     ($PORT also sets the port)
// Ctrl-C stops it.
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { startServer, repoRoot } from './serve.mjs';

const args = process.argv.slice(2);
const argValue = (name, fallback) => {
  const i = args.indexOf(name);
  if (i >= 0 && i + 1 < args.length) return args[i + 1];
  const eq = args.find((a) => a.startsWith(`${name}=`));
  return eq ? eq.slice(name.length + 1) : fallback;
};
if (args.includes('--help') || args.includes('-h')) {
  console.log('usage: node tools/demo.mjs [--port 8080] [--host 127.0.0.1] [--no-build]');
  process.exit(0);
}
const port = Number(argValue('--port', process.env.PORT ?? 8080));
const host = argValue('--host', '127.0.0.1');
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  console.error(`[demo] --port must be a number from 0 to 65535, got ${argValue('--port', process.env.PORT)}`);
  process.exit(2);
}

const wasmOut = ['attnlens.mjs', 'attnlens.wasm', 'attnlens-mt.mjs', 'attnlens-mt.wasm', 'attnlens-mt.worker.js'].map((f) => join(repoRoot, 'dist/wasm', f));
const SOURCE_DIRS = ['src', 'bindings', 'cmake'];
const SOURCE_FILES = ['CMakeLists.txt'];

function newestSource() {
  let newest = { mtime: 0, path: '' };
  const visit = (p) => {
    const st = statSync(p, { throwIfNoEntry: false });
    if (!st) return;
    if (st.isDirectory()) for (const e of readdirSync(p)) visit(join(p, e));
    else if (st.mtimeMs > newest.mtime) newest = { mtime: st.mtimeMs, path: p };
  };
  for (const d of SOURCE_DIRS) visit(join(repoRoot, d));
  for (const f of SOURCE_FILES) visit(join(repoRoot, f));
  return newest;
}

/** Why the wasm module needs building, or null when dist/wasm is up to date. */
function wasmStale() {
  const missing = wasmOut.find((f) => !existsSync(f));
  if (missing) return `${relative(repoRoot, missing)} is missing`;
  const built = Math.min(...wasmOut.map((f) => statSync(f).mtimeMs));
  const src = newestSource();
  return src.mtime > built ? `${relative(repoRoot, src.path)} is newer than dist/wasm` : null;
}

if (!args.includes('--no-build')) {
  // The build's tools, and the npm packages the page imports (a fresh clone has no node_modules).
  execFileSync(process.execPath, [join(repoRoot, 'tools/setup.mjs'), '--for', 'demo'], { stdio: 'inherit' });
  const why = wasmStale();
  if (why) {
    console.log(`[demo] building the WebAssembly engine (${why}); the first build takes a few minutes…`);
    const { buildModules } = await import('./build.mjs');
    buildModules();  // both builds: the page is cross-origin isolated, so it loads the threads one
  } else {
    console.log('[demo] dist/wasm is up to date');
  }
}
if (!existsSync(join(repoRoot, 'models/manifest.json')))
  console.warn('[demo] models/manifest.json is missing: the page will offer no built-in model (load one from a URL or files).');

let server;
try {
  server = await startServer({ port, host });
} catch (e) {
  console.error(e.code === 'EADDRINUSE' ? `[demo] port ${port} is in use: try --port ${port + 1}` : `[demo] cannot listen on ${host}:${port}: ${e.message}`);
  process.exit(1);
}
console.log(`\n  AttnLens attention explorer: ${server.url}/\n  (serving ${repoRoot}; Ctrl-C stops)\n`);

const stop = async () => {
  await server.close();
  process.exit(0);
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
