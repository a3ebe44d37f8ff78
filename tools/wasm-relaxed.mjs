#!/usr/bin/env node
// Relaxed SIMD through Debian's toolchain (bench/README.md, "Relaxed SIMD").
//
// clang 19 writes the relaxed SIMD instructions with their standard opcodes; emcc 3.1.6 links with
// clang 14's wasm-ld (which copies function bodies without reading them) and then runs binaryen 108,
// which predates the standard encoding and knows the same instructions by their prototype opcodes.
// So the relaxed kernels' object files are rewritten to the prototype opcodes before the link
// (`--to prototype`), and the linked module back to the standard ones after it (`--to standard`).
// Each opcode pair encodes in the same number of bytes (0xFD prefix + a 2-byte LEB128), so nothing
// moves: relocation offsets in an object file and every offset in a module stay valid.
//
// The instructions are found by walking every function body instruction by instruction (the
// immediates decoded, so no byte of an immediate is ever mistaken for an opcode). An opcode this
// walker does not know stops it with an error: it never guesses.
//
//   node tools/wasm-relaxed.mjs --to prototype|standard IN [OUT]      (OUT defaults to IN)
//   node tools/wasm-relaxed.mjs --count FILE                          (the relaxed instructions in FILE)
//   node tools/wasm-relaxed.mjs --compile EM++ ARGS… -o OBJ …         (CMake's compiler launcher for the
//        relaxed kernels: em++ with clang 19, then OBJ rewritten to the prototype opcodes)
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { pathToFileURL } from 'node:url';

// standard opcode ↔ binaryen 108's prototype opcode, after the 0xFD prefix. Only the instructions
// the kernels use or may use (src/kernels: simd.h, quant_simd.h); i16x8.relaxed_dot_i8x16_i7x16_s
// (quant_simd.h relaxed_dot16) has 0x112 in both encodings and needs no rewrite.
export const RELAXED = [
  { name: 'f32x4.relaxed_madd', standard: 0x105, prototype: 0xaf },
  { name: 'f32x4.relaxed_nmadd', standard: 0x106, prototype: 0xb0 },
  { name: 'i32x4.relaxed_dot_i8x16_i7x16_add_s', standard: 0x113, prototype: 0x114 },
];

class Reader {
  constructor(bytes, pos = 0) {
    this.b = bytes;
    this.p = pos;
  }
  byte() {
    if (this.p >= this.b.length) throw new Error(`wasm-relaxed: unexpected end of input at ${this.p}`);
    return this.b[this.p++];
  }
  u32() {
    let result = 0, shift = 0, byte;
    do {
      byte = this.byte();
      if (shift < 32) result |= (byte & 0x7f) << shift;
      shift += 7;
      if (shift > 35 && (byte & 0x80)) throw new Error(`wasm-relaxed: LEB128 too long at ${this.p}`);
    } while (byte & 0x80);
    return result >>> 0;
  }
  sleb() {  // any width (i32, i64, s33): skipped, the value is not needed
    let byte;
    let n = 0;
    do {
      byte = this.byte();
      if (++n > 10) throw new Error(`wasm-relaxed: LEB128 too long at ${this.p}`);
    } while (byte & 0x80);
  }
  skip(n) {
    if (this.p + n > this.b.length) throw new Error(`wasm-relaxed: unexpected end of input at ${this.p}`);
    this.p += n;
  }
}

function memarg(r) {
  const align = r.u32();
  if (align & 0x40) r.u32();  // multi-memory: a memory index
  r.u32();                    // offset
}

function blocktype(r) {
  const b = r.b[r.p];
  if (b === 0x40 || (b >= 0x6f && b <= 0x7f)) r.p++;
  else r.sleb();  // a type index (s33)
}

// The 0xFD (SIMD) instructions' immediates, by opcode.
function simdImmediates(r, op) {
  if (op <= 0x0b || op === 0x5c || op === 0x5d) memarg(r);          // loads, store, load32/64_zero
  else if (op === 0x0c || op === 0x0d) r.skip(16);                  // v128.const, i8x16.shuffle
  else if (op >= 0x15 && op <= 0x22) r.skip(1);                     // extract / replace lane
  else if (op >= 0x54 && op <= 0x5b) { memarg(r); r.skip(1); }      // load / store lane
  else if (op > 0x115) throw new Error(`wasm-relaxed: unknown SIMD opcode 0x${op.toString(16)} at ${r.p}`);
}

