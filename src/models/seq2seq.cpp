// The encoder–decoder Transformer of "Attention Is All You Need" (Vaswani et al. 2017), AttnLens's own format
// (config model_type "attnlens-seq2seq"; tensor names as torch.nn.Transformer's state_dict):
//
//   encoder:  x = E[src]·√d + PE;  N × EncoderLayer (self-attention, FFN);  memory = Norm(x)
//   decoder:  y = E[tgt]·√d + PE;  N × DecoderLayer (masked self-attention, cross-attention to the
//             memory, FFN);  logits = Norm(y) · Eᵀ          (one embedding shared by all three)
//
// PE is the sinusoidal encoding; post-LN as in the paper (norm_first selects pre-LN).
#include <cmath>

#include "core/error.h"
#include "core/limits.h"
#include "models/config.h"
#include "models/encoder_decoder.h"
#include "models/registry.h"

namespace attnlens::models {

namespace {

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

  Weights w(tensors, o.format, o.own_file_bytes);
  EncoderDecoderWeights s;
  s.source_embedding = s.target_embedding = w.table("embed.weight", vocab, d);
  s.positions = AbsolutePositions::Sinusoidal;
  s.max_positions = positions;
  s.embed_scale = r.boolean("scale_embeddings", true) ? std::sqrt(float(d)) : 1.f;
  for (int i = 0; i < enc_layers; ++i) {
    const std::string p = "encoder.layers." + std::to_string(i) + ".";
    nn::EncoderLayer& l = s.encoder.emplace_back();  // (built in place: no copy of a layer)
    l.placement = placement;
    l.self_attn = mha(w, p + "self_attn.", d, heads);
    l.ffn = ffn(w, p, d, ff, act);
    l.norm1 = w.layer_norm(p + "norm1", d, eps);
    l.norm2 = w.layer_norm(p + "norm2", d, eps);
  }
  for (int i = 0; i < dec_layers; ++i) {
    const std::string p = "decoder.layers." + std::to_string(i) + ".";
    nn::DecoderLayer& l = s.decoder.emplace_back();  // (built in place: no copy of a layer)
    l.placement = placement;
    l.self_attn = mha(w, p + "self_attn.", d, heads);
    l.cross_attn = mha(w, p + "multihead_attn.", d, heads);
    l.ffn = ffn(w, p, d, ff, act);
    l.norm1 = w.layer_norm(p + "norm1", d, eps);
    l.norm2 = w.layer_norm(p + "norm2", d, eps);
    l.norm3 = w.layer_norm(p + "norm3", d, eps);
  }
  if (r.boolean("final_layer_norm", true)) {
    s.encoder_norm = w.layer_norm("encoder.norm", d, eps);
    s.decoder_norm = w.layer_norm("decoder.norm", d, eps);
  }
  const bool tied = r.boolean("tie_word_embeddings", true);
  s.lm_head.w = w.matrix(tied ? "embed.weight" : "lm_head.weight", vocab, d, tied);

  Shape shape{d, dec_layers, heads, heads, ff, vocab, positions};
  shape.n_encoder_layers = enc_layers;
  w.check_all_used({}, "AttnLensSeq2Seq");
  const ModelInfo info = make_info("seq2seq", ModelKind::EncoderDecoder, shape, "sinusoidal", w);
  return std::make_unique<EncoderDecoderTransformer>(info, std::move(s), w.release());
}

}  // namespace attnlens::models
