// Dot products with weights in GGML block formats (quant_blocks.h), activations quantized per
// block the way llama.cpp pairs them (quant_scalar.h defines the arithmetic; ref::matmul_q is it in
// plain scalar code). This file: the driver (activation quantization into scratch, the walk over
// rows for decode and prefill) and the blocks of 32 (q8_0, q4_0, q4_1, q5_0, q5_1, iq4_nl);
// quant_k.cpp has the super-blocks of 256.
//
// Per block of 32 weights: the weights become 4 vectors of 8 int16 (q8_0: four widening loads;
// 4-bit: one 16-byte load, the nibbles masked out and widened; q4_0: one mask or shift per 8
// weights, no widening, against activations laid out for it, quant_simd.h), 4 i32x4.dot_i16x8_s with the
// activation block (8 exact int products each) and 3 adds give Σ q·xq in int32 lanes, scaled once by
// d·dx in f32. 4-wide SIMD without FMA is compute-bound at these bytes/s in wasm: converting each
// weight to f32 instead would take 8 widenings, 8 conversions and 8 multiply + 8 add per 32.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "core/tensor.h"
#include "kernels/kernels.h"
#include "kernels/quant_blocks.h"
#include "kernels/quant_scalar.h"
#include "kernels/quant_simd.h"
#include "kernels/row_walk.h"
#include "kernels/scratch.h"