function miscImmediates(r, op) {  // 0xFC
  if (op <= 7) return;                                               // trunc_sat
  switch (op) {
    case 8: r.u32(); r.u32(); return;                                // memory.init data mem
    case 9: r.u32(); return;                                         // data.drop
    case 10: r.u32(); r.u32(); return;                               // memory.copy
    case 11: r.u32(); return;                                        // memory.fill
    case 12: r.u32(); r.u32(); return;                               // table.init
    case 13: r.u32(); return;                                        // elem.drop
    case 14: r.u32(); r.u32(); return;                               // table.copy
    case 15: case 16: case 17: r.u32(); return;                      // table.grow / size / fill
    default: throw new Error(`wasm-relaxed: unknown 0xFC opcode ${op} at ${r.p}`);
  }
}

function atomicImmediates(r, op) {  // 0xFE
  if (op === 0x03) { r.byte(); return; }                             // atomic.fence
  if (op <= 0x02 || (op >= 0x10 && op <= 0x4e)) { memarg(r); return; }
  throw new Error(`wasm-relaxed: unknown atomic opcode 0x${op.toString(16)} at ${r.p}`);
}

// Walks one function body's instructions from r.p to end; calls visit(opcodeStart, simdOpcode, lebStart)
// for every 0xFD instruction.
function walkBody(r, end, visit) {
  while (r.p < end) {
    const start = r.p;
    const op = r.byte();
    if (op === 0xfd) {
      const lebStart = r.p;
      const sub = r.u32();
      visit(start, sub, lebStart, r.p);
      simdImmediates(r, sub);
      continue;
    }
    if (op === 0xfc) { miscImmediates(r, r.u32()); continue; }
    if (op === 0xfe) { atomicImmediates(r, r.u32()); continue; }
    switch (op) {
      case 0x00: case 0x01: case 0x05: case 0x0b: case 0x0f: case 0x19: case 0x1a: case 0x1b: case 0xd1:
        break;
      case 0x02: case 0x03: case 0x04: case 0x06: blocktype(r); break;  // block loop if try
      case 0x07: case 0x08: case 0x09: case 0x0c: case 0x0d: case 0x10: case 0x12: case 0x18: case 0xd2:
        r.u32(); break;                                                // catch throw rethrow br br_if call return_call delegate ref.func
      case 0x0e: { const n = r.u32(); for (let i = 0; i <= n; i++) r.u32(); break; }  // br_table
      case 0x11: case 0x13: r.u32(); r.u32(); break;                   // call_indirect type table
      case 0x1c: { const n = r.u32(); r.skip(n); break; }              // select t*
      case 0x20: case 0x21: case 0x22: case 0x23: case 0x24: case 0x25: case 0x26: r.u32(); break;
      case 0x3f: case 0x40: r.u32(); break;                            // memory.size / grow
      case 0x41: case 0x42: r.sleb(); break;
      case 0x43: r.skip(4); break;
      case 0x44: r.skip(8); break;
      case 0xd0: r.byte(); break;                                      // ref.null t
      default:
        if (op >= 0x28 && op <= 0x3e) memarg(r);
        else if (op >= 0x45 && op <= 0xc4) { /* numeric, no immediates */ }
        else throw new Error(`wasm-relaxed: unknown opcode 0x${op.toString(16)} at ${start}`);
    }
  }
  if (r.p !== end) throw new Error(`wasm-relaxed: a function body overran its size at ${r.p}`);
}

// Visits every 0xFD instruction of the module or object file in `bytes`.
export function forEachSimd(bytes, visit) {
  const r = new Reader(bytes);
  const magic = [0x00, 0x61, 0x73, 0x6d, 0x01, 0x00, 0x00, 0x00];
  for (const m of magic) if (r.byte() !== m) throw new Error('wasm-relaxed: not a wasm binary (version 1)');
  while (r.p < bytes.length) {
    const id = r.byte();
    const size = r.u32();
    const end = r.p + size;
    if (end > bytes.length) throw new Error('wasm-relaxed: a section runs past the end of the file');
    if (id === 10) {  // code
      const count = r.u32();
      for (let f = 0; f < count; f++) {
        const bodySize = r.u32();
        const bodyEnd = r.p + bodySize;
        const groups = r.u32();
        for (let g = 0; g < groups; g++) { r.u32(); r.byte(); }  // local count, type
        walkBody(r, bodyEnd, visit);
      }
      if (r.p !== end) throw new Error('wasm-relaxed: the code section has bytes after its last function');
    }
    r.p = end;
  }
}

