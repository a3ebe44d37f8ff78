#include "models/decoder_only.h"

#include <vector>

#include "core/error.h"
#include "kernels/kernels.h"

namespace attnlens::models {

DecoderOnlyTransformer::DecoderOnlyTransformer(ModelInfo info, DecoderOnlyWeights w, WeightStorage storage)
    : info_(std::move(info)), w_(std::move(w)), storage_(std::move(storage)) {
  for (size_t l = 0; l < w_.layers.size(); ++l) nn::check_encoder_layer(w_.layers[l], "layer " + std::to_string(l));
  nn::check_norm(w_.final_norm, info_.d_model, "final norm");
  nn::check_linear(w_.lm_head, info_.d_model, info_.vocab_size, "output projection");
  if (w_.rope) {
    rope_ = std::make_unique<nn::Rope>(*w_.rope, info_.head_dim, w_.rope_base, info_.context_length);
    info_.owned_bytes += rope_->table_bytes();
  }
}

// x[n, d_model] = token embeddings (+ learned position embeddings).
void DecoderOnlyTransformer::embed(const int* tokens, int n, int pos0, float* x) const {
  const int d = info_.d_model;
  const nn::Matrix& pe = w_.position_embedding;
  for (int i = 0; i < n; ++i) {
    float* xi = x + size_t(i) * d;
    nn::embedding_row(w_.token_embedding, tokens[i], xi);
    if (pe.empty()) continue;
    const int pos = pos0 + i;
    AL_CHECK(pos >= 0 && pos < pe.rows, "position ", pos, " is past the ", pe.rows, " learned positions");
    if (pe.dtype == DType::F32) {  // add the row in place: no copy, no allocation per token
      kernels::add(xi, static_cast<const float*>(pe.data) + size_t(pos) * d, d);
    } else {
      thread_local std::vector<float> row;
      row.resize(size_t(d));
      nn::embedding_row(pe, pos, row.data());
      kernels::add(xi, row.data(), d);
    }
  }
}

const float* DecoderOnlyTransformer::decode(Session& s, const int* tokens, int n, bool all_logits) const {
  check_tokens(tokens, n, "decode");
  const int pos0 = s.position();
  s.cache.check_room(n);  // context overflow is an error before any work, and the cache is untouched
  const int d = info_.d_model;
  nn::ArenaScope scope(s.arena);
  float* x = s.arena.alloc(size_t(n) * d);  // the residual stream [n, d_model]
  embed(tokens, n, pos0, x);

  nn::SelfAttentionOptions causal;
  causal.causal = true;
  causal.rope = rope_.get();
  for (int l = 0; l < int(w_.layers.size()); ++l) {
    float* weights = nullptr;
    const unsigned char* heads = nullptr;
    if (s.recorder) {
      weights = s.recorder->slot(nn::AttentionKind::Self, l, info_.n_heads, n, pos0 + n, pos0);
      heads = s.recorder->head_mask(info_.n_heads);
    }
    nn::encoder_layer(w_.layers[l], x, n, pos0, &s.cache, l, causal, weights, heads, s.arena);
  }
  s.cache.advance(n);

  // logits = Norm(x) · W_vocabᵀ, for the last token only unless every position is asked for.
  const int rows = all_logits ? n : 1;
  const float* last = x + size_t(n - rows) * d;
  float* h = s.arena.alloc(size_t(rows) * d);
  nn::norm(w_.final_norm, last, rows, h);
  s.logits.resize(size_t(rows) * info_.vocab_size);
  nn::linear(w_.lm_head, h, rows, s.logits.data());
  return s.logits.data();
}

}  // namespace attnlens::models
