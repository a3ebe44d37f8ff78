// Gemma 1, 2 and 3 (Gemma Team 2024, 2025; text models): Llama's block with
//   * embeddings multiplied by √d_model, the output tied to them;
//   * a GeGLU FFN: down(gelu_tanh(gate·x) ⊙ up·x);
//   * RMSNorm computing (1 + w) ⊙ x̂ — Hugging Face stores w, GGUF stores 1 + w (llama.cpp's
//     converter adds the 1), so the HF weights get 1 added at load;
//   * head_dim given explicitly (not d_model / heads); RoPE on half-split pairs.
// Gemma 2 adds norms on the attention and FFN outputs ("sandwich"), scores scaled by
// query_pre_attn_scalar^-½, attention and final logit soft-capping, and alternating sliding-window
// (even layers) and global layers. Gemma 3 drops the soft-capping, normalises q and k per head, and
// makes five of every six layers local, with their own RoPE base (rope_local_base_freq) and the
// global layers' RoPE scaling (linear) applied to the global layers only.
#include <cmath>

#include "core/error.h"
#include "core/json.h"
#include "core/limits.h"
#include "models/decoder_config.h"
#include "models/decoder_only.h"
#include "models/registry.h"

namespace attnlens::models {

namespace {

int gemma_version(const std::string& arch) { return arch == "gemma" ? 1 : arch == "gemma2" ? 2 : 3; }

DecoderSpec gemma_spec(const std::string& arch) {
  const int v = gemma_version(arch);
  DecoderSpec s;
  s.architecture = arch;
  s.norm = nn::NormKind::RMSNorm;
  s.ffn = FfnKind::Gated;
  s.act = nn::Activation::GeluTanh;
  s.post_norms = v >= 2;
  s.qk_norm = v == 3;
  s.tied_output = true;
  nn::RopeParams rope;
  rope.style = nn::RopeStyle::Half;
  s.ropes = {rope};
  return s;
}

void set_embedding_scale(DecoderSpec& s) { s.embedding_scale = std::sqrt(float(s.d_model)); }

// Gemma 3's local layers: their own RoPE (rope index 1) with base `local_base` and no scaling.
void add_local_rope(DecoderSpec& s, float local_base) {
  nn::RopeParams local;
  local.style = s.ropes[0].style;
  local.head_dim = s.ropes[0].head_dim;
  local.rot_dims = s.ropes[0].rot_dims;
  local.base = local_base;
  s.ropes.push_back(local);
}

// HF names: Gemma 2/3 call the sandwich norms post_attention_layernorm / pre_feedforward_layernorm /
// post_feedforward_layernorm (Gemma 1's post_attention_layernorm is the FFN's pre-norm, as Llama's).
DecoderNames hf_gemma_names(int version) {
  DecoderNames n = hf_llama_names();
  if (version >= 2) {
    for (auto& [role_name, name] : n.roles)
      if (role_name == role::ffn_norm) name = "pre_feedforward_layernorm";
    n.roles.push_back({role::attn_post_norm, "post_attention_layernorm"});
    n.roles.push_back({role::ffn_post_norm, "post_feedforward_layernorm"});
  }
  return n;
}

}  // namespace

std::unique_ptr<Model> build_gemma_gguf(const std::string& arch, const nlohmann::json& meta, const TensorMap& tensors,
                                        const BuildOptions& o) {
  ConfigReader r(meta, o.source);
  Weights w(tensors, o.format, o.own_file_bytes);
  const int v = gemma_version(arch);
  DecoderSpec s = gemma_spec(arch);
  s.gguf_flexible = true;
  read_gguf_hparams(r, arch, w, s);
  set_embedding_scale(s);
  s.tied_output = !w.has("output.weight");
  auto k = [&](const char* key) { return arch + "." + key; };
  // llama.cpp, which defines these files' semantics, scales the scores by 1/√head_dim — except for
  // the 27B models (Gemma 2: 46 layers, Gemma 3: 62), whose query_pre_attn_scalar is d_model/heads.
  const bool is_27b = (v == 2 && s.n_layers == 46) || (v == 3 && s.n_layers == 62);
  s.attn_scale = 1.f / std::sqrt(float(is_27b ? s.d_model / s.n_heads : s.head_dim));
  if (v == 2) {
    s.attn_softcap = float(r.number(k("attn_logit_softcapping"), 0.0));
    s.final_softcap = float(r.number(k("final_logit_softcapping"), 0.0));
  }
  if (v == 3) s.final_softcap = float(r.number(k("final_logit_softcapping"), 0.0));
  AL_CHECK(s.attn_softcap >= 0 && s.final_softcap >= 0, o.source, ": soft-capping values must not be negative");
  if (v >= 2) {
    const int window = v == 2 ? (r.has(k("attention.sliding_window")) ? gguf_sliding_window(r, arch) : 4096)
                              : gguf_sliding_window(r, arch);
    if (window > 0) {
      // The local layers' RoPE: base rope.freq_base_swa (Gemma 2: defaults to the global base with
      // its scaling; Gemma 3: 10000 without scaling).
      nn::RopeParams local = s.ropes[0];
      if (v == 3) {
        local.freq_scale = 1.f;
        local.base = 10000.f;
      }
      local.base = float(r.number(k("rope.freq_base_swa"), local.base));
      s.ropes.push_back(local);
      // Which layers are local: sliding_window_pattern (a period, or one flag per layer), else 2 / 6.
      const std::string pk = k("attention.sliding_window_pattern");
      if (r.has(pk) && r.json().at(pk).is_array()) {
        const nlohmann::json& flags = r.json().at(pk);
        r.mark_read(pk);
        AL_CHECK(int(flags.size()) == s.n_layers, o.source, ": ", pk, " has ", flags.size(), " entries for ",
                 s.n_layers, " layers");
        s.layer_attention.assign(size_t(s.n_layers), LayerAttention{});
        for (int l = 0; l < s.n_layers; ++l) {
          AL_CHECK(flags[size_t(l)].is_boolean(), o.source, ": ", pk, " entries must be true or false");
          if (flags[size_t(l)].get<bool>()) s.layer_attention[size_t(l)] = LayerAttention{window, 1};
        }
      } else {
        s.layer_attention = swa_pattern(s.n_layers, r.positive_int(pk, v == 2 ? 2 : 6, 4096), window, 1);
      }
    }
  }
  check_gguf_keys_used(r, arch);
  return build_decoder_only(s, gguf_decoder_names(), w, o);
}

std::unique_ptr<Model> build_gemma_hf(const nlohmann::json& config, const TensorMap& tensors, const BuildOptions& o) {
  ConfigReader r(config, o.source);
  const std::string type = r.string("model_type");
  AL_CHECK(type == "gemma" || type == "gemma2" || type == "gemma3_text", o.source, ": model_type \"", type,
           "\" is not a Gemma text model (gemma, gemma2, gemma3_text)");
  const std::string arch = type == "gemma3_text" ? "gemma3" : type;
  const int v = gemma_version(arch);
  Weights w(tensors, o.format, o.own_file_bytes);
  DecoderSpec s = gemma_spec(arch);
  read_hf_sizes(r, tensors, "model.embed_tokens.weight", s);
  s.norm_eps = float(r.number("rms_norm_eps", 1e-6));
  s.norm_offset = 1.f;  // GemmaRMSNorm: x̂ · (1 + w)
  set_embedding_scale(s);
  // Gemma 1 configs name the activation hidden_act "gelu" and (later) hidden_activation
  // "gelu_pytorch_tanh"; Hugging Face runs the tanh form either way.
  if (r.has("hidden_activation")) {
    s.act = read_hf_activation(r, "hidden_activation", "gelu_pytorch_tanh", {nn::Activation::GeluTanh});
    r.mark_read("hidden_act");
  } else {
    const std::string act = r.string("hidden_act", "gelu_pytorch_tanh");
    AL_CHECK(v == 1 ? (act == "gelu" || act == "gelu_pytorch_tanh") : act == "gelu_pytorch_tanh", o.source,
             ": hidden_act \"", act, "\" is not supported for Gemma (gelu_pytorch_tanh)");
  }
  require_hf_bool(r, "attention_bias", false, "Gemma has no attention biases");
  require_hf_bool(r, "use_bidirectional_attention", false, "bidirectional (embedding) Gemma models are not causal LMs");
  s.ropes[0].head_dim = s.head_dim;
  if (v >= 2) {
    const double scalar = r.number("query_pre_attn_scalar", double(s.head_dim));
    AL_CHECK(scalar > 0, o.source, ": query_pre_attn_scalar must be positive");
    s.attn_scale = float(1.0 / std::sqrt(scalar));
    auto softcap = [&](const char* key) { return r.has(key) ? float(r.number(key)) : 0.f; };
    s.attn_softcap = softcap("attn_logit_softcapping");
    s.final_softcap = softcap("final_logit_softcapping");
    AL_CHECK(s.attn_softcap >= 0 && s.final_softcap >= 0, o.source, ": soft-capping values must not be negative");
  }
  if (v == 3 && r.has("rope_parameters") && r.json().at("rope_parameters").contains("full_attention")) {
    // transformers 5: {"full_attention": {...}, "sliding_attention": {...}}
    const nlohmann::json& rp = r.json().at("rope_parameters");
    r.mark_read("rope_parameters");
    for (const auto& [key, value] : rp.items())
      AL_CHECK(key == "full_attention" || key == "sliding_attention", o.source, ": rope_parameters.", key,
               " is not supported");
    nlohmann::json global = {{"rope_parameters", rp.at("full_attention")}};
    read_hf_rope(ConfigReader(global, o.source), s.ropes[0], s.context);
    nn::RopeParams local = s.ropes[0];
    local.freq_scale = 1.f;
    local.freq_factors.clear();
    if (rp.contains("sliding_attention")) {
      nlohmann::json lj = {{"rope_parameters", rp.at("sliding_attention")}};
      read_hf_rope(ConfigReader(lj, o.source), local, s.context);
    }
    s.ropes.push_back(local);
  } else {
    read_hf_rope(r, s.ropes[0], s.context);
    if (v == 3) add_local_rope(s, float(r.number("rope_local_base_freq", 10000.0)));
    if (v == 2) s.ropes.push_back(s.ropes[0]);  // Gemma 2's local layers rotate like the global ones
  }
  if (v >= 2) {
    const int window = r.positive_int("sliding_window", 4096, 1 << 30);
    if (r.has("layer_types")) {
      const nlohmann::json& types = r.json().at("layer_types");
      r.mark_read("layer_types");
      AL_CHECK(types.is_array() && int(types.size()) == s.n_layers, o.source, ": \"layer_types\" must list ",
               s.n_layers, " layers");
      s.layer_attention.assign(size_t(s.n_layers), LayerAttention{});
      for (int l = 0; l < s.n_layers; ++l) {
        const auto& t = types[size_t(l)];
        AL_CHECK(t == "full_attention" || t == "sliding_attention", o.source, ": layer_types entry ", json_brief(t),
                 " is not supported (full_attention, sliding_attention)");
        if (t == "sliding_attention") s.layer_attention[size_t(l)] = LayerAttention{window, 1};
      }
    } else {
      const int pattern = v == 2 ? 2 : r.positive_int("sliding_window_pattern", 6, 4096);
      s.layer_attention = swa_pattern(s.n_layers, pattern, window, 1);
    }
  }
  // Gemma ties the output to the embedding; a checkpoint may still store lm_head.weight (used then).
  s.tied_output = !w.has("lm_head.weight");
  const DecoderNames names = hf_gemma_names(v);
  for (int i = 0; i < s.n_layers; ++i) accept_inv_freq(w, names.layer(i, "self_attn.rotary_emb.inv_freq"), s.ropes[0]);
  return build_decoder_only(s, names, w, o);
}

}  // namespace attnlens::models
