#include "nn/multi_head_attention.h"

#include <cstring>

#include "core/error.h"

namespace attnlens::nn {

AttentionShape split_heads(int d_model, int n_heads, int n_kv_heads) {
  AL_CHECK(n_heads > 0, "number of heads must be positive, got ", n_heads);
  AL_CHECK(d_model > 0 && d_model % n_heads == 0, "d_model ", d_model, " is not divisible by the number of heads ",
           n_heads);
  AL_CHECK(n_kv_heads > 0 && n_heads % n_kv_heads == 0, "number of key/value heads ", n_kv_heads,
           " does not divide the number of heads ", n_heads);
  return AttentionShape{n_heads, n_kv_heads, d_model / n_heads};
}

void check_attention(const MultiHeadAttention& a, const std::string& what) {
  AL_CHECK(a.shape.n_heads > 0 && a.shape.n_kv_heads > 0 && a.shape.n_heads % a.shape.n_kv_heads == 0, what,
           ": ", a.shape.n_heads, " heads are not a multiple of ", a.shape.n_kv_heads, " key/value heads");
  if (a.fused()) {
    check_linear(a.qkv, a.d_model, a.q_dim() + 2 * a.kv_dim(), what + ".qkv");
  } else {
    check_linear(a.q, a.d_model, a.q_dim(), what + ".q");
    check_linear(a.k, a.d_model, a.kv_dim(), what + ".k");
    check_linear(a.v, a.d_model, a.kv_dim(), what + ".v");
  }
  check_linear(a.o, a.q_dim(), a.d_model, what + ".o");
  if (a.q_norm.gamma) check_norm(a.q_norm, a.shape.head_dim, what + ".q_norm");
  if (a.k_norm.gamma) check_norm(a.k_norm, a.shape.head_dim, what + ".k_norm");
}

namespace {

// Q, K, V rows of x: q [n, q_dim], k/v [n, kv_dim] (rows strided by their own widths).
void project_qkv(const MultiHeadAttention& a, const float* x, int n, float* q, float* k, float* v, Arena& arena) {
  if (!a.fused()) {
    linears({{&a.q, q}, {&a.k, k}, {&a.v, v}}, x, n);
    return;
  }
  ArenaScope scope(arena);
  const int qd = a.q_dim(), kd = a.kv_dim(), all = qd + 2 * kd;
  float* t = arena.alloc(size_t(n) * all);
  linear(a.qkv, x, n, t);
  for (int i = 0; i < n; ++i) {
    const float* row = t + size_t(i) * all;
    std::memcpy(q + size_t(i) * qd, row, sizeof(float) * qd);
    std::memcpy(k + size_t(i) * kd, row + qd, sizeof(float) * kd);
    std::memcpy(v + size_t(i) * kd, row + qd + kd, sizeof(float) * kd);
  }
}

// Normalises each head_dim slice of rows [n][heads·head_dim] in place.
void norm_heads(const Norm& nrm, float* x, int n, int heads, Arena& arena) {
  ArenaScope scope(arena);
  const size_t size = size_t(n) * heads * nrm.dim;
  float* t = arena.alloc(size);
  norm(nrm, x, n * heads, t);
  std::memcpy(x, t, size * sizeof(float));
}

}  // namespace

void self_attention(const MultiHeadAttention& a, const float* x, const Pass& pass, const SelfAttentionOptions& opt,
                    const AttentionCapture& capture, float* out, Arena& arena) {
  const int n = pass.n, pos0 = pass.pos0;
  KVCache* cache = pass.cache;
  check_finite(x, size_t(n) * a.d_model, "self-attention input");
  ArenaScope scope(arena);
  const int qd = a.q_dim(), kd = a.kv_dim();
  float* q = arena.alloc(size_t(n) * qd);
  float* k = arena.alloc(size_t(n) * kd);
  float* v = arena.alloc(size_t(n) * kd);
  if (cache) {
    AL_CHECK(cache->kv_dim() == kd && cache->head_dim() == a.shape.head_dim, "self-attention: KV cache rows have ",
             cache->kv_dim(), " values, expected ", kd, " (heads of ", a.shape.head_dim, ")");
    AL_CHECK(pos0 == cache->length(), "self-attention: tokens start at position ", pos0, " but the cache holds ",
             cache->length());
    cache->reserve(n);  // grows the cache if the model did not reserve these positions already
  } else {
    AL_CHECK(pos0 == 0, "self-attention without a cache must start at position 0, got ", pos0);
  }
  project_qkv(a, x, n, q, k, v, arena);
  if (a.q_norm.gamma) norm_heads(a.q_norm, q, n, a.shape.n_heads, arena);
  if (a.k_norm.gamma) norm_heads(a.k_norm, k, n, a.shape.n_kv_heads, arena);
  if (opt.rope) {
    for (int i = 0; i < n; ++i) {
      opt.rope->apply(q + size_t(i) * qd, a.shape.n_heads, pos0 + i);
      opt.rope->apply(k + size_t(i) * kd, a.shape.n_kv_heads, pos0 + i);
    }
  }
  const int m = pos0 + n;  // keys: the cached prefix and the new tokens
  // Without a cache the keys are k's rows [n][kd]; with one, the cache's per-head rows (nn/kv_cache.h),
  // which the new positions join.
  AttentionInput in{q, qd, k, v, kd, n, m};
  if (cache) {
    cache->store(pass.layer, pos0, n, k, v);
    in.kv_stride = a.shape.head_dim;
    in.kv_head_stride = cache->head_stride();
    if (cache->type() == KVType::Q8_0) {  // keys and values as the cache quantized them, new positions too
      in.k = in.v = nullptr;
      in.k8 = cache->key_q8(pass.layer);
      in.v8 = cache->value_q8(pass.layer);
      in.kd = cache->key_scales(pass.layer);
      in.vd = cache->value_scales(pass.layer);
      in.scale_head_stride = cache->scale_head_stride();
      in.scale_stride = size_t(cache->allocated());
    } else {
      in.k = cache->key(pass.layer, 0, 0);
      in.v = cache->value(pass.layer, 0, 0);
    }
  }

  AttentionMask mask;
  mask.causal = opt.causal;
  mask.q_pos0 = pos0;
  mask.window = opt.window;
  mask.key_padding = opt.key_padding;
  mask.bias = opt.bias;
  mask.bias_heads = opt.bias_heads;
  mask.position_bias = opt.position_bias ? opt.position_bias : a.position_bias;
  float* heads = arena.alloc(size_t(n) * qd);  // Concat(head_1 … head_h)
  if (opt.batch == 1) {
    mask.window = opt.window;
    mask.key_padding = opt.key_padding;
    scaled_dot_product_attention(in, a.shape, mask, {heads, qd, capture.weights, capture.head_mask});
  } else {  // independent sequences of len rows: one attention each, over their own rows only
    AL_CHECK(!cache && opt.batch > 0 && n % opt.batch == 0 && !opt.bias && opt.window == 0, "self-attention: a batch of ",
             opt.batch, " sequences needs n (", n, ") divisible by it, no cache, no explicit bias and no window");
    const int len = n / opt.batch;
    for (int b = 0; b < opt.batch; ++b) {
      const size_t row = size_t(b) * len;
      mask.key_padding = opt.key_padding ? opt.key_padding + row : nullptr;
      float* w = capture.weights ? capture.weights + size_t(b) * a.shape.n_heads * len * len : nullptr;
      scaled_dot_product_attention({q + row * qd, qd, k + row * kd, v + row * kd, kd, len, len}, a.shape, mask,
                                   {heads + row * qd, qd, w, capture.head_mask});
    }
  }
  capture.tap(HookPoint::HeadOutputs, heads, n, qd);
  linear(a.o, heads, n, out);
}

void project_memory(const MultiHeadAttention& a, const float* memory, int m, CrossMemory& out) {
  check_finite(memory, size_t(m) * a.d_model, "cross-attention memory (encoder output)");
  const int kd = a.kv_dim();
  out.m = m;
  out.k.assign(size_t(m) * kd, 0.f);
  out.v.assign(size_t(m) * kd, 0.f);
  if (!a.fused()) {
    linear(a.k, memory, m, out.k.data());
    linear(a.v, memory, m, out.v.data());
    return;
  }
  // Fused [Q; K; V]: use the K and V row blocks of the matrix as their own linear layers.
  const int qd = a.q_dim();
  Linear lk{row_block(a.qkv.w, qd, kd), a.qkv.b ? a.qkv.b + qd : nullptr};
  Linear lv{row_block(a.qkv.w, qd + kd, kd), a.qkv.b ? a.qkv.b + qd + kd : nullptr};
  linear(lk, memory, m, out.k.data());
  linear(lv, memory, m, out.v.data());
}

void cross_attention(const MultiHeadAttention& a, const float* x, int n, const CrossMemory& memory,
                     const CrossAttentionOptions& opt, const AttentionCapture& capture, float* out, Arena& arena) {
  check_finite(x, size_t(n) * a.d_model, "cross-attention input");
  AL_CHECK(!a.q_norm.gamma && !a.k_norm.gamma, "cross-attention with q/k norms is not supported");
  ArenaScope scope(arena);
  const int qd = a.q_dim();
  AL_CHECK(memory.k.size() == size_t(memory.m) * a.kv_dim(), "cross-attention: memory was projected for another shape");
  float* q = arena.alloc(size_t(n) * qd);
  if (a.fused()) {
    linear(Linear{row_block(a.qkv.w, 0, qd), a.qkv.b}, x, n, q);
  } else {
    linear(a.q, x, n, q);
  }
  AttentionMask mask;
  mask.key_padding = opt.memory_padding;
  float* heads = arena.alloc(size_t(n) * qd);
  scaled_dot_product_attention({q, qd, memory.k.data(), memory.v.data(), a.kv_dim(), n, memory.m}, a.shape, mask,
                               {heads, qd, capture.weights, capture.head_mask});
  capture.tap(HookPoint::HeadOutputs, heads, n, qd);
  linear(a.o, heads, n, out);
}

}  // namespace attnlens::nn
