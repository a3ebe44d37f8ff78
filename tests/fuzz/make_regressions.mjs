#!/usr/bin/env node
// Writes tests/fuzz/regressions/<harness>/: the inputs behind the hardening work's first findings (a trapping context size, deep JSON, NaN weights, huge ids) (and later fixed
// fuzzer findings are copied next to them by hand). tools/fuzz.mjs replays every one before fuzzing,
// and npm test's smoke run does too.   node tests/fuzz/make_regressions.mjs
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { G, llamaConfig, llamaGguf, llamaHf, safetensors, tinyLlama } from '../js/fixtures/synth.mjs';
import { bundle } from './bundle.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const root = join(here, '..', '..');
const enc = new TextEncoder();
const out = (harness, name, bytes) => {
  mkdirSync(join(here, 'regressions', harness), { recursive: true });
  writeFileSync(join(here, 'regressions', harness, name), bytes);
};
const nested = (depth, inner = '1') => '['.repeat(depth) + inner + ']'.repeat(depth);

// 1. wasm32 size arithmetic: 16 layers with a context of 2^24 (loaded with a 0-byte KV cache, then trapped)
out('load', 'llama-16-layers-context-2e24.bundle', bundle(llamaHf({ layers: 16, context: 1 << 24 })));
out('config', 'max-position-2e24.json', enc.encode(JSON.stringify({ ...llamaConfig({ ...tinyLlama, layers: 16 }), max_position_embeddings: 1 << 24 })));
// head_dim 512 × a context of 2^24 (trapped inside loadModel) — as config only: the weights would be megabytes
out('config', 'head-dim-512-context-2e24.json', enc.encode(JSON.stringify({ ...llamaConfig({ ...tinyLlama, dim: 512, heads: 1, kvHeads: 1 }), max_position_embeddings: 1 << 24 })));
// a GGUF context of 2^20 (allocated a 256 MB KV cache at load)
out('gguf', 'llama-context-2e20.gguf', llamaGguf({ context: 1 << 20 })[0].data);
out('load', 'gguf-llama-context-2e20.bundle', bundle(llamaGguf({ context: 1 << 20 })));

// 2. deeply nested JSON (a recursive dump while building an error message overflowed the stack)
out('config', 'deep-nesting.json', enc.encode(`{"architectures": ${nested(5000)}}`));
out('tokenizer_json', 'deep-nesting.json', enc.encode(`{"model": {"type": "BPE", "vocab": ${nested(5000, '{}')}}}`));
const header = enc.encode(`{"__metadata__": ${'{"a":'.repeat(5000)}1${'}'.repeat(5000)}}`);
const st = new Uint8Array(8 + header.length);
new DataView(st.buffer).setBigUint64(0, BigInt(header.length), true);
st.set(header, 8);
out('safetensors', 'deep-header.safetensors', st);
out('safetensors_index', 'deep-nesting.json', enc.encode(`{"weight_map": {"a": "model-00001-of-00002.safetensors"}, "metadata": ${nested(5000)}}`));
out('load', 'deep-config.bundle', bundle([{ name: 'config.json', data: enc.encode(`{"a": ${nested(5000)}}`) }, llamaHf()[1]]));

// 3. a NaN weight (undefined behaviour in the q8_0 quantizer; must be refused on every path)
const [config, weights] = llamaHf();
const nan = new Float32Array(16 * 32).fill(0.01);
nan[5] = NaN;
const withNan = safetensors([{ name: 'model.embed_tokens.weight', shape: [32, 16], data: nan }, ...llamaTensorsWithout('model.embed_tokens.weight')]);
out('load', 'nan-weight.bundle', bundle([config, { name: 'model.safetensors', data: withNan }]));

// 5. a tokenizer.json with one id near 2^24 (6 s and 464 MB before it was refused)
const kjvTok = JSON.parse(readFileSync(join(root, 'models/kjv-gpt2/tokenizer.json'), 'utf8'));
kjvTok.added_tokens.push({ id: 2 ** 24 - 2, content: '<|far|>', special: true });
out('tokenizer_json', 'id-near-2e24.json', enc.encode(JSON.stringify(kjvTok)));
out('load', 'tokenizer-id-near-2e24.bundle', bundle([...llamaHf({ vocab: 2048 }), { name: 'tokenizer.json', data: enc.encode(JSON.stringify(kjvTok)) }]));

// 6. JSON type confusion in config.json and GGUF metadata (the JSON library's own text surfaced)
out('config', 'type-confusion.json', enc.encode(JSON.stringify({ ...llamaConfig(), max_position_embeddings: '64', rms_norm_eps: [1] })));
out('gguf', 'bos-id-string.gguf', llamaGguf({}, [['tokenizer.ggml.bos_token_id', G.STRING, 'one']])[0].data);

function llamaTensorsWithout(name) {
  // the other tensors of tinyLlama, as llamaHf writes them
  const d = 16, h = 32;
  const t = [{ name: 'model.norm.weight', shape: [d] }];
  for (let i = 0; i < 2; i++) {
    const p = `model.layers.${i}.`;
    t.push({ name: `${p}input_layernorm.weight`, shape: [d] }, { name: `${p}post_attention_layernorm.weight`, shape: [d] },
      { name: `${p}self_attn.q_proj.weight`, shape: [d, d] }, { name: `${p}self_attn.k_proj.weight`, shape: [d, d] },
      { name: `${p}self_attn.v_proj.weight`, shape: [d, d] }, { name: `${p}self_attn.o_proj.weight`, shape: [d, d] },
      { name: `${p}mlp.gate_proj.weight`, shape: [h, d] }, { name: `${p}mlp.up_proj.weight`, shape: [h, d] },
      { name: `${p}mlp.down_proj.weight`, shape: [d, h] });
  }
  return t.filter((x) => x.name !== name);
}
console.log('tests/fuzz/regressions written');
