#include "nn/attention.h"

#include <cmath>
#include <limits>
#include <vector>

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

// scores[j] = q·k_j · scale + masks and biases, for j < visible; returns false if every key is masked.
bool score_row(const float* qh, const float* k, int kv_stride, int head_dim, int visible, float scale, int head,
               int i, int n, int m, const AttentionMask& mask, float* scores) {
  for (int j = 0; j < visible; ++j) scores[j] = kernels::dot(qh, k + size_t(j) * kv_stride, head_dim) * scale;
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
  const float scale = 1.0f / std::sqrt(float(hd));

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
      for (int d = 0; d < hd; ++d) o[d] = 0.f;
      const bool any = score_row(q + size_t(i) * q_stride + h * hd, k + g * hd, kv_stride, hd, visible, scale, h, i,
                                 n, m, mask, p);
      if (!any) {  // every key masked: no attention at all
        for (int j = 0; j < visible; ++j) p[j] = 0.f;
        continue;
      }
      kernels::softmax(p, visible);
      for (int j = 0; j < visible; ++j)
        if (p[j] != 0.f) kernels::axpy(p[j], v + size_t(j) * kv_stride + g * hd, o, hd);
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
