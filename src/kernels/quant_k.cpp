// Dot products with super-block weights (q2_K, q3_K, q4_K, q5_K, q6_K, iq4_xs: 256 weights with 8
// or 16 integer sub-block scales, quant_blocks.h) against q8_K activations (quant_scalar.h). Per
// super-block and row, everything stays in int32 lanes: each sub-block's Σ q·xq (q2_K … q5_K: the
// quant bytes read as int16 lanes against activations in Layout::EvenOddDiff, dot_eo; q6_K, iq4_xs:
// widened to int16; i32x4.dot_i16x8_s), times its integer scale (two sub-blocks' lanes as int16
// pairs against their two scales in one i32x4.dot_i16x8_s, pair_scaled; iq4_xs, whose lanes exceed
// int16, by i32x4.mul), summed;
// the mins (q2_K/q4_K/q5_K) and the offsets of the signed types (q3_K: q − 4, q6_K: q − 32, which
// the kernels keep unsigned) come from the activations' sums per 16 (bsums) in one more
// dot_i16x8 pair. One float multiply-add per super-block and row then applies d·dx (and dmin·dx).
// Bounds: every int32 lane stays below 2^31 (worst case q6_K: 16 sub-blocks × 4 products × 63 ×
// 127 × 128 ≈ 6.6e7).
#include <cstring>
#include <type_traits>

#include "core/tensor.h"
#include "kernels/quant_blocks.h"
#include "kernels/quant_simd.h"

#if ATTNLENS_QUANT_SIMD
namespace attnlens::kernels::qsimd {

namespace {

inline __m128i mul_scale(__m128i s, int scale) { return _mm_mullo_epi32(s, _mm_set1_epi32(scale)); }

// sc·s0 + sc'·s1 per lane: the int32 sums of two sub-blocks, each lane within int16 (the callers
// bound them), interleaved as int16 pairs against the scale pair (sc, sc') in every lane, in one
// i32x4.dot_i16x8_s instead of an i32x4.mul per sub-block. Exact, as the products and sums fit int32.
inline __m128i pair_scaled(__m128i s0, __m128i s1, __m128i scale_pair) {
  return _mm_madd_epi16(_mm_blend_epi16(s0, _mm_slli_epi32(s1, 16), 0xAA), scale_pair);
}

// Lane t (0..3, a constant once unrolled) of v in every lane.
inline __m128i splat_lane(__m128i v, int t) {
  switch (t) {
    case 0: return _mm_shuffle_epi32(v, 0x00);
    case 1: return _mm_shuffle_epi32(v, 0x55);
    case 2: return _mm_shuffle_epi32(v, 0xAA);
    default: return _mm_shuffle_epi32(v, 0xFF);
  }
}

// Σ over 16 byte weights w (0..127) × x in Layout::EvenOddDiff (quant_simd.h), v the 16 bytes read as
// int16 lanes (lane i = w[2i] + 256·w[2i+1]): v·e + (v >> 8)·(o − 256·e). Int32 lane j sums elements
// 4j … 4j + 3.
inline __m128i dot_eo(__m128i v, const int16_t* x) {
  const __m128i* xv = reinterpret_cast<const __m128i*>(x);
  return _mm_add_epi32(_mm_madd_epi16(v, _mm_load_si128(xv)), _mm_madd_epi16(_mm_srli_epi16(v, 8), _mm_load_si128(xv + 1)));
}

// Moves bit `from` of every byte to bit `to` (0..7) and clears the rest (mask = 1 << to). The shifts
// are 16-bit, so bits cross between the two bytes of a lane, but none lands on bit `to`: a left
// shift by t moves the low byte's bits to the high byte's bits 0..t-1 (< to), a right shift by t
// moves the high byte's bits to the low byte's bits 8-t..7 (> to), for the (from, to) pairs used
// here (to = 4 with from 0..7, to = 2 with from 0..7).
inline __m128i bit_to(__m128i v, int from, int to, int mask) {
  const __m128i m = bytes(mask);
  if (from >= to) return _mm_and_si128(_mm_srli_epi16(v, from - to), m);
  return _mm_and_si128(_mm_slli_epi16(v, to - from), m);
}

// ---- q4_K / q5_K: 8 sub-blocks of 32, 6-bit scales and mins ------------------------------------
// The 12 scale bytes → sc[0..8), mn[0..8) (quant_blocks.h's k4_scale_min, four at a time).
inline void k4_unpack(const uint8_t* s, uint8_t* sc, uint8_t* mn) {
  const uint32_t a0 = qb::u32(s), a1 = qb::u32(s + 4), a2 = qb::u32(s + 8);
  const uint32_t sc_lo = a0 & 0x3f3f3f3fu, mn_lo = a1 & 0x3f3f3f3fu;
  const uint32_t sc_hi = (a2 & 0x0f0f0f0fu) | (((a0 >> 6) & 0x03030303u) << 4);
  const uint32_t mn_hi = ((a2 >> 4) & 0x0f0f0f0fu) | (((a1 >> 6) & 0x03030303u) << 4);
  std::memcpy(sc, &sc_lo, 4);
  std::memcpy(sc + 4, &sc_hi, 4);
  std::memcpy(mn, &mn_lo, 4);
  std::memcpy(mn + 4, &mn_hi, 4);
}

// Σ_j mn[j]·(bsums[2j] + bsums[2j+1]): each min duplicated to the two 16-sums of its sub-block.
inline __m128i k4_mins(const uint8_t* mn, const int16_t* bs) {
  const __m128i m8 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(mn));
  const __m128i dup = _mm_unpacklo_epi8(m8, m8);
  return bsum_dot(lo_u16(dup), hi_u16(dup), bs);
}

// x: the int16 values in Layout::EvenOddDiff, or with K8 (the relaxed-SIMD variant's superblock8)
// the int8 copy in natural order: each sub-block is two relaxed dots summed in int16 (|·| ≤ 4·31·127)
// times its scale in one i32x4.dot_i16x8_s. Either way int32 lane j sums elements 4j … 4j + 3 and
// 16 + 4j … 19 + 4j of each sub-block: the same integers and the same float steps.
template <bool Q5, bool K8, class X>
inline __m128 k45_superblock(const uint8_t* blk, const X* x, const int16_t* bs, float dx, __m128 acc,
                             const F16& f16) {
  uint8_t sc[8], mn[8];
  k4_unpack(blk + 4, sc, mn);
  alignas(16) int32_t sc16[4];  // (sc[2c], sc[2c+1]) as two int16
  _mm_store_si128(reinterpret_cast<__m128i*>(sc16), lo_u16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(sc))));
  const uint8_t* qs = blk + (Q5 ? 48 : 16);
  __m128i h0 = _mm_setzero_si128(), h1 = _mm_setzero_si128();
  if constexpr (Q5) {
    h0 = load16(blk + 16);
    h1 = load16(blk + 32);
  }
  __m128i isum = _mm_setzero_si128();
