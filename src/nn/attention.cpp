#include "nn/attention.h"

#include <cmath>
#include <limits>
#include <vector>

#include <xsimd/xsimd.hpp>

#include "core/error.h"
#include "kernels/kernels.h"
#include "nn/linear.h"

namespace attnlens::nn {

namespace {

// Keys query i may see: [0, visible) before padding; causal masks cut at its position.
int visible_keys(const AttentionMask& mask, int i, int m) {
  if (!mask.causal) return m;
  const int last = mask.q_pos0 + i;  // the query's own position
  return last + 1 < m ? last + 1 : m;
}

using Vec = xsimd::batch<float>;  // 4 floats in wasm (SIMD128), 8/16 natively
constexpr int W = int(Vec::size);

// scores[j] = q·k_j · scale for j < count, keys strided by `stride`. W keys at a time, one
// accumulator per key (W independent chains), reduced together by one transpose-add (haddp): the
// short head_dim dots of attention would otherwise each pay a horizontal sum and a call.
void score_keys(const float* q, const float* k, size_t stride, int hd, int count, float scale, float* scores) {
  int j = 0;
  if (hd % W == 0) {
    const Vec vs(scale);
    for (; j + W <= count; j += W) {
      const float* kj = k + size_t(j) * stride;
      Vec acc[W];
      for (int r = 0; r < W; ++r) acc[r] = Vec(0.f);
      for (int d = 0; d < hd; d += W) {
        const Vec qv = Vec::load_unaligned(q + d);
        for (int r = 0; r < W; ++r) acc[r] += qv * Vec::load_unaligned(kj + size_t(r) * stride + d);
      }
      (xsimd::haddp(acc) * vs).store_unaligned(scores + j);
    }
  }
  for (; j < count; ++j) scores[j] = kernels::dot(q, k + size_t(j) * stride, hd) * scale;
}

// o[d0 .. d0 + NV·W) = Σ_j p[j] · v_j[d0 ..], NV vectors of accumulators kept in registers over all keys.
template <int NV>
void weigh_values_block(const float* p, const float* v, size_t stride, int count, int d0, float* o) {
  Vec acc[NV];
  for (int c = 0; c < NV; ++c) acc[c] = Vec(0.f);
  for (int j = 0; j < count; ++j) {
    if (p[j] == 0.f) continue;  // masked keys: their values are never read (as kernels::axpy was skipped)
    const Vec pj(p[j]);
    const float* vj = v + size_t(j) * stride + d0;
    for (int c = 0; c < NV; ++c) acc[c] += pj * Vec::load_unaligned(vj + c * W);
  }
  for (int c = 0; c < NV; ++c) acc[c].store_unaligned(o + d0 + c * W);
}

// o[0..hd) = Σ_j p[j] · v_j for j < count: the weighted sum of the values.
void weigh_values(const float* p, const float* v, size_t stride, int hd, int count, float* o) {
  int d = 0;
  for (; d + 4 * W <= hd; d += 4 * W) weigh_values_block<4>(p, v, stride, count, d, o);
  switch ((hd - d) / W) {
    case 3: weigh_values_block<3>(p, v, stride, count, d, o); d += 3 * W; break;
    case 2: weigh_values_block<2>(p, v, stride, count, d, o); d += 2 * W; break;
    case 1: weigh_values_block<1>(p, v, stride, count, d, o); d += W; break;
    default: break;
  }
  for (; d < hd; ++d) {
    float s = 0.f;
    for (int j = 0; j < count; ++j)
      if (p[j] != 0.f) s += p[j] * v[size_t(j) * stride + d];
    o[d] = s;
  }
}

// scores[j] = q·k_j · scale + masks and biases, for j < visible; returns false if every key is masked.
bool score_row(const float* qh, const float* k, int kv_stride, int head_dim, int visible, float scale, int head,
               int i, int n, int m, const AttentionMask& mask, float* scores) {
  score_keys(qh, k, size_t(kv_stride), head_dim, visible, scale, scores);
  if (mask.bias) {
    const float* b = mask.bias + (size_t(mask.bias_heads == 1 ? 0 : head) * n + i) * m;
    kernels::add(scores, b, visible);
  }
  if (mask.position_bias) mask.position_bias->add(head, mask.q_pos0 + i, scores, visible);
  bool any = false;
  const float neg_inf = -std::numeric_limits<float>::infinity();
  for (int j = 0; j < visible; ++j) {
    if (mask.key_padding && mask.key_padding[j]) scores[j] = neg_inf;
    else any = true;
  }
  return any;
}

}  // namespace

float AttentionShape::score_scale() const { return scale != 0.f ? scale : 1.0f / std::sqrt(float(head_dim)); }

void scaled_dot_product_attention(const float* q, int q_stride, const float* k, const float* v, int kv_stride, int n,
                                  int m, const AttentionShape& shape, const AttentionMask& mask, float* out,
                                  int out_stride, float* weights, const unsigned char* head_mask) {
  AL_CHECK(shape.n_heads > 0 && shape.n_kv_heads > 0 && shape.head_dim > 0, "attention: bad shape (heads ",
           shape.n_heads, ", kv heads ", shape.n_kv_heads, ", head dim ", shape.head_dim, ")");
  AL_CHECK(shape.n_heads % shape.n_kv_heads == 0, "attention: ", shape.n_heads,
           " query heads are not a multiple of ", shape.n_kv_heads, " key/value heads");
  AL_CHECK(n >= 0 && m >= 0, "attention: negative sizes n=", n, " m=", m);
  AL_CHECK(!mask.causal || mask.q_pos0 + n <= m, "attention: causal queries at positions ", mask.q_pos0, "..",
           mask.q_pos0 + n - 1, " need ", mask.q_pos0 + n, " keys, got ", m);
  AL_CHECK(mask.bias_heads == 1 || mask.bias_heads == shape.n_heads, "attention: bias has ", mask.bias_heads,
           " heads, expected 1 or ", shape.n_heads);
  const int hd = shape.head_dim;
  const int group = shape.n_heads / shape.n_kv_heads;
  const float scale = shape.score_scale();

  thread_local std::vector<float> scratch;
  if (scratch.size() < size_t(m) + 1) scratch.resize(size_t(m) + 1);

  for (int h = 0; h < shape.n_heads; ++h) {
    const int g = h / group;
    const bool record = weights && (!head_mask || head_mask[h]);
    for (int i = 0; i < n; ++i) {
      const int visible = visible_keys(mask, i, m);
      // Score straight into the caller's weights row when recording: no extra copy.
      float* p = record ? weights + (size_t(h) * n + i) * m : scratch.data();
      float* o = out + size_t(i) * out_stride + h * hd;
      const bool any = score_row(q + size_t(i) * q_stride + h * hd, k + g * hd, kv_stride, hd, visible, scale, h, i,
                                 n, m, mask, p);
      if (!any) {  // every key masked: no attention at all
        for (int j = 0; j < visible; ++j) p[j] = 0.f;
        for (int d = 0; d < hd; ++d) o[d] = 0.f;
        if (record)
          for (int j = visible; j < m; ++j) p[j] = 0.f;
        continue;
      }
      kernels::softmax(p, visible);
      weigh_values(p, v + g * hd, size_t(kv_stride), hd, visible, o);
      if (record)
        for (int j = visible; j < m; ++j) p[j] = 0.f;
    }
  }
}

void attention(const float* q, const float* k, const float* v, int n, int m, int d, const AttentionMask& mask,
               float* out, float* weights) {
  check_finite(q, size_t(n) * d, "attention queries");
  check_finite(k, size_t(m) * d, "attention keys");
  check_finite(v, size_t(m) * d, "attention values");
  scaled_dot_product_attention(q, d, k, v, d, n, m, AttentionShape{1, 1, d}, mask, out, d, weights);
}

}  // namespace attnlens::nn
