// Being a good library in a Node process: loading AttnLens adds no process-wide handlers, so an
// application's own uncaught error still exits with code 1 and its own stack (Emscripten's glue
// would otherwise turn it into exit code 7 with the glue's minified source printed).
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { root, web } from './fixtures/models.mjs';
import { pathToFileURL } from 'node:url';

const run = (body) => spawnSync(process.execPath, ['--input-type=module', '-e', `
  const { engineInfo } = await import(${JSON.stringify(pathToFileURL(web).href)});
  await engineInfo();
  ${body}`], { cwd: root, encoding: 'utf8', timeout: 20_000 });

test('no uncaughtException / unhandledRejection listeners are left behind', () => {
  const r = run(`console.log(process.listenerCount('uncaughtException'), process.listenerCount('unhandledRejection'));`);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout.trim(), '0 0');
});

test("an application's uncaught error: exit code 1, its own message, not the glue", () => {
  const r = run(`setTimeout(() => { throw new Error('the app failed'); }, 1);`);
  assert.equal(r.status, 1);
  assert.match(r.stderr, /the app failed/);
  assert.doesNotMatch(r.stderr, /createAttnLensModule|Emscripten/);
});

test("an application's unhandled rejection behaves as Node's default", () => {
  const r = run(`Promise.reject(new Error('rejected by the app'));`);
  assert.equal(r.status, 1);
  assert.match(r.stderr, /rejected by the app/);
  assert.doesNotMatch(r.stderr, /createAttnLensModule/);
});
