// Scaled dot-product attention (Vaswani et al. 2017, "Attention Is All You Need", §3.2.1):
//
//   Attention(Q, K, V) = softmax(cap(scale · Q·Kᵀ) + mask + bias) · V,   scale = 1/√d_k by default
//
// for n queries against m keys, for every head at once. Self-attention passes keys computed from
// the same sequence (m = n, or the cached prefix + n); cross-attention passes keys from another
// sequence (an encoder's output), so m ≠ n in general. Grouped-query / multi-query attention: query
// head h reads key/value head h / (n_heads / n_kv_heads). The inner loops (scores of one query,
// weighted sum of the values) are kernels::attention_scores / attention_values.
#pragma once
#include <cstddef>
#include <cstdint>

#include "nn/positions.h"

namespace attnlens::nn {

struct AttentionShape {
  int n_heads = 1;
  int n_kv_heads = 1;  // divides n_heads; == n_heads for plain multi-head attention
  int head_dim = 1;    // d_k = d_v
  // How the dot products q·k become the softmax's logits:
  float scale = 0.f;    // multiplies Q·Kᵀ: 0 means the usual 1/√d_k; T5 uses 1 (its scaling is in the weights),
                        // Gemma 2/3 1/√query_pre_attn_scalar
  float softcap = 0.f;  // > 0: s ← softcap·tanh(s/softcap), before masks and biases (Gemma 2)
  float score_scale() const;
};

struct AttentionMask {
  // Causal (decoder) mask: query i, at position q_pos0 + i, sees keys j ≤ q_pos0 + i only; the
  // others get −∞ before the softmax, hence weight exactly 0.
  bool causal = false;
  int q_pos0 = 0;  // position of query 0 among the keys (the cached prefix length)
  // Sliding window (causal only): > 0 means the query at position p also loses the keys
  // j ≤ p − window, i.e. it sees the `window` positions p − window + 1 … p (Mistral, Gemma 2/3's local
  // layers). Their weights are exactly 0, like the causal ones.
  int window = 0;
  // Key padding mask: key_padding[j] != 0 means key j is padding and is ignored by every query.
  const uint8_t* key_padding = nullptr;
  // Arbitrary additive bias on the scaled scores: [bias_heads][n][m], bias_heads 1 (broadcast to
  // every head) or n_heads; null for none.
  const float* bias = nullptr;
  int bias_heads = 1;
  // Position-dependent bias (ALiBi, T5 relative buckets), computed per row; null for none.
  // Not combined with a sliding window.
  const PositionBias* position_bias = nullptr;
};

// The operands: q [n][q_stride], head h at q + h·head_dim; k, v: key j of kv head g at
// k + g·kv_head_stride + j·kv_stride. kv_head_stride 0 means head_dim: rows [m][kv_stride] holding
// every head side by side; the KV cache passes its per-head layout instead ([kv head][pos][head_dim],
// kv_stride = head_dim), whose rows of one head are contiguous (nn/kv_cache.h).
struct AttentionInput {
  const float* q = nullptr;
  int q_stride = 0;
  const float* k = nullptr;
  const float* v = nullptr;
  int kv_stride = 0;
  int n = 0;  // queries
  int m = 0;  // keys
  size_t kv_head_stride = 0;
  // A q8_0 KV cache (nn/kv_cache.h) instead of k and v: key j of kv head g is the int8 row
  // k8 + g·kv_head_stride + j·kv_stride (kv_stride = head_dim), the f16 scale of its block b is
  // kd[g·scale_head_stride + b·scale_stride + j]; the same for the values (v8, vd).
  const int8_t* k8 = nullptr;
  const uint16_t* kd = nullptr;
  const int8_t* v8 = nullptr;
  const uint16_t* vd = nullptr;
  size_t scale_head_stride = 0, scale_stride = 0;
};

// Where the results go: out [n][out_stride], head h written at out + h·head_dim (the "concat" of
// the heads); weights null, or [n_heads][n][m] receiving the post-softmax weights of the heads whose
// head_mask entry is non-zero (all heads if head_mask is null), zeros at every masked key.
struct AttentionOutput {
  float* out = nullptr;
  int out_stride = 0;
  float* weights = nullptr;
  const unsigned char* head_mask = nullptr;
};

// A query whose keys are all masked gets zero weights and a zero output (PyTorch would give NaN).
void scaled_dot_product_attention(const AttentionInput& in, const AttentionShape& shape, const AttentionMask& mask,
                                  const AttentionOutput& out);

// The same for the common single-head contiguous case: Q [n, d], K [m, d], V [m, d] → out [n, d],
// d = in.q_stride = in.kv_stride; checks every input is finite.
void attention(const AttentionInput& in, const AttentionMask& mask, float* out, float* weights = nullptr);

}  // namespace attnlens::nn
