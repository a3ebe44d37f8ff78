#include "models/model.h"

#include <algorithm>

#include "core/error.h"
#include "core/limits.h"
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
  // A safety net behind the builders' per-key checks: nothing past the engine's limits gets built.
  const std::string& source = w.tensors().context;
  AL_CHECK(s.context_length >= 1 && s.context_length <= limits::kMaxContext, source, ": a context of ", s.context_length,
           " positions is outside [1, ", limits::kMaxContext, "]");
  AL_CHECK(s.n_layers <= limits::kMaxLayers && s.n_encoder_layers <= limits::kMaxLayers, source, ": ", s.n_layers, " + ",
           s.n_encoder_layers, " layers exceed the limit of ", limits::kMaxLayers, " per stack");
  AL_CHECK(s.vocab_size >= 1 && s.vocab_size <= limits::kMaxVocab, source, ": a vocabulary of ", s.vocab_size,
           " tokens is outside [1, ", limits::kMaxVocab, "]");
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
  info.source_vocab_size = s.source_vocab_size ? s.source_vocab_size : s.vocab_size;
  info.context_length = s.context_length;
  info.positions = positions;
  info.n_params = w.params();
  info.weight_bytes = w.bytes_read();
  info.weight_dtype = w.matrix_dtype();
  info.owned_bytes = w.owned_bytes();
  for (const auto& [t, tot] : w.matrix_types()) info.weight_types.push_back({dtype_name(t), tot.tensors, tot.params, tot.bytes});
  std::stable_sort(info.weight_types.begin(), info.weight_types.end(),
                   [](const ModelInfo::TypeTotals& a, const ModelInfo::TypeTotals& b) { return a.bytes > b.bytes; });
  return info;
}

size_t Session::bytes() const {
  size_t n = cache.bytes() + arena.bytes_reserved() + (logits.capacity() + hidden.capacity()) * sizeof(float);
  for (const nn::CrossMemory& m : memory) n += (m.k.capacity() + m.v.capacity()) * sizeof(float);
  return n;
}

size_t Model::logits_size(int rows) const {
  return limits::checked_bytes(str("the logits of ", rows, " tokens").c_str(), {uint64_t(rows), uint64_t(info().vocab_size), sizeof(float)}) /
         sizeof(float);
}

std::unique_ptr<Session> Model::new_session(int capacity, nn::KVType kv) const {
  const ModelInfo& i = info();
  if (capacity <= 0) capacity = i.context_length;
  AL_CHECK(capacity <= i.context_length, "a session of ", capacity, " positions exceeds the model's context length ",
           i.context_length);
  return std::make_unique<Session>(i.n_layers, i.n_kv_heads, i.head_dim, capacity, kv, i.architecture);
}

const float* Model::decode(Session&, const int*, int, bool) const {
  fail(info().architecture, " is an ", model_kind_name(kind()), " model: it has no decoder (use encode)");
}

const float* Model::encode(Session&, const int*, int, const int*) const {
  fail(info().architecture, " is a ", model_kind_name(kind()), " model: it has no encoder (use decode)");
}

const float* Model::encode_batch(Session&, const EncoderBatch&) const {
  fail(info().architecture, " is a ", model_kind_name(kind()), " model: it does not encode batches");
}

const float* Model::mlm_logits(Session&) const {
  fail(info().architecture, " model has no masked-language-model head");
}

void Model::unembed(Session&, const float*, int, float*) const {
  fail(info().architecture, " model has no output head to read its layers with");
}

void Model::check_tokens(const int* tokens, int n, const char* what) const {
  check_ids(tokens, n, info().vocab_size, what);
  check_scratch(n, what);
}

void Model::check_scratch(int n, const char* what) const {
  const ModelInfo& i = info();
  // The widest scratch row a token needs (residual stream, Q|K|V, feed-forward), with room for the
  // several buffers of a layer: every n × width product the pass computes stays far from wrapping.
  const uint64_t width = std::max<uint64_t>({uint64_t(i.d_model), uint64_t(i.d_ff),
                                             uint64_t(i.n_heads + 2 * i.n_kv_heads) * uint64_t(i.head_dim)});
  limits::checked_bytes(str(what, ": the scratch buffers of a pass over ", n, " tokens").c_str(), {uint64_t(n), 4, width, sizeof(float)});
}

void Model::check_ids(const int* tokens, int n, int vocab, const char* what) {
  AL_CHECK(n > 0, what, ": no tokens given");
  AL_CHECK(tokens != nullptr, what, ": tokens are missing");
  AL_CHECK(n <= limits::kMaxContext, what, ": ", n, " tokens are more than the engine's limit of ", limits::kMaxContext);
  for (int i = 0; i < n; ++i)
    AL_CHECK(tokens[i] >= 0 && tokens[i] < vocab, what, ": token id ", tokens[i], " at index ", i,
             " is out of range [0, ", vocab, ")");
}

}  // namespace attnlens::models
