#include "models/model.h"

#include "core/error.h"
#include "models/weights.h"

namespace attnlens::models {

const char* model_kind_name(ModelKind k) {
  switch (k) {
    case ModelKind::DecoderOnly: return "decoder-only";
    case ModelKind::EncoderOnly: return "encoder-only";
    case ModelKind::EncoderDecoder: return "encoder-decoder";
  }
  return "?";
}

ModelInfo make_info(const std::string& architecture, ModelKind kind, const Shape& s, const std::string& positions,
                    const Weights& w) {
  ModelInfo info;
  info.architecture = architecture;
  info.kind = kind;
  info.d_model = s.d_model;
  info.n_layers = s.n_layers;
  info.n_encoder_layers = s.n_encoder_layers;
  info.n_heads = s.n_heads;
  info.n_kv_heads = s.n_kv_heads;
  info.head_dim = s.head_dim > 0 ? s.head_dim : s.d_model / s.n_heads;
  info.d_ff = s.d_ff;
  info.vocab_size = s.vocab_size;
  info.context_length = s.context_length;
  info.positions = positions;
  info.n_params = w.params();
  info.weight_bytes = w.bytes_read();
  info.weight_dtype = w.matrix_dtype();
  info.owned_bytes = w.owned_bytes();
  return info;
}

size_t Session::bytes() const {
  size_t n = cache.bytes() + arena.bytes_reserved() + (logits.capacity() + hidden.capacity()) * sizeof(float);
  for (const nn::CrossMemory& m : memory) n += (m.k.capacity() + m.v.capacity()) * sizeof(float);
  return n;
}

std::unique_ptr<Session> Model::new_session(int capacity) const {
  const ModelInfo& i = info();
  if (capacity <= 0) capacity = i.context_length;
  AL_CHECK(capacity <= i.context_length, "a session of ", capacity, " positions exceeds the model's context length ",
           i.context_length);
  return std::make_unique<Session>(i.n_layers, i.n_kv_heads, i.head_dim, capacity);
}

const float* Model::decode(Session&, const int*, int, bool) const {
  fail(info().architecture, " is an ", model_kind_name(kind()), " model: it has no decoder (use encode)");
}

const float* Model::encode(Session&, const int*, int, const int*) const {
  fail(info().architecture, " is a ", model_kind_name(kind()), " model: it has no encoder (use decode)");
}

const float* Model::mlm_logits(Session&) const {
  fail(info().architecture, " model has no masked-language-model head");
}

void Model::check_tokens(const int* tokens, int n, const char* what) const {
  AL_CHECK(n > 0, what, ": no tokens given");
  AL_CHECK(tokens != nullptr, what, ": tokens are missing");
  const int vocab = info().vocab_size;
  for (int i = 0; i < n; ++i)
    AL_CHECK(tokens[i] >= 0 && tokens[i] < vocab, what, ": token id ", tokens[i], " at index ", i,
             " is out of range [0, ", vocab, ")");
}

}  // namespace attnlens::models
