// Private to src/kernels: the vector type every kernel uses and small helpers around it.
#pragma once
#include <xsimd/xsimd.hpp>

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

}  // namespace attnlens::kernels::simd