namespace attnlens::kernels {

namespace {

inline float f16_rounded(float v) { return f16_to_f32(f32_to_f16(v)); }

}  // namespace

#if ATTNLENS_QUANT_SIMD
namespace qsimd {

#if !defined(__F16C__)
const float* f16_table() {
  static const float* t = [] {
    static float v[65536];
    for (uint32_t h = 0; h < 65536; ++h) v[h] = f16_to_f32(uint16_t(h));
    return v;
  }();
  return t;
}
#endif

namespace {

// ---- quantized activations (quant_scalar.h's definitions, 4 lanes at a time) -------------------
// Round to nearest, ties to even (f32x4.nearest in wasm, roundps natively), exactly nearbyint, then
// to int32 (exact: the values are integers, |v| ≤ 127). Rounding the product first matters: adding
// the 1.5·2^23 constant instead would let a compiler fuse multiply and add (natively), rounding the
// exact product rather than the f32 one llama.cpp rounds.
inline __m128i round_i32(__m128 v) {
  const __m128 r = _mm_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
#if defined(__wasm_simd128__)
  return wasm_i32x4_trunc_sat_f32x4(r);
#else
  return _mm_cvtps_epi32(r);
#endif
}

// max |x| over n floats (n % 4 == 0): |x| as integer bits (the order of non-negative floats is the
// order of their bits).
inline float abs_max(const float* x, int n) {
  const __m128i abs_mask = _mm_set1_epi32(0x7fffffff);
  __m128i m = _mm_setzero_si128();
  for (int i = 0; i < n; i += 4) m = _mm_max_epi32(m, _mm_and_si128(_mm_castps_si128(_mm_loadu_ps(x + i)), abs_mask));
  m = _mm_max_epi32(m, _mm_shuffle_epi32(m, _MM_SHUFFLE(1, 0, 3, 2)));
  m = _mm_max_epi32(m, _mm_shuffle_epi32(m, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm_cvtss_f32(_mm_castsi128_ps(m));
}

// xq[i] = round(x[i]·scale) for n floats (n % 8 == 0) as int16; returns Σ xq.
inline int scale_round(const float* x, int n, float scale, int16_t* xq) {
  const __m128 vs = _mm_set1_ps(scale);
  __m128i sum = _mm_setzero_si128();
  for (int i = 0; i < n; i += 8) {
    const __m128i lo = round_i32(_mm_mul_ps(_mm_loadu_ps(x + i), vs));
    const __m128i hi = round_i32(_mm_mul_ps(_mm_loadu_ps(x + i + 4), vs));
    sum = _mm_add_epi32(sum, _mm_add_epi32(lo, hi));
    _mm_store_si128(reinterpret_cast<__m128i*>(xq + i), _mm_packs_epi32(lo, hi));
  }
  return lanes_sum_i32(sum);
}

}  // namespace

Layout layout_of(DType t) {
  switch (t) {
    case DType::Q4_0: return Layout::Nib4;
    case DType::Q2_K:
    case DType::Q3_K: return Layout::EvenOddDiff;
    // The relaxed-SIMD variant's q4_K and q5_K kernels read only the int8 copy (and bsums, d): no relayout.
    case DType::Q4_K:
    case DType::Q5_K: return kBytesStep ? Layout::Natural : Layout::EvenOddDiff;
    default: return Layout::Natural;
  }
}

Bytes bytes_of(DType t) {
#if defined(ATTNLENS_RELAXED_SIMD)
  switch (t) {
    case DType::Q4_0:
    case DType::Q4_K:
    case DType::Q5_K: return Bytes::Natural;
    case DType::Q6_K: return Bytes::Pairs8;
    default: return Bytes::None;
  }
#else
  (void)t;
  return Bytes::None;
#endif
}

namespace {

// The 8 even and the 8 odd int16 lanes of (a, b): elements 0..15, the even ones first.
inline void even_odd(__m128i a, __m128i b, __m128i* even, __m128i* odd) {
#if defined(__wasm_simd128__)
  *even = wasm_i16x8_shuffle(a, b, 0, 2, 4, 6, 8, 10, 12, 14);
  *odd = wasm_i16x8_shuffle(a, b, 1, 3, 5, 7, 9, 11, 13, 15);
#else
  const __m128i split = _mm_setr_epi8(0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15);
  a = _mm_shuffle_epi8(a, split);
  b = _mm_shuffle_epi8(b, split);
  *even = _mm_unpacklo_epi64(a, b);
  *odd = _mm_unpackhi_epi64(a, b);
#endif
}

// Σ of each 4 consecutive int16 of (a, b) as int32x4: pairs by dot_i16x8 with ones, then pairs of pairs.
inline __m128i quad_sums(__m128i a, __m128i b) {
  const __m128i one = _mm_set1_epi16(1);
  const __m128 pa = _mm_castsi128_ps(_mm_madd_epi16(a, one)), pb = _mm_castsi128_ps(_mm_madd_epi16(b, one));
  return _mm_add_epi32(_mm_castps_si128(_mm_shuffle_ps(pa, pb, _MM_SHUFFLE(2, 0, 2, 0))),
                       _mm_castps_si128(_mm_shuffle_ps(pa, pb, _MM_SHUFFLE(3, 1, 3, 1))));
}

// Natural order → `lay` (quant_simd.h), in place, per block of 32 (k a multiple of 32). Not inlined
// into quantize_row's two branches: one copy (size; it runs once per row of x).
#if defined(__GNUC__)
__attribute__((noinline))
#endif
void relayout(Layout lay, int16_t* q, int k, float* d, int32_t* corr) {
  for (int b = 0; b < k / 32; ++b) {
    auto* v = reinterpret_cast<__m128i*>(q + 32 * b);
    __m128i e0, o0, e1, o1;
    even_odd(_mm_load_si128(v), _mm_load_si128(v + 1), &e0, &o0);
    even_odd(_mm_load_si128(v + 2), _mm_load_si128(v + 3), &e1, &o1);
    if (lay == Layout::Nib4) {
      // corr lane j: −8 · 256 · Σ of elements 4j..4j+3 and 16+4j..19+4j (the lanes of Q4_0::isum).
      const __m128i s = _mm_add_epi32(quad_sums(_mm_load_si128(v), _mm_load_si128(v + 1)),
                                      quad_sums(_mm_load_si128(v + 2), _mm_load_si128(v + 3)));
      _mm_store_si128(reinterpret_cast<__m128i*>(corr) + b, _mm_sub_epi32(_mm_setzero_si128(), _mm_slli_epi32(s, 11)));
      e0 = _mm_slli_epi16(e0, 8);
      e1 = _mm_slli_epi16(e1, 4);
      o1 = _mm_slli_epi16(o1, 8);
      d[b] *= 1.f / 256;
    }
    if (lay == Layout::EvenOddDiff) {  // o − 256·e (in range: the int16 arithmetic is exact)
      o0 = _mm_sub_epi16(o0, _mm_slli_epi16(e0, 8));
      o1 = _mm_sub_epi16(o1, _mm_slli_epi16(e1, 8));
    }
    _mm_store_si128(v, e0);
    _mm_store_si128(v + 1, o0);
    _mm_store_si128(v + 2, e1);
    _mm_store_si128(v + 3, o1);
  }
}

// The int8 copy of k values in natural order (|q| ≤ 127: the pack does not saturate), in the order `by`.
void to_bytes(Bytes by, const int16_t* q, int k, int8_t* q8) {
  const __m128i pairs8 = pairs8_order();
  for (int i = 0; i < k; i += 16) {
    const auto* v = reinterpret_cast<const __m128i*>(q + i);
    __m128i b = _mm_packs_epi16(_mm_load_si128(v), _mm_load_si128(v + 1));
    if (by == Bytes::Pairs8) b = lookup16(b, pairs8);
    _mm_store_si128(reinterpret_cast<__m128i*>(q8 + i), b);
  }
}

}  // namespace

void quantize_row(qs::Act act, Layout lay, Bytes by, const float* x, int k, const ActOut& out) {
  int16_t* q = out.q;
  float *d = out.d, *s = out.s;
  if (act != qs::Act::Q8_K) {
    // q8_0 / q8_1: per 32, d = f16(amax/127), q = round(x·127/amax), s = f16(d·Σq).
    for (int b = 0; b < k / 32; ++b) {
      const float amax = abs_max(x + 32 * b, 32);
      const float db = amax / 127.f;
      const int sum = scale_round(x + 32 * b, 32, amax != 0.f ? 127.f / amax : 0.f, q + 32 * b);
      d[b] = f16_rounded(db);
      if (act == qs::Act::Q8_1) s[b] = f16_rounded(db * float(sum));
    }
    if (by != Bytes::None) to_bytes(by, q, k, out.q8);
    if (lay != Layout::Natural) relayout(lay, q, k, d, out.corr);
    return;
  }
  // q8_K: per 256, max = the first x of largest |x|, iscale = −127/max, q = round(iscale·x) (≤ 127 in
  // magnitude by construction), d = 1/iscale, bsums = Σq per 16.
  int16_t* bsums = out.bsums;
  for (int b = 0; b < k / 256; ++b) {
    const float* xb = x + 256 * b;
    int16_t* qb16 = q + 256 * b;
    const float amax = abs_max(xb, 256);
    if (amax == 0.f) {
      d[b] = 0.f;
      std::memset(qb16, 0, 256 * sizeof(int16_t));
      std::memset(bsums + 16 * b, 0, 16 * sizeof(int16_t));
      continue;
    }
    int first = 0;
    while (std::fabs(xb[first]) != amax) ++first;
    const float iscale = -127.f / xb[first];
    for (int j = 0; j < 16; ++j) bsums[16 * b + j] = int16_t(scale_round(xb + 16 * j, 16, iscale, qb16 + 16 * j));
    d[b] = 1.f / iscale;
  }
  if (by != Bytes::None) to_bytes(by, q, k, out.q8);
  if (lay != Layout::Natural) relayout(lay, q, k, d, out.corr);  // EvenOddDiff only: d stays
}

namespace {

// ---- blocks of 32 ------------------------------------------------------------------------------
// Each type: isum(block, x) = Σ q_w·q_x over the block as int32 lanes (exact), its scale d, and
// for q4_1/q5_1 the min m (the term m·s_x is added per block).

// Elements 0-15 (lo) and 16-31 (hi) as signed bytes → 4 × 8 int16.
inline void widen_s8(__m128i lo, __m128i hi, __m128i* w) {
  w[0] = lo_s16(lo);
  w[1] = hi_s16(lo);
  w[2] = lo_s16(hi);
  w[3] = hi_s16(hi);
}

struct Q8_0 {
  static constexpr int kBytes = qb::kBytesQ8_0, kD = 0, kM = -1, kRows = 4;
  static __m128i isum(const uint8_t* blk, const int16_t* x) {
    const __m128i* xv = reinterpret_cast<const __m128i*>(x);
    const uint8_t* q = blk + 2;
    const __m128i a = _mm_madd_epi16(load8_s16(q), _mm_load_si128(xv));
    const __m128i b = _mm_madd_epi16(load8_s16(q + 8), _mm_load_si128(xv + 1));
    const __m128i c = _mm_madd_epi16(load8_s16(q + 16), _mm_load_si128(xv + 2));
    const __m128i d = _mm_madd_epi16(load8_s16(q + 24), _mm_load_si128(xv + 3));
    return _mm_add_epi32(_mm_add_epi32(a, b), _mm_add_epi32(c, d));
  }
  // The 32 weights as 4 × 8 int16 (elements 0-7, 8-15, 16-23, 24-31), for the prefill tile.
  static void decode(const uint8_t* blk, __m128i* w) {
    for (int i = 0; i < 4; ++i) w[i] = load8_s16(blk + 2 + 8 * i);
  }
};

// 16 bytes of nibbles: low nibbles are elements 0..15, high nibbles 16..31. x in Layout::Nib4: the
// four masks give the products ×256 (quant_simd.h), corr the −8.
struct Q4_0 {
  static constexpr int kBytes = qb::kBytesQ4_0, kD = 0, kM = -1, kRows = 4;
  static constexpr bool kCorr = true;
  static __m128i isum(const uint8_t* blk, const int16_t* x) {
    __m128i w[4];
    decode(blk, w);
    const __m128i* xv = reinterpret_cast<const __m128i*>(x);
    const __m128i a = _mm_madd_epi16(w[0], _mm_load_si128(xv)), b = _mm_madd_epi16(w[1], _mm_load_si128(xv + 1));
    const __m128i c = _mm_madd_epi16(w[2], _mm_load_si128(xv + 2)), d = _mm_madd_epi16(w[3], _mm_load_si128(xv + 3));
    return _mm_add_epi32(_mm_add_epi32(a, b), _mm_add_epi32(c, d));
  }
  static void decode(const uint8_t* blk, __m128i* w) {
    const __m128i v = load16(blk + 2);
    w[0] = _mm_and_si128(v, _mm_set1_epi16(0x000F));
    w[1] = _mm_and_si128(v, _mm_set1_epi16(0x0F00));
    w[2] = _mm_and_si128(v, _mm_set1_epi16(0x00F0));
    w[3] = _mm_srli_epi16(v, 12);
  }
#if defined(ATTNLENS_RELAXED_SIMD)
  // isum from the int8 copy (Bytes::Natural): the nibbles as bytes (decode8: elements 0-15, 16-31)
  // against elements 0-15 and 16-31, products summed in pairs (int16 lanes, |·| ≤ 4·15·127), then
  // lanes 2j, 2j + 1 times 256 → int32 lane j: elements 4j..4j+3 and 16+4j..19+4j, isum's lane j,
  // ×256 as isum's (x in Layout::Nib4), for corr.
  static void decode8(const uint8_t* blk, __m128i* w) {
    const __m128i v = load16(blk + 2);
    w[0] = nib_lo(v);
    w[1] = nib_hi(v);
  }
  static __m128i isum8(const __m128i* w, const int8_t* x) {
    return _mm_madd_epi16(relaxed_dot32(x, w[0], w[1]), _mm_set1_epi16(256));
  }
  static __m128i isum8(const uint8_t* blk, const int8_t* x) {
    __m128i w[2];
    decode8(blk, w);
    return isum8(w, x);
  }
#endif
};

struct Q4_1 {
  static constexpr int kBytes = qb::kBytesQ4_1, kD = 0, kM = 2;
  static __m128i isum(const uint8_t* blk, const int16_t* x) {
    const __m128i v = load16(blk + 4);
    return _mm_add_epi32(dot16_u8(nib_lo(v), x), dot16_u8(nib_hi(v), x + 16));
  }
};

// The 5th bits: bit i of the u32 qh, spread to byte i of two 16-byte vectors as 0xFF / 0x00.
inline void qh_bytes(const uint8_t* qh4, __m128i* lo, __m128i* hi) {
  const __m128i v = _mm_set1_epi32(int32_t(qb::u32(qh4)));
  const __m128i sel_lo = _mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1);
  const __m128i sel_hi = _mm_setr_epi8(2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3);
  const __m128i bit = _mm_setr_epi8(1, 2, 4, 8, 16, 32, 64, -128, 1, 2, 4, 8, 16, 32, 64, -128);
  *lo = _mm_cmpeq_epi8(_mm_and_si128(lookup16(v, sel_lo), bit), bit);
  *hi = _mm_cmpeq_epi8(_mm_and_si128(lookup16(v, sel_hi), bit), bit);
}

// q5_0: q − 16 = nibble − 16 when the 5th bit is clear, = nibble | 0xF0 as int8; nibble when set.
struct Q5_0 {
  static constexpr int kBytes = qb::kBytesQ5_0, kD = 0, kM = -1;
  static __m128i isum(const uint8_t* blk, const int16_t* x) {
    __m128i hlo, hhi;
    qh_bytes(blk + 2, &hlo, &hhi);
    const __m128i v = load16(blk + 6);
    const __m128i lo = _mm_or_si128(nib_lo(v), _mm_andnot_si128(hlo, bytes(0xF0)));
    const __m128i hi = _mm_or_si128(nib_hi(v), _mm_andnot_si128(hhi, bytes(0xF0)));
    return _mm_add_epi32(dot16_s8(lo, x), dot16_s8(hi, x + 16));
  }
  static void decode(const uint8_t* blk, __m128i* w) {
    __m128i hlo, hhi;
    qh_bytes(blk + 2, &hlo, &hhi);
    const __m128i v = load16(blk + 6);
    widen_s8(_mm_or_si128(nib_lo(v), _mm_andnot_si128(hlo, bytes(0xF0))),
             _mm_or_si128(nib_hi(v), _mm_andnot_si128(hhi, bytes(0xF0))), w);
  }
};

struct Q5_1 {
  static constexpr int kBytes = qb::kBytesQ5_1, kD = 0, kM = 2;
  static __m128i isum(const uint8_t* blk, const int16_t* x) {
    __m128i hlo, hhi;
    qh_bytes(blk + 4, &hlo, &hhi);
    const __m128i v = load16(blk + 8);
    const __m128i lo = _mm_or_si128(nib_lo(v), _mm_and_si128(hlo, bytes(0x10)));
    const __m128i hi = _mm_or_si128(nib_hi(v), _mm_and_si128(hhi, bytes(0x10)));
    return _mm_add_epi32(dot16_u8(lo, x), dot16_u8(hi, x + 16));
  }
};

// iq4_nl: each nibble indexes the 16-entry value table (one byte shuffle per 16 weights).
struct IQ4_NL {
  static constexpr int kBytes = qb::kBytesIQ4NL, kD = 0, kM = -1;
  static __m128i isum(const uint8_t* blk, const int16_t* x) {
    const __m128i table = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qb::kIQ4NL));
    const __m128i v = load16(blk + 2);
    return _mm_add_epi32(dot16_s8(lookup16(table, nib_lo(v)), x), dot16_s8(lookup16(table, nib_hi(v)), x + 16));
  }
  static void decode(const uint8_t* blk, __m128i* w) {
    const __m128i table = _mm_loadu_si128(reinterpret_cast<const __m128i*>(qb::kIQ4NL));
    const __m128i v = load16(blk + 2);
    widen_s8(lookup16(table, nib_lo(v)), lookup16(table, nib_hi(v)), w);
  }
};

// Whether T's integer sum takes the activation row's corr (Layout::Nib4).
template <class T, class = void>
struct HasCorr : std::false_type {};
template <class T>
struct HasCorr<T, std::void_t<decltype(T::kCorr)>> : std::bool_constant<T::kCorr> {};

// Whether T has the relaxed-SIMD variant's decode8 / isum8 (from the int8 copy of x).
template <class T, class = void>
struct HasIsum8 : std::false_type {};
template <class T>
struct HasIsum8<T, std::void_t<decltype(&T::decode8)>> : std::true_type {};

// Rows w[0..R) (`stride` bytes apart) · x, one block per iteration, the activation loads shared.
// The activation pointers advance with the block (emscripten builds with LLVM's loop strength
// reduction off, so `a.q + 32 * b` would cost a shift and an add per pointer and block in V8).
template <class T, int R>
void dot_rows(const uint8_t* w, size_t stride, const ActRow& a, int nb, float* out) {
  const F16 f16;
  __m128 acc[R];
  float macc[R];
  for (int r = 0; r < R; ++r) {
    acc[r] = _mm_setzero_ps();
    macc[r] = 0.f;
  }
  const int16_t* xb = a.q;
  const int8_t* x8 = a.q8;
  const float *dx = a.d, *sx = a.s;
  const __m128i* cx = reinterpret_cast<const __m128i*>(a.corr);
  const uint8_t* const end = w + size_t(nb) * T::kBytes;
  // Unrolling (clang's default here) makes V8 spill: keep one block per iteration.
#if defined(__clang__)
#pragma clang loop unroll(disable)
#endif
  for (const uint8_t* p = w; p != end; p += T::kBytes, xb += 32, x8 += 32 * kBytesStep, ++dx, ++sx, ++cx) {
    for (int r = 0; r < R; ++r) {
      const uint8_t* blk = p + r * stride;
      __m128i s;
      if constexpr (HasIsum8<T>::value) s = T::isum8(blk, x8);
      else s = T::isum(blk, xb);
      if constexpr (HasCorr<T>::value) s = _mm_add_epi32(s, _mm_load_si128(cx));
      acc[r] = scale_add(acc[r], s, f16(blk + T::kD) * *dx);
      if constexpr (T::kM >= 0) macc[r] += f16(blk + T::kM) * *sx;
    }
  }
  for (int r = 0; r < R; ++r) out[r] = lanes_sum(acc[r]) + macc[r];
}

// RowsPerCall<T> rows per call, or 1 (the driver takes the rows left over one at a time).
template <class T>
RowsDot pick(int R) {
  constexpr int kR = RowsPerCall<T>::value;
  return R == kR ? &dot_rows<T, kR> : R == 1 ? &dot_rows<T, 1> : nullptr;
}

// The prefill tile (quant_simd.h TileDot): per block, W's 32 weights are decoded once into 4 int16
// vectors (or, with isum8, 2 byte vectors against the int8 tile, Tile8) and meet the kTileTokens
// activation blocks; each token's int32 lanes (the same 8-element groups as T::isum: exact integers,
// so the order of the adds does not matter) and its float accumulation (scale_add with d_w·d_x) are
// dot_rows' operations in the same order: same bits.
// q4_1/q5_1 (a min term per token as well) keep dot_rows: their 4 more live floats spill in V8.
template <class T>
void tile_32(const uint8_t* w, const uint8_t* xp, int nb, float* out, size_t out_stride) {
  constexpr int NT = kTileTokens;
  constexpr bool k8 = HasIsum8<T>::value;
  using At = std::conditional_t<k8, Tile8, Tile16>;
  const F16 f16;
  __m128 acc[NT];
  for (int t = 0; t < NT; ++t) acc[t] = _mm_setzero_ps();
  const uint8_t* p = w;
  const uint8_t* const end = w + size_t(nb) * T::kBytes;
#if defined(__clang__)
#pragma clang loop unroll(disable)
#endif
  for (; p != end; p += T::kBytes, xp += At::kBlock32) {
    __m128i wv[4];
    if constexpr (k8) T::decode8(p, wv);
    else T::decode(p, wv);
    const __m128 dw = _mm_set1_ps(f16(p + T::kD));
    for (int t = 0; t < NT; ++t) {
      __m128i s;
      if constexpr (k8) {
        s = T::isum8(wv, reinterpret_cast<const int8_t*>(xp + 32 * t));
      } else {
        const auto* xv = reinterpret_cast<const __m128i*>(xp + 64 * t);
        const __m128i s0 = _mm_madd_epi16(wv[0], _mm_load_si128(xv)), s1 = _mm_madd_epi16(wv[1], _mm_load_si128(xv + 1));
        const __m128i s2 = _mm_madd_epi16(wv[2], _mm_load_si128(xv + 2)), s3 = _mm_madd_epi16(wv[3], _mm_load_si128(xv + 3));
        s = _mm_add_epi32(_mm_add_epi32(s0, s1), _mm_add_epi32(s2, s3));
      }
      if constexpr (HasCorr<T>::value)
        s = _mm_add_epi32(s, _mm_load_si128(reinterpret_cast<const __m128i*>(xp + At::kCorr32 + 16 * t)));
      // scale_add(acc[t], s, d_w·d_x), with d_w·d_x formed in every lane
      const __m128 dx = _mm_loadu_ps(reinterpret_cast<const float*>(xp + At::kD32 + 16 * t));
      acc[t] = _mm_add_ps(acc[t], _mm_mul_ps(_mm_cvtepi32_ps(s), _mm_mul_ps(dw, dx)));
    }
  }
  for (int t = 0; t < NT; ++t) out[t * out_stride] = lanes_sum(acc[t]) + 0.f;
}

}  // namespace

TileDot tile_dot_32(DType t) {
  switch (t) {
    case DType::Q8_0: return &tile_32<Q8_0>;
    case DType::Q4_0: return &tile_32<Q4_0>;
    case DType::Q5_0: return &tile_32<Q5_0>;
    case DType::IQ4_NL: return &tile_32<IQ4_NL>;
    default: return nullptr;
  }
}

RowsDot rows_dot_32(DType t, int R) {
  switch (t) {
    case DType::Q8_0: return pick<Q8_0>(R);
    case DType::Q4_0: return pick<Q4_0>(R);
    case DType::Q4_1: return pick<Q4_1>(R);
    case DType::Q5_0: return pick<Q5_0>(R);
    case DType::Q5_1: return pick<Q5_1>(R);
    case DType::IQ4_NL: return pick<IQ4_NL>(R);
    default: return nullptr;
  }
}

}  // namespace qsimd

