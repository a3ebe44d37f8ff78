// The two inner loops of scaled dot-product attention, per head and query row (nn/attention.cpp
// drives them): the scores of one query against a run of keys, and the weighted sum of the values.
// Also the score transform some models add (soft-capping).
#include <cmath>

#include "kernels/kernels.h"
#include "kernels/simd.h"

namespace attnlens::kernels {

using simd::load;
using simd::store;
using simd::Vec;
using simd::W;

// The W sums of acc[0..W) (one per lane of the result): one transpose-add where xsimd's haddp is
// right. Its AVX-512 version (xsimd 8.1, Debian's libxsimd-dev) permutes lanes 2–5 and 10–13, so with
// 16-wide vectors each sum is reduced on its own (tests/cpp/test_kernels.cpp "attention row kernels").
static Vec reduce_lanes(const Vec (&acc)[W]) {
  if constexpr (W <= 8) {
    return xsimd::haddp(acc);
  } else {
    alignas(64) float t[W];
    for (int r = 0; r < W; ++r) t[r] = simd::sum(acc[r]);
    return Vec::load_aligned(t);
  }
}

// W keys at a time, one accumulator per key (W independent chains), reduced together by one
// transpose-add: the short head_dim dots of attention would otherwise each pay a horizontal sum and
// a call.
void attention_scores(const float* q, const float* k, size_t stride, int head_dim, int count, float scale,
                      float* scores) noexcept {
  int j = 0;
  if (head_dim % W == 0) {
    const Vec vs(scale);
    for (; j + W <= count; j += W) {
      const float* kj = k + size_t(j) * stride;
      Vec acc[W];
      for (int r = 0; r < W; ++r) acc[r] = Vec(0.f);
      for (int d = 0; d < head_dim; d += W) {
        const Vec qv = load(q + d);
        for (int r = 0; r < W; ++r) acc[r] = simd::madd(qv, load(kj + size_t(r) * stride + d), acc[r]);
      }
      store(scores + j, reduce_lanes(acc) * vs);
    }
  }
  for (; j < count; ++j) scores[j] = dot(q, k + size_t(j) * stride, head_dim) * scale;
}

namespace {

// o[d0 .. d0 + NV·W) = Σ_j p[j] · v_j[d0 ..], NV vectors of accumulators kept in registers over all keys.
template <int NV>
void weigh_block(const float* p, const float* v, size_t stride, int count, int d0, float* o) {
  Vec acc[NV];
  for (int c = 0; c < NV; ++c) acc[c] = Vec(0.f);
  for (int j = 0; j < count; ++j) {
    if (p[j] == 0.f) continue;  // masked keys: their values are never read
    const Vec pj(p[j]);
    const float* vj = v + size_t(j) * stride + d0;
    for (int c = 0; c < NV; ++c) acc[c] = simd::madd(pj, load(vj + c * W), acc[c]);
  }
  for (int c = 0; c < NV; ++c) store(o + d0 + c * W, acc[c]);
}

}  // namespace

void attention_values(const float* p, const float* v, size_t stride, int head_dim, int count, float* out) noexcept {
  int d = 0;
  for (; d + 4 * W <= head_dim; d += 4 * W) weigh_block<4>(p, v, stride, count, d, out);
  switch ((head_dim - d) / W) {
    case 3: weigh_block<3>(p, v, stride, count, d, out); d += 3 * W; break;
    case 2: weigh_block<2>(p, v, stride, count, d, out); d += 2 * W; break;
    case 1: weigh_block<1>(p, v, stride, count, d, out); d += W; break;
    default: break;
  }
  for (; d < head_dim; ++d) {
    float s = 0.f;
    for (int j = 0; j < count; ++j)
      if (p[j] != 0.f) s += p[j] * v[size_t(j) * stride + d];
    out[d] = s;
  }
}

void softcap(float* x, int n, float cap) noexcept {
  const Vec vc(cap), inv(1.f / cap);
  int i = 0;
  for (; i + W <= n; i += W) store(x + i, vc * simd::tanh(load(x + i) * inv));
  for (; i < n; ++i) x[i] = cap * std::tanh(x[i] * (1.f / cap));
}

namespace ref {

void attention_scores(const float* q, const float* k, size_t stride, int head_dim, int count, float scale,
                      float* scores) noexcept {
  for (int j = 0; j < count; ++j) scores[j] = dot(q, k + size_t(j) * stride, head_dim) * scale;
}

void attention_values(const float* p, const float* v, size_t stride, int head_dim, int count, float* out) noexcept {
  for (int d = 0; d < head_dim; ++d) {
    double s = 0;
    for (int j = 0; j < count; ++j)
      if (p[j] != 0.f) s += double(p[j]) * double(v[size_t(j) * stride + d]);
    out[d] = float(s);
  }
}

}  // namespace ref

}  // namespace attnlens::kernels
