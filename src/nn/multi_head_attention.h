// Multi-head attention (Vaswani et al. 2017, "Attention Is All You Need", §3.2.2):
//
//   head_h = softmax(Q_h K_hᵀ / √d_k) V_h,   Q_h = X W_h^Q,  K_h = X W_h^K,  V_h = X W_h^V
//   MHA(X) = Concat(head_1, …, head_h) W^O
//
// The per-head projections are stored stacked, as checkpoints do: W^Q [n_heads·d_k, d_model] —
// or fused with W^K, W^V into one [(n_heads + 2·n_kv_heads)·d_k, d_model] matrix (GPT-2's c_attn,
// PyTorch's in_proj_weight). With n_kv_heads < n_heads the keys/values are shared by groups of query
// heads (grouped-query attention; multi-query when n_kv_heads = 1). Some models normalise each
// head's query and key before RoPE (Qwen3, Gemma 3: RMSNorm over head_dim, one weight shared by
// the heads).
#pragma once
#include <string>
#include <vector>

#include "nn/arena.h"
#include "nn/attention.h"
#include "nn/hooks.h"
#include "nn/kv_cache.h"
#include "nn/linear.h"
#include "nn/norm.h"
#include "nn/positions.h"

namespace attnlens::nn {

struct MultiHeadAttention {
  int d_model = 0;
  AttentionShape shape;
  Linear q, k, v;  // separate projections …
  Linear qkv;      // … or one fused projection (rows: all of Q, then K, then V)
  Linear o;        // W^O [d_model, n_heads·d_k]
  // A position bias this attention always adds to its self-attention scores (T5, MPNet: one learned
  // table shared by every layer of a stack), unless the call's options give one. Not owned.
  const PositionBias* position_bias = nullptr;
  Norm q_norm, k_norm;  // optional, per head over head_dim, before RoPE (absent: gamma null)

  int q_dim() const { return shape.n_heads * shape.head_dim; }
  int kv_dim() const { return shape.n_kv_heads * shape.head_dim; }
  bool fused() const { return !qkv.empty(); }
};

// Throws attnlens::Error unless every projection matches d_model and the shape, naming `what`.
void check_attention(const MultiHeadAttention& a, const std::string& what);
// The shape for d_model split over n_heads (d_model % n_heads must be 0, else an error).
AttentionShape split_heads(int d_model, int n_heads, int n_kv_heads);

// The tokens of one forward pass through a layer: n rows at positions pos0 … pos0+n−1. With a
// cache, their keys/values are written to it at those positions of `layer` and the queries attend
// to positions 0 … pos0+n−1 (the caller advances the cache after the last layer); without one,
// pos0 must be 0 and they attend to each other only.
struct Pass {
  int n = 0;
  int pos0 = 0;
  KVCache* cache = nullptr;
  int layer = 0;
};

// What the caller wants recorded from an attention call: null = nothing.
struct AttentionCapture {
  float* weights = nullptr;                  // [n_heads][n][keys] post-softmax (see AttentionRecorder)
  const unsigned char* head_mask = nullptr;  // heads to record (null = all)
  // Forward hooks (nn/hooks.h), if any: attention calls report the heads' outputs before W^O
  // (HeadOutputs); the layers report their sub-layer outputs and residual stream through it too.
  LayerTap tap;
};

struct SelfAttentionOptions {
  bool causal = false;
  int window = 0;                         // sliding window (causal only), 0 = none: see AttentionMask
  const Rope* rope = nullptr;             // rotate q and k by their positions
  const uint8_t* key_padding = nullptr;   // [keys]: non-zero = ignore (uncached use only)
  const float* bias = nullptr;            // additive [bias_heads][n][m]
  int bias_heads = 1;
  const PositionBias* position_bias = nullptr;
  // Without a cache: x holds `batch` sequences of n / batch rows each (padded to one length), and
  // each attends only within itself; key_padding then covers all n rows, and weights are laid out
  // [batch][n_heads][n / batch][n / batch].
  int batch = 1;
};

// Self-attention of x [n, d_model] (the tokens of `pass`); out [n, d_model].
void self_attention(const MultiHeadAttention& a, const float* x, const Pass& pass, const SelfAttentionOptions& opt,
                    const AttentionCapture& capture, float* out, Arena& arena);

// An encoder output projected to keys and values once, reused by every decoding step.
struct CrossMemory {
  int m = 0;             // source positions
  std::vector<float> k;  // [m, kv_dim]
  std::vector<float> v;  // [m, kv_dim]
};
void project_memory(const MultiHeadAttention& a, const float* memory, int m, CrossMemory& out);

struct CrossAttentionOptions {
  const uint8_t* memory_padding = nullptr;  // [m]: non-zero = padding
};

// Cross-attention: queries from x [n, d_model], keys/values from the memory; out [n, d_model];
// capture.weights: [n_heads][n][m].
void cross_attention(const MultiHeadAttention& a, const float* x, int n, const CrossMemory& memory,
                     const CrossAttentionOptions& opt, const AttentionCapture& capture, float* out, Arena& arena);

}  // namespace attnlens::nn
