// Private to src/kernels: the byte layout of GGML's block formats (as llama.cpp's ggml-common.h
// defines them; written here from that description) and scalar helpers shared by the references
// (quant_ref.cpp) and the vector kernels (quant.cpp, quant_k.cpp).
//
// Blocks of 32 (element i of a block; "nibbles" = 16 bytes, low nibble of byte j is element j,
// high nibble element j + 16):
//   q4_0   { f16 d; u8 qs[16] }                    w = d·(q − 8)
//   q4_1   { f16 d; f16 m; u8 qs[16] }             w = d·q + m
//   q5_0   { f16 d; u32 qh; u8 qs[16] }            q = nibble | bit i of qh << 4,  w = d·(q − 16)
//   q5_1   { f16 d; f16 m; u32 qh; u8 qs[16] }     w = d·q + m
//   q8_0   { f16 d; i8 qs[32] }                    w = d·q
//   iq4_nl { f16 d; u8 qs[16] }                    w = d·kIQ4NL[q]
// Super-blocks of 256 (sub-blocks of 16 or 32 with integer scales against f16 super-scales):
//   q2_K   { u8 scales[16]; u8 qs[64]; f16 d; f16 dmin }        16 × 16: scale = scales[j] & 15,
//          min = scales[j] >> 4; w = d·scale·q − dmin·min, q 2 bits
//   q3_K   { u8 hmask[32]; u8 qs[64]; u8 scales[12]; f16 d }   16 × 16: 6-bit scales (− 32),
//          q = 2 low bits + high bit from hmask, w = d·scale·(q − 4)
//   q4_K   { f16 d; f16 dmin; u8 scales[12]; u8 qs[128] }     8 × 32: 6-bit scales and mins,
//          w = d·scale·q − dmin·min
//   q5_K   { f16 d; f16 dmin; u8 scales[12]; u8 qh[32]; u8 qs[128] }   as q4_K with a 5th bit
//   q6_K   { u8 ql[128]; u8 qh[64]; i8 scales[16]; f16 d }    16 × 16: w = d·scale·(q − 32), q 6 bits
//   iq4_xs { f16 d; u16 scales_h; u8 scales_l[4]; u8 qs[128] } 8 × 32: 6-bit scales (− 32), iq4_nl values
// The element order inside the 2-bit, 4-bit and 6-bit super-blocks is spelled out in the
// decode_* functions below, which the reference dot products and dequantizers use.
#pragma once
#include <cstdint>
#include <cstring>

#include "core/tensor.h"

