// The encoder–decoder Transformer of "Attention Is All You Need" (Vaswani et al. 2017), AttnLens's own format
// (config model_type "attnlens-seq2seq"; tensor names as torch.nn.Transformer's state_dict):
//
//   encoder:  x = E[src]·√d + PE;  N × EncoderLayer (self-attention, FFN);  memory = Norm(x)
//   decoder:  y = E[tgt]·√d + PE;  N × DecoderLayer (masked self-attention, cross-attention to the
//             memory, FFN);  logits = Norm(y) · Eᵀ          (one embedding shared by all three)
//
// PE is the sinusoidal encoding; post-LN as in the paper (norm_first selects pre-LN).
#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "core/limits.h"
#include "kernels/kernels.h"
#include "models/config.h"
#include "models/registry.h"
#include "nn/layers.h"
#include "nn/positions.h"

namespace attnlens::models {

namespace {

struct Seq2SeqWeights {
  nn::Matrix embedding;  // [vocab, d], shared by source, target and (tied) output
  float embed_scale = 1.f;
  std::vector<nn::EncoderLayer> encoder;
  std::vector<nn::DecoderLayer> decoder;
  nn::Norm encoder_norm, decoder_norm;  // final norms (absent: dim 0)
  nn::Linear lm_head;                   // [vocab, d]
};

class Seq2Seq : public Model {
 public:
  Seq2Seq(ModelInfo info, Seq2SeqWeights w, WeightStorage storage)
      : info_(std::move(info)), w_(std::move(w)), storage_(std::move(storage)) {
    for (size_t l = 0; l < w_.encoder.size(); ++l) nn::check_encoder_layer(w_.encoder[l], "encoder layer " + std::to_string(l));
    for (size_t l = 0; l < w_.decoder.size(); ++l) nn::check_decoder_layer(w_.decoder[l], "decoder layer " + std::to_string(l));
    nn::check_linear(w_.lm_head, info_.d_model, info_.vocab_size, "output projection");
  }
  const ModelInfo& info() const override { return info_; }