#if defined(__clang__)
#pragma clang loop unroll(disable)
#endif
  for (int c = 0; c < 4; ++c) {
    // Byte l of v0 holds element l of sub-block 2c (bits 0-3) and of sub-block 2c + 1 (bits 4-7); v1
    // the same for elements 16 + l.
    const __m128i v0 = load16(qs + 32 * c), v1 = load16(qs + 32 * c + 16);
    const X* xc = x + 64 * c;
    __m128i lo0 = nib_lo(v0), lo1 = nib_lo(v1), hi0 = nib_hi(v0), hi1 = nib_hi(v1);
    if constexpr (Q5) {
      // 5th bit of element 64c + l: bit 2c of qh[l]; of 64c + 32 + l: bit 2c + 1. h0 / h1 move down
      // by 2 bits per c (16-bit shifts: bits 0-1 of each byte come from its own bits 2-3), so those
      // are bits 0 and 1 here: constant shifts, whatever c.
      lo0 = _mm_or_si128(lo0, bit_to(h0, 0, 4, 0x10));
      lo1 = _mm_or_si128(lo1, bit_to(h1, 0, 4, 0x10));
      hi0 = _mm_or_si128(hi0, bit_to(h0, 1, 4, 0x10));
      hi1 = _mm_or_si128(hi1, bit_to(h1, 1, 4, 0x10));
      h0 = _mm_srli_epi16(h0, 2);
      h1 = _mm_srli_epi16(h1, 2);
    }
    if constexpr (K8) {
#if defined(ATTNLENS_RELAXED_SIMD)
      const __m128i p_lo = relaxed_dot32(xc, lo0, lo1), p_hi = relaxed_dot32(xc + 32, hi0, hi1);
      isum = _mm_add_epi32(isum, _mm_add_epi32(_mm_madd_epi16(p_lo, _mm_set1_epi16(int16_t(sc[2 * c]))),
                                               _mm_madd_epi16(p_hi, _mm_set1_epi16(int16_t(sc[2 * c + 1])))));
#endif
    } else {
      const __m128i s_lo = _mm_add_epi32(dot_eo(lo0, xc), dot_eo(lo1, xc + 16));
      const __m128i s_hi = _mm_add_epi32(dot_eo(hi0, xc + 32), dot_eo(hi1, xc + 48));
      // Each lane sums 8 products (|·| ≤ 8·31·128 = 31744): both scales in one dot.
      isum = _mm_add_epi32(isum, pair_scaled(s_lo, s_hi, _mm_set1_epi32(sc16[c])));
    }
  }
  acc = scale_add(acc, isum, f16(blk) * dx);
  return _mm_sub_ps(acc, _mm_mul_ps(_mm_cvtepi32_ps(k4_mins(mn, bs)), _mm_set1_ps(f16(blk + 2) * dx)));
}