namespace {

// One copy each of the helpers below, shared by matmul_q and the decode entry points (wasm size).
#if defined(__GNUC__)
#define ATTNLENS_ONE_COPY __attribute__((noinline))
#else
#define ATTNLENS_ONE_COPY
#endif

// One activation row in scratch: q [k] int16, corr [k/32][4] int32, d [nb], s [nb] floats, bsums
// [k/16] int16 (k % 32 == 0 keeps q and corr 16-byte aligned when the row start is), padded to 16
// bytes; in the relaxed-SIMD variant then q8 [k] int8 (16-byte aligned).
size_t act_q8_offset(int k, int nb) {
  return (size_t(k) * 2 + size_t(nb) * 8 + size_t(k / 16) * 2 + size_t(k / 32) * 16 + 15) / 16 * 16;
}
size_t act_stride(int k, int nb) { return act_q8_offset(k, nb) + size_t(qsimd::kBytesStep) * size_t(k); }
qsimd::ActRow act_row(const void* row, int k, int nb) {
  auto* p = static_cast<const uint8_t*>(row);
  const auto* corr = reinterpret_cast<const int32_t*>(p + size_t(k) * 2);
  const auto* d = reinterpret_cast<const float*>(corr + k / 8);
  const auto* q8 = qsimd::kBytesStep ? reinterpret_cast<const int8_t*>(p + act_q8_offset(k, nb)) : nullptr;
  return qsimd::ActRow{reinterpret_cast<const int16_t*>(p), d, d + nb, reinterpret_cast<const int16_t*>(d + 2 * nb),
                       corr, q8};
}
ATTNLENS_ONE_COPY void quantize_act_row(DType t, const float* x, int k, int nb, void* row) {
  const qsimd::ActRow r = act_row(row, k, nb);
  const qsimd::Bytes by = r.q8 ? qsimd::bytes_of(t) : qsimd::Bytes::None;
  qsimd::quantize_row(qs::act_of(t), qsimd::layout_of(t), by, x, k,
                      {const_cast<int16_t*>(r.q), const_cast<float*>(r.d), const_cast<float*>(r.s),
                       const_cast<int16_t*>(r.bsums), const_cast<int32_t*>(r.corr), const_cast<int8_t*>(r.q8)});
}

// The row kernels of t for 4, 2 and 1 rows per pass; ok() is false when t has none (not a block type).
struct Dots {
  qsimd::RowsDot dot4, dot2, dot1;
  int nb;  // activation blocks per row of k
  bool ok() const { return dot1 && (dot2 || dot4); }
};
ATTNLENS_ONE_COPY Dots dots_of(DType t, int k) {
  const qs::Act act = qs::act_of(t);
  const bool sb = act == qs::Act::Q8_K;
  const auto pick = sb ? &qsimd::rows_dot_superblock : &qsimd::rows_dot_32;
  return Dots{pick(t, 4), pick(t, 2), pick(t, 1), k / qs::act_block(act)};
}

// yi[0..rows) = rows of W (from wb, row_bytes apart) · one activation row, walked as kernels/row_walk.h
// says, R rows per kernel call (the R rows share each load of x; one row would reload x for every
// row), the rows left over one by one (dot1: the same arithmetic per row). R is the type's kRows
// (qsimd::RowsPerCall): 4 for q4_0 (no widening, few temporaries), q8_0 and the super-block types
// (not the relaxed variant's q4_K, quant_k.cpp); 2 for the rest (q4_1, q5_0, q5_1 measured 14-22%
// slower in bench_kernels with 4: their kernels run out of V8's 16 vector registers). For q8_0 and
// the super-block types R = 4 costs nothing in cache and gains from memory: a call reads its R rows'
// streams side by side, so twice as many of the walk's 8 streams are in flight at once (rand110M
// decode, 1 thread, wasm: q8_0 +15%, Q4_K_M +5%; bench/README.md "Decode: four rows per call").
// Eight rows per call spill, and measured slower for the 42M shape.
ATTNLENS_ONE_COPY void walk_rows(const Dots& d, const uint8_t* wb, size_t row_bytes, const qsimd::ActRow& a, int rows, float* yi) {
  const int R = d.dot4 ? 4 : 2;
  const qsimd::RowsDot dot = d.dot4 ? d.dot4 : d.dot2;
  walk_streams(
      rows, R,
      [&](int first, int part) {
        float t[4];
        dot(wb + size_t(first) * row_bytes, size_t(part) * row_bytes, a, d.nb, t);
        for (int r = 0; r < R; ++r) yi[first + r * part] = t[r];
      },
      [&](int j) { d.dot1(wb + size_t(j) * row_bytes, 0, a, d.nb, yi + j); });
}

// All n rows of x quantized into buf (n · act_stride bytes, 16-byte aligned).
ATTNLENS_ONE_COPY void quantize_rows_simd(DType t, const float* x, int n, int k, int nb, uint8_t* buf) {
  const size_t stride = act_stride(k, nb);
  for (int i = 0; i < n; ++i) quantize_act_row(t, x + size_t(i) * k, k, nb, buf + size_t(i) * stride);
}

// The tile layout a weight type's tile kernel reads (quant_simd.h TileAt): blocks of 32 or of 256
// (sb), with q4_0's corr, of the int16 values or of the int8 copy (q8), the rows' Layout::EvenOddDiff
// turned back into the even and the odd values (undiff); parts() says where a tile block's parts are,
// in bytes.
struct TileFormat {
  bool sb, corr, q8, undiff;
  struct Parts {
    int q, corr, bsums, d, block;
  };
  template <class At>
  Parts parts_of() const {
    return sb ? Parts{At::kQ, 0, At::kBsums256, At::kD256, At::kBlock256} : Parts{At::kQ, At::kCorr32, 0, At::kD32, At::kBlock32};
  }
  Parts parts() const { return q8 ? parts_of<qsimd::Tile8>() : parts_of<qsimd::Tile16>(); }
};
TileFormat tile_format(DType t) {
  return {qs::act_of(t) == qs::Act::Q8_K, qsimd::layout_of(t) == qsimd::Layout::Nib4,
          qsimd::bytes_of(t) != qsimd::Bytes::None, qsimd::layout_of(t) == qsimd::Layout::EvenOddDiff};
}

// kTileTokens rows of x from row i (row layout, rows `stride` bytes apart in buf) into the tile
// layout f (nb blocks of 32 or 256 values).
ATTNLENS_ONE_COPY void pack_tile(const TileFormat& f, const uint8_t* buf, size_t stride, int i, int k, int nb, uint8_t* out) {
  constexpr int NT = qsimd::kTileTokens;
  const bool sb = f.sb, corr = f.corr, q8 = f.q8;
  const int blk = sb ? 256 : 32;
  const TileFormat::Parts at = f.parts();
  const size_t q8_at = act_q8_offset(k, nb);
  // 16-byte pieces: n of them from `from` to `to` (one loop, not unrolled: size)
  const auto copy16 = [](uint8_t* to, const uint8_t* from, int n) {
#if defined(__clang__)
#pragma clang loop unroll(disable)
#endif
    for (int v = 0; v < n; ++v) _mm_storeu_si128(reinterpret_cast<__m128i*>(to) + v, _mm_loadu_si128(reinterpret_cast<const __m128i*>(from) + v));
  };
#if defined(__clang__)
#pragma clang loop unroll(disable)
#endif
  for (int b = 0; b < nb; ++b, out += at.block)
    for (int t = 0; t < NT; ++t) {
      const uint8_t* row = buf + size_t(i + t) * stride;
      const uint8_t* c = row + size_t(k) * 2;  // corr [k/32][4] int32, then d [nb], s [nb], bsums [k/16]
      const uint8_t* d = c + size_t(k / 32) * 16;
      // the values of block b: int16 at the row's start, or int8 at q8_at
      const uint8_t* q = q8 ? row + q8_at + size_t(blk) * b : row + size_t(2) * blk * b;
      for (int j = 0; j < blk / 32; ++j) {
        uint8_t* to = out + at.q * (NT * j + t);
        const uint8_t* from = q + at.q * j;
        if (!f.undiff) {
          copy16(to, from, at.q / 16);
          continue;
        }
        for (int v = 0; v < at.q / 16; v += 2) {  // per 16 elements [e][o − 256·e] → [e][o]
          const __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i*>(from) + v);
          const __m128i od = _mm_loadu_si128(reinterpret_cast<const __m128i*>(from) + v + 1);
          _mm_storeu_si128(reinterpret_cast<__m128i*>(to) + v, e);
          _mm_storeu_si128(reinterpret_cast<__m128i*>(to) + v + 1, _mm_add_epi16(od, _mm_slli_epi16(e, 8)));
        }
      }
      if (sb) copy16(out + at.bsums + 32 * t, d + size_t(nb) * 8 + 32 * size_t(b), 2);
      else if (corr) copy16(out + at.corr + 16 * t, c + 16 * size_t(b), 1);
      if (sb) {
        std::memcpy(out + at.d + 4 * t, d + 4 * size_t(b), 4);
      } else {  // 4 copies (quant_simd.h TileAt)
        float dx;
        std::memcpy(&dx, d + 4 * size_t(b), 4);
        _mm_storeu_ps(reinterpret_cast<float*>(out + at.d + 16 * t), _mm_set1_ps(dx));
      }
    }
}

