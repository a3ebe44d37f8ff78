// The encoder-only transformer shared by the BERT family (BERT, RoBERTa / XLM-R, DistilBERT, ALBERT,
// MPNet, and llama.cpp's GGUF "bert"): each family's builder (bert.cpp) fills it from its table of
// names and flags.
//
//   x₀ = Norm_emb(E_word[t] + E_pos[i + offset] + E_type[segment])      (ALBERT: then · W_map + b, E → H)
//   xₗ₊₁ = EncoderLayer(xₗ)          post-LN, bidirectional; MPNet adds a relative bias (T5's buckets)
//   masked-LM logits = W_dec · Norm(act(W_t x + b_t)) + b                 (when the file has the head)
//
// Inputs come as a batch of sequences padded on the right to one length: padded keys get exactly
// zero attention (their weights are recorded as 0), every sequence only sees itself.
//   offset   RoBERTa / XLM-R / MPNet count positions from pad_token_id + 1 (padding itself sits at
//            pad_token_id); BERT, DistilBERT, ALBERT from 0.
//   layers   ALBERT shares one layer's weights across all of them (the entries are views of the same
//            tensors), so the layer list is what runs, in order.
#pragma once
#include <memory>
#include <vector>

#include "models/encoder_decoder.h"  // RelativeBiasTable
#include "models/model.h"
#include "models/weights.h"
#include "nn/layers.h"
#include "nn/positions.h"

namespace attnlens::models {

struct EncoderOnlyWeights {
  nn::Matrix word, position, token_type;  // [vocab | positions | types, E]; token_type empty when none
  int position_offset = 0;
  nn::Norm embed_norm;                    // over E
  nn::Linear embed_projection;            // ALBERT's E → H; empty otherwise
  std::vector<nn::EncoderLayer> layers;
  RelativeBiasTable relative_bias;        // MPNet: one table [buckets][heads] for every layer; null otherwise
  // masked-LM head (all empty when the file has none)
  nn::Linear mlm_transform;               // [E', H]
  nn::Activation mlm_act = nn::Activation::GeluErf;
  nn::Norm mlm_norm;                      // over E'
  nn::Linear mlm_decoder;                 // [vocab, E'] + bias
};

class EncoderOnlyTransformer : public Model {
 public:
  EncoderOnlyTransformer(ModelInfo info, EncoderOnlyWeights w, WeightStorage storage);
  const ModelInfo& info() const override { return info_; }
  bool has_mlm_head() const override { return !w_.mlm_decoder.empty(); }
  std::unique_ptr<Session> new_session(int capacity, nn::KVType kv) const override;
  const float* encode(Session& s, const int* tokens, int n, const int* token_types) const override;
  const float* encode_batch(Session& s, const EncoderBatch& b) const override;
  const float* mlm_logits(Session& s) const override;
  void unembed(Session& s, const float* x, int rows, float* logits) const override;

 private:
  void embed(const EncoderBatch& b, float* x) const;
  ModelInfo info_;
  EncoderOnlyWeights w_;
  WeightStorage storage_;
  std::unique_ptr<nn::T5RelativeBias> bias_;
};

}  // namespace attnlens::models
