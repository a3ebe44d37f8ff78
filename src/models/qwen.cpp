// Qwen2 / Qwen2.5 (Yang et al. 2024) and Qwen3 (2025): Llama's block with
//   Qwen2: biases on the q, k and v projections (none on o);
//   Qwen3: no biases, and a per-head RMSNorm of q and k before RoPE (head_dim given explicitly).
// RoPE rotates half-split pairs in both namings (llama.cpp's "neox" rope for these architectures:
// its converter does not permute Q/K). Qwen2's sliding window (use_sliding_window, from layer
// max_window_layers on) is applied when a configuration turns it on.
#include "core/error.h"
#include "core/json.h"
#include "core/limits.h"
#include "models/decoder_config.h"
#include "models/decoder_only.h"
#include "models/registry.h"

namespace attnlens::models {

namespace {

DecoderSpec qwen_spec(const std::string& arch) {
  DecoderSpec s;
  s.architecture = arch;
  s.norm = nn::NormKind::RMSNorm;
  s.ffn = FfnKind::Gated;
  s.act = nn::Activation::SiLU;
  s.qkv_bias = arch == "qwen2";
  s.qk_norm = arch == "qwen3";
  nn::RopeParams rope;
  rope.style = nn::RopeStyle::Half;
  s.ropes = {rope};
  return s;
}

// Qwen2's window: layer_types (transformers ≥ 4.53) or use_sliding_window + max_window_layers.
void read_qwen_window(const ConfigReader& r, DecoderSpec& s) {
  const bool on = r.boolean("use_sliding_window", false);
  if (r.has("layer_types")) {
    const nlohmann::json& types = r.json().at("layer_types");
    r.mark_read("layer_types");
    AL_CHECK(types.is_array() && int(types.size()) == s.n_layers, r.source(), ": \"layer_types\" must list ",
             s.n_layers, " layers");
    bool any = false;
    for (const auto& t : types) {
      AL_CHECK(t == "full_attention" || t == "sliding_attention", r.source(), ": layer_types entry ", json_brief(t),
               " is not supported (full_attention, sliding_attention)");
      any = any || t == "sliding_attention";
    }
    if (!any) return;
    const int window = r.positive_int("sliding_window", 1 << 30);
    s.layer_attention.assign(size_t(s.n_layers), LayerAttention{});
    for (int l = 0; l < s.n_layers; ++l)
      if (types[size_t(l)] == "sliding_attention") s.layer_attention[size_t(l)].window = window;
    return;
  }
  if (!on) return;
  const int window = r.positive_int("sliding_window", 1 << 30);
  const int first = r.has("max_window_layers") ? r.positive_int("max_window_layers", limits::kMaxLayers) : 0;
  s.layer_attention.assign(size_t(s.n_layers), LayerAttention{});
  for (int l = first; l < s.n_layers; ++l) s.layer_attention[size_t(l)].window = window;
}

}  // namespace

std::unique_ptr<Model> build_qwen_gguf(const std::string& arch, const nlohmann::json& meta, const TensorMap& tensors,
                                       const BuildOptions& o) {
  ConfigReader r(meta, o.source);
  Weights w(tensors, o.format, o.own_file_bytes);
  DecoderSpec s = qwen_spec(arch);
  s.qkv_bias = false;  // GGUF: biases are used where the file has them
  s.gguf_flexible = true;
  read_gguf_hparams(r, arch, w, s);
  s.tied_output = !w.has("output.weight");
  check_gguf_keys_used(r, arch);
  return build_decoder_only(s, gguf_decoder_names(), w, o);
}

std::unique_ptr<Model> build_qwen_hf(const nlohmann::json& config, const TensorMap& tensors, const BuildOptions& o) {
  ConfigReader r(config, o.source);
  const std::string type = r.string("model_type");
  AL_CHECK(type == "qwen2" || type == "qwen3", o.source, ": model_type \"", type, "\" is not qwen2 or qwen3");
  Weights w(tensors, o.format, o.own_file_bytes);
  DecoderSpec s = qwen_spec(type);
  read_hf_sizes(r, tensors, "model.embed_tokens.weight", s);
  s.norm_eps = float(r.number("rms_norm_eps", 1e-6));
  s.act = read_hf_activation(r, "hidden_act", "silu", {nn::Activation::SiLU});
  if (type == "qwen3") {
    s.qkv_bias = s.o_bias = r.boolean("attention_bias", false);  // Qwen3Attention: on q, k, v and o
  } else {
    require_hf_bool(r, "attention_bias", true, "Qwen2 always has q/k/v biases");
  }
  s.ropes[0].head_dim = s.head_dim;
  read_hf_rope(r, s.ropes[0], s.context);
  read_qwen_window(r, s);
  if (!s.layer_attention.empty() || !r.boolean("use_sliding_window", false)) r.mark_read("sliding_window");
  s.tied_output = !w.has("lm_head.weight");
  if (s.tied_output && !r.boolean("tie_word_embeddings", false)) tensors.get("lm_head.weight");
  const DecoderNames names = hf_llama_names();
  for (int i = 0; i < s.n_layers; ++i) accept_inv_freq(w, names.layer(i, "self_attn.rotary_emb.inv_freq"), s.ropes[0]);
  return build_decoder_only(s, names, w, o);
}

}  // namespace attnlens::models