// Rewrites the relaxed instructions of `bytes` in place to the `to` encoding; returns how many.
export function rewrite(bytes, to) {
  if (to !== 'prototype' && to !== 'standard') throw new Error(`wasm-relaxed: --to ${to}: prototype or standard`);
  const from = to === 'prototype' ? 'standard' : 'prototype';
  const map = new Map(RELAXED.map((e) => [e[from], e[to]]));
  // Opcodes that mean something else in the other encoding must not be present: a module that
  // already holds them cannot be rewritten without changing its meaning.
  const clash = new Set(RELAXED.map((e) => e[to]));
  let n = 0;
  forEachSimd(bytes, (start, sub, lebStart, lebEnd) => {
    if (map.has(sub)) {
      const target = map.get(sub);
      const width = lebEnd - lebStart;
      if (width < 2) throw new Error(`wasm-relaxed: opcode 0x${sub.toString(16)} at ${start} is not a 2-byte LEB128`);
      // Same width as before (padded if the original was): nothing moves.
      let v = target;
      for (let i = 0; i < width; i++) {
        bytes[lebStart + i] = (v & 0x7f) | (i < width - 1 ? 0x80 : 0);
        v >>>= 7;
      }
      if (v !== 0) throw new Error(`wasm-relaxed: opcode 0x${target.toString(16)} does not fit ${width} bytes`);
      n++;
    } else if (clash.has(sub)) {
      throw new Error(`wasm-relaxed: opcode 0x${sub.toString(16)} at ${start} already means another instruction in the ${to} encoding`);
    }
  });
  return n;
}

export function count(bytes) {
  const byOp = new Map();
  forEachSimd(bytes, (start, sub) => {
    for (const e of RELAXED) {
      for (const enc of ['standard', 'prototype']) {
        if (e[enc] === sub) byOp.set(`${e.name} (${enc})`, (byOp.get(`${e.name} (${enc})`) ?? 0) + 1);
      }
    }
  });
  return byOp;
}

// The clang whose relaxed-SIMD instructions have their standard encoding (Debian bookworm: clang-19).
export const RELAXED_CLANG_VERSION = '19';

function compile(cmd) {
  const r = spawnSync(cmd[0], cmd.slice(1), { stdio: 'inherit', env: { ...process.env, EM_CLANG_ADD_VERSION: RELAXED_CLANG_VERSION } });
  if (r.error) throw new Error(`wasm-relaxed: cannot run ${cmd[0]}: ${r.error.message}`);
  if (r.status !== 0) process.exit(r.status ?? 1);
  const o = cmd.indexOf('-o');
  if (o < 0 || !cmd[o + 1]) throw new Error('wasm-relaxed --compile: the command has no -o OBJ');
  const bytes = readFileSync(cmd[o + 1]);
  rewrite(bytes, 'prototype');
  writeFileSync(cmd[o + 1], bytes);
}

function main(argv) {
  if (argv[0] === '--compile' && argv.length > 1) return compile(argv.slice(1));
  if (argv[0] === '--count' && argv[1]) {
    for (const [k, v] of count(readFileSync(argv[1]))) console.log(`${v}\t${k}`);
    return;
  }
  if (argv[0] !== '--to' || !argv[2]) {
    console.error('usage: node tools/wasm-relaxed.mjs --to prototype|standard IN [OUT] | --count FILE');
    process.exit(2);
  }
  const bytes = readFileSync(argv[2]);
  const n = rewrite(bytes, argv[1]);
  writeFileSync(argv[3] ?? argv[2], bytes);
  console.log(`wasm-relaxed: ${n} relaxed SIMD instruction(s) → ${argv[1]} (${argv[3] ?? argv[2]})`);
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  try {
    main(process.argv.slice(2));
  } catch (e) {
    console.error(e.message);
    process.exit(1);
  }
}
