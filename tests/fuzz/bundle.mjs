// fuzz_load's input format (tests/fuzz/fuzz_load.cpp): files bundled as { u8 name index; u32 length
// (little-endian); bytes }. Used by tools/fuzz.mjs (seeds) and make_regressions.mjs.
export const LOAD_NAMES = ['config.json', 'model.safetensors', 'tokenizer.json', 'model.gguf', 'model.bin', 'tokenizer.bin',
  'model.safetensors.index.json', 'model-00001-of-00002.safetensors', 'model-00002-of-00002.safetensors',
  'generation_config.json', 'other.json'];

/** files: [{ name, data: Uint8Array }] → one bundle (names not in LOAD_NAMES travel as other.json). */
export function bundle(files) {
  const parts = [];
  for (const f of files) {
    const head = Buffer.alloc(5);
    const i = LOAD_NAMES.indexOf(f.name);
    head[0] = i >= 0 ? i : LOAD_NAMES.indexOf('other.json');
    head.writeUInt32LE(f.data.length, 1);
    parts.push(head, Buffer.from(f.data.buffer, f.data.byteOffset, f.data.byteLength));
  }
  return Buffer.concat(parts);
}
