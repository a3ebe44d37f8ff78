// BERT (Devlin et al. 2019), Hugging Face BertModel layout: an encoder-only, post-LN transformer.
//   x₀ = LayerNorm(E_word[token] + E_pos[i] + E_type[segment])
//   xₗ₊₁ = EncoderLayer(xₗ)      bidirectional self-attention, GELU (erf) FFN, post-LN
// With BertForMaskedLM's head present (cls.predictions.*), masked-LM logits too:
//   logits = LayerNorm(gelu(W_t x + b_t)) · E_wordᵀ + b
#include <cmath>

#include "core/error.h"
#include "core/limits.h"
#include "kernels/kernels.h"
#include "models/config.h"
#include "models/registry.h"
#include "nn/layers.h"

namespace attnlens::models {

namespace {

struct BertWeights {
  nn::Matrix word, position, token_type;  // [vocab | positions | types, d]
  nn::Norm embed_norm;
  std::vector<nn::EncoderLayer> layers;
  // masked-LM head (optional)
  nn::Linear mlm_transform;
  nn::Norm mlm_norm;
  nn::Linear mlm_decoder;  // [vocab, d] + bias
  nn::Activation act = nn::Activation::GeluErf;
};

class Bert : public Model {
 public:
  Bert(ModelInfo info, BertWeights w, WeightStorage storage)
      : info_(std::move(info)), w_(std::move(w)), storage_(std::move(storage)) {
    for (size_t l = 0; l < w_.layers.size(); ++l) nn::check_encoder_layer(w_.layers[l], "layer " + std::to_string(l));
  }
  const ModelInfo& info() const override { return info_; }
  bool has_mlm_head() const override { return !w_.mlm_decoder.empty(); }

  std::unique_ptr<Session> new_session(int) const override {
    return std::make_unique<Session>(1, 1, 1, 1);  // no decoder: no KV cache to speak of
  }

  const float* encode(Session& s, const int* tokens, int n, const int* token_types) const override {
    check_tokens(tokens, n, "encode");
    AL_CHECK(n <= info_.context_length, "encode: ", n, " tokens exceed BERT's ", info_.context_length, " positions");
    const int d = info_.d_model;
    s.hidden.resize(size_t(n) * d);
    float* x = s.hidden.data();
    std::vector<float> row(d);
    for (int i = 0; i < n; ++i) {
      const int type = token_types ? token_types[i] : 0;
      AL_CHECK(type >= 0 && type < w_.token_type.rows, "encode: token type ", type, " at index ", i,
               " is out of range [0, ", w_.token_type.rows, ")");
      float* xi = x + size_t(i) * d;
      nn::embedding_row(w_.word, tokens[i], xi);
      nn::embedding_row(w_.position, i, row.data());
      kernels::add(xi, row.data(), d);
      nn::embedding_row(w_.token_type, type, row.data());
      kernels::add(xi, row.data(), d);
    }
    nn::norm(w_.embed_norm, x, n, x);
    for (int l = 0; l < int(w_.layers.size()); ++l) {
      poll(s);  // abort() reaches a running pass between layers
      float* weights = nullptr;
      const unsigned char* heads = nullptr;
      if (s.recorder) {
        weights = s.recorder->slot(nn::AttentionKind::Encoder, l, info_.n_heads, n, n, 0);
        heads = s.recorder->head_mask(info_.n_heads);
      }
      nn::encoder_layer(w_.layers[l], x, nn::Pass{n, 0, nullptr, l}, {},
                        {weights, heads, {s.hooks, nn::AttentionKind::Encoder, l, 0}}, s.arena);
    }
    s.memory_length = n;
    return x;
  }

  const float* mlm_logits(Session& s) const override {
    if (!has_mlm_head()) return Model::mlm_logits(s);
    const int d = info_.d_model, n = s.memory_length;
    AL_CHECK(n > 0 && s.hidden.size() == size_t(n) * d, "masked-LM logits: call encode first");
    s.logits.resize(logits_size(n));
    unembed(s, s.hidden.data(), n, s.logits.data());
    return s.logits.data();
  }

  // The masked-LM head: logits = LayerNorm(act(x · Wᵀ + b)) · Eᵀ + bias
  void unembed(Session& s, const float* x, int rows, float* logits) const override {
    if (!has_mlm_head()) return Model::unembed(s, x, rows, logits);
    const int d = info_.d_model;
    nn::ArenaScope scope(s.arena);
    float* h = s.arena.alloc(size_t(rows) * d);
    nn::linear(w_.mlm_transform, x, rows, h);
    nn::activate(w_.act, h, rows * d);
    nn::norm(w_.mlm_norm, h, rows, h);
    nn::linear(w_.mlm_decoder, h, rows, logits);
  }