template <bool Q5>
struct K45 {
  static constexpr int kBytes = Q5 ? qb::kBytesQ5K : qb::kBytesQ4K;
  // 4 rows per decode call (quant.cpp walk_rows), but 2 for the relaxed-SIMD variant's q4_K: its
  // four-row kernel ran 10% slower in cache (bench_kernels_relaxed) and gained nothing in rand110M's
  // Q4_K_M decode.
  static constexpr int kRows = Q5 || !kBytesStep ? 4 : 2;
  static __m128 superblock(const uint8_t* b, const int16_t* x, const int16_t* bs, float dx, __m128 acc, const F16& f) {
    return k45_superblock<Q5, false>(b, x, bs, dx, acc, f);
  }
#if defined(ATTNLENS_RELAXED_SIMD)
  static __m128 superblock8(const uint8_t* b, const int8_t* x, const int16_t* bs, float dx, __m128 acc, const F16& f) {
    return k45_superblock<Q5, true>(b, x, bs, dx, acc, f);
  }
#endif
};
using Q4_K = K45<false>;
using Q5_K = K45<true>;

// ---- q6_K: 16 sub-blocks of 16, int8 scales, q − 32 ----------------------------------------------
// Half h (128 weights): ql [64], qh [32]; with l = 16g + i (g = 0, 1):
//   e = 128h + l       ql[l] low nibble      | qh[l] bits 0-1 << 4    sub-block 8h + g
//   e = 128h + 32 + l  ql[l + 32] low nibble | qh[l] bits 2-3 << 4    sub-block 8h + 2 + g
//   e = 128h + 64 + l  ql[l] high nibble     | qh[l] bits 4-5 << 4    sub-block 8h + 4 + g
//   e = 128h + 96 + l  ql[l + 32] high nibble| qh[l] bits 6-7 << 4    sub-block 8h + 6 + g
// (The masks are applied before the 16-bit shifts, so no bit crosses into the other byte.)
// Row t of that table (t = 0..3) holds sub-blocks 8h + 2t (g = 0) and 8h + 2t + 1 (g = 1): their
// scales as one int16 pair, and their sums as one, in one i32x4.dot_i16x8_s (as q4_K's pairs).
struct Q6_K {
  static constexpr int kBytes = qb::kBytesQ6K, kRows = 4;
  // The 6-bit quants of row t of half h for l = 16g … 16g + 15 (l0 = ql[16g..], l1 = ql[32 + 16g..],
  // hb = qh[16g..]).
  static __m128i quants(__m128i l0, __m128i l1, __m128i hb, int t) {
    switch (t) {
      case 0: return _mm_or_si128(nib_lo(l0), _mm_slli_epi16(_mm_and_si128(hb, bytes(0x03)), 4));
      case 1: return _mm_or_si128(nib_lo(l1), _mm_slli_epi16(_mm_and_si128(hb, bytes(0x0C)), 2));
      case 2: return _mm_or_si128(nib_hi(l0), _mm_and_si128(hb, bytes(0x30)));
      default: return _mm_or_si128(nib_hi(l1), _mm_srli_epi16(_mm_and_si128(hb, bytes(0xC0)), 2));
    }
  }
  // x: the int16 values (superblock), or with K8 the int8 copy in Bytes::Pairs8 order (superblock8,
  // the relaxed-SIMD variant's): the weight bytes are put in the same order by one shuffle per 16 (the
  // quant assembly is byte-wise, so it commutes with it), and per sub-block one relaxed dot (int16
  // lanes, |·| ≤ 2·63·127) times its scale in one i32x4.dot_i16x8_s. Either way int32 lane j sums
  // elements 2j, 2j + 1, 8 + 2j, 9 + 2j of each sub-block: the same integers and float steps.
  template <bool K8, class X>
  static __m128 superblock_of(const uint8_t* blk, const X* x, const int16_t* bs, float dx, __m128 acc, const F16& f16) {
    // Lane p of pairs[h] = (sc[8h + 2p], sc[8h + 2p + 1]) as two int16: the scales of row p's two sub-blocks.
    const __m128i s8 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 192));
    const __m128i pairs[2] = {lo_s16(s8), hi_s16(s8)};
    [[maybe_unused]] const int8_t* sc = reinterpret_cast<const int8_t*>(blk + 192);
    const __m128i order = pairs8_order();
    const auto load = [&](const uint8_t* p) { return K8 ? lookup16(load16(p), order) : load16(p); };
    __m128i isum = _mm_setzero_si128();
