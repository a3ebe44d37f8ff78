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

// The relaxed-SIMD variant of the wasm module (CMakeLists.txt, ATTNLENS_WASM_RELAXED) compiles src/kernels
// with clang 19 and -mrelaxed-simd; every other build (native, the portable wasm builds) is unchanged.
#if defined(ATTNLENS_RELAXED_SIMD) && !defined(__wasm_relaxed_simd__)
#error "ATTNLENS_RELAXED_SIMD needs a compiler with -mrelaxed-simd (clang >= 16)"
#endif

inline Vec load(const float* p) { return Vec::load_unaligned(p); }
inline void store(float* p, const Vec& v) { v.store_unaligned(p); }
inline float sum(const Vec& v) { return xsimd::hadd(v); }

// acc + a·b, the step of every f32 dot product and weighted sum (matmul, matvec, attention, dot). In
// the relaxed-SIMD variant one f32x4.relaxed_madd: fused (one rounding) where the machine has FMA,
// else a multiply then an add — so that variant's results differ from the others by float rounding
// only. Everywhere else a multiply then an add, as the portable wasm builds always computed it.
inline Vec madd(const Vec& a, const Vec& b, const Vec& acc) {
#if defined(ATTNLENS_RELAXED_SIMD)
  return Vec(static_cast<__m128>(wasm_f32x4_relaxed_madd(static_cast<v128_t>(static_cast<__m128>(a)),
                                                         static_cast<v128_t>(static_cast<__m128>(b)),
                                                         static_cast<v128_t>(static_cast<__m128>(acc)))));
#else
  return acc + a * b;
#endif
}

// Which variant this code was compiled as (kernels::simd_arch_name).
constexpr bool kRelaxed =
#if defined(ATTNLENS_RELAXED_SIMD)
    true;
#else
    false;
#endif

inline float max_lanes(const Vec& v) {
  alignas(64) float t[W];
  v.store_aligned(t);
  float m = t[0];
  for (int i = 1; i < W; ++i) m = t[i] > m ? t[i] : m;
  return m;
}

// The largest of x[0..n), n ≥ 1. With a NaN in x the result depends on where it stands (the vector max
// and the scalar `a > b ? a : b` treat it differently): callers that may see one check the result.
inline float max_of(const float* x, int n) {
  int i = 0;
  float mx = x[0];
  if (n >= W) {
    Vec m = load(x);
    for (i = W; i + W <= n; i += W) m = xsimd::max(m, load(x + i));
    mx = max_lanes(m);
  }
  for (; i < n; ++i) mx = x[i] > mx ? x[i] : mx;
  return mx;
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

// tanh and erf, lane for lane what xsimd::tanh and xsimd::erf return. xsimd computes both from an
// exponential (tanh(x) = 1 − 2 / (1 + e^{2x}) for |x| ≥ 0.625, erf(x) = 1 − e^{−x²}·erfc2(z) for
// |x| ≥ 2/3) taken by xsimd::exp, i.e. in wasm with exp's lane-by-lane int conversion (see exp above):
// GELU's and softcap's tanh and erf cost several times their arithmetic. Here xsimd's own steps and
// polynomials (xsimd::kernel::detail::tanh_kernel, erf_kernel), with the exponential above.
inline Vec tanh(const Vec& self) {
#if defined(__EMSCRIPTEN__)
  const Vec one(1.f);
  const Vec x = xsimd::abs(self);
  const auto small = x < Vec(0.625f);
  const Vec sign = xsimd::bitofsign(self);
  Vec z = one;
  if (xsimd::any(small)) {
    z = xsimd::kernel::detail::tanh_kernel<Vec>::tanh(x);
    if (xsimd::all(small)) return z ^ sign;
  }
  const Vec r = xsimd::fma(Vec(-2.f), one / (one + exp(x + x)), one);
  return xsimd::select(small, z, r) ^ sign;
#else
  return xsimd::tanh(self);
#endif
}

inline Vec erf(const Vec& self) {
#if defined(__EMSCRIPTEN__)
  using K = xsimd::kernel::detail::erf_kernel<Vec>;
  const Vec one(1.f);
  const Vec x = xsimd::abs(self);
  const auto small = x < Vec(2.f / 3.f);
  Vec r1(0.f);
  if (xsimd::any(small)) {
    r1 = self * K::erf1(x * x);
    if (xsimd::all(small)) return r1;
  }
  const Vec z = x / (one + x) - Vec(0.4f);
  Vec r2 = one - exp(-x * x) * K::erfc2(z);
  r2 = xsimd::select(self < Vec(0.f), -r2, r2);
  r1 = xsimd::select(small, r1, r2);
  return xsimd::select(xsimd::isinf(self), xsimd::sign(self), r1);
#else
  return xsimd::erf(self);
#endif
}

}  // namespace attnlens::kernels::simd
