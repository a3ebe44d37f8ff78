// Where the llama.cpp peers are (../shared/peers/README.md: node-llama-cpp, wllama, the quantizer and
// the models made by its make_models.sh): $ATTNLENS_PEERS, else ../shared/peers when it is set up,
// else the copy tests/fixtures/llamacpp/llamacpp.py sets up in ~/.cache/attnlens-peers. null if none.
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const root = join(dirname(fileURLToPath(import.meta.url)), '..');

export function peersDir(needs = ['bench_llamacpp.mjs', 'node_modules', 'models']) {
  const ready = (p) => needs.every((f) => existsSync(join(p, f)));
  for (const p of [process.env.ATTNLENS_PEERS, join(root, '..', 'shared', 'peers'), join(homedir(), '.cache', 'attnlens-peers')])
    if (p && ready(p)) return p;
  return null;
}