#if defined(__clang__)
#pragma clang loop unroll(disable)
#endif
    for (int h = 0; h < 2; ++h) {
      const uint8_t* ql = blk + 64 * h;
      const uint8_t* qh = blk + 128 + 32 * h;
      const X* xh = x + 128 * h;
      const __m128i l00 = load(ql), l10 = load(ql + 32), hb0 = load(qh);            // g = 0
      const __m128i l01 = load(ql + 16), l11 = load(ql + 48), hb1 = load(qh + 16);  // g = 1
#if defined(__clang__)
#pragma clang loop unroll(full)
#endif
      for (int t = 0; t < 4; ++t) {
        if constexpr (K8) {
#if defined(ATTNLENS_RELAXED_SIMD)
          const __m128i s0 = _mm_madd_epi16(relaxed_dot16(xh + 32 * t, quants(l00, l10, hb0, t)),
                                            _mm_set1_epi16(int16_t(sc[8 * h + 2 * t])));
          const __m128i s1 = _mm_madd_epi16(relaxed_dot16(xh + 32 * t + 16, quants(l01, l11, hb1, t)),
                                            _mm_set1_epi16(int16_t(sc[8 * h + 2 * t + 1])));
          isum = _mm_add_epi32(isum, _mm_add_epi32(s0, s1));
#endif
        } else {
          // Each lane of s0 / s1 sums 4 products (|·| ≤ 4·63·128 = 32256): it fits int16.
          const __m128i s0 = dot16_u8(quants(l00, l10, hb0, t), xh + 32 * t);
          const __m128i s1 = dot16_u8(quants(l01, l11, hb1, t), xh + 32 * t + 16);
          isum = _mm_add_epi32(isum, pair_scaled(s0, s1, splat_lane(pairs[h], t)));
        }
        order_point(isum);
      }
    }
    // − 32·Σ_j sc_j·bsums_j: the offset of the unsigned quants (32·|sc| ≤ 4096 fits int16).
    isum = _mm_sub_epi32(isum, bsum_dot(_mm_slli_epi16(pairs[0], 5), _mm_slli_epi16(pairs[1], 5), bs));
    return scale_add(acc, isum, f16(blk + 208) * dx);
  }
  static __m128 superblock(const uint8_t* blk, const int16_t* x, const int16_t* bs, float dx, __m128 acc,
                           const F16& f16) {
    return superblock_of<false>(blk, x, bs, dx, acc, f16);
  }
#if defined(ATTNLENS_RELAXED_SIMD)
  static __m128 superblock8(const uint8_t* blk, const int8_t* x, const int16_t* bs, float dx, __m128 acc,
                            const F16& f16) {
    return superblock_of<true>(blk, x, bs, dx, acc, f16);
  }
#endif
};

// ---- q3_K: 16 sub-blocks of 16, 6-bit scales − 32, q − 4 -----------------------------------------
// The 16 scales (quant_blocks.h's k3_scale) as int8 from the 12 scale bytes s: low 4 bits of
// scale j from byte j (j < 8) or the high nibble of byte j − 8; high 2 bits from byte 8 + j % 4,
// bits 2·(j / 4) and up (vector lane group j / 4 holds bytes 8..11 shifted by 2·(j / 4)).
inline __m128i k3_scales(const uint8_t* s) {
  const __m128i b = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(s));
  const __m128i low = _mm_unpacklo_epi64(nib_lo(b), nib_hi(b));
  const uint32_t h = qb::u32(s + 8);
  const __m128i high = _mm_and_si128(_mm_set_epi32(int(h >> 6), int(h >> 4), int(h >> 2), int(h)), bytes(0x03));
  return _mm_sub_epi8(_mm_or_si128(low, _mm_slli_epi16(high, 4)), bytes(32));
}
// Element e = 128h + 32s + l: low 2 bits = bits 2s..2s+1 of qs[32h + l], high bit = bit 4h + s of
// hmask[l]; l < 16 is sub-block 8h + 2s, l ≥ 16 sub-block 8h + 2s + 1.
struct Q3_K {
  static constexpr int kBytes = qb::kBytesQ3K, kRows = 4;
  static __m128 superblock(const uint8_t* blk, const int16_t* x, const int16_t* bs, float dx, __m128 acc,
                           const F16& f16) {
    const __m128i sc8 = k3_scales(blk + 96);
    const __m128i c_lo = lo_s16(sc8), c_hi = hi_s16(sc8);  // sc[0..8), sc[8..16) as int16
    alignas(16) int32_t pairs[8];  // (sc[2p], sc[2p + 1]) as two int16
    _mm_store_si128(reinterpret_cast<__m128i*>(pairs), c_lo);
    _mm_store_si128(reinterpret_cast<__m128i*>(pairs + 4), c_hi);
    // hmask moves down one bit per step (16-bit shifts: bit 0 of each byte is then its own bit 4h + s,
    // as bit_to's note says), so that the shift that takes the high bit is a constant (V8 lowers a
    // shift by 4h + s, h not unrolled, as a masked variable shift).
    __m128i m0 = load16(blk), m1 = load16(blk + 16);
    __m128i isum = _mm_setzero_si128();
    for (int h = 0; h < 2; ++h) {
      const __m128i q0 = load16(blk + 32 + 32 * h), q1 = load16(blk + 48 + 32 * h);
#if defined(__clang__)
#pragma clang loop unroll(full)
#endif
      for (int s = 0; s < 4; ++s) {
        const __m128i lo = _mm_or_si128(_mm_and_si128(_mm_srli_epi16(q0, 2 * s), bytes(0x03)), bit_to(m0, 0, 2, 0x04));
        const __m128i hi = _mm_or_si128(_mm_and_si128(_mm_srli_epi16(q1, 2 * s), bytes(0x03)), bit_to(m1, 0, 2, 0x04));
        m0 = _mm_srli_epi16(m0, 1);
        m1 = _mm_srli_epi16(m1, 1);
        const int16_t* xs = x + 128 * h + 32 * s;
        // Lanes of ≤ 4·7·128 = 3584 in magnitude; the scale pair (sc[j], sc[j + 1]), j = 8h + 2s.
        isum = _mm_add_epi32(isum, pair_scaled(dot_eo(lo, xs), dot_eo(hi, xs + 16), _mm_set1_epi32(pairs[4 * h + s])));
      }
    }
    // − 4·Σ_j sc_j·bsums_j (the quants were kept as q + 4 ∈ [0, 8)).
    isum = _mm_sub_epi32(isum, bsum_dot(_mm_slli_epi16(c_lo, 2), _mm_slli_epi16(c_hi, 2), bs));
    return scale_add(acc, isum, f16(blk + 108) * dx);
  }
};

