// The TypeScript declarations (web/src/index.d.ts) type-check a user's code: tsc --noEmit over
// tests/js/types/usage.ts, which imports 'attnlens' through package.json "exports" and also
// proves (with @ts-expect-error) that misuse does not compile.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { root } from './fixtures/models.mjs';

const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
const noTsc = !existsSync(tsc) && 'typescript is not installed (npm install: it is a devDependency)';
if (noTsc) console.log(`SKIPPED: ${noTsc}`);

test('tsc --noEmit: index.d.ts against tests/js/types/usage.ts', { skip: noTsc, timeout: 120_000 }, () => {
  const r = spawnSync(process.execPath, [tsc, '--noEmit', '-p', join(root, 'tests/js/types/tsconfig.json')], { cwd: root, encoding: 'utf8' });
  assert.equal(r.status, 0, `tsc failed:\n${r.stdout}${r.stderr}`);
});

test('tsc --noEmit: index.d.ts itself under strict settings', { skip: noTsc, timeout: 120_000 }, () => {
  const r = spawnSync(process.execPath, [tsc, '--noEmit', '--strict', '--target', 'es2022', '--lib', 'es2022,dom', join(root, 'web/src/index.d.ts')], { cwd: root, encoding: 'utf8' });
  assert.equal(r.status, 0, `tsc failed:\n${r.stdout}${r.stderr}`);
});

test('every runtime export is declared, and every declared value exists at runtime', async () => {
  const api = await import('../../web/src/index.mjs');
  const dts = (await import('node:fs')).readFileSync(join(root, 'web/src/index.d.ts'), 'utf8');
  const declared = [...dts.matchAll(/^export (?:declare )?(?:function|class|const) (\w+)/gm)].map((m) => m[1]);
  assert.deepEqual([...new Set(declared)].sort(), Object.keys(api).sort());
});