  const float* encode(Session& s, const int* tokens, int n, const int*) const override {
    check_tokens(tokens, n, "encode");
    AL_CHECK(n <= info_.context_length, "encode: the source has ", n, " tokens, more than the model's ",
             info_.context_length, " positions");
    const int d = info_.d_model;
    s.reset();
    s.hidden.resize(size_t(n) * d);
    float* x = s.hidden.data();
    embed(tokens, n, 0, x);
    for (int l = 0; l < int(w_.encoder.size()); ++l) {
      poll(s);  // abort() reaches a running pass between layers
      auto [weights, heads] = slot(s, nn::AttentionKind::Encoder, l, n, n, 0);
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

  const float* decode(Session& s, const int* tokens, int n, bool all_logits) const override {
    check_tokens(tokens, n, "decode");
    AL_CHECK(s.memory_length > 0 && s.memory.size() == w_.decoder.size(), "decode: encode the source first");
    const int pos0 = s.position(), d = info_.d_model;
    s.cache.reserve(n);
    nn::ArenaScope scope(s.arena);
    float* y = s.arena.alloc(size_t(n) * d);
    embed(tokens, n, pos0, y);
    for (int l = 0; l < int(w_.decoder.size()); ++l) {
      poll(s);  // abort() reaches a running pass between layers
      auto [self_w, heads] = slot(s, nn::AttentionKind::Self, l, n, pos0 + n, pos0);
      float* cross_w = s.recorder ? s.recorder->slot(nn::AttentionKind::Cross, l, info_.n_heads, n, s.memory_length, pos0)
                                  : nullptr;
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

  // logits = Norm(y) · Eᵀ (the decoder's final norm, if the model has one)
  void unembed(Session& s, const float* y, int rows, float* logits) const override {
    nn::ArenaScope scope(s.arena);
    float* h = s.arena.alloc(size_t(rows) * info_.d_model);
    if (w_.decoder_norm.dim) nn::norm(w_.decoder_norm, y, rows, h);
    else std::copy(y, y + size_t(rows) * info_.d_model, h);
    nn::linear(w_.lm_head, h, rows, logits);
  }

 private:
  // x[n, d] = E[token]·scale + PE(pos0 + i)
  void embed(const int* tokens, int n, int pos0, float* x) const {
    const int d = info_.d_model;
    std::vector<float> pe(d);
    for (int i = 0; i < n; ++i) {
      float* xi = x + size_t(i) * d;
      nn::embedding_row(w_.embedding, tokens[i], xi);
      kernels::scale(xi, w_.embed_scale, d);
      nn::sinusoidal_encoding(pos0 + i, d, pe.data());
      kernels::add(xi, pe.data(), d);
    }
  }

  std::pair<float*, const unsigned char*> slot(Session& s, nn::AttentionKind kind, int layer, int n, int m, int pos0) const {
    if (!s.recorder) return {nullptr, nullptr};
    return {s.recorder->slot(kind, layer, info_.n_heads, n, m, pos0), s.recorder->head_mask(info_.n_heads)};
  }

  ModelInfo info_;
  Seq2SeqWeights w_;
  WeightStorage storage_;
};

// torch.nn.MultiheadAttention's parameters under `prefix`.
nn::MultiHeadAttention mha(Weights& w, const std::string& prefix, int d, int heads) {
  nn::MultiHeadAttention a;
  a.d_model = d;
  a.shape = nn::split_heads(d, heads, heads);
  a.qkv = w.linear(prefix + "in_proj_weight", prefix + "in_proj_bias", 3 * d, d);
  a.o = w.linear(prefix + "out_proj.weight", prefix + "out_proj.bias", d, d);
  return a;
}

nn::FeedForward ffn(Weights& w, const std::string& prefix, int d, int ff, nn::Activation act) {
  nn::FeedForward f;
  f.up = w.linear(prefix + "linear1.weight", prefix + "linear1.bias", ff, d);
  f.down = w.linear(prefix + "linear2.weight", prefix + "linear2.bias", d, ff);
  f.act = act;
  return f;
}

}  // namespace

std::unique_ptr<Model> build_seq2seq_hf(const nlohmann::json& config, const TensorMap& tensors, const BuildOptions& o) {
  ConfigReader r(config, o.source);
  const int d = r.positive_int("d_model"), heads = r.positive_int("n_heads", limits::kMaxHeads), ff = r.positive_int("d_ff");
  const int enc_layers = r.positive_int("encoder_layers", limits::kMaxLayers), dec_layers = r.positive_int("decoder_layers", limits::kMaxLayers);
  const int vocab = r.positive_int("vocab_size", limits::kMaxVocab), positions = r.positive_int("max_position_embeddings", limits::kMaxContext);
  const float eps = float(r.number("layer_norm_eps", 1e-5));
  const nn::Activation act = nn::parse_activation(r.string("activation", "relu"));
  const auto placement = r.boolean("norm_first", false) ? nn::NormPlacement::Pre : nn::NormPlacement::Post;
  AL_CHECK(r.string("position_encoding", "sinusoidal") == "sinusoidal", o.source, ": position_encoding \"",
           r.string("position_encoding"), "\" is not supported (sinusoidal)");
  AL_CHECK(d % heads == 0, o.source, ": d_model ", d, " is not divisible by n_heads ", heads);

  Weights w(tensors, o.format);
  Seq2SeqWeights s;
  s.embedding = w.table("embed.weight", vocab, d);
  s.embed_scale = r.boolean("scale_embeddings", true) ? std::sqrt(float(d)) : 1.f;
  for (int i = 0; i < enc_layers; ++i) {
    const std::string p = "encoder.layers." + std::to_string(i) + ".";
    nn::EncoderLayer l;
    l.placement = placement;
    l.self_attn = mha(w, p + "self_attn.", d, heads);
    l.ffn = ffn(w, p, d, ff, act);
    l.norm1 = w.layer_norm(p + "norm1", d, eps);
    l.norm2 = w.layer_norm(p + "norm2", d, eps);
    s.encoder.push_back(l);
  }
  for (int i = 0; i < dec_layers; ++i) {
    const std::string p = "decoder.layers." + std::to_string(i) + ".";
    nn::DecoderLayer l;
    l.placement = placement;
    l.self_attn = mha(w, p + "self_attn.", d, heads);
    l.cross_attn = mha(w, p + "multihead_attn.", d, heads);
    l.ffn = ffn(w, p, d, ff, act);
    l.norm1 = w.layer_norm(p + "norm1", d, eps);
    l.norm2 = w.layer_norm(p + "norm2", d, eps);
    l.norm3 = w.layer_norm(p + "norm3", d, eps);
    s.decoder.push_back(l);
  }
  if (r.boolean("final_layer_norm", true)) {
    s.encoder_norm = w.layer_norm("encoder.norm", d, eps);
    s.decoder_norm = w.layer_norm("decoder.norm", d, eps);
  }
  const bool tied = r.boolean("tie_word_embeddings", true);
  s.lm_head.w = w.matrix(tied ? "embed.weight" : "lm_head.weight", vocab, d, tied);

  Shape shape{d, dec_layers, heads, heads, ff, vocab, positions};
  shape.n_encoder_layers = enc_layers;
  const ModelInfo info = make_info("seq2seq", ModelKind::EncoderDecoder, shape, "sinusoidal", w);
  return std::make_unique<Seq2Seq>(info, std::move(s), w.release());
}

}  // namespace attnlens::models
