// The shape of the JS package's sources (web/src): no import cycle between its modules, and the
// helpers that must exist once (isNode, the abort error) are defined once.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { root } from './fixtures/models.mjs';

const dir = join(root, 'web/src');
const files = readdirSync(dir).filter((f) => f.endsWith('.mjs'));
const source = Object.fromEntries(files.map((f) => [f, readFileSync(join(dir, f), 'utf8')]));

// Static `import … from './x.mjs'` / `export … from './x.mjs'` and dynamic `import('./x.mjs')`.
function importsOf(text) {
  const out = new Set();
  for (const m of text.matchAll(/(?:\bfrom\s*|\bimport\s*\(\s*|^\s*import\s+)['"]\.\/([\w.-]+\.mjs)['"]/gm)) out.add(m[1]);
  return [...out];
}

test('web/src: no import cycle (static or dynamic)', () => {
  const graph = Object.fromEntries(files.map((f) => [f, importsOf(source[f])]));
  for (const [f, deps] of Object.entries(graph)) for (const d of deps) assert.ok(files.includes(d), `${f} imports ./${d}, which does not exist`);
  assert.ok(graph['sources.mjs'].length && graph['wasm.mjs'].length, 'the import scanner sees imports');
  const state = {};
  const visit = (f, path) => {
    if (state[f] === 'done') return;
    assert.notEqual(state[f], 'open', `import cycle: ${[...path, f].join(' → ')}`);
    state[f] = 'open';
    for (const d of graph[f]) visit(d, [...path, f]);
    state[f] = 'done';
  };
  for (const f of files) visit(f, []);
});

test('web/src: one isNode, one abort-error helper, one FetchError', () => {
  const defining = (re) => files.filter((f) => re.test(source[f]));
  assert.deepEqual(defining(/\b(const|let|var|function)\s+isNode\b/), ['env.mjs']);
  assert.deepEqual(defining(/new DOMException\(\s*'[^']*abort/i), ['errors.mjs']);
  assert.deepEqual(defining(/class FetchError\b/), ['errors.mjs']);
  assert.deepEqual(defining(/JSON\.parse\(/).filter((f) => f !== 'sources.mjs'), [], 'no JSON text from the engine is parsed in JS');
});

// The page imports npm packages by relative path (web/src/chat.mjs: ../../node_modules/@huggingface/jinja/…).
// `npm start` on a fresh clone installs package.json's "dependencies" and no more before it serves the
// page (tools/demo.mjs → tools/setup.mjs --for demo), so each such package must be one of them.
test('web/src: every npm package it imports is a dependency, which npm start installs', () => {
  const { dependencies = {} } = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'));
  const imported = new Set();
  for (const text of Object.values(source))
    for (const m of text.matchAll(/['"](?:\.\.\/)+node_modules\/((?:@[\w.-]+\/)?[\w.-]+)\//g)) imported.add(m[1]);
  assert.ok(imported.has('@huggingface/jinja'), `the scanner sees chat.mjs's import (found: ${[...imported].join(', ')})`);
  for (const p of imported) assert.ok(p in dependencies, `web/src imports ${p}, which is not in package.json's dependencies`);
  const setup = readFileSync(join(root, 'tools/setup.mjs'), 'utf8');
  assert.match(setup, /\.dependencies\b/, 'tools/setup.mjs reads package.json\'s dependencies');
  assert.match(readFileSync(join(root, 'tools/demo.mjs'), 'utf8'), /setup\.mjs'\), '--for', 'demo'\]/, 'tools/demo.mjs runs the demo setup');
});
