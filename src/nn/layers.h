// Transformer layers (seed 002 §"Transformer Encoder Layer", seed 004 §"Encoder/Decoder Stack").
//
// Encoder layer:  self-attention → FFN, each wrapped in a residual connection and a LayerNorm.
// Decoder layer:  masked self-attention → cross-attention to the encoder output → FFN.
// Two arrangements of the norms:
//   post-LN (original Transformer, BERT):  x = Norm(x + Sublayer(x))
//   pre-LN  (GPT-2, most modern models):   x = x + Sublayer(Norm(x))
// A decoder-only model's block (GPT-2, Llama) is an encoder layer with a causal mask and a KV cache.
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
};

struct DecoderLayer {
  MultiHeadAttention self_attn, cross_attn;
  FeedForward ffn;
  Norm norm1, norm2, norm3;  // around self-attention, cross-attention and the FFN
  NormPlacement placement = NormPlacement::Post;
};

void check_encoder_layer(const EncoderLayer& l, const std::string& what);
void check_decoder_layer(const DecoderLayer& l, const std::string& what);

// x [n, d_model] in place. `opt` chooses bidirectional (encoder: key padding) or causal + cache
// (decoder-only block); weights: null or [n_heads][n][pos0+n].
void encoder_layer(const EncoderLayer& l, float* x, int n, int pos0, KVCache* cache, int layer,
                   const SelfAttentionOptions& opt, float* weights, const unsigned char* head_mask, Arena& arena);

// x [n, d_model] in place: the target tokens at positions pos0… (their self-attention keys/values
// go to `cache`, layer `layer`), attending to the encoder output through `memory`.
// self_weights: null or [n_heads][n][pos0+n]; cross_weights: null or [n_heads][n][memory.m].
void decoder_layer(const DecoderLayer& l, float* x, int n, int pos0, KVCache& cache, int layer,
                   const CrossMemory& memory, const uint8_t* memory_padding, float* self_weights,
                   float* cross_weights, const unsigned char* head_mask, Arena& arena);

}  // namespace attnlens::nn
