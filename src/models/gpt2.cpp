// GPT-2 (Radford et al. 2019): a pre-LN decoder-only transformer with learned absolute positions,
// LayerNorm, fused QKV attention with biases, a GELU (tanh approximation) FFN and the output
// projection tied to the token embedding.
// Hugging Face stores its linear layers as Conv1D, weight [in, out]: they are transposed once at load
// to the [out, in] layout of every other linear layer, in the file's own bytes when the model owns
// its files (models/weights.h). GGUF (llama.cpp's converter) stores them [out, in] already.
#include <cstring>

#include "core/error.h"
#include "core/limits.h"
#include "models/config.h"
#include "models/decoder_config.h"
#include "models/decoder_only.h"
#include "models/registry.h"

namespace attnlens::models {

namespace {

DecoderSpec gpt2_spec() {
  DecoderSpec s;
  s.architecture = "gpt2";
  s.norm = nn::NormKind::LayerNorm;
  s.fused_qkv = s.qkv_bias = s.o_bias = true;
  s.ffn = FfnKind::Plain;
  s.ffn_bias = true;
  s.learned_positions = true;
  return s;
}

// Older GPT-2 checkpoints store the causal mask as buffers: attn.bias (a lower-triangular matrix of
// ones, [1, 1, n, n]) and attn.masked_bias (the score given to masked keys, −1e4). Both express
// exactly the causal mask the engine applies: checked, then marked used.
void accept_mask_buffers(Weights& w, const std::string& layer) {
  const std::string bias = layer + "attn.bias", masked = layer + "attn.masked_bias";
  if (const TensorView* t = w.tensors().find(bias)) {
    AL_CHECK(t->dtype == DType::F32 && t->shape.size() == 4 && t->dim(-1) == t->dim(-2) && t->numel() == t->dim(-1) * t->dim(-1),
             w.tensors().context, ": tensor ", bias, " (", t->shape_str(), ", ", dtype_name(t->dtype),
             ") is not the f32 causal-mask buffer [1, 1, n, n] this engine recognises");
    const float* m = reinterpret_cast<const float*>(t->data);
    const int64_t n = t->dim(-1);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < n; ++j)
        AL_CHECK(m[i * n + j] == (j <= i ? 1.f : 0.f), w.tensors().context, ": tensor ", bias,
                 " is not a causal mask (element [", i, ", ", j, "])");
    w.mark_used(bias);
  }
  if (const TensorView* t = w.tensors().find(masked)) {
    AL_CHECK(t->dtype == DType::F32 && t->numel() == 1, w.tensors().context, ": tensor ", masked,
             " is not the one-value f32 buffer this engine recognises");
    float v;
    std::memcpy(&v, t->data, sizeof v);
    AL_CHECK(v <= -1e4f, w.tensors().context, ": tensor ", masked, " = ", v,
             " does not mask a key (the engine masks with −∞)");
    w.mark_used(masked);
  }
}

}  // namespace

std::unique_ptr<Model> build_gpt2_hf(const nlohmann::json& config, const TensorMap& tensors, const BuildOptions& o) {
  ConfigReader r(config, o.source);
  DecoderSpec s = gpt2_spec();
  s.d_model = r.positive_int("n_embd");
  s.n_layers = r.positive_int("n_layer", limits::kMaxLayers);
  s.n_heads = s.n_kv_heads = r.positive_int("n_head", limits::kMaxHeads);
  s.d_ff = r.positive_int("n_inner", 4 * s.d_model, 1 << 24);
  s.context = r.positive_int("n_positions", r.positive_int("n_ctx", 1024, limits::kMaxContext), limits::kMaxContext);
  s.norm_eps = float(r.number("layer_norm_epsilon", 1e-5));
  s.act = read_hf_activation(r, "activation_function", "gelu_new",
                             {nn::Activation::GeluTanh, nn::Activation::GeluErf, nn::Activation::ReLU,
                              nn::Activation::SiLU});
  AL_CHECK(s.d_model % s.n_heads == 0, o.source, ": n_embd ", s.d_model, " is not divisible by n_head ", s.n_heads);
  s.head_dim = s.d_model / s.n_heads;
  AL_CHECK(r.boolean("scale_attn_weights", true) && !r.boolean("scale_attn_by_inverse_layer_idx", false) &&
               !r.boolean("reorder_and_upcast_attn", false),
           o.source, ": GPT-2 attention variants (scale_attn_weights false, scale_attn_by_inverse_layer_idx, ",
           "reorder_and_upcast_attn) are not supported");
  s.conv1d = true;
  // GPT2LMHeadModel saves "transformer.h.0…", GPT2Model saves "h.0…".
  const std::string p = tensors.has("transformer.wte.weight") ? "transformer." : "";
  s.vocab = r.has("vocab_size") ? r.positive_int("vocab_size", limits::kMaxVocab) : leading_dim(tensors, p + "wte.weight", limits::kMaxVocab, r.source());
  DecoderNames names;
  names.embed = p + "wte";
  names.position = p + "wpe";
  names.final_norm = p + "ln_f";
  names.output = "lm_head";
  names.layer_prefix = p + "h.{i}.";
  names.roles = {{role::attn_norm, "ln_1"},      {role::attn_qkv, "attn.c_attn"}, {role::attn_output, "attn.c_proj"},
                 {role::ffn_norm, "ln_2"},       {role::ffn_up, "mlp.c_fc"},      {role::ffn_down, "mlp.c_proj"}};
  Weights w(tensors, o.format, o.own_file_bytes);
  s.tied_output = !w.has("lm_head.weight");
  for (int i = 0; i < s.n_layers; ++i) accept_mask_buffers(w, names.layer(i, ""));
  return build_decoder_only(s, names, w, o);
}

std::unique_ptr<Model> build_gpt2_gguf(const nlohmann::json& meta, const TensorMap& tensors, const BuildOptions& o) {
  ConfigReader r(meta, o.source);
  Weights w(tensors, o.format, o.own_file_bytes);
  DecoderSpec s = gpt2_spec();
  s.gguf_flexible = true;
  read_gguf_hparams(r, "gpt2", w, s);
  s.act = nn::Activation::GeluTanh;  // llama.cpp's gpt2 graph: LLM_FFN_GELU
  s.tied_output = !w.has("output.weight");
  check_gguf_keys_used(r, "gpt2");
  return build_decoder_only(s, gguf_decoder_names(), w, o);
}

}  // namespace attnlens::models