namespace attnlens::kernels::qb {

constexpr int kQK = 32;    // legacy block
constexpr int kQKK = 256;  // super-block

constexpr int kBytesQ4_0 = 18, kBytesQ4_1 = 20, kBytesQ5_0 = 22, kBytesQ5_1 = 24, kBytesQ8_0 = 34, kBytesIQ4NL = 18;
constexpr int kBytesQ2K = 84, kBytesQ3K = 110, kBytesQ4K = 144, kBytesQ5K = 176, kBytesQ6K = 210, kBytesIQ4XS = 136;

// The 16 values an iq4_nl / iq4_xs nibble stands for (ggml-common.h's kvalues_iq4nl).
inline constexpr int8_t kIQ4NL[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

inline uint16_t u16(const uint8_t* p) {
  uint16_t v;
  std::memcpy(&v, p, 2);
  return v;
}
inline uint32_t u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
inline float f16(const uint8_t* p) { return f16_to_f32(u16(p)); }

// Bytes of a row of k elements of type t (k a whole number of blocks: the callers check).
inline size_t row_bytes(DType t, int k) { return size_t(k) / size_t(dtype_block_elems(t)) * size_t(dtype_block_bytes(t)); }

// q4_K / q5_K: 8 six-bit scales and 8 six-bit mins packed in 12 bytes. Sub-block j < 4: low 6
// bits of bytes j (scale) and j + 4 (min); j ≥ 4: the nibbles of byte j + 4 with the top 2 bits of
// bytes j − 4 (scale) and j (min) on top.
inline void k4_scale_min(const uint8_t* s, int j, int* scale, int* min) {
  if (j < 4) {
    *scale = s[j] & 63;
    *min = s[j + 4] & 63;
  } else {
    *scale = (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
    *min = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

// q3_K: 16 six-bit scales in 12 bytes: low nibbles in bytes 0..7 (scales 0..7 low, 8..15 high
// nibble), the top 2 bits in bytes 8..11 (scale j: bits 2·(j/4) of byte 8 + j%4). Returns scale − 32.
inline int k3_scale(const uint8_t* s, int j) {
  const int low = j < 8 ? s[j] & 0xF : s[j - 8] >> 4;
  const int high = (s[8 + j % 4] >> (2 * (j / 4))) & 3;
  return (low | (high << 4)) - 32;
}

// iq4_xs: sub-block j's 6-bit scale (− 32): low nibble from scales_l, 2 high bits from scales_h.
inline int iq4xs_scale(const uint8_t* blk, int j) {
  const int low = (blk[4 + j / 2] >> (4 * (j % 2))) & 0xF;
  const int high = (u16(blk + 2) >> (2 * j)) & 3;
  return (low | (high << 4)) - 32;
}

// ---- integer decoding of one block (scalar) ---------------------------------------------------
// q[i] is the integer the dot products multiply (offsets included: q4_0 → q − 8, q3_K → q − 4, …).

inline void decode_nibbles(const uint8_t* qs, int* q) {  // 16 bytes → 32 values 0..15
  for (int j = 0; j < 16; ++j) {
    q[j] = qs[j] & 0xF;
    q[j + 16] = qs[j] >> 4;
  }
}

// 5-bit legacy blocks: nibbles | (bit i of qh) << 4.
inline void decode_q5(const uint8_t* qh4, const uint8_t* qs, int* q) {
  const uint32_t qh = u32(qh4);
  decode_nibbles(qs, q);
  for (int i = 0; i < 32; ++i) q[i] |= int((qh >> i) & 1) << 4;
}

// q2_K element e = 128·h + 32·s + l (h half, s shift 0..3, l 0..31): bits 2s..2s+1 of qs[32h + l].
inline void decode_q2k(const uint8_t* blk, int* q) {
  const uint8_t* qs = blk + 16;
  for (int h = 0; h < 2; ++h)
    for (int s = 0; s < 4; ++s)
      for (int l = 0; l < 32; ++l) q[128 * h + 32 * s + l] = (qs[32 * h + l] >> (2 * s)) & 3;
}

// q3_K: as q2_K's low bits (qs at byte 32), high bit = bit (4h + s) of hmask[l]; q = low − 4 when
// the high bit is clear, low otherwise.
inline void decode_q3k(const uint8_t* blk, int* q) {
  const uint8_t* hm = blk;
  const uint8_t* qs = blk + 32;
  for (int h = 0; h < 2; ++h)
    for (int s = 0; s < 4; ++s)
      for (int l = 0; l < 32; ++l) {
        const int low = (qs[32 * h + l] >> (2 * s)) & 3;
        const int high = (hm[l] >> (4 * h + s)) & 1;
        q[128 * h + 32 * s + l] = low - (high ? 0 : 4);
      }
}

// q4_K / q5_K element e = 64·c + l (l < 32): low nibble of qs[32c + l]; e = 64·c + 32 + l: its high
// nibble. q5_K's 5th bit of element 64c + l is bit 2c of qh[l], of 64c + 32 + l bit 2c + 1.
inline void decode_q4k(const uint8_t* qs, int* q) {
  for (int c = 0; c < 4; ++c)
    for (int l = 0; l < 32; ++l) {
      q[64 * c + l] = qs[32 * c + l] & 0xF;
      q[64 * c + 32 + l] = qs[32 * c + l] >> 4;
    }
}
inline void decode_q5k(const uint8_t* blk, int* q) {
  const uint8_t* qh = blk + 16;
  decode_q4k(blk + 48, q);
  for (int c = 0; c < 4; ++c)
    for (int l = 0; l < 32; ++l) {
      q[64 * c + l] |= ((qh[l] >> (2 * c)) & 1) << 4;
      q[64 * c + 32 + l] |= ((qh[l] >> (2 * c + 1)) & 1) << 4;
    }
}

// q6_K, half h (128 elements; ql += 64h, qh += 32h), l < 32:
//   e = 128h + l      low nibble of ql[l]      | bits 0-1 of qh[l] << 4
//   e = 128h + 32 + l low nibble of ql[l + 32] | bits 2-3 of qh[l] << 4
//   e = 128h + 64 + l high nibble of ql[l]     | bits 4-5 of qh[l] << 4
//   e = 128h + 96 + l high nibble of ql[l + 32]| bits 6-7 of qh[l] << 4,   q − 32.
inline void decode_q6k(const uint8_t* blk, int* q) {
  for (int h = 0; h < 2; ++h) {
    const uint8_t* ql = blk + 64 * h;
    const uint8_t* qh = blk + 128 + 32 * h;
    int* o = q + 128 * h;
    for (int l = 0; l < 32; ++l) {
      o[l] = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
      o[l + 32] = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
      o[l + 64] = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
      o[l + 96] = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
    }
  }
}

}  // namespace attnlens::kernels::qb