// ---- q2_K: 16 sub-blocks of 16, 4-bit scales and mins -------------------------------------------
// Element e = 128h + 32s + l: bits 2s..2s+1 of qs[32h + l] (qs at byte 16); sub-blocks as q3_K.
struct Q2_K {
  static constexpr int kBytes = qb::kBytesQ2K, kRows = 4;
  static __m128 superblock(const uint8_t* blk, const int16_t* x, const int16_t* bs, float dx, __m128 acc,
                           const F16& f16) {
    const __m128i sm = load16(blk);  // scale | min << 4, per sub-block
    const __m128i scales = nib_lo(sm);
    alignas(16) int32_t pairs[8];  // (sc[2p], sc[2p + 1]) as two int16
    _mm_store_si128(reinterpret_cast<__m128i*>(pairs), lo_u16(scales));
    _mm_store_si128(reinterpret_cast<__m128i*>(pairs + 4), hi_u16(scales));
    __m128i isum = _mm_setzero_si128();
    for (int h = 0; h < 2; ++h) {
      // qs moves down two bits per step: the same bits 2s..2s+1 of each byte as a shift by 2s, with a
      // constant shift (the loop is not unrolled, and V8 lowers a shift by 2s as a masked variable one).
      __m128i q0 = load16(blk + 16 + 32 * h), q1 = load16(blk + 32 + 32 * h);
#if defined(__clang__)
#pragma clang loop unroll(disable)
#endif
      for (int s = 0; s < 4; ++s) {
        const __m128i lo = _mm_and_si128(q0, bytes(0x03));
        const __m128i hi = _mm_and_si128(q1, bytes(0x03));
        q0 = _mm_srli_epi16(q0, 2);
        q1 = _mm_srli_epi16(q1, 2);
        const int16_t* xs = x + 128 * h + 32 * s;
        // Lanes of ≤ 4·3·128 = 1536 in magnitude; the scale pair (sc[j], sc[j + 1]), j = 8h + 2s.
        isum = _mm_add_epi32(isum, pair_scaled(dot_eo(lo, xs), dot_eo(hi, xs + 16), _mm_set1_epi32(pairs[4 * h + s])));
      }
    }
    const __m128i mins = nib_hi(sm);
    const __m128i imin = bsum_dot(lo_u16(mins), hi_u16(mins), bs);
    acc = scale_add(acc, isum, f16(blk + 80) * dx);
    return _mm_sub_ps(acc, _mm_mul_ps(_mm_cvtepi32_ps(imin), _mm_set1_ps(f16(blk + 82) * dx)));
  }
};

// ---- iq4_xs: 8 sub-blocks of 32 as iq4_nl, 6-bit scales − 32 -------------------------------------
struct IQ4_XS {
  static constexpr int kBytes = qb::kBytesIQ4XS, kRows = 4;
  static __m128 superblock(const uint8_t* blk, const int16_t* x, const int16_t*, float dx, __m128 acc,
                           const F16& f16) {
    const __m128i table = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qb::kIQ4NL));
    __m128i isum = _mm_setzero_si128();
#if defined(__clang__)
#pragma clang loop unroll(disable)
#endif
    for (int j = 0; j < 8; ++j) {
      const __m128i v = load16(blk + 8 + 16 * j);
      const __m128i s = _mm_add_epi32(dot16_s8(lookup16(table, nib_lo(v)), x + 32 * j),
                                      dot16_s8(lookup16(table, nib_hi(v)), x + 32 * j + 16));
      isum = _mm_add_epi32(isum, mul_scale(s, qb::iq4xs_scale(blk, j)));
    }
    return scale_add(acc, isum, f16(blk) * dx);
  }
};

