#include "nn/layers.h"

#include "core/error.h"
#include "kernels/kernels.h"

namespace attnlens::nn {

void check_encoder_layer(const EncoderLayer& l, const std::string& what) {
  const int d = l.self_attn.d_model;
  check_attention(l.self_attn, what + ".self_attn");
  check_feed_forward(l.ffn, d, what + ".ffn");
  check_norm(l.norm1, d, what + ".norm1");
  check_norm(l.norm2, d, what + ".norm2");
}

void check_decoder_layer(const DecoderLayer& l, const std::string& what) {
  const int d = l.self_attn.d_model;
  check_attention(l.self_attn, what + ".self_attn");
  check_attention(l.cross_attn, what + ".cross_attn");
  AL_CHECK(l.cross_attn.d_model == d, what, ": cross-attention d_model ", l.cross_attn.d_model, " != ", d);
  check_feed_forward(l.ffn, d, what + ".ffn");
  check_norm(l.norm1, d, what + ".norm1");
  check_norm(l.norm2, d, what + ".norm2");
  check_norm(l.norm3, d, what + ".norm3");
}

namespace {

// One residual sub-layer: x ← Norm(x + f(x)) (post) or x ← x + f(Norm(x)) (pre).
template <class Sublayer>
void residual(NormPlacement placement, const Norm& nrm, float* x, int n, Arena& arena, Sublayer f) {
  ArenaScope scope(arena);
  const size_t size = size_t(n) * nrm.dim;
  float* y = arena.alloc(size);
  if (placement == NormPlacement::Pre) {
    float* h = arena.alloc(size);
    norm(nrm, x, n, h);
    f(h, y);
    kernels::add(x, y, int(size));
  } else {
    f(x, y);
    kernels::add(y, x, int(size));
    norm(nrm, y, n, x);
  }
}

}  // namespace

void encoder_layer(const EncoderLayer& l, float* x, int n, int pos0, KVCache* cache, int layer,
                   const SelfAttentionOptions& opt, float* weights, const unsigned char* head_mask, Arena& arena) {
  residual(l.placement, l.norm1, x, n, arena, [&](const float* in, float* out) {
    self_attention(l.self_attn, in, n, pos0, cache, layer, opt, out, weights, head_mask, arena);
  });
  residual(l.placement, l.norm2, x, n, arena,
           [&](const float* in, float* out) { feed_forward(l.ffn, in, n, out, arena); });
}

void decoder_layer(const DecoderLayer& l, float* x, int n, int pos0, KVCache& cache, int layer,
                   const CrossMemory& memory, const uint8_t* memory_padding, float* self_weights,
                   float* cross_weights, const unsigned char* head_mask, Arena& arena) {
  SelfAttentionOptions causal;
  causal.causal = true;
  residual(l.placement, l.norm1, x, n, arena, [&](const float* in, float* out) {
    self_attention(l.self_attn, in, n, pos0, &cache, layer, causal, out, self_weights, head_mask, arena);
  });
  residual(l.placement, l.norm2, x, n, arena, [&](const float* in, float* out) {
    cross_attention(l.cross_attn, in, n, memory, memory_padding, out, cross_weights, head_mask, arena);
  });
  residual(l.placement, l.norm3, x, n, arena,
           [&](const float* in, float* out) { feed_forward(l.ffn, in, n, out, arena); });
}

}  // namespace attnlens::nn
