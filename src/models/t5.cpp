// T5 (Raffel et al. 2020) and its successors T5 v1.1 / Flan-T5, mT5 and UMT5, on the shared
// encoder–decoder transformer (encoder_decoder.h):
//   * no absolute positions: a learned bias per (bucket of k − q, head) added to the self-attention
//     scores, from layer 0's table for the whole stack (UMT5: a table per layer); buckets are
//     bidirectional in the encoder and causal in the decoder; cross-attention has none;
//   * scores are not scaled by 1/√d_k (T5 folds that into its initialisation);
//   * pre-LN with T5's LayerNorm, which is an RMSNorm without bias; final norms on both stacks;
//   * FFN: ReLU (T5), or gated GELU (tanh) for "gated-gelu" (v1.1, Flan-T5, mT5): act(wi_0 x) ⊙ wi_1 x;
//   * a head tied to the shared embedding scales the decoder output by d_model^-½ first (untied
//     heads, as in v1.1 / Flan-T5, do not). Hugging Face's T5 does so; llama.cpp's does not scale a
//     GGUF without output.weight, so its logits of such a file are √d_model times ours (same argmax);
//     we follow the model's definition;
//   * heads have their own width d_kv: n_heads·d_kv need not equal d_model (Flan-T5-small: 6 × 64 vs 512).
// Two namings: Hugging Face T5ForConditionalGeneration and llama.cpp's GGUF "t5" (convert_hf_to_gguf.py).
#include <cmath>
#include <type_traits>

#include "core/error.h"
#include "core/limits.h"
#include "models/config.h"
#include "models/decoder_config.h"
#include "models/encoder_decoder.h"
#include "models/registry.h"

namespace attnlens::models {

namespace {

struct T5Config {
  int d_model, d_kv, d_ff, heads, enc_layers, dec_layers, vocab, buckets, max_distance, context;
  float eps;
  bool gated;
  nn::Activation act;
  bool tied;  // head tied to the embedding (scaled by d_model^-½); decided by the names below when absent
};

// Where each tensor lives: stack "enc" / "dec", layer i, role (GGUF's role names).
struct T5Names {
  bool hf;
  std::vector<std::string> embed;  // candidates, the first present is the shared embedding
  std::string output, enc_norm, dec_norm;
  std::vector<std::string> allowed_unused;  // tied duplicates of the embedding

