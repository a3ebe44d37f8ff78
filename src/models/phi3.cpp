// Phi-3 / Phi-3.5 / Phi-4-mini (Abdin et al. 2024): Llama's block with fused projections — one
// qkv_proj [Q; K; V] and one gate_up_proj [gate; up] (GGUF: attn_qkv and an ffn_up of 2·d_ff rows),
// read as views of the one matrix — RoPE on half-split pairs, optionally partial
// (partial_rotary_factor), and LongRoPE for the long-context models: per-frequency short / long
// factors and an attention factor; the long ones are used by sessions longer than the original
// context (llama.cpp's rule, by the context size asked for). A sliding window in the configuration
// is applied (llama.cpp currently turns Phi's off; within the window both agree).
#include <cmath>

#include "core/error.h"
#include "models/decoder_config.h"
#include "models/decoder_only.h"
#include "models/registry.h"

namespace attnlens::models {

namespace {

DecoderSpec phi3_spec() {
  DecoderSpec s;
  s.architecture = "phi3";
  s.norm = nn::NormKind::RMSNorm;
  s.ffn = FfnKind::Gated;
  s.act = nn::Activation::SiLU;
  s.fused_qkv = true;
  s.fused_gate_up = true;
  nn::RopeParams rope;
  rope.style = nn::RopeStyle::Half;
  s.ropes = {rope};
  return s;
}

void set_window(DecoderSpec& s, int window) {
  if (window > 0) s.layer_attention.assign(size_t(s.n_layers), LayerAttention{window, 0});
}

}  // namespace

std::unique_ptr<Model> build_phi3_gguf(const nlohmann::json& meta, const TensorMap& tensors, const BuildOptions& o) {
  ConfigReader r(meta, o.source);
  Weights w(tensors, o.format, o.own_file_bytes);
  DecoderSpec s = phi3_spec();
  s.fused_qkv = false;  // GGUF: fused or separate, whichever the file holds
  s.gguf_flexible = true;
  read_gguf_hparams(r, "phi3", w, s, /*allow_longrope=*/true);
  set_window(s, gguf_sliding_window(r, "phi3"));
  s.tied_output = !w.has("output.weight");
  check_gguf_keys_used(r, "phi3");
  return build_decoder_only(s, gguf_decoder_names(), w, o);
}

std::unique_ptr<Model> build_phi3_hf(const nlohmann::json& config, const TensorMap& tensors, const BuildOptions& o) {
  ConfigReader r(config, o.source);
  Weights w(tensors, o.format, o.own_file_bytes);
  DecoderSpec s = phi3_spec();
  read_hf_sizes(r, tensors, "model.embed_tokens.weight", s);
  s.norm_eps = float(r.number("rms_norm_eps", 1e-5));
  s.act = read_hf_activation(r, "hidden_act", "silu", {nn::Activation::SiLU});
  require_hf_bool(r, "attention_bias", false, "Phi-3 has no attention biases");
  nn::RopeParams& rope = s.ropes[0];
  rope.head_dim = s.head_dim;
  const double partial = r.number("partial_rotary_factor", 1.0);
  AL_CHECK(partial > 0 && partial <= 1, o.source, ": partial_rotary_factor ", partial, " must be in (0, 1]");
  rope.rot_dims = int(partial * s.head_dim) / 2 * 2;
  AL_CHECK(rope.rot_dims >= 2, o.source, ": partial_rotary_factor ", partial, " rotates no dimension");
  LongRope longrope;
  read_hf_rope(r, rope, s.context, &longrope);
  if (longrope.original_context > 0) {
    s.long_ropes = {longrope.params};
    s.long_context = longrope.original_context;
  } else {
    r.mark_read("original_max_position_embeddings");  // informational without LongRoPE
  }
  if (r.has("sliding_window")) set_window(s, r.positive_int("sliding_window", 1 << 30));
  s.tied_output = !w.has("lm_head.weight");
  if (s.tied_output && !r.boolean("tie_word_embeddings", false)) tensors.get("lm_head.weight");
  DecoderNames names = hf_llama_names();
  for (auto& [role_name, name] : names.roles)  // fused [gate; up]
    if (role_name == role::ffn_up) name = "mlp.gate_up_proj";
  for (int i = 0; i < s.n_layers; ++i) accept_inv_freq(w, names.layer(i, "self_attn.rotary_emb.inv_freq"), rope);
  return build_decoder_only(s, names, w, o);
}

}  // namespace attnlens::models
