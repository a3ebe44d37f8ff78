// The encoder–decoder transformer shared by every sequence-to-sequence family (seed 004 §"Encoder/
// Decoder Stack"): our own seq2seq (the original Transformer), T5 / Flan-T5, BART and Marian differ
// only in the parts plugged in here, which each family's builder fills from its table of names
// (seq2seq.cpp, t5.cpp, bart.cpp):
//
//   encoder:  x = E_src[source]·s (+ P[i]);  [Norm_emb];  N × EncoderLayer;  [Norm_enc]  → memory
//   decoder:  y = E_tgt[target]·s (+ P[pos + offset]);  [Norm_emb];  M × DecoderLayer (masked self-
//             attention, cross-attention to the memory, FFN);  [Norm_dec]
//   logits  = (y · output_scale) · W_outᵀ + b
//
//   positions         sinusoidal (interleaved: ours; halves: Marian), learned with an offset (BART: 2),
//                     or none: T5's relative bias, one table [buckets][heads] per stack shared by its
//                     layers (bidirectional buckets in the encoder, causal in the decoder; a layer
//                     with its own table, as in UMT5, uses that one)
//   s                 √d_model (ours, Marian; BART with scale_embedding) or 1 (T5, BART)
//   norms             LayerNorm post-LN (ours, BART, Marian) or RMSNorm pre-LN (T5)
//   output_scale      d_model^-½ when T5 ties its head to the embedding, else 1
//   b                 final_logits_bias (BART, Marian), else none
#pragma once
#include <memory>
#include <vector>

#include "models/model.h"
#include "models/weights.h"
#include "nn/layers.h"
#include "nn/positions.h"

namespace attnlens::models {

enum class AbsolutePositions { None, Sinusoidal, SinusoidalHalves, Learned };

// One stack's learned relative position bias (T5): table [buckets][heads].
struct RelativeBiasTable {
  const float* table = nullptr;  // null: the stack has none
  int buckets = 32;
  int max_distance = 128;
};

struct EncoderDecoderWeights {
  nn::Matrix source_embedding, target_embedding;  // [source vocab, d], [target vocab, d]: the same when shared
  float embed_scale = 1.f;
  AbsolutePositions positions = AbsolutePositions::None;
  nn::Matrix encoder_positions, decoder_positions;  // learned tables [rows, d]
  int position_offset = 0;                          // row of position p = p + offset (BART: 2)
  int max_positions = 0;                            // positions each stack can take (0: no limit)
  nn::Norm encoder_embed_norm, decoder_embed_norm;  // on the embeddings (BART's layernorm_embedding); dim 0 = none
  std::vector<nn::EncoderLayer> encoder;
  std::vector<nn::DecoderLayer> decoder;
  // Relative position bias per layer (index = layer; entries may be empty: the layer uses layer 0's).
  std::vector<RelativeBiasTable> encoder_bias, decoder_bias;
  nn::Norm encoder_norm, decoder_norm;  // final norms; dim 0 = none
  float output_scale = 1.f;
  nn::Linear lm_head;                   // [target vocab, d] (+ final_logits_bias)
};

class EncoderDecoderTransformer : public Model {
 public:
  EncoderDecoderTransformer(ModelInfo info, EncoderDecoderWeights w, WeightStorage storage);
  const ModelInfo& info() const override { return info_; }
  const float* encode(Session& s, const int* tokens, int n, const int* token_types) const override;
  const float* decode(Session& s, const int* tokens, int n, bool all_logits) const override;
  void unembed(Session& s, const float* y, int rows, float* logits) const override;

 private:
  void embed(const nn::Matrix& table, const nn::Matrix& positions, const nn::Norm& norm, const int* tokens, int n,
             int pos0, float* x) const;
  ModelInfo info_;
  EncoderDecoderWeights w_;
  WeightStorage storage_;
  std::vector<std::unique_ptr<nn::T5RelativeBias>> biases_;  // the layers' attention blocks point here
};

}  // namespace attnlens::models
