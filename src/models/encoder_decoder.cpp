#include "models/encoder_decoder.h"

#include <algorithm>
#include <vector>

#include "core/error.h"
#include "kernels/kernels.h"

namespace attnlens::models {

namespace {

// The layers' self-attention blocks get their stack's relative bias: their own table, else layer 0's.
template <class Layer>
void attach_bias(std::vector<Layer>& layers, const std::vector<RelativeBiasTable>& tables, bool bidirectional,
                 int n_heads, std::vector<std::unique_ptr<nn::T5RelativeBias>>& owned, const char* stack) {
  if (tables.empty()) return;
  AL_CHECK(tables.size() == layers.size() && tables[0].table, stack, ": relative position bias is missing for layer 0");
  const nn::T5RelativeBias* shared = nullptr;
  for (size_t l = 0; l < layers.size(); ++l) {
    const RelativeBiasTable& t = tables[l];
    if (t.table) {
      owned.push_back(std::make_unique<nn::T5RelativeBias>(t.table, t.buckets, n_heads, bidirectional, t.max_distance));
      if (l == 0) shared = owned.back().get();
      layers[l].self_attn.position_bias = owned.back().get();
    } else {
      layers[l].self_attn.position_bias = shared;
    }
  }
}

}  // namespace

EncoderDecoderTransformer::EncoderDecoderTransformer(ModelInfo info, EncoderDecoderWeights w, WeightStorage storage)
    : info_(std::move(info)), w_(std::move(w)), storage_(std::move(storage)) {
  for (size_t l = 0; l < w_.encoder.size(); ++l) nn::check_encoder_layer(w_.encoder[l], "encoder layer " + std::to_string(l));
  for (size_t l = 0; l < w_.decoder.size(); ++l) nn::check_decoder_layer(w_.decoder[l], "decoder layer " + std::to_string(l));
  nn::check_linear(w_.lm_head, info_.d_model, info_.vocab_size, "output projection");
  AL_CHECK(w_.source_embedding.rows == info_.source_vocab_size && w_.target_embedding.rows == info_.vocab_size,
           "embedding tables have ", w_.source_embedding.rows, " and ", w_.target_embedding.rows, " rows, expected ",
           info_.source_vocab_size, " and ", info_.vocab_size);
  if (w_.positions == AbsolutePositions::Learned)
    for (const nn::Matrix* m : {&w_.encoder_positions, &w_.decoder_positions})
      AL_CHECK(m->cols == info_.d_model && m->rows >= w_.position_offset + w_.max_positions, "learned positions: a [",
               m->rows, ", ", m->cols, "] table cannot hold ", w_.max_positions, " positions after offset ",
               w_.position_offset);
  attach_bias(w_.encoder, w_.encoder_bias, true, info_.n_heads, biases_, "encoder");
  attach_bias(w_.decoder, w_.decoder_bias, false, info_.n_heads, biases_, "decoder");
}

// x[n, d] = E[token]·scale + P(pos0 + i), then the embedding norm if any.
void EncoderDecoderTransformer::embed(const nn::Matrix& table, const nn::Matrix& positions, const nn::Norm& norm,
                                      const int* tokens, int n, int pos0, float* x) const {
  const int d = info_.d_model;
  std::vector<float> pe(static_cast<size_t>(d));
  for (int i = 0; i < n; ++i) {
    float* xi = x + size_t(i) * d;
    nn::embedding_row(table, tokens[i], xi);
    if (w_.embed_scale != 1.f) kernels::scale(xi, w_.embed_scale, d);
    const int pos = pos0 + i;
    switch (w_.positions) {
      case AbsolutePositions::None: continue;
      case AbsolutePositions::Sinusoidal: nn::sinusoidal_encoding(pos, d, pe.data()); break;
      case AbsolutePositions::SinusoidalHalves: nn::sinusoidal_encoding_halves(pos, d, pe.data()); break;
      case AbsolutePositions::Learned: nn::embedding_row(positions, pos + w_.position_offset, pe.data()); break;
    }
    kernels::add(xi, pe.data(), d);
  }
  if (norm.dim) nn::norm(norm, x, n, x);
}

const float* EncoderDecoderTransformer::encode(Session& s, const int* tokens, int n, const int* token_types) const {
  AL_CHECK(!token_types, "encode: ", info_.architecture, " has no token types");
  check_ids(tokens, n, info_.source_vocab_size, "encode (source)");
  check_scratch(n, "encode (source)");
  AL_CHECK(w_.max_positions == 0 || n <= w_.max_positions, "encode: the source has ", n, " tokens, more than the ",
           w_.max_positions, " positions of ", info_.architecture, "'s encoder");
  const int d = info_.d_model;
  s.reset();
  s.hidden.resize(size_t(n) * d);
  float* x = s.hidden.data();
  embed(w_.source_embedding, w_.encoder_positions, w_.encoder_embed_norm, tokens, n, 0, x);
  for (int l = 0; l < int(w_.encoder.size()); ++l) {
    poll(s);  // abort() reaches a running pass between layers
    float* weights = nullptr;
    const unsigned char* heads = nullptr;
    if (s.recorder) {
      weights = s.recorder->slot(nn::AttentionKind::Encoder, l, info_.n_heads, n, n, 0);
      heads = s.recorder->head_mask(info_.n_heads);
    }
    nn::encoder_layer(w_.encoder[l], x, nn::Pass{n, 0, nullptr, l}, {},
                      {weights, heads, {s.hooks, nn::AttentionKind::Encoder, l, 0}}, s.arena);
  }
  if (w_.encoder_norm.dim) nn::norm(w_.encoder_norm, x, n, x);
  // The decoder's cross-attention keys/values of this source, once for every step to come.
  s.memory.resize(w_.decoder.size());
  for (size_t l = 0; l < w_.decoder.size(); ++l) nn::project_memory(w_.decoder[l].cross_attn, x, n, s.memory[l]);
  s.memory_length = n;
  return x;
}

const float* EncoderDecoderTransformer::decode(Session& s, const int* tokens, int n, bool all_logits) const {
  check_tokens(tokens, n, "decode");
  AL_CHECK(s.memory_length > 0 && s.memory.size() == w_.decoder.size(), "decode: encode the source first");
  const int pos0 = s.position(), d = info_.d_model;
  AL_CHECK(w_.max_positions == 0 || pos0 + n <= w_.max_positions, "decode: target positions up to ", pos0 + n - 1,
           " exceed the ", w_.max_positions, " positions of ", info_.architecture, "'s decoder");
  s.cache.reserve(n);
  nn::ArenaScope scope(s.arena);
  float* y = s.arena.alloc(size_t(n) * d);
  embed(w_.target_embedding, w_.decoder_positions, w_.decoder_embed_norm, tokens, n, pos0, y);
  for (int l = 0; l < int(w_.decoder.size()); ++l) {
    poll(s);  // abort() reaches a running pass between layers
    float* self_w = nullptr;
    float* cross_w = nullptr;
    const unsigned char* heads = nullptr;
    if (s.recorder) {
      self_w = s.recorder->slot(nn::AttentionKind::Self, l, info_.n_heads, n, pos0 + n, pos0);
      cross_w = s.recorder->slot(nn::AttentionKind::Cross, l, info_.n_heads, n, s.memory_length, pos0);
      heads = s.recorder->head_mask(info_.n_heads);
    }
    const nn::DecoderCapture capture{{self_w, heads, {s.hooks, nn::AttentionKind::Self, l, pos0}},
                                     {cross_w, heads, {s.hooks, nn::AttentionKind::Cross, l, pos0}}};
    nn::decoder_layer(w_.decoder[l], y, nn::Pass{n, pos0, &s.cache, l}, s.memory[l], {}, capture, s.arena);
  }
  s.cache.advance(n);
  const int rows = all_logits ? n : 1;
  s.logits.resize(logits_size(rows));
  unembed(s, y + size_t(n - rows) * d, rows, s.logits.data());
  return s.logits.data();
}

// logits = (Norm(y) · output_scale) · W_headᵀ + bias (the decoder's final norm when it has one; T5's
// tied head scaled by d_model^-½; BART's final_logits_bias as the head's bias)
void EncoderDecoderTransformer::unembed(Session& s, const float* y, int rows, float* logits) const {
  const int d = info_.d_model;
  nn::ArenaScope scope(s.arena);
  float* h = s.arena.alloc(size_t(rows) * d);
  if (w_.decoder_norm.dim) nn::norm(w_.decoder_norm, y, rows, h);
  else std::copy(y, y + size_t(rows) * d, h);
  if (w_.output_scale != 1.f) kernels::scale(h, w_.output_scale, rows * d);
  nn::linear(w_.lm_head, h, rows, logits);
}

}  // namespace attnlens::models