// ---- prefill tiles: each 32-weight chunk of a super-block decoded once, used for kTileTokens tokens -
// A chunk's quants are widened to int16 with their sub-block's integer scale multiplied in (q4_K/q5_K:
// ≤ 31·63 = 1953, q6_K: ≤ 63·128 = 8064 in magnitude: int16 is exact), so a token's Σ q·sc·x over the
// chunk is 4 i32x4.dot_i16x8_s. Element e lands in lane (e mod 8)/2 as in the super-block functions
// above and the integers are exact, so each lane holds the same int32; the offsets/mins and the float
// steps are the same operations in the same order: the bits of dot_rows (test_kernels_quant).
// 32 unsigned bytes × scale: natural order (x in Layout::Natural) or, with EO, per 16 bytes the even
// ones then the odd ones (x in Layout::EvenOddDiff, which pack_tile turns back into the even and the
// odd values for the tiles).
template <bool EO>
inline void widen_scaled(__m128i lo16, __m128i hi16, __m128i s_lo, __m128i s_hi, __m128i* w) {
  if constexpr (EO) {
    const __m128i m = _mm_set1_epi16(0x00FF);
    w[0] = _mm_mullo_epi16(_mm_and_si128(lo16, m), s_lo);
    w[1] = _mm_mullo_epi16(_mm_srli_epi16(lo16, 8), s_lo);
    w[2] = _mm_mullo_epi16(_mm_and_si128(hi16, m), s_hi);
    w[3] = _mm_mullo_epi16(_mm_srli_epi16(hi16, 8), s_hi);
  } else {
    w[0] = _mm_mullo_epi16(lo_u16(lo16), s_lo);
    w[1] = _mm_mullo_epi16(hi_u16(lo16), s_lo);
    w[2] = _mm_mullo_epi16(lo_u16(hi16), s_hi);
    w[3] = _mm_mullo_epi16(hi_u16(hi16), s_hi);
  }
}

// Per super-block: the 8 (or 16) integer scales and the bsums coefficients (mins, or q6_K's 32·sc).
struct SbState {
  uint8_t sc[8], mn[8];
  __m128i c_lo, c_hi;
  float d, dmin;
};

template <bool Q5>
struct K45Tile {
  static constexpr int kBytes = Q5 ? qb::kBytesQ5K : qb::kBytesQ4K;
  static constexpr int kChunksPerPass = 2;  // chunks j, j + 1 in one pass: constant nibble shifts
  static void prepare(const uint8_t* blk, SbState& st, const F16& f16) {
    k4_unpack(blk + 4, st.sc, st.mn);
    const __m128i m8 = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(st.mn));
    const __m128i dup = _mm_unpacklo_epi8(m8, m8);
    st.c_lo = lo_u16(dup);
    st.c_hi = hi_u16(dup);
    st.d = f16(blk);
    st.dmin = f16(blk + 2);
  }
  // Elements 32j … 32j + 31 as bytes (lo: 0-15, hi: 16-31): nibble half (j & 1) of the 32 bytes at
  // 32·(j / 2) (+ q5_K's bit j).
  static void quants(const uint8_t* blk, int j, __m128i* lo, __m128i* hi) {
    const uint8_t* qs = blk + (Q5 ? 48 : 16) + 32 * (j >> 1);
    const int shift = 4 * (j & 1);
    *lo = _mm_and_si128(_mm_srli_epi16(load16(qs), shift), bytes(0x0F));
    *hi = _mm_and_si128(_mm_srli_epi16(load16(qs + 16), shift), bytes(0x0F));
    if constexpr (Q5) {  // bit j of qh[l] → bit 4
      const __m128i mask = bytes(1 << j);
      *lo = _mm_or_si128(*lo, _mm_and_si128(_mm_cmpeq_epi8(_mm_and_si128(load16(blk + 16), mask), mask), bytes(0x10)));
      *hi = _mm_or_si128(*hi, _mm_and_si128(_mm_cmpeq_epi8(_mm_and_si128(load16(blk + 32), mask), mask), bytes(0x10)));
    }
  }
  static void chunk(const uint8_t* blk, const SbState& st, int j, __m128i* w) {
    __m128i lo, hi;
    quants(blk, j, &lo, &hi);
    const __m128i s = _mm_set1_epi16(int16_t(st.sc[j]));
    widen_scaled<true>(lo, hi, s, s, w);
  }
  static __m128 finish(const SbState& st, __m128i isum, const int16_t* bs, float dx, __m128 acc) {
    acc = scale_add(acc, isum, st.d * dx);
    return _mm_sub_ps(acc, _mm_mul_ps(_mm_cvtepi32_ps(bsum_dot(st.c_lo, st.c_hi, bs)), _mm_set1_ps(st.dmin * dx)));
  }
};