 private:
  ModelInfo info_;
  BertWeights w_;
  WeightStorage storage_;
};

}  // namespace

std::unique_ptr<Model> build_bert_hf(const nlohmann::json& config, const TensorMap& tensors, const BuildOptions& o) {
  ConfigReader r(config, o.source);
  const int d = r.positive_int("hidden_size"), layers = r.positive_int("num_hidden_layers", limits::kMaxLayers);
  const int heads = r.positive_int("num_attention_heads", limits::kMaxHeads), ff = r.positive_int("intermediate_size");
  const int positions = r.positive_int("max_position_embeddings", limits::kMaxContext), types = r.positive_int("type_vocab_size", 2, 1 << 16);
  const float eps = float(r.number("layer_norm_eps", 1e-12));
  AL_CHECK(r.string("position_embedding_type", "absolute") == "absolute", o.source, ": position_embedding_type \"",
           r.string("position_embedding_type"), "\" is not supported (absolute)");
  AL_CHECK(d % heads == 0, o.source, ": hidden_size ", d, " is not divisible by num_attention_heads ", heads);
  // BertModel saves "embeddings.…"; BertForMaskedLM and friends prefix "bert.".
  const std::string p = tensors.has("bert.embeddings.word_embeddings.weight") ? "bert." : "";
  const int vocab = r.has("vocab_size") ? r.positive_int("vocab_size", limits::kMaxVocab)
                                        : leading_dim(tensors, p + "embeddings.word_embeddings.weight", limits::kMaxVocab, o.source);
  Weights w(tensors, o.format);
  BertWeights b;
  b.act = nn::parse_activation(r.string("hidden_act", "gelu"));
  b.word = w.table(p + "embeddings.word_embeddings.weight", vocab, d);
  b.position = w.table(p + "embeddings.position_embeddings.weight", positions, d);
  b.token_type = w.table(p + "embeddings.token_type_embeddings.weight", types, d);
  b.embed_norm = w.layer_norm(p + "embeddings.LayerNorm", d, eps);
  for (int i = 0; i < layers; ++i) {
    const std::string e = p + "encoder.layer." + std::to_string(i) + ".";
    nn::EncoderLayer l;
    l.placement = nn::NormPlacement::Post;
    l.self_attn.d_model = d;
    l.self_attn.shape = nn::split_heads(d, heads, heads);
    l.self_attn.q = w.linear(e + "attention.self.query.weight", e + "attention.self.query.bias", d, d);
    l.self_attn.k = w.linear(e + "attention.self.key.weight", e + "attention.self.key.bias", d, d);
    l.self_attn.v = w.linear(e + "attention.self.value.weight", e + "attention.self.value.bias", d, d);
    l.self_attn.o = w.linear(e + "attention.output.dense.weight", e + "attention.output.dense.bias", d, d);
    l.norm1 = w.layer_norm(e + "attention.output.LayerNorm", d, eps);
    l.ffn.up = w.linear(e + "intermediate.dense.weight", e + "intermediate.dense.bias", ff, d);
    l.ffn.down = w.linear(e + "output.dense.weight", e + "output.dense.bias", d, ff);
    l.ffn.act = b.act;
    l.norm2 = w.layer_norm(e + "output.LayerNorm", d, eps);
    b.layers.push_back(l);
  }
  if (tensors.has("cls.predictions.transform.dense.weight")) {
    b.mlm_transform = w.linear("cls.predictions.transform.dense.weight", "cls.predictions.transform.dense.bias", d, d);
    b.mlm_norm = w.layer_norm("cls.predictions.transform.LayerNorm", d, eps);
    const bool tied = !tensors.has("cls.predictions.decoder.weight");
    b.mlm_decoder.w = w.matrix(tied ? p + "embeddings.word_embeddings.weight" : "cls.predictions.decoder.weight", vocab, d, tied);
    b.mlm_decoder.b = w.vector("cls.predictions.bias", vocab);
  }
  const ModelInfo info =
      make_info("bert", ModelKind::EncoderOnly, {d, layers, heads, heads, ff, vocab, positions}, "learned", w);
  return std::make_unique<Bert>(info, std::move(b), w.release());
}

}  // namespace attnlens::models
