// Private to src/kernels: the vector type every kernel uses and small helpers around it.
#pragma once
#include <limits>

#include <xsimd/xsimd.hpp>
#if defined(__EMSCRIPTEN__)
#include <wasm_simd128.h>
#endif

namespace attnlens::kernels::simd {

using Vec = xsimd::batch<float>;  // 4 floats in wasm (SIMD128 via the SSE4.1 mapping), 8/16 natively
constexpr int W = static_cast<int>(Vec::size);

inline Vec load(const float* p) { return Vec::load_unaligned(p); }
inline void store(float* p, const Vec& v) { v.store_unaligned(p); }
inline float sum(const Vec& v) { return xsimd::hadd(v); }

inline float max_lanes(const Vec& v) {
  alignas(64) float t[W];
  v.store_aligned(t);
  float m = t[0];
  for (int i = 1; i < W; ++i) m = t[i] > m ? t[i] : m;
  return m;
}

// e^x, lane for lane what xsimd::exp returns. In wasm xsimd (through the SSE4.1 mapping) turns the
// reduction's k = round(x / ln 2) into ints with _mm_cvttps_epi32, which Emscripten 3.1.6's
// emmintrin.h emulates lane by lane with lrint calls and branches ("TODO: optimize") — that made
// every exponential of softmax, SiLU and log-sum-exp several times slower than the rest of its
// loop. Here the same reduction and polynomial (xsimd's own), and k converted by wasm's
// i32x4.trunc_sat: the same ints wherever the result is used (|k| ≤ 128; outside the range both
// are replaced by 0 or +∞ as in xsimd::exp).
inline Vec exp(const Vec& x) {
#if defined(__EMSCRIPTEN__)
  namespace d = xsimd::kernel::detail;
  using R = d::exp_reduction<float, Vec::arch_type, d::exp_tag>;
  Vec r;
  const Vec k = R::reduce(x, r);
  r = R::approx(r);
  const xsimd::batch<int32_t> ik(static_cast<__m128i>(wasm_i32x4_trunc_sat_f32x4(static_cast<v128_t>(static_cast<__m128>(k)))));
  r = xsimd::select(x <= R::minlog(), Vec(0.f), xsimd::ldexp(r, ik));
  return xsimd::select(x >= R::maxlog(), Vec(std::numeric_limits<float>::infinity()), r);
#else
  return xsimd::exp(x);
#endif
}

}  // namespace attnlens::kernels::simd