// The driver. All n rows of x are quantized once into scratch (or were, by quantize_rows: then
// `prequantized` holds them), then W is walked by walk_rows per row of x. Prefill: blocks of W rows
// small enough to stay in L2 (256 KiB) while every row of x passes over them.
bool matmul_q_simd(DType t, const float* x, const uint8_t* prequantized, const uint8_t* w, const float* bias, float* y,
                   int n, int k, int m) {
  const Dots dots = dots_of(t, k);
  if (!dots.ok()) return false;
  const int nb = dots.nb;
  const size_t stride16 = act_stride(k, nb);
  auto* buf = const_cast<uint8_t*>(prequantized);
  if (!buf) {
    buf = static_cast<uint8_t*>(scratch::get(scratch::kActivations, size_t(n) * stride16));
    if (!buf) return false;
    quantize_rows_simd(t, x, n, k, nb, buf);
  }
  auto row_of = [&](int i) { return act_row(buf + size_t(i) * stride16, k, nb); };
  const size_t row_bytes = qb::row_bytes(t, k);
  const int block = n == 1 ? m : std::max(2, int((256 << 10) / row_bytes));
  // Prefill: tiles of one W row × kTileTokens rows of x (each block of W decoded once per tile); the
  // tokens left over (n % kTileTokens) go through the pairs of rows. Both give the same bits.
  const TileFormat format = tile_format(t);
  const qsimd::TileDot tile = n == 1 ? nullptr : format.sb ? qsimd::tile_dot_superblock(t) : qsimd::tile_dot_32(t);
  const int tiled = tile ? n / qsimd::kTileTokens * qsimd::kTileTokens : 0;
  const size_t tile_bytes = size_t(nb) * size_t(format.parts().block);
  uint8_t* packed = nullptr;
  if (tiled) {
    packed = static_cast<uint8_t*>(scratch::get(scratch::kPackedX, size_t(tiled / qsimd::kTileTokens) * tile_bytes));
    if (!packed) return false;
    for (int i = 0; i < tiled; i += qsimd::kTileTokens)
      pack_tile(format, buf, stride16, i, k, nb, packed + size_t(i / qsimd::kTileTokens) * tile_bytes);
  }
  for (int j0 = 0; j0 < m; j0 += block) {
    const int rows = std::min(block, m - j0);
    const uint8_t* wb = w + size_t(j0) * row_bytes;
    for (int i = 0; i < tiled; i += qsimd::kTileTokens) {
      const uint8_t* xp = packed + size_t(i / qsimd::kTileTokens) * tile_bytes;
      float* yi = y + size_t(i) * m + j0;
      for (int j = 0; j < rows; ++j) tile(wb + size_t(j) * row_bytes, xp, nb, yi + j, size_t(m));
    }
    for (int i = tiled; i < n; ++i) walk_rows(dots, wb, row_bytes, row_of(i), rows, y + size_t(i) * m + j0);
    if (bias)
      for (int i = 0; i < n; ++i)
        for (int j = 0; j < rows; ++j) y[size_t(i) * m + j0 + j] += bias[j0 + j];
  }
  return true;
}

}  // namespace
#endif  // ATTNLENS_QUANT_SIMD

