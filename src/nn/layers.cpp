#include "nn/layers.h"

#include <utility>

#include "core/error.h"
#include "kernels/kernels.h"

namespace attnlens::nn {

void check_encoder_layer(const EncoderLayer& l, const std::string& what) {
  const int d = l.self_attn.d_model;
  check_attention(l.self_attn, what + ".self_attn");
  check_feed_forward(l.ffn, d, what + ".ffn");
  check_norm(l.norm1, d, what + ".norm1");
  check_norm(l.norm2, d, what + ".norm2");
  const bool post_norms = l.post_norm1.gamma || l.post_norm2.gamma;
  AL_CHECK(l.placement == NormPlacement::Pre || (!post_norms && !l.parallel), what,
           ": output norms and the parallel residual need a pre-LN layer");
  if (l.post_norm1.gamma) check_norm(l.post_norm1, d, what + ".post_norm1");
  if (l.post_norm2.gamma) check_norm(l.post_norm2, d, what + ".post_norm2");
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

// The norms around one sub-layer, and where the hooks see its output.
struct Around {
  NormPlacement placement;
  const Norm& norm;
  const Norm* post = nullptr;  // pre-LN output norm, or null
  const LayerTap* tap = nullptr;
  HookPoint point = HookPoint::AttentionOut;
};

// One residual sub-layer: x ← Norm(x + f(x)) (post) or x ← x + Post(f(Norm(x))) (pre). The hooks see
// what is added to the residual stream: f's output, after the output norm if there is one (as
// TransformerLens' hook_attn_out / hook_mlp_out).
template <class Sublayer>
void residual(const Around& a, float* x, int n, Arena& arena, Sublayer f) {
  ArenaScope scope(arena);
  const size_t size = size_t(n) * a.norm.dim;
  float* y = arena.alloc(size);
  if (a.placement == NormPlacement::Pre) {
    float* h = arena.alloc(size);
    norm(a.norm, x, n, h);
    f(h, y);
    if (a.post && a.post->gamma) {
      norm(*a.post, y, n, h);
      y = h;
    }
    if (a.tap) (*a.tap)(a.point, y, n, a.norm.dim);
    kernels::add(x, y, int(size));
  } else {
    f(x, y);
    if (a.tap) (*a.tap)(a.point, y, n, a.norm.dim);
    kernels::add(y, x, int(size));
    norm(a.norm, y, n, x);
  }
}

}  // namespace

void encoder_layer(const EncoderLayer& l, float* x, const Pass& pass, const SelfAttentionOptions& opt,
                   const AttentionCapture& capture, Arena& arena) {
  const int n = pass.n;
  auto attention = [&](const float* in, float* out) { self_attention(l.self_attn, in, pass, opt, capture, out, arena); };
  auto ffn = [&](const float* in, float* out) { feed_forward(l.ffn, in, n, out, arena); };
  if (l.parallel) {  // x + (Attn(Norm₁(x)) + FFN(Norm₂(x))), both from the same x
    ArenaScope scope(arena);
    const size_t size = size_t(n) * l.norm1.dim;
    float* h = arena.alloc(size);  // a normalised input
    float* t = arena.alloc(size);  // an output norm's result
    float* ya = arena.alloc(size);
    float* yf = arena.alloc(size);
    auto branch = [&](const Norm& pre, const Norm& post, auto f, float*& y) {
      norm(pre, x, n, h);
      f(h, y);
      if (post.gamma) {
        norm(post, y, n, t);
        std::swap(y, t);
      }
    };
    branch(l.norm1, l.post_norm1, attention, ya);
    branch(l.norm2, l.post_norm2, ffn, yf);
    capture.tap(HookPoint::AttentionOut, ya, n, l.norm1.dim);
    capture.tap(HookPoint::MlpOut, yf, n, l.norm1.dim);
    kernels::add(ya, yf, int(size));
    kernels::add(x, ya, int(size));
    capture.tap(HookPoint::ResidualPost, x, n, l.norm1.dim);
    return;
  }
  residual({l.placement, l.norm1, &l.post_norm1, &capture.tap, HookPoint::AttentionOut}, x, n, arena, attention);
  residual({l.placement, l.norm2, &l.post_norm2, &capture.tap, HookPoint::MlpOut}, x, n, arena, ffn);
  capture.tap(HookPoint::ResidualPost, x, n, l.norm1.dim);
}

void decoder_layer(const DecoderLayer& l, float* x, const Pass& pass, const CrossMemory& memory,
                   const DecoderLayerOptions& opt, const DecoderCapture& capture, Arena& arena) {
  AL_CHECK(pass.cache != nullptr, "decoder layer: a KV cache is required");
  SelfAttentionOptions self = opt.self;
  self.causal = true;
  const int n = pass.n;
  // The hooks: self-attention, the FFN and the residual stream through capture.self.tap (stack Self),
  // cross-attention through capture.cross.tap (stack Cross).
  const LayerTap& tap = capture.self.tap;
  residual({l.placement, l.norm1, nullptr, &tap, HookPoint::AttentionOut}, x, n, arena, [&](const float* in, float* out) {
    self_attention(l.self_attn, in, pass, self, capture.self, out, arena);
  });
  residual({l.placement, l.norm2, nullptr, &capture.cross.tap, HookPoint::AttentionOut}, x, n, arena,
           [&](const float* in, float* out) {
             cross_attention(l.cross_attn, in, n, memory, opt.cross, capture.cross, out, arena);
           });
  residual({l.placement, l.norm3, nullptr, &tap, HookPoint::MlpOut}, x, n, arena,
           [&](const float* in, float* out) { feed_forward(l.ffn, in, n, out, arena); });
  tap(HookPoint::ResidualPost, x, n, l.norm1.dim);
}

}  // namespace attnlens::nn