#if defined(ATTNLENS_RELAXED_SIMD)
// q4_K's and q5_K's tiles from the int8 copy of x (Tile8, Bytes::Natural): chunk j's quants as bytes and
// its scale, per token k45_superblock's K8 operations on sub-block j (the same int32 lanes).
template <bool Q5>
struct K45Tile8 : K45Tile<Q5> {
  static void chunk8(const uint8_t* blk, const SbState& st, int j, __m128i* w) {
    K45Tile<Q5>::quants(blk, j, &w[0], &w[1]);
    w[2] = _mm_set1_epi16(int16_t(st.sc[j]));
  }
  static __m128i isum8(const __m128i* w, const int8_t* x) {
    return _mm_madd_epi16(relaxed_dot32(x, w[0], w[1]), w[2]);
  }
};
using Q4Tile = K45Tile8<false>;
using Q5Tile = K45Tile8<true>;
#else
using Q4Tile = K45Tile<false>;
using Q5Tile = K45Tile<true>;
#endif

struct Q6Tile {
  static constexpr int kBytes = qb::kBytesQ6K;
  static constexpr int kChunksPerPass = 4;  // s = 0..3 in one pass: constant shifts
  static void prepare(const uint8_t* blk, SbState& st, const F16& f16) {
    const __m128i s8 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 192));
    st.c_lo = _mm_slli_epi16(lo_s16(s8), 5);
    st.c_hi = _mm_slli_epi16(hi_s16(s8), 5);
    st.d = f16(blk + 208);
  }
  // Elements 32j … 32j + 31 = 128h + 32s + l (h = j / 4, s = j % 4) as bytes (lo: l < 16, sub-block
  // 8h + 2s; hi: l ≥ 16, sub-block 8h + 2s + 1; see Q6_K above), and those two sub-blocks' scales.
  static const int8_t* quants(const uint8_t* blk, int j, __m128i* lo, __m128i* hi) {
    const int h = j >> 2, s = j & 3;
    const uint8_t* ql = blk + 64 * h + (s & 1 ? 32 : 0);
    const uint8_t* qh = blk + 128 + 32 * h;
    const int nshift = s & 2 ? 4 : 0, hshift = 2 * s;
    const auto q = [&](int l) {
      return _mm_or_si128(_mm_and_si128(_mm_srli_epi16(load16(ql + l), nshift), bytes(0x0F)),
                          _mm_slli_epi16(_mm_and_si128(_mm_srli_epi16(load16(qh + l), hshift), bytes(0x03)), 4));
    };
    *lo = q(0);
    *hi = q(16);
    return reinterpret_cast<const int8_t*>(blk + 192) + 8 * h + 2 * s;
  }
  static void chunk(const uint8_t* blk, const SbState&, int j, __m128i* w) {
    __m128i lo, hi;
    const int8_t* sc = quants(blk, j, &lo, &hi);
    widen_scaled<false>(lo, hi, _mm_set1_epi16(int16_t(sc[0])), _mm_set1_epi16(int16_t(sc[1])), w);
  }
#if defined(ATTNLENS_RELAXED_SIMD)
  // From the int8 copy of x (Tile8; Bytes::Pairs8): chunk j's quants as bytes in the same order (one
  // shuffle per 16, after the byte-wise assembly, with which it commutes) and its two sub-blocks'
  // scales, per token Q6_K::superblock8's operations on them (the same int32 lanes).
  static void chunk8(const uint8_t* blk, const SbState&, int j, __m128i* w) {
    const __m128i order = pairs8_order();
    const int8_t* sc = quants(blk, j, &w[0], &w[1]);
    w[0] = lookup16(w[0], order);
    w[1] = lookup16(w[1], order);
    w[2] = _mm_set1_epi16(int16_t(sc[0]));
    w[3] = _mm_set1_epi16(int16_t(sc[1]));
  }
  static __m128i isum8(const __m128i* w, const int8_t* x) {
    return _mm_add_epi32(_mm_madd_epi16(relaxed_dot16(x, w[0]), w[2]), _mm_madd_epi16(relaxed_dot16(x + 16, w[1]), w[3]));
  }
#endif
  static __m128 finish(const SbState& st, __m128i isum, const int16_t* bs, float dx, __m128 acc) {
    return scale_add(acc, _mm_sub_epi32(isum, bsum_dot(st.c_lo, st.c_hi, bs)), st.d * dx);
  }
};

// Whether T has a chunk8 (the relaxed-SIMD variant's tile on the int8 copy of x, Tile8).
template <class T, class = void>
struct HasChunk8 : std::false_type {};
template <class T>
struct HasChunk8<T, std::void_t<decltype(&T::chunk8)>> : std::true_type {};