  std::string layer(const char* stack, int i, const std::string& role) const {
    const bool enc = stack[0] == 'e';
    if (!hf) return std::string(stack) + ".blk." + std::to_string(i) + "." + role + ".weight";
    // GGUF role → Hugging Face name inside {encoder|decoder}.block.{i}
    static const char* const map[][2] = {
        {"attn_norm", "layer.0.layer_norm"},          {"attn_q", "layer.0.SelfAttention.q"},
        {"attn_k", "layer.0.SelfAttention.k"},        {"attn_v", "layer.0.SelfAttention.v"},
        {"attn_o", "layer.0.SelfAttention.o"},        {"attn_rel_b", "layer.0.SelfAttention.relative_attention_bias"},
        {"cross_attn_norm", "layer.1.layer_norm"},    {"cross_attn_q", "layer.1.EncDecAttention.q"},
        {"cross_attn_k", "layer.1.EncDecAttention.k"}, {"cross_attn_v", "layer.1.EncDecAttention.v"},
        {"cross_attn_o", "layer.1.EncDecAttention.o"}, {"ffn_norm", "layer_norm"},
        {"ffn_up", "DenseReluDense.wi"},              {"ffn_up_gated", "DenseReluDense.wi_1"},
        {"ffn_gate", "DenseReluDense.wi_0"},          {"ffn_down", "DenseReluDense.wo"}};
    std::string suffix;
    for (const auto& m : map)
      if (role == m[0]) suffix = m[1];
    if (role.compare(0, 4, "ffn_") == 0) suffix = (enc ? "layer.1." : "layer.2.") + suffix;  // the FFN sub-layer
    return (enc ? "encoder.block." : "decoder.block.") + std::to_string(i) + "." + suffix + ".weight";
  }
};

T5Names gguf_names() {
  return {false, {"token_embd.weight"}, "output.weight", "enc.output_norm.weight", "dec.output_norm.weight", {}};
}

T5Names hf_names() {
  return {true,
          {"shared.weight", "encoder.embed_tokens.weight", "decoder.embed_tokens.weight"},
          "lm_head.weight",
          "encoder.final_layer_norm.weight",
          "decoder.final_layer_norm.weight",
          {"shared.weight", "encoder.embed_tokens.weight", "decoder.embed_tokens.weight"}};
}

// One layer's tensor names: role → name.
struct LayerNames {
  const T5Names& names;
  const char* stack;
  int i;
  std::string operator()(const std::string& role) const { return names.layer(stack, i, role); }
};

nn::MultiHeadAttention attention(Weights& w, const LayerNames& name, const std::string& p, const T5Config& c) {
  const int inner = c.heads * c.d_kv;
  nn::MultiHeadAttention a;
  a.d_model = c.d_model;
  a.shape = nn::AttentionShape{c.heads, c.heads, c.d_kv, 1.f};  // unscaled scores
  a.q = w.linear(name(p + "q"), "", inner, c.d_model);
  a.k = w.linear(name(p + "k"), "", inner, c.d_model);
  a.v = w.linear(name(p + "v"), "", inner, c.d_model);
  a.o = w.linear(name(p + "o"), "", c.d_model, inner);
  return a;
}

nn::FeedForward feed_forward(Weights& w, const LayerNames& name, const T5Config& c, bool hf) {
  nn::FeedForward f;
  f.act = c.act;
  if (c.gated) {
    f.gate = w.linear(name("ffn_gate"), "", c.d_ff, c.d_model);
    f.up = w.linear(name(hf ? "ffn_up_gated" : "ffn_up"), "", c.d_ff, c.d_model);
  } else {
    f.up = w.linear(name("ffn_up"), "", c.d_ff, c.d_model);
  }
  f.down = w.linear(name("ffn_down"), "", c.d_model, c.d_ff);
  return f;
}

RelativeBiasTable bias_table(Weights& w, const std::string& name, const T5Config& c) {
  if (!w.has(name)) return {};
  return RelativeBiasTable{w.f32_table(name, c.buckets, c.heads), c.buckets, c.max_distance};  // [buckets][heads]
}

// One T5 block, pre-norm: self-attention, in the decoder cross-attention, then the feed-forward
// network; returns its relative position bias table (empty: the block uses layer 0's).
template <class Layer>
RelativeBiasTable block(Weights& w, const LayerNames& name, const T5Config& c, bool hf, Layer& l) {
  l.placement = nn::NormPlacement::Pre;
  l.norm1 = w.rms_norm(name("attn_norm"), c.d_model, c.eps);
  l.self_attn = attention(w, name, "attn_", c);
  if constexpr (std::is_same_v<Layer, nn::DecoderLayer>) {
    l.norm2 = w.rms_norm(name("cross_attn_norm"), c.d_model, c.eps);
    l.cross_attn = attention(w, name, "cross_attn_", c);
    l.norm3 = w.rms_norm(name("ffn_norm"), c.d_model, c.eps);
  } else {
    l.norm2 = w.rms_norm(name("ffn_norm"), c.d_model, c.eps);
  }
  l.ffn = feed_forward(w, name, c, hf);
  return bias_table(w, name("attn_rel_b"), c);
}

std::unique_ptr<Model> build(const T5Config& c, const T5Names& names, const TensorMap& tensors, const BuildOptions& o,
                             bool hf) {
  Weights weights(tensors, o.format, o.own_file_bytes);
  EncoderDecoderWeights s;
  std::string embed;
  for (const auto& e : names.embed)
    if (embed.empty() && tensors.has(e)) embed = e;
  AL_CHECK(!embed.empty(), o.source, ": the shared embedding is missing (", names.embed[0], ")");
  s.source_embedding = s.target_embedding = weights.table(embed, c.vocab, c.d_model);
  s.positions = AbsolutePositions::None;
  // (layers are built in place: no copy of a layer)
  for (int i = 0; i < c.enc_layers; ++i)
    s.encoder_bias.push_back(block(weights, LayerNames{names, "enc", i}, c, hf, s.encoder.emplace_back()));
  for (int i = 0; i < c.dec_layers; ++i)
    s.decoder_bias.push_back(block(weights, LayerNames{names, "dec", i}, c, hf, s.decoder.emplace_back()));
  AL_CHECK(s.encoder_bias[0].table, o.source, ": ", names.layer("enc", 0, "attn_rel_b"), " is missing");
  AL_CHECK(s.decoder_bias[0].table, o.source, ": ", names.layer("dec", 0, "attn_rel_b"), " is missing");
  s.encoder_norm = weights.rms_norm(names.enc_norm, c.d_model, c.eps);
  s.decoder_norm = weights.rms_norm(names.dec_norm, c.d_model, c.eps);
  const bool untied_in_file = tensors.has(names.output);
  AL_CHECK(untied_in_file || c.tied, o.source, ": tie_word_embeddings is false but ", names.output, " is missing");
  s.lm_head.w = weights.matrix(c.tied ? embed : names.output, c.vocab, c.d_model, c.tied);
  if (c.tied) s.output_scale = float(std::pow(double(c.d_model), -0.5));
  std::vector<std::string> allowed = names.allowed_unused;
  if (c.tied) allowed.push_back(names.output);  // a tied head saved anyway is the embedding again
  weights.check_all_used(allowed, "T5");

  Shape shape{c.d_model, c.dec_layers, c.heads, c.heads, c.d_ff, c.vocab, c.context};
  shape.n_encoder_layers = c.enc_layers;
  shape.head_dim = c.d_kv;
  const ModelInfo info = make_info("t5", ModelKind::EncoderDecoder, shape, "relative", weights);
  return std::make_unique<EncoderDecoderTransformer>(info, std::move(s), weights.release());
}

}  // namespace

std::unique_ptr<Model> build_t5_hf(const nlohmann::json& config, const TensorMap& tensors, const BuildOptions& o) {
  ConfigReader r(config, o.source);
  T5Config c;
  c.d_model = r.positive_int("d_model");
  c.d_kv = r.positive_int("d_kv", 4096);
  c.d_ff = r.positive_int("d_ff");
  c.heads = r.positive_int("num_heads", limits::kMaxHeads);
  c.enc_layers = r.positive_int("num_layers", limits::kMaxLayers);
  c.dec_layers = r.positive_int("num_decoder_layers", c.enc_layers, limits::kMaxLayers);
  c.vocab = r.positive_int("vocab_size", limits::kMaxVocab);
  c.buckets = r.positive_int("relative_attention_num_buckets", 32, 4096);
  c.max_distance = r.positive_int("relative_attention_max_distance", 128, limits::kMaxContext);
  c.context = r.positive_int("n_positions", 512, limits::kMaxContext);
  c.eps = float(r.number("layer_norm_epsilon", 1e-6));
  // Hugging Face's T5Config: "gated-<act>" or "<act>"; "gated-gelu" means the tanh GELU.
  const std::string proj = r.string("feed_forward_proj", "relu");
  c.gated = proj.rfind("gated-", 0) == 0;
  const std::string act = c.gated ? proj.substr(6) : proj;
  AL_CHECK(act.find('-') == std::string::npos, o.source, ": feed_forward_proj \"", proj,
           "\" is not of the form \"gated-<act>\" or \"<act>\"");
  c.act = proj == "gated-gelu" ? nn::Activation::GeluTanh : nn::parse_activation(act);
  c.tied = r.boolean("tie_word_embeddings", true);
  AL_CHECK(r.boolean("is_encoder_decoder", true), o.source, ": is_encoder_decoder is false (a T5 encoder alone is not supported)");
  return build(c, hf_names(), tensors, o, true);
}

std::unique_ptr<Model> build_t5_gguf(const nlohmann::json& meta, const TensorMap& tensors, const BuildOptions& o) {
  ConfigReader r(meta, o.source);
  T5Config c;
  c.d_model = r.positive_int("t5.embedding_length");
  c.d_ff = r.positive_int("t5.feed_forward_length");
  c.heads = r.positive_int("t5.attention.head_count", limits::kMaxHeads);
  c.d_kv = r.positive_int("t5.attention.key_length", c.d_model / c.heads, 4096);
  AL_CHECK(r.positive_int("t5.attention.value_length", c.d_kv, 4096) == c.d_kv, o.source,
           ": t5.attention.value_length differs from key_length");
  c.enc_layers = r.positive_int("t5.block_count", limits::kMaxLayers);
  c.dec_layers = r.positive_int("t5.decoder_block_count", c.enc_layers, limits::kMaxLayers);
  c.buckets = r.positive_int("t5.attention.relative_buckets_count", 4096);
  c.max_distance = 128;  // llama.cpp's value for every T5 (llama_relative_position_bucket)
  c.context = r.positive_int("t5.context_length", 512, limits::kMaxContext);
  c.eps = float(r.number("t5.attention.layer_norm_rms_epsilon", r.number("t5.attention.layer_norm_epsilon", 1e-6)));
  c.vocab = leading_dim(tensors, "token_embd.weight", limits::kMaxVocab, o.source);
  c.gated = tensors.has("enc.blk.0.ffn_gate.weight");  // llama.cpp: gated → GELU, else ReLU
  c.act = c.gated ? nn::Activation::GeluTanh : nn::Activation::ReLU;
  c.tied = !tensors.has("output.weight");
  r.number("t5.decoder_start_token_id", 0);  // (the runtime reads it: runtime/loader.cpp)
  check_gguf_keys_used(r, "t5");
  return build(c, gguf_names(), tensors, o, false);
}

}  // namespace attnlens::models
