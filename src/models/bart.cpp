// BART (Lewis et al. 2020) and Marian (Junczys-Dowmunt et al. 2018; the opus-mt translation models),
// Hugging Face BartForConditionalGeneration / MarianMTModel, on the shared encoder–decoder
// transformer (encoder_decoder.h). One naming, two sets of flags:
//
//                       BART                                Marian
//   positions           learned, row = position + 2         sinusoidal, sines then cosines (the table
//                                                           saved in the file when present)
//   embedding scale     √d_model if scale_embedding         √d_model (scale_embedding, default true)
//   embedding norm      layernorm_embedding                 none
//   final norms         encoder/decoder.layer_norm with     none
//                       add_final_layer_norm
//   vocabularies        shared                              shared, or separate source / target
//                                                           (share_encoder_decoder_embeddings false)
// Both: post-LN layers (self-attention, [cross-attention,] FFN fc1 → act → fc2, each followed by
// its LayerNorm), q/k/v/out projections with biases, head tied to the (target) embedding, plus
// final_logits_bias.
#include <cmath>

#include "core/error.h"
#include "core/limits.h"
#include "models/config.h"
#include "models/encoder_decoder.h"
#include "models/registry.h"

namespace attnlens::models {

namespace {

struct BartConfig {
  std::string arch;  // "bart", "marian"
  int d, enc_layers, dec_layers, heads, enc_ff, dec_ff, vocab, target_vocab, positions;
  nn::Activation act;
  bool scale_embedding, shared_vocab, tied, final_norms;
  float eps = 1e-5f;  // torch.nn.LayerNorm's default: BART and Marian set no other
};

// "<p><name>.weight" + ".bias" as a linear layer [out, in], or as a LayerNorm.
nn::Linear linear(Weights& w, const std::string& p, const char* name, int out, int in) {
  const std::string n = p + name;
  return w.linear(n + ".weight", n + ".bias", out, in);
}

nn::Norm norm(Weights& w, const std::string& p, const char* name, const BartConfig& c) {
  return w.layer_norm(p + name, c.d, c.eps);
}

nn::MultiHeadAttention attention(Weights& w, const std::string& p, const BartConfig& c) {
  nn::MultiHeadAttention a;
  a.d_model = c.d;
  a.shape = nn::split_heads(c.d, c.heads, c.heads);
  a.q = linear(w, p, "q_proj", c.d, c.d);
  a.k = linear(w, p, "k_proj", c.d, c.d);
  a.v = linear(w, p, "v_proj", c.d, c.d);
  a.o = linear(w, p, "out_proj", c.d, c.d);
  return a;
}

nn::FeedForward feed_forward(Weights& w, const std::string& p, int d, int ff, nn::Activation act) {
  nn::FeedForward f;
  f.up = linear(w, p, "fc1", ff, d);
  f.down = linear(w, p, "fc2", d, ff);
  f.act = act;
  return f;
}

std::unique_ptr<Model> build(const BartConfig& c, const TensorMap& tensors, const BuildOptions& o) {
  // BartForConditionalGeneration / MarianMTModel save "model.…"; BartModel / MarianModel do not.
  const std::string m = tensors.has("model.encoder.layers.0.fc1.weight") ? "model." : "";
  const std::string enc = m + "encoder.", dec = m + "decoder.";
  Weights w(tensors, o.format, o.own_file_bytes);
  EncoderDecoderWeights s;
  std::vector<std::string> allowed;  // tied copies of an embedding, saved anyway
  if (c.shared_vocab) {
    s.source_embedding = s.target_embedding = w.table(m + "shared.weight", c.vocab, c.d);
    allowed = {enc + "embed_tokens.weight", dec + "embed_tokens.weight"};
  } else {
    s.source_embedding = w.table(enc + "embed_tokens.weight", c.vocab, c.d);
    s.target_embedding = w.table(dec + "embed_tokens.weight", c.target_vocab, c.d);
  }
  s.embed_scale = c.scale_embedding ? std::sqrt(float(c.d)) : 1.f;
  s.max_positions = c.positions;
  if (c.arch == "bart") {
    s.positions = AbsolutePositions::Learned;
    s.position_offset = 2;  // BartLearnedPositionalEmbedding: rows 0 and 1 are never used
    s.encoder_positions = w.table(enc + "embed_positions.weight", c.positions + 2, c.d);
    s.decoder_positions = w.table(dec + "embed_positions.weight", c.positions + 2, c.d);
    s.encoder_embed_norm = norm(w, enc, "layernorm_embedding", c);
    s.decoder_embed_norm = norm(w, dec, "layernorm_embedding", c);
  } else if (tensors.has(enc + "embed_positions.weight")) {  // Marian's sinusoids, as saved
    s.positions = AbsolutePositions::Learned;
    s.encoder_positions = w.table(enc + "embed_positions.weight", c.positions, c.d);
    s.decoder_positions = w.table(dec + "embed_positions.weight", c.positions, c.d);
  } else {
    s.positions = AbsolutePositions::SinusoidalHalves;
  }
  for (int i = 0; i < c.enc_layers; ++i) {
    const std::string p = enc + "layers." + std::to_string(i) + ".";
    nn::EncoderLayer& l = s.encoder.emplace_back();  // (built in place: no copy of a layer)
    l.placement = nn::NormPlacement::Post;
    l.self_attn = attention(w, p + "self_attn.", c);
    l.norm1 = norm(w, p, "self_attn_layer_norm", c);
    l.ffn = feed_forward(w, p, c.d, c.enc_ff, c.act);
    l.norm2 = norm(w, p, "final_layer_norm", c);
  }
  for (int i = 0; i < c.dec_layers; ++i) {
    const std::string p = dec + "layers." + std::to_string(i) + ".";
    nn::DecoderLayer& l = s.decoder.emplace_back();  // (built in place: no copy of a layer)
    l.placement = nn::NormPlacement::Post;
    l.self_attn = attention(w, p + "self_attn.", c);
    l.norm1 = norm(w, p, "self_attn_layer_norm", c);
    l.cross_attn = attention(w, p + "encoder_attn.", c);
    l.norm2 = norm(w, p, "encoder_attn_layer_norm", c);
    l.ffn = feed_forward(w, p, c.d, c.dec_ff, c.act);
    l.norm3 = norm(w, p, "final_layer_norm", c);
  }
  if (c.final_norms) {
    s.encoder_norm = norm(w, enc, "layer_norm", c);
    s.decoder_norm = norm(w, dec, "layer_norm", c);
  }
  const std::string target_embed = c.shared_vocab ? m + "shared.weight" : dec + "embed_tokens.weight";
  AL_CHECK(c.tied || tensors.has("lm_head.weight"), o.source, ": tie_word_embeddings is false but lm_head.weight is missing");
  s.lm_head.w = w.matrix(c.tied ? target_embed : "lm_head.weight", c.target_vocab, c.d, c.tied);
  if (c.tied) allowed.push_back("lm_head.weight");  // saved anyway: the embedding again
  if (tensors.has("final_logits_bias")) s.lm_head.b = w.vector("final_logits_bias", c.target_vocab);
  w.check_all_used(allowed, c.arch == "bart" ? "BART" : "Marian");

  Shape shape{c.d, c.dec_layers, c.heads, c.heads, c.dec_ff, c.target_vocab, c.positions};
  shape.n_encoder_layers = c.enc_layers;
  shape.source_vocab_size = c.vocab;
  const ModelInfo info = make_info(c.arch, ModelKind::EncoderDecoder, shape,
                                   c.arch == "bart" ? "learned" : "sinusoidal", w);
  return std::make_unique<EncoderDecoderTransformer>(info, std::move(s), w.release());
}

BartConfig read_config(const ConfigReader& r, const std::string& arch) {
  BartConfig c;
  c.arch = arch;
  c.d = r.positive_int("d_model");
  c.enc_layers = r.positive_int("encoder_layers", limits::kMaxLayers);
  c.dec_layers = r.positive_int("decoder_layers", limits::kMaxLayers);
  c.heads = r.positive_int("encoder_attention_heads", limits::kMaxHeads);
  AL_CHECK(r.positive_int("decoder_attention_heads", c.heads, limits::kMaxHeads) == c.heads, r.source(),
           ": encoder_attention_heads and decoder_attention_heads differ (", c.heads, " vs ",
           r.positive_int("decoder_attention_heads", limits::kMaxHeads), "): not supported");
  c.enc_ff = r.positive_int("encoder_ffn_dim");
  c.dec_ff = r.positive_int("decoder_ffn_dim");
  c.vocab = r.positive_int("vocab_size", limits::kMaxVocab);
  c.positions = r.positive_int("max_position_embeddings", limits::kMaxContext);
  c.act = nn::parse_activation(r.string("activation_function", "gelu"));
  c.tied = r.boolean("tie_word_embeddings", true);
  AL_CHECK(c.d % c.heads == 0, r.source(), ": d_model ", c.d, " is not divisible by ", c.heads, " attention heads");
  return c;
}

}  // namespace

std::unique_ptr<Model> build_bart_hf(const nlohmann::json& config, const TensorMap& tensors, const BuildOptions& o) {
  ConfigReader r(config, o.source);
  BartConfig c = read_config(r, "bart");
  c.scale_embedding = r.boolean("scale_embedding", false);
  c.shared_vocab = true;
  c.target_vocab = c.vocab;
  c.final_norms = r.boolean("add_final_layer_norm", false);
  AL_CHECK(!r.boolean("normalize_before", false), o.source, ": normalize_before (pre-LN BART, as mBART) is not supported");
  return build(c, tensors, o);
}

std::unique_ptr<Model> build_marian_hf(const nlohmann::json& config, const TensorMap& tensors, const BuildOptions& o) {
  ConfigReader r(config, o.source);
  BartConfig c = read_config(r, "marian");
  // MarianConfig defaults; its configs also carry BART-era fields (normalize_before, static_position_
  // embeddings, …) that Hugging Face's MarianMTModel does not read, and neither do we.
  c.scale_embedding = r.boolean("scale_embedding", true);
  c.shared_vocab = r.boolean("share_encoder_decoder_embeddings", true);
  c.target_vocab = c.shared_vocab ? c.vocab : r.positive_int("decoder_vocab_size", c.vocab, limits::kMaxVocab);
  c.final_norms = false;
  return build(c, tensors, o);
}

}  // namespace attnlens::models
