// Llama (Touvron et al. 2023; Llama 3.x; SmolLM2) and Mistral (Jiang et al. 2023): a pre-norm
// decoder-only transformer with RMSNorm, RoPE on q and k, grouped-query attention without biases and
// a SwiGLU FFN, FFN(x) = W2 (silu(W1 x) ⊙ W3 x). Llama 3 adds a frequency-dependent RoPE scaling
// (rope_scaling type "llama3"; GGUF: the rope_freqs tensor), Mistral a sliding window.
// Two tensor namings reach it: GGUF's (also produced by the llama2.c reader; RoPE on adjacent pairs,
// because llama.cpp's converter permutes Q/K to that convention) and Hugging Face's
// LlamaForCausalLM / MistralForCausalLM (RoPE "rotate_half").
#include "core/error.h"
#include "models/decoder_config.h"
#include "models/decoder_only.h"
#include "models/registry.h"

namespace attnlens::models {

namespace {

DecoderSpec llama_spec(const std::string& architecture) {
  DecoderSpec s;
  s.architecture = architecture;
  s.norm = nn::NormKind::RMSNorm;
  s.ffn = FfnKind::Gated;
  s.act = nn::Activation::SiLU;
  return s;
}

void set_window(DecoderSpec& s, int window) {
  if (window > 0) s.layer_attention.assign(size_t(s.n_layers), LayerAttention{window, 0});
}

}  // namespace

std::unique_ptr<Model> build_llama_gguf(const nlohmann::json& meta, const TensorMap& tensors, const BuildOptions& o) {
  ConfigReader r(meta, o.source);
  Weights w(tensors, o.format, o.own_file_bytes);
  DecoderSpec s = llama_spec("llama");
  nn::RopeParams rope;
  const std::string style = r.string("attnlens.rope_style", "adjacent");  // our own llama2.c conversions
  AL_CHECK(style == "adjacent" || style == "half", o.source, ": unknown attnlens.rope_style \"", style, "\"");
  rope.style = style == "half" ? nn::RopeStyle::Half : nn::RopeStyle::Adjacent;
  s.ropes = {rope};
  s.gguf_flexible = true;
  read_gguf_hparams(r, "llama", w, s);
  // llama.cpp's llama architecture has no sliding window; a file that names one gets it applied.
  set_window(s, gguf_sliding_window(r, "llama"));
  s.tied_output = !w.has("output.weight");
  check_gguf_keys_used(r, "llama");
  return build_decoder_only(s, gguf_decoder_names(), w, o);
}

std::unique_ptr<Model> build_llama_hf(const nlohmann::json& config, const TensorMap& tensors, const BuildOptions& o) {
  ConfigReader r(config, o.source);
  const std::string type = r.string("model_type", "llama");
  AL_CHECK(type == "llama" || type == "mistral", o.source, ": model_type \"", type, "\" is not a Llama or Mistral model");
  Weights w(tensors, o.format, o.own_file_bytes);
  DecoderSpec s = llama_spec(type);
  read_hf_sizes(r, tensors, "model.embed_tokens.weight", s);
  s.norm_eps = float(r.number("rms_norm_eps", 1e-6));
  s.act = read_hf_activation(r, "hidden_act", "silu", {nn::Activation::SiLU});
  // LlamaAttention puts attention_bias on q, k, v and o alike; mlp_bias on the three FFN matrices.
  s.qkv_bias = s.o_bias = r.boolean("attention_bias", false);
  s.ffn_bias = r.boolean("mlp_bias", false);
  nn::RopeParams rope;
  rope.style = nn::RopeStyle::Half;
  rope.head_dim = s.head_dim;
  read_hf_rope(r, rope, s.context);
  s.ropes = {rope};
  if (r.has("sliding_window")) set_window(s, r.positive_int("sliding_window", 1 << 30));
  const DecoderNames names = hf_llama_names();
  // A tied checkpoint may still store lm_head.weight (then it is used); an untied one must.
  s.tied_output = !w.has("lm_head.weight");
  if (s.tied_output && !r.boolean("tie_word_embeddings", false))
    tensors.get("lm_head.weight");  // the error names the missing tensor
  for (int i = 0; i < s.n_layers; ++i) accept_inv_freq(w, names.layer(i, "self_attn.rotary_emb.inv_freq"), rope);
  return build_decoder_only(s, names, w, o);
}

}  // namespace attnlens::models
