// Forward hooks: the places inside every layer where a forward pass can be observed and changed —
// for the logit lens (read the residual stream), head ablation (zero a head's output), activation
// patching (write another run's activation). A model's Session holds a ForwardHooks pointer, like
// its AttentionRecorder: null = no hooks, and the layers cost one pointer test per point.
//
// The points (named as TransformerLens names them, for readers who know it):
//   HeadOutputs   hook_z:          every head's output before W^O, [n][n_heads·head_dim] (head h at
//                                  columns h·head_dim …), i.e. Concat(head_1 … head_h) of seed 001
//   AttentionOut  hook_attn_out:   the attention sub-layer's output, before the residual add, [n][d_model]
//   MlpOut        hook_mlp_out:    the FFN sub-layer's output, before the residual add, [n][d_model]
//   ResidualPost  hook_resid_post: the residual stream after the layer, [n][d_model]
// For a decoder layer's cross-attention, HeadOutputs and AttentionOut come with stack Cross.
#pragma once

#include "nn/recorder.h"

namespace attnlens::nn {

enum class HookPoint { HeadOutputs = 0, AttentionOut = 1, MlpOut = 2, ResidualPost = 3 };
const char* hook_point_name(HookPoint p);  // "heads", "attn", "mlp", "resid"

struct HookSite {
  // Which layers: Self = the decoder's (or a decoder-only model's) layers, Encoder = the encoder's,
  // Cross = a decoder layer's cross-attention sub-layer.
  AttentionKind stack = AttentionKind::Self;
  int layer = 0;
  HookPoint point = HookPoint::ResidualPost;
  int pos0 = 0;   // position of the first row
  int n = 0;      // rows
  int width = 0;  // values per row
};

class ForwardHooks {
 public:
  virtual ~ForwardHooks() = default;
  // x [site.n][site.width]: read it, or change it in place (the pass continues with the change).
  virtual void at(const HookSite& site, float* x) = 0;
};

// What a layer function needs to report its activations: the hooks (null = none: one test per
// point) and where it is (its stack, its index, the position of its first row).
struct LayerTap {
  ForwardHooks* hooks = nullptr;
  AttentionKind stack = AttentionKind::Self;
  int layer = 0;
  int pos0 = 0;

  void operator()(HookPoint point, float* x, int n, int width) const {
#ifndef ATTNLENS_NO_HOOKS
    if (hooks) hooks->at(HookSite{stack, layer, point, pos0, n, width}, x);
#else  // the engine with its hook points compiled out: what decoding costs without them (bench/interp.mjs --hooks-out)
    (void)point, (void)x, (void)n, (void)width;
#endif
  }
  LayerTap with_stack(AttentionKind s) const { return LayerTap{hooks, s, layer, pos0}; }
};

}  // namespace attnlens::nn