template <class T>
void tile_sb(const uint8_t* w, const uint8_t* xp, int nb, float* out, size_t out_stride) {
  constexpr int NT = kTileTokens;
  constexpr bool k8 = HasChunk8<T>::value;
  using At = std::conditional_t<k8, Tile8, Tile16>;
  const F16 f16;
  __m128 acc[NT];
  for (int t = 0; t < NT; ++t) acc[t] = _mm_setzero_ps();
  for (int b = 0; b < nb; ++b, xp += At::kBlock256) {
    const uint8_t* blk = w + size_t(b) * T::kBytes;
    SbState st;
    T::prepare(blk, st, f16);
    __m128i isum[NT];
    for (int t = 0; t < NT; ++t) isum[t] = _mm_setzero_si128();
    const uint8_t* xj = xp;
#if defined(__clang__)
#pragma clang loop unroll_count(T::kChunksPerPass)
#endif
    for (int j = 0; j < 8; ++j, xj += At::kQ * NT) {
      __m128i wv[4];
      if constexpr (k8) {
        T::chunk8(blk, st, j, wv);
        for (int t = 0; t < NT; ++t) {
          isum[t] = _mm_add_epi32(isum[t], T::isum8(wv, reinterpret_cast<const int8_t*>(xj + 32 * t)));
          order_point(isum[t]);
        }
        continue;
      }
      T::chunk(blk, st, j, wv);
      for (int t = 0; t < NT; ++t) {
        const auto* xv = reinterpret_cast<const __m128i*>(xj + 64 * t);
        const __m128i s01 = _mm_add_epi32(_mm_madd_epi16(wv[0], _mm_load_si128(xv)), _mm_madd_epi16(wv[1], _mm_load_si128(xv + 1)));
        const __m128i s23 = _mm_add_epi32(_mm_madd_epi16(wv[2], _mm_load_si128(xv + 2)), _mm_madd_epi16(wv[3], _mm_load_si128(xv + 3)));
        isum[t] = _mm_add_epi32(isum[t], _mm_add_epi32(s01, s23));
        order_point(isum[t]);  // else V8 loads all tokens' x first and spills them
      }
    }
    for (int t = 0; t < NT; ++t) {
      const int16_t* bs = reinterpret_cast<const int16_t*>(xp + At::kBsums256 + 32 * t);
      float dx;
      std::memcpy(&dx, xp + At::kD256 + 4 * t, 4);
      acc[t] = T::finish(st, isum[t], bs, dx, acc[t]);
    }
  }
  for (int t = 0; t < NT; ++t) out[t * out_stride] = lanes_sum(acc[t]);
}

// Whether T has a superblock8 (the relaxed-SIMD variant's, from the int8 copy of x).
template <class T, class = void>
struct HasSuperblock8 : std::false_type {};
template <class T>
struct HasSuperblock8<T, std::void_t<decltype(&T::superblock8)>> : std::true_type {};

template <class T, int R>
void dot_rows(const uint8_t* w, size_t stride, const ActRow& a, int nb, float* out) {
  const F16 f16;
  __m128 acc[R];
  for (int r = 0; r < R; ++r) acc[r] = _mm_setzero_ps();
  const int16_t *xb = a.q, *bs = a.bsums;
  const int8_t* x8 = a.q8;
  const float* dx = a.d;
  const uint8_t* const end = w + size_t(nb) * T::kBytes;
  for (const uint8_t* p = w; p != end; p += T::kBytes, xb += 256, x8 += 256 * kBytesStep, bs += 16, ++dx)  // (quant.cpp: why pointers)
    for (int r = 0; r < R; ++r) {
      if constexpr (HasSuperblock8<T>::value) acc[r] = T::superblock8(p + r * stride, x8, bs, *dx, acc[r], f16);
      else acc[r] = T::superblock(p + r * stride, xb, bs, *dx, acc[r], f16);
    }
  for (int r = 0; r < R; ++r) out[r] = lanes_sum(acc[r]);
}

// RowsPerCall<T> rows per call (every type here: 4, quant.cpp walk_rows says why), or 1.
template <class T>
RowsDot pick(int R) {
  constexpr int kR = RowsPerCall<T>::value;
  return R == kR ? &dot_rows<T, kR> : R == 1 ? &dot_rows<T, 1> : nullptr;
}

}  // namespace

TileDot tile_dot_superblock(DType t) {
  switch (t) {
    case DType::Q4_K: return &tile_sb<Q4Tile>;
    case DType::Q5_K: return &tile_sb<Q5Tile>;
    case DType::Q6_K: return &tile_sb<Q6Tile>;
    default: return nullptr;
  }
}

RowsDot rows_dot_superblock(DType t, int R) {
  switch (t) {
    case DType::Q2_K: return pick<Q2_K>(R);
    case DType::Q3_K: return pick<Q3_K>(R);
    case DType::Q4_K: return pick<Q4_K>(R);
    case DType::Q5_K: return pick<Q5_K>(R);
    case DType::Q6_K: return pick<Q6_K>(R);
    case DType::IQ4_XS: return pick<IQ4_XS>(R);
    default: return nullptr;
  }
}

}  // namespace attnlens::kernels::qsimd
#endif  // ATTNLENS_QUANT_SIMD
