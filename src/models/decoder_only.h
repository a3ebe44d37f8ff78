// The decoder-only transformer shared by GPT-2 and Llama (seed 004 §"Decoder-Only Models"):
//
//   x₀ = E[token] (+ P[pos] for learned positions)
//   xₗ₊₁ = xₗ + Attention(Norm(xₗ))   causal, KV-cached; RoPE on q and k when the model uses it
//   xₗ₊₁ = xₗ + FFN(Norm(xₗ))
//   logits = Norm(x_L) · W_vocabᵀ       (W_vocab = E when the embedding is tied)
//
// Llama and GPT-2 differ only in the parts plugged in (RMSNorm vs LayerNorm, RoPE vs learned
// positions, SwiGLU vs GELU, biases): see llama.cpp and gpt2.cpp for how each maps its tensors here.
#pragma once
#include <memory>
#include <optional>
#include <vector>

#include "models/model.h"
#include "models/weights.h"
#include "nn/layers.h"
#include "nn/positions.h"

namespace attnlens::models {

struct DecoderOnlyWeights {
  nn::Matrix token_embedding;            // [vocab, d_model]
  nn::Matrix position_embedding;         // [context, d_model], learned positions only (else empty)
  std::vector<nn::EncoderLayer> layers;  // pre-norm blocks: self-attention + FFN
  nn::Norm final_norm;
  nn::Linear lm_head;                    // [vocab, d_model]
  std::optional<nn::RopeStyle> rope;     // RoPE convention, if the model rotates q/k
  float rope_base = 10000.f;
};

class DecoderOnlyTransformer : public Model {
 public:
  DecoderOnlyTransformer(ModelInfo info, DecoderOnlyWeights w, WeightStorage storage);
  const ModelInfo& info() const override { return info_; }
  const float* decode(Session& s, const int* tokens, int n, bool all_logits) const override;

 private:
  void embed(const int* tokens, int n, int pos0, float* x) const;
  ModelInfo info_;
  DecoderOnlyWeights w_;
  WeightStorage storage_;
  std::unique_ptr<nn::Rope> rope_;
};

}  // namespace attnlens::models