namespace {

// Any block type, scalar (quant_scalar.h's arithmetic on int8 activations in scratch memory): the
// path of builds without SSE4.1/SIMD128.
[[maybe_unused]] bool matmul_q_scalar(DType t, const float* x, const uint8_t* w, const float* bias, float* y, int n,
                                      int k, int m) {
  const qs::Act act = qs::act_of(t);
  const int nb = k / qs::act_block(act);
  // q [k] int8, then d [nb], s [nb] floats, bsums [k/16] int16 (offsets kept 4-byte aligned).
  const size_t qbytes = (size_t(k) + 3) / 4 * 4;
  auto* buf = static_cast<uint8_t*>(scratch::get(scratch::kActivations, qbytes + size_t(nb) * 8 + size_t(k / 16) * 2));
  if (!buf) return false;
  auto* q = reinterpret_cast<int8_t*>(buf);
  auto* d = reinterpret_cast<float*>(buf + qbytes);
  float* s = d + nb;
  auto* bsums = reinterpret_cast<int16_t*>(s + nb);
  const size_t row_bytes = qb::row_bytes(t, k);
  for (int i = 0; i < n; ++i) {
    const float* xi = x + size_t(i) * k;
    if (act == qs::Act::Q8_K) qs::quantize_q8_K(xi, k, q, d, bsums);
    else qs::quantize_q8_0(xi, k, q, d, act == qs::Act::Q8_1 ? s : nullptr);
    const qs::ActRow a{q, d, s, bsums};
    for (int j = 0; j < m; ++j)
      y[size_t(i) * m + j] = float(qs::dot_row(t, w + row_bytes * size_t(j), a, k)) + (bias ? bias[j] : 0.f);
  }
  return true;
}

}  // namespace

