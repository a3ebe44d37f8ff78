// GPT-NeoX / Pythia (Black et al. 2022; Biderman et al. 2023): a pre-LN decoder-only transformer
// with LayerNorm (with biases), biases on every linear layer, a plain GELU MLP, RoPE on the first
// rotary_pct of each head's dimensions (half-split pairs), an untied output (embed_out) and the
// parallel residual  x + Attn(LN₁(x)) + MLP(LN₂(x))  (use_parallel_residual; sequential otherwise).
// Hugging Face stores the fused query_key_value rows per head, [q_h; k_h; v_h]: they are put in
// [Q; K; V] order at load, as llama.cpp's converter does for GGUF. Its activation is hidden_act
// ("gelu": the exact erf form); llama.cpp's gptneox graph — hence GGUF — uses the tanh form.
#include <cstring>

#include "core/error.h"
#include "core/limits.h"
#include "models/decoder_config.h"
#include "models/decoder_only.h"
#include "models/registry.h"

namespace attnlens::models {

namespace {

DecoderSpec neox_spec() {
  DecoderSpec s;
  s.architecture = "gptneox";
  s.norm = nn::NormKind::LayerNorm;
  s.fused_qkv = true;
  s.qkv_bias = s.o_bias = s.ffn_bias = true;
  s.ffn = FfnKind::Plain;
  s.act = nn::Activation::GeluTanh;
  s.parallel_residual = true;
  nn::RopeParams rope;
  rope.style = nn::RopeStyle::Half;
  s.ropes = {rope};
  return s;
}

// Older checkpoints also store attention.bias (the causal mask: lower-triangular ones, f32 or u8/bool
// are not read by this engine's safetensors reader) and attention.masked_bias: checked and applied as
// the causal mask, like GPT-2's.
void accept_mask_buffers(Weights& w, const std::string& prefix) {
  if (const TensorView* t = w.tensors().find(prefix + "attention.bias")) {
    const std::string name = prefix + "attention.bias";
    AL_CHECK(t->dtype == DType::F32 && t->shape.size() == 4 && t->dim(-1) == t->dim(-2) &&
                 t->numel() == t->dim(-1) * t->dim(-1),
             w.tensors().context, ": tensor ", name, " (", t->shape_str(), ") is not the causal-mask buffer [1, 1, n, n]");
    const float* m = reinterpret_cast<const float*>(t->data);
    const int64_t n = t->dim(-1);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j)
        AL_CHECK(m[i * n + j] == (j <= i ? 1.f : 0.f), w.tensors().context, ": tensor ", name,
                 " is not a causal mask (element [", i, ", ", j, "])");
    w.mark_used(name);
  }
  if (const TensorView* t = w.tensors().find(prefix + "attention.masked_bias")) {
    AL_CHECK(t->dtype == DType::F32 && t->numel() == 1, w.tensors().context, ": tensor ", prefix,
             "attention.masked_bias is not a one-value f32 buffer");
    float v;
    std::memcpy(&v, t->data, sizeof v);
    AL_CHECK(v <= -1e4f, w.tensors().context, ": tensor ", prefix, "attention.masked_bias = ", v,
             " does not mask a key");
    w.mark_used(prefix + "attention.masked_bias");
  }
}

}  // namespace

std::unique_ptr<Model> build_gptneox_gguf(const nlohmann::json& meta, const TensorMap& tensors, const BuildOptions& o) {
  ConfigReader r(meta, o.source);
  Weights w(tensors, o.format, o.own_file_bytes);
  DecoderSpec s = neox_spec();
  s.fused_qkv = false;
  s.gguf_flexible = true;
  read_gguf_hparams(r, "gptneox", w, s);
  s.parallel_residual = r.boolean("gptneox.use_parallel_residual", true);
  s.tied_output = !w.has("output.weight");
  check_gguf_keys_used(r, "gptneox");
  return build_decoder_only(s, gguf_decoder_names(), w, o);
}

std::unique_ptr<Model> build_gptneox_hf(const nlohmann::json& config, const TensorMap& tensors, const BuildOptions& o) {
  ConfigReader r(config, o.source);
  Weights w(tensors, o.format, o.own_file_bytes);
  DecoderSpec s = neox_spec();
  s.interleaved_qkv = true;
  s.d_model = r.positive_int("hidden_size");
  s.n_layers = r.positive_int("num_hidden_layers", limits::kMaxLayers);
  s.n_heads = s.n_kv_heads = r.positive_int("num_attention_heads", limits::kMaxHeads);
  s.d_ff = r.positive_int("intermediate_size");
  s.context = r.positive_int("max_position_embeddings", limits::kMaxContext);
  AL_CHECK(s.d_model % s.n_heads == 0, o.source, ": hidden_size ", s.d_model, " is not divisible by num_attention_heads ",
           s.n_heads);
  s.head_dim = s.d_model / s.n_heads;
  s.vocab = r.has("vocab_size") ? r.positive_int("vocab_size", limits::kMaxVocab) : leading_dim(tensors, "gpt_neox.embed_in.weight", limits::kMaxVocab, r.source());
  s.norm_eps = float(r.number("layer_norm_eps", 1e-5));
  s.act = read_hf_activation(r, "hidden_act", "gelu",
                             {nn::Activation::GeluErf, nn::Activation::GeluTanh, nn::Activation::ReLU});
  s.parallel_residual = r.boolean("use_parallel_residual", true);
  require_hf_bool(r, "attention_bias", true, "GPT-NeoX without attention biases");
  nn::RopeParams& rope = s.ropes[0];
  rope.head_dim = s.head_dim;
  const double pct = r.number("rotary_pct", r.number("partial_rotary_factor", 1.0));
  AL_CHECK(pct > 0 && pct <= 1, o.source, ": rotary_pct ", pct, " must be in (0, 1]");
  rope.rot_dims = int(s.head_dim * pct) / 2 * 2;
  AL_CHECK(rope.rot_dims >= 2, o.source, ": rotary_pct ", pct, " rotates no dimension");
  read_hf_rope(r, rope, s.context);
  if (!r.has("rope_theta") && !r.has("rope_parameters") && r.has("rotary_emb_base")) {  // the older name
    AL_CHECK(rope.freq_factors.empty(), o.source, ": rotary_emb_base with a frequency-dependent rope_scaling");
    rope.base = float(r.number("rotary_emb_base"));
    AL_CHECK(rope.base > 0, o.source, ": rotary_emb_base must be positive");
  }
  s.tied_output = r.boolean("tie_word_embeddings", false) && !w.has("embed_out.weight");
  DecoderNames names;
  names.embed = "gpt_neox.embed_in";
  names.final_norm = "gpt_neox.final_layer_norm";
  names.output = "embed_out";
  names.layer_prefix = "gpt_neox.layers.{i}.";
  names.roles = {{role::attn_norm, "input_layernorm"},       {role::attn_qkv, "attention.query_key_value"},
                 {role::attn_output, "attention.dense"},     {role::ffn_norm, "post_attention_layernorm"},
                 {role::ffn_up, "mlp.dense_h_to_4h"},        {role::ffn_down, "mlp.dense_4h_to_h"}};
  for (int i = 0; i < s.n_layers; ++i) {
    accept_mask_buffers(w, names.layer(i, ""));
    accept_inv_freq(w, names.layer(i, "attention.rotary_emb.inv_freq"), rope);
  }
  return build_decoder_only(s, names, w, o);
}

}  // namespace attnlens::models
