// Llama (Touvron et al. 2023; karpathy/llama2.c): a pre-norm decoder-only transformer with
//   RMSNorm, RoPE on q and k, grouped-query attention without biases, and a SwiGLU FFN
//   FFN(x) = W2 (silu(W1 x) ⊙ W3 x).
// Two tensor namings reach it: GGUF's (also produced by the llama2.c reader; RoPE on adjacent pairs,
// because llama.cpp's converter permutes Q/K to that convention) and Hugging Face's
// LlamaForCausalLM (RoPE "rotate_half").
#include <functional>

#include "core/error.h"
#include "models/config.h"
#include "models/decoder_only.h"
#include "models/registry.h"

namespace attnlens::models {

namespace {

struct LlamaConfig {
  int dim, hidden, layers, heads, kv_heads, vocab, context;
  float rms_eps, rope_base;
  nn::RopeStyle rope_style;
};

// Where each tensor lives in one naming scheme.
struct LlamaNames {
  std::string embed, final_norm, output;
  std::function<std::string(int, const char*)> layer;  // (layer, role) → name
};

LlamaNames gguf_names() {
  return {"token_embd.weight", "output_norm.weight", "output.weight", [](int i, const char* role) {
            return "blk." + std::to_string(i) + "." + role + ".weight";
          }};
}

// GGUF role → Hugging Face name inside model.layers.{i}.
LlamaNames hf_names() {
  return {"model.embed_tokens.weight", "model.norm.weight", "lm_head.weight", [](int i, const char* role) {
            static const std::pair<const char*, const char*> map[] = {
                {"attn_norm", "input_layernorm"},   {"attn_q", "self_attn.q_proj"},
                {"attn_k", "self_attn.k_proj"},     {"attn_v", "self_attn.v_proj"},
                {"attn_output", "self_attn.o_proj"}, {"ffn_norm", "post_attention_layernorm"},
                {"ffn_gate", "mlp.gate_proj"},       {"ffn_up", "mlp.up_proj"},
                {"ffn_down", "mlp.down_proj"}};
            for (auto [g, h] : map)
              if (std::string(role) == g) return "model.layers." + std::to_string(i) + "." + h + ".weight";
            return std::string(role);
          }};
}

std::unique_ptr<Model> build(const LlamaConfig& c, const LlamaNames& names, const TensorMap& tensors,
                             const BuildOptions& o) {
  AL_CHECK(c.dim % c.heads == 0, o.source, ": dim ", c.dim, " is not divisible by the number of heads ", c.heads);
  AL_CHECK(c.heads % c.kv_heads == 0, o.source, ": ", c.heads, " heads are not a multiple of ", c.kv_heads,
           " key/value heads");
  const int hd = c.dim / c.heads, kv_dim = c.kv_heads * hd;
  Weights w(tensors, o.format);
  DecoderOnlyWeights d;
  d.token_embedding = w.table(names.embed, c.vocab, c.dim);
  for (int i = 0; i < c.layers; ++i) {
    auto name = [&](const char* role) { return names.layer(i, role); };
    nn::EncoderLayer l;
    l.placement = nn::NormPlacement::Pre;
    l.norm1 = w.rms_norm(name("attn_norm"), c.dim, c.rms_eps);
    l.norm2 = w.rms_norm(name("ffn_norm"), c.dim, c.rms_eps);
    l.self_attn.d_model = c.dim;
    l.self_attn.shape = nn::split_heads(c.dim, c.heads, c.kv_heads);
    l.self_attn.q = w.linear(name("attn_q"), "", c.dim, c.dim);
    l.self_attn.k = w.linear(name("attn_k"), "", kv_dim, c.dim);
    l.self_attn.v = w.linear(name("attn_v"), "", kv_dim, c.dim);
    l.self_attn.o = w.linear(name("attn_output"), "", c.dim, c.dim);
    l.ffn.gate = w.linear(name("ffn_gate"), "", c.hidden, c.dim);  // W1
    l.ffn.up = w.linear(name("ffn_up"), "", c.hidden, c.dim);      // W3
    l.ffn.down = w.linear(name("ffn_down"), "", c.dim, c.hidden);  // W2
    l.ffn.act = nn::Activation::SiLU;
    d.layers.push_back(l);
  }
  d.final_norm = w.rms_norm(names.final_norm, c.dim, c.rms_eps);
  const bool tied = !w.has(names.output);
  d.lm_head.w = w.matrix(tied ? names.embed : names.output, c.vocab, c.dim, tied);
  d.rope = c.rope_style;
  d.rope_base = c.rope_base;

  const ModelInfo info = make_info("llama", ModelKind::DecoderOnly,
                                   {c.dim, c.layers, c.heads, c.kv_heads, c.hidden, c.vocab, c.context}, "rope", w);
  return std::make_unique<DecoderOnlyTransformer>(info, std::move(d), w.release());
}

// The vocabulary size: metadata when given, else the embedding's rows.
int vocab_from(const ConfigReader& r, const char* key, const TensorMap& tensors, const std::string& embed) {
  if (r.has(key)) return r.positive_int(key);
  return int(tensors.get(embed).dim(0));
}

}  // namespace

std::unique_ptr<Model> build_llama_gguf(const nlohmann::json& meta, const TensorMap& tensors, const BuildOptions& o) {
  ConfigReader r(meta, o.source);
  LlamaConfig c;
  c.dim = r.positive_int("llama.embedding_length");
  c.hidden = r.positive_int("llama.feed_forward_length");
  c.layers = r.positive_int("llama.block_count", 4096);
  c.heads = r.positive_int("llama.attention.head_count", 4096);
  c.kv_heads = r.positive_int("llama.attention.head_count_kv", c.heads, 4096);
  c.context = r.positive_int("llama.context_length");
  c.vocab = vocab_from(r, "llama.vocab_size", tensors, "token_embd.weight");
  c.rms_eps = float(r.number("llama.attention.layer_norm_rms_epsilon", 1e-5));
  c.rope_base = float(r.number("llama.rope.freq_base", 10000.0));
  const int rope_dims = r.positive_int("llama.rope.dimension_count", c.dim / c.heads, 1 << 16);
  AL_CHECK(rope_dims == c.dim / c.heads, o.source, ": partial RoPE (", rope_dims, " of ", c.dim / c.heads,
           " head dimensions) is not supported");
  AL_CHECK(!r.has("llama.rope.scaling.type") || r.string("llama.rope.scaling.type") == "none", o.source,
           ": RoPE scaling \"", r.string("llama.rope.scaling.type", ""), "\" is not supported");
  const std::string style = r.string("attnlens.rope_style", "adjacent");
  AL_CHECK(style == "adjacent" || style == "half", o.source, ": unknown attnlens.rope_style \"", style, "\"");
  c.rope_style = style == "half" ? nn::RopeStyle::Half : nn::RopeStyle::Adjacent;
  return build(c, gguf_names(), tensors, o);
}

std::unique_ptr<Model> build_llama_hf(const nlohmann::json& config, const TensorMap& tensors, const BuildOptions& o) {
  ConfigReader r(config, o.source);
  LlamaConfig c;
  c.dim = r.positive_int("hidden_size");
  c.hidden = r.positive_int("intermediate_size");
  c.layers = r.positive_int("num_hidden_layers", 4096);
  c.heads = r.positive_int("num_attention_heads", 4096);
  c.kv_heads = r.positive_int("num_key_value_heads", c.heads, 4096);
  c.context = r.positive_int("max_position_embeddings");
  c.vocab = vocab_from(r, "vocab_size", tensors, "model.embed_tokens.weight");
  c.rms_eps = float(r.number("rms_norm_eps", 1e-6));
  c.rope_base = float(r.number("rope_theta", 10000.0));
  c.rope_style = nn::RopeStyle::Half;
  AL_CHECK(!r.has("rope_scaling"), o.source, ": rope_scaling ", config.at("rope_scaling").dump(), " is not supported");
  AL_CHECK(r.string("hidden_act", "silu") == "silu", o.source, ": hidden_act \"", r.string("hidden_act"),
           "\" is not supported for Llama (silu)");
  AL_CHECK(!r.boolean("attention_bias", false) && !r.boolean("mlp_bias", false), o.source,
           ": Llama with attention or MLP biases is not supported");
  if (r.has("head_dim"))
    AL_CHECK(r.positive_int("head_dim") * c.heads == c.dim, o.source, ": head_dim ", r.positive_int("head_dim"),
             " × ", c.heads, " heads != hidden_size ", c.dim);
  // A tied checkpoint may still store lm_head.weight; an untied one must.
  if (!r.boolean("tie_word_embeddings", false)) tensors.get("lm_head.weight");
  return build(c, hf_names(), tensors, o);
}

}  // namespace attnlens::models