void matmul_q(DType t, const float* x, const uint8_t* w, const float* bias, float* y, int n, int k, int m) noexcept {
#if ATTNLENS_QUANT_SIMD
  if (matmul_q_simd(t, x, nullptr, w, bias, y, n, k, m)) return;
#else
  if (matmul_q_scalar(t, x, w, bias, y, n, k, m)) return;
#endif
  ref::matmul_q(t, x, w, bias, y, n, k, m);
}

size_t quantized_rows_bytes(DType t, int n, int k) noexcept {
#if ATTNLENS_QUANT_SIMD
  const Dots dots = dots_of(t, k);
  if (dtype_is_block(t) && dots.ok()) return size_t(n) * act_stride(k, dots.nb);
#endif
  (void)t, (void)n, (void)k;
  return 0;
}

void quantize_rows(DType t, const float* x, int n, int k, void* buf) noexcept {
#if ATTNLENS_QUANT_SIMD
  if (quantized_rows_bytes(t, n, k)) quantize_rows_simd(t, x, n, k, dots_of(t, k).nb, static_cast<uint8_t*>(buf));
#endif
  (void)t, (void)x, (void)n, (void)k, (void)buf;
}

void matmul_q_rows(DType t, const float* x, const void* xq, const uint8_t* w, const float* bias, float* y, int n, int k,
                   int m) noexcept {
#if ATTNLENS_QUANT_SIMD
  if (xq && matmul_q_simd(t, x, static_cast<const uint8_t*>(xq), w, bias, y, n, k, m)) return;
#endif
  (void)xq;
  matmul_q(t, x, w, bias, y, n, k, m);
}

void dequantize_row(DType t, const uint8_t* w, float* y, int k) noexcept { ref::dequantize_row(t, w, y, k); }

}  // namespace attnlens::kernels
