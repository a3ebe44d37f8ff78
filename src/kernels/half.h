// Private to src/kernels: f16 and bf16 → f32 conversion, four lanes at a time (SSE4.1 natively,
// SIMD128 through emscripten's SSE headers in wasm), for the f16/bf16 weight kernels.
//
// f16: a half h placed in the top 16 bits of a 32-bit lane and shifted right arithmetically by 3
// leaves the sign in bit 31, three copies of it in bits 30..28, the 5-bit exponent in 27..23 and the
// mantissa in 22..13 — an f32 with the half's exponent field taken as an f32 exponent. Clearing the
// copies and multiplying by 2^112 (= 2^(127 − 15)) rebiases it: exact for every normal and
// subnormal half (a subnormal half becomes an f32 subnormal, which the multiply scales exactly).
// Infinities and NaNs would become large finite numbers: the loader rejects non-finite weights.
// bf16: the top half of an f32, so the top 16 bits of a lane are the whole conversion.
#pragma once
#include <cstdint>
#include <cstring>

#include "core/tensor.h"

#if defined(__SSE4_1__)
#include <smmintrin.h>
#define ATTNLENS_HALF_SSE 1
#endif

namespace attnlens::kernels::half {

#if ATTNLENS_HALF_SSE
// Lanes 0..3 (lo) or 4..7 (hi) of eight halves in h, as f32.
inline __m128 f16_lo(__m128i h) {
  const __m128i t = _mm_srai_epi32(_mm_unpacklo_epi16(_mm_setzero_si128(), h), 3);
  return _mm_mul_ps(_mm_castsi128_ps(_mm_and_si128(t, _mm_set1_epi32(int32_t(0x8FFFE000u)))), _mm_set1_ps(0x1p112f));
}
inline __m128 f16_hi(__m128i h) {
  const __m128i t = _mm_srai_epi32(_mm_unpackhi_epi16(_mm_setzero_si128(), h), 3);
  return _mm_mul_ps(_mm_castsi128_ps(_mm_and_si128(t, _mm_set1_epi32(int32_t(0x8FFFE000u)))), _mm_set1_ps(0x1p112f));
}
inline __m128 bf16_lo(__m128i h) { return _mm_castsi128_ps(_mm_unpacklo_epi16(_mm_setzero_si128(), h)); }
inline __m128 bf16_hi(__m128i h) { return _mm_castsi128_ps(_mm_unpackhi_epi16(_mm_setzero_si128(), h)); }

template <bool F16>
inline void widen8(const uint8_t* p, __m128* lo, __m128* hi) {
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  *lo = F16 ? f16_lo(h) : bf16_lo(h);
  *hi = F16 ? f16_hi(h) : bf16_hi(h);
}
#endif

// n halves at p (any alignment) → dst[n] f32.
inline void widen_row(DType t, const uint8_t* p, float* dst, int n) {
  int i = 0;
#if ATTNLENS_HALF_SSE
  for (; i + 8 <= n; i += 8) {
    __m128 lo, hi;
    if (t == DType::F16) widen8<true>(p + 2 * i, &lo, &hi);
    else widen8<false>(p + 2 * i, &lo, &hi);
    _mm_storeu_ps(dst + i, lo);
    _mm_storeu_ps(dst + i + 4, hi);
  }
#endif
  for (; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, p + 2 * i, 2);
    dst[i] = t == DType::F16 ? f16_to_f32(h) : bf16_to_f32(h);
  }
}

}  // namespace attnlens::kernels::half
