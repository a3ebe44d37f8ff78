// Transformer layers (Vaswani et al. 2017, §3.1: the encoder and decoder stacks).
//
// Encoder layer:  self-attention → FFN, each wrapped in a residual connection and a LayerNorm.
// Decoder layer:  masked self-attention → cross-attention to the encoder output → FFN.
// Arrangements of the norms around a sub-layer f:
//   post-LN (original Transformer, BERT):   x = Norm(x + f(x))
//   pre-LN  (GPT-2, most modern models):    x = x + f(Norm(x))
//   sandwich (Gemma 2/3, pre-LN + a norm on the output):  x = x + PostNorm(f(Norm(x)))
// and, for pre-LN layers, the parallel residual of GPT-NeoX / Phi-2 / GPT-J, where attention and the
// FFN read the same input:   x = x + Attn(Norm₁(x)) + FFN(Norm₂(x)).
// A decoder-only model's block (GPT-2, Llama, Gemma, GPT-NeoX, …) is an encoder layer with a causal
// mask and a KV cache.
#pragma once
#include <string>

#include "nn/arena.h"
#include "nn/feed_forward.h"
#include "nn/multi_head_attention.h"
#include "nn/norm.h"

namespace attnlens::nn {

enum class NormPlacement { Post, Pre };

struct EncoderLayer {
  MultiHeadAttention self_attn;
  FeedForward ffn;
  Norm norm1, norm2;  // around self-attention and the FFN
  NormPlacement placement = NormPlacement::Post;
  // Pre-LN only, optional (gamma null = absent): norms of the sub-layers' outputs before the
  // residual add (Gemma 2/3's post_attention_norm and post_ffw_norm).
  Norm post_norm1, post_norm2;
  bool parallel = false;  // pre-LN only: attention and FFN both read the layer's input
};

struct DecoderLayer {
  MultiHeadAttention self_attn, cross_attn;
  FeedForward ffn;
  Norm norm1, norm2, norm3;  // around self-attention, cross-attention and the FFN
  NormPlacement placement = NormPlacement::Post;
};

void check_encoder_layer(const EncoderLayer& l, const std::string& what);
void check_decoder_layer(const DecoderLayer& l, const std::string& what);

// x [n, d_model] in place: the tokens of `pass`. `opt` chooses bidirectional (encoder: key padding)
// or causal + cache (decoder-only block); capture.weights: null or [n_heads][n][pos0+n];
// capture.tap: forward hooks (nn/hooks.h) see the heads' outputs, the attention and FFN outputs (what
// each adds to the residual stream) and the residual stream after the layer.
void encoder_layer(const EncoderLayer& l, float* x, const Pass& pass, const SelfAttentionOptions& opt,
                   const AttentionCapture& capture, Arena& arena);

struct DecoderLayerOptions {
  SelfAttentionOptions self;    // `causal` is forced on
  CrossAttentionOptions cross;  // the encoder output's padding, score scaling
};
struct DecoderCapture {
  AttentionCapture self;   // [n_heads][n][pos0+n]; its tap also sees the FFN and the residual stream
  AttentionCapture cross;  // [n_heads][n][memory.m]; its tap: cross-attention (stack Cross)
};

// x [n, d_model] in place: the target tokens of `pass` (a cache is required: their self-attention
// keys/values go to pass.cache, layer pass.layer), attending to the encoder output through `memory`.
void decoder_layer(const DecoderLayer& l, float* x, const Pass& pass, const CrossMemory& memory,
                   const DecoderLayerOptions& opt, const DecoderCapture& capture, Arena& arena);

}  // namespace attnlens::nn
