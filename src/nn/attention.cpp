#include "nn/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/error.h"
#include "core/parallel.h"
#include "kernels/kernels.h"
#include "nn/linear.h"

namespace attnlens::nn {

namespace {

// The keys query i may see: [first, end).
struct KeyRange {
  int first, end;
};

KeyRange visible_keys(const AttentionMask& mask, int i, int m) {
  if (!mask.causal) return {0, m};
  const int pos = mask.q_pos0 + i;  // the query's own position
  const int end = pos + 1 < m ? pos + 1 : m;
  const int first = mask.window > 0 && pos - mask.window + 1 > 0 ? pos - mask.window + 1 : 0;
  return {first, end};
}

// One row of scores: query `query` of head `head`, over the keys it may see.
struct Row {
  int head, query;
  KeyRange keys;
};

// Adds the biases and masks of `mask` to the row's scores p[keys.first .. keys.end) (p points at key 0
// of an [n][m] row); returns false if every key is masked.
bool add_masks(const AttentionMask& mask, const Row& row, int n, int m, float* p) {
  const KeyRange r = row.keys;
  if (mask.bias) {
    const float* b = mask.bias + (size_t(mask.bias_heads == 1 ? 0 : row.head) * n + row.query) * m;
    kernels::add(p + r.first, b + r.first, r.end - r.first);
  }
  if (mask.position_bias) mask.position_bias->add(row.head, mask.q_pos0 + row.query, p, r.end);  // r.first == 0
  if (!mask.key_padding) return r.end > r.first;
  bool any = false;
  const float neg_inf = -std::numeric_limits<float>::infinity();
  for (int j = r.first; j < r.end; ++j) {
    if (mask.key_padding && mask.key_padding[j]) p[j] = neg_inf;
    else any = true;
  }
  return any;
}

void zero(float* p, int from, int to) {
  for (int j = from; j < to; ++j) p[j] = 0.f;
}

}  // namespace

float AttentionShape::score_scale() const { return scale != 0.f ? scale : 1.0f / std::sqrt(float(head_dim)); }

void scaled_dot_product_attention(const AttentionInput& in, const AttentionShape& shape, const AttentionMask& mask,
                                  const AttentionOutput& out) {
  const int n = in.n, m = in.m;
  AL_CHECK(shape.n_heads > 0 && shape.n_kv_heads > 0 && shape.head_dim > 0, "attention: bad shape (heads ",
           shape.n_heads, ", kv heads ", shape.n_kv_heads, ", head dim ", shape.head_dim, ")");
  AL_CHECK(shape.n_heads % shape.n_kv_heads == 0, "attention: ", shape.n_heads,
           " query heads are not a multiple of ", shape.n_kv_heads, " key/value heads");
  AL_CHECK(n >= 0 && m >= 0, "attention: negative sizes n=", n, " m=", m);
  AL_CHECK(!mask.causal || mask.q_pos0 + n <= m, "attention: causal queries at positions ", mask.q_pos0, "..",
           mask.q_pos0 + n - 1, " need ", mask.q_pos0 + n, " keys, got ", m);
  AL_CHECK(mask.bias_heads == 1 || mask.bias_heads == shape.n_heads, "attention: bias has ", mask.bias_heads,
           " heads, expected 1 or ", shape.n_heads);
  AL_CHECK(mask.window >= 0 && (mask.window == 0 || mask.causal), "attention: a sliding window (", mask.window,
           ") needs a causal mask");
  AL_CHECK(mask.window == 0 || !mask.position_bias, "attention: a sliding window with a position bias is not supported");
  AL_CHECK(shape.scale >= 0.f && std::isfinite(shape.scale) && shape.softcap >= 0.f && std::isfinite(shape.softcap),
           "attention: bad score scale ", shape.scale, " or soft-cap ", shape.softcap);
  const int hd = shape.head_dim;
  const int group = shape.n_heads / shape.n_kv_heads;
  const size_t head_stride = in.kv_head_stride ? in.kv_head_stride : size_t(hd);
  const float scale = shape.score_scale();

  // Work split over threads (core/parallel.h): a task is one head's block of up to kQueryBlock
  // queries, fixed by the shape alone, so every row is computed the same way whatever the threads.
  // Rows that are not recorded are scored in a per-thread scratch row.
  constexpr int kQueryBlock = 16;
  const int blocks = (n + kQueryBlock - 1) / kQueryBlock;
  const size_t row = size_t(m) + 1;
  // per call (one row per thread slot), not a per-thread high-water buffer kept after the model is gone
  std::vector<float> scratch(out.weights && !out.head_mask ? 0 : row * size_t(parallel::slots()));
  float* rows = scratch.data();

  parallel::for_each_slot(shape.n_heads * blocks, [&](int task, int slot) noexcept {
    const int h = task / blocks, i0 = (task % blocks) * kQueryBlock, i1 = std::min(n, i0 + kQueryBlock);
    const int g = h / group;
    const bool record = out.weights && (!out.head_mask || out.head_mask[h]);
    for (int i = i0; i < i1; ++i) {
      const KeyRange r = visible_keys(mask, i, m);
      const int count = r.end - r.first;
      // Score straight into the caller's weights row when recording: no extra copy.
      float* p = record ? out.weights + (size_t(h) * n + i) * m : rows + row * size_t(slot);
      float* o = out.out + size_t(i) * out.out_stride + h * hd;
      const float* qi = in.q + size_t(i) * in.q_stride + h * hd;
      // key (value) r.first of kv head g
      const size_t first = size_t(r.first) * in.kv_stride + g * head_stride;
      const size_t first_scale = g * in.scale_head_stride + size_t(r.first);
      if (in.k8)
        kernels::attention_scores_q8(qi, {in.k8 + first, in.kd + first_scale, in.scale_stride}, hd, count, scale, p + r.first);
      else
        kernels::attention_scores(qi, in.k + first, size_t(in.kv_stride), hd, count, scale, p + r.first);
      if (shape.softcap > 0.f) kernels::softcap(p + r.first, count, shape.softcap);
      const bool any = add_masks(mask, Row{h, i, r}, n, m, p);
      if (record) {  // exact zeros at every key the query cannot see
        zero(p, 0, r.first);
        zero(p, r.end, m);
      }
      if (!any) {  // every key masked: no attention at all
        zero(p, r.first, r.end);
        for (int d = 0; d < hd; ++d) o[d] = 0.f;
        continue;
      }
      kernels::softmax(p + r.first, count);
      if (in.v8)
        kernels::attention_values_q8(p + r.first, {in.v8 + first, in.vd + first_scale, in.scale_stride}, hd, count, o);
      else
        kernels::attention_values(p + r.first, in.v + first, size_t(in.kv_stride), hd, count, o);
    }
  });
}

void attention(const AttentionInput& in, const AttentionMask& mask, float* out, float* weights) {
  const int d = in.q_stride;
  AL_CHECK(d > 0 && in.kv_stride == d, "attention: single-head rows need q_stride == kv_stride > 0 (got ", in.q_stride,
           ", ", in.kv_stride, ")");
  check_finite(in.q, size_t(in.n) * d, "attention queries");
  check_finite(in.k, size_t(in.m) * d, "attention keys");
  check_finite(in.v, size_t(in.m) * d, "attention values");
  scaled_dot_product_attention(in, AttentionShape{1, 1, d}, mask, {out, d, weights, nullptr});
}

}  // namespace attnlens::nn
