#include "models/encoder_only.h"

#include <vector>

#include "core/error.h"
#include "kernels/kernels.h"

namespace attnlens::models {

EncoderOnlyTransformer::EncoderOnlyTransformer(ModelInfo info, EncoderOnlyWeights w, WeightStorage storage)
    : info_(std::move(info)), w_(std::move(w)), storage_(std::move(storage)) {
  for (size_t l = 0; l < w_.layers.size(); ++l) nn::check_encoder_layer(w_.layers[l], "layer " + std::to_string(l));
  const int e = w_.word.cols;
  nn::check_norm(w_.embed_norm, e, "embedding norm");
  AL_CHECK(w_.position.cols == e && (w_.token_type.empty() || w_.token_type.cols == e), "embedding tables of widths ",
           w_.word.cols, ", ", w_.position.cols, ", ", w_.token_type.cols, " differ");
  if (!w_.embed_projection.empty()) nn::check_linear(w_.embed_projection, e, info_.d_model, "embedding projection");
  else AL_CHECK(e == info_.d_model, "embeddings of width ", e, " for d_model ", info_.d_model, " need a projection");
  if (w_.relative_bias.table) {
    bias_ = std::make_unique<nn::T5RelativeBias>(w_.relative_bias.table, w_.relative_bias.buckets, info_.n_heads, true,
                                                 w_.relative_bias.max_distance);
    for (auto& l : w_.layers) l.self_attn.position_bias = bias_.get();
  }
  if (has_mlm_head()) {
    nn::check_linear(w_.mlm_decoder, w_.mlm_transform.out(), info_.vocab_size, "masked-LM decoder");
    nn::check_linear(w_.mlm_transform, info_.d_model, w_.mlm_transform.out(), "masked-LM transform");
    nn::check_norm(w_.mlm_norm, w_.mlm_transform.out(), "masked-LM norm");
  }
}

std::unique_ptr<Session> EncoderOnlyTransformer::new_session(int, nn::KVType) const {
  return std::make_unique<Session>(1, 1, 1, 1);  // no decoder: no KV cache to speak of
}

// x[batch·length, d] = the embeddings of every token (padding included: its rows are computed, as in
// the reference implementations, and never attended to).
void EncoderOnlyTransformer::embed(const EncoderBatch& b, float* x) const {
  const int e = w_.word.cols, n = b.batch * b.length;
  std::vector<float> row(static_cast<size_t>(e));
  std::vector<float> emb(w_.embed_projection.empty() ? 0 : size_t(n) * e);
  float* out = w_.embed_projection.empty() ? x : emb.data();
  for (int s = 0; s < b.batch; ++s)
    for (int i = 0; i < b.length; ++i) {
      const size_t k = size_t(s) * b.length + i;
      const bool pad = b.padding && b.padding[k];
      // RoBERTa-style positions: real tokens from offset on, padding at offset − 1 (pad_token_id).
      const int pos = w_.position_offset ? (pad ? w_.position_offset - 1 : w_.position_offset + i) : i;
      AL_CHECK(pos < w_.position.rows, "encode: position ", i, " is past the model's ",
               w_.position.rows - w_.position_offset, " positions");
      const int type = b.token_types ? b.token_types[k] : 0;
      float* xi = out + k * e;
      nn::embedding_row(w_.word, b.tokens[k], xi);
      nn::embedding_row(w_.position, pos, row.data());
      kernels::add(xi, row.data(), e);
      if (!w_.token_type.empty()) {
        AL_CHECK(type >= 0 && type < w_.token_type.rows, "encode: token type ", type, " at index ", k,
                 " is out of range [0, ", w_.token_type.rows, ")");
        nn::embedding_row(w_.token_type, type, row.data());
        kernels::add(xi, row.data(), e);
      } else {
        AL_CHECK(type == 0, "encode: ", info_.architecture, " has no token types (got ", type, " at index ", k, ")");
      }
    }
  nn::norm(w_.embed_norm, out, n, out);
  if (!w_.embed_projection.empty()) nn::linear(w_.embed_projection, out, n, x);
}

const float* EncoderOnlyTransformer::encode(Session& s, const int* tokens, int n, const int* token_types) const {
  EncoderBatch b;
  b.tokens = tokens;
  b.token_types = token_types;
  b.length = n;
  return encode_batch(s, b);
}

const float* EncoderOnlyTransformer::encode_batch(Session& s, const EncoderBatch& b) const {
  AL_CHECK(b.batch > 0 && b.length > 0, "encode: empty batch (", b.batch, " sequences of ", b.length, " tokens)");
  AL_CHECK(int64_t(b.batch) * b.length <= (int64_t(1) << 24), "encode: a batch of ", b.batch, " × ", b.length,
           " tokens is too large");
  const int n = b.batch * b.length, d = info_.d_model;
  check_tokens(b.tokens, n, "encode");
  const int limit = w_.position.rows - w_.position_offset;
  AL_CHECK(b.length <= limit, "encode: ", b.length, " tokens exceed the ", limit, " positions of ", info_.architecture,
           ": truncate the input");
  if (b.padding)
    for (int q = 0; q < b.batch; ++q) {
      const uint8_t* p = b.padding + size_t(q) * b.length;
      AL_CHECK(!p[0], "encode: sequence ", q, " is all padding");
      for (int i = 1; i < b.length; ++i)
        AL_CHECK(!p[i - 1] || p[i], "encode: padding of sequence ", q, " is not at its end (position ", i, ")");
    }
  s.hidden.resize(size_t(n) * d);
  float* x = s.hidden.data();
  embed(b, x);
  nn::SelfAttentionOptions opt;
  opt.batch = b.batch;
  opt.key_padding = b.padding;
  for (int l = 0; l < int(w_.layers.size()); ++l) {
    poll(s);  // abort() reaches a running pass between layers
    float* weights = nullptr;
    const unsigned char* heads = nullptr;
    if (s.recorder) {
      weights = s.recorder->slot(nn::AttentionKind::Encoder, l, info_.n_heads, b.length, b.length, 0, b.batch);
      heads = s.recorder->head_mask(info_.n_heads);
    }
    nn::encoder_layer(w_.layers[l], x, nn::Pass{n, 0, nullptr, l}, opt,
                      {weights, heads, {s.hooks, nn::AttentionKind::Encoder, l, 0}}, s.arena);
  }
  s.memory_length = n;
  return x;
}

const float* EncoderOnlyTransformer::mlm_logits(Session& s) const {
  if (!has_mlm_head()) return Model::mlm_logits(s);
  const int d = info_.d_model, n = s.memory_length;
  AL_CHECK(n > 0 && s.hidden.size() == size_t(n) * d, "masked-LM logits: call encode first");
  s.logits.resize(logits_size(n));
  unembed(s, s.hidden.data(), n, s.logits.data());
  return s.logits.data();
}

// The masked-LM head: logits = Norm(act(x · Wᵀ + b)) · Eᵀ + bias
void EncoderOnlyTransformer::unembed(Session& s, const float* x, int rows, float* logits) const {
  if (!has_mlm_head()) return Model::unembed(s, x, rows, logits);
  const int e = w_.mlm_transform.out();
  nn::ArenaScope scope(s.arena);
  float* h = s.arena.alloc(size_t(rows) * e);
  nn::linear(w_.mlm_transform, x, rows, h);
  nn::activate(w_.mlm_act, h, rows * e);
  nn::norm(w_.mlm_norm, h, rows, h);
  nn::linear(w_.mlm_decoder, h, rows, logits);
}

}  // namespace attnlens::models
