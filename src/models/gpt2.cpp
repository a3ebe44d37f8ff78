// GPT-2 (Radford et al. 2019): a pre-LN decoder-only transformer with learned absolute positions,
// LayerNorm, fused QKV attention with biases, a GELU (tanh approximation) FFN and the output
// projection tied to the token embedding.
// Hugging Face stores its linear layers as Conv1D, weight [in, out]: they are transposed once at load
// to the [out, in] layout of every other linear layer. GGUF (llama.cpp's converter) stores them
// [out, in] already.
#include "core/error.h"
#include "models/config.h"
#include "models/decoder_only.h"
#include "models/registry.h"

namespace attnlens::models {

namespace {

struct Gpt2Config {
  int dim, layers, heads, inner, vocab, context;
  float eps;
  nn::Activation act;
};

ModelInfo gpt2_info(const Gpt2Config& c, const Weights& w) {
  return make_info("gpt2", ModelKind::DecoderOnly, {c.dim, c.layers, c.heads, c.heads, c.inner, c.vocab, c.context},
                   "learned", w);
}

}  // namespace

std::unique_ptr<Model> build_gpt2_hf(const nlohmann::json& config, const TensorMap& tensors, const BuildOptions& o) {
  ConfigReader r(config, o.source);
  Gpt2Config c;
  c.dim = r.positive_int("n_embd");
  c.layers = r.positive_int("n_layer", 4096);
  c.heads = r.positive_int("n_head", 4096);
  c.inner = r.positive_int("n_inner", 4 * c.dim, 1 << 24);
  c.context = r.positive_int("n_positions", r.positive_int("n_ctx", 1024, 1 << 24), 1 << 24);
  c.eps = float(r.number("layer_norm_epsilon", 1e-5));
  c.act = nn::parse_activation(r.string("activation_function", "gelu_new"));
  AL_CHECK(c.dim % c.heads == 0, o.source, ": n_embd ", c.dim, " is not divisible by n_head ", c.heads);
  AL_CHECK(r.boolean("scale_attn_weights", true) && !r.boolean("scale_attn_by_inverse_layer_idx", false) &&
               !r.boolean("reorder_and_upcast_attn", false),
           o.source, ": GPT-2 attention variants (scale_attn_weights false, scale_attn_by_inverse_layer_idx, ",
           "reorder_and_upcast_attn) are not supported");
  // GPT2LMHeadModel saves "transformer.h.0…", GPT2Model saves "h.0…".
  const std::string p = tensors.has("transformer.wte.weight") ? "transformer." : "";
  c.vocab = r.has("vocab_size") ? r.positive_int("vocab_size") : int(tensors.get(p + "wte.weight").dim(0));

  Weights w(tensors, o.format);
  DecoderOnlyWeights d;
  d.token_embedding = w.table(p + "wte.weight", c.vocab, c.dim);
  d.position_embedding = w.table(p + "wpe.weight", c.context, c.dim);
  for (int i = 0; i < c.layers; ++i) {
    const std::string h = p + "h." + std::to_string(i) + ".";
    nn::EncoderLayer l;
    l.placement = nn::NormPlacement::Pre;
    l.norm1 = w.layer_norm(h + "ln_1", c.dim, c.eps);
    l.norm2 = w.layer_norm(h + "ln_2", c.dim, c.eps);
    l.self_attn.d_model = c.dim;
    l.self_attn.shape = nn::split_heads(c.dim, c.heads, c.heads);
    l.self_attn.qkv = {w.matrix_transposed(h + "attn.c_attn.weight", 3 * c.dim, c.dim), w.vector(h + "attn.c_attn.bias", 3 * c.dim)};
    l.self_attn.o = {w.matrix_transposed(h + "attn.c_proj.weight", c.dim, c.dim), w.vector(h + "attn.c_proj.bias", c.dim)};
    l.ffn.up = {w.matrix_transposed(h + "mlp.c_fc.weight", c.inner, c.dim), w.vector(h + "mlp.c_fc.bias", c.inner)};
    l.ffn.down = {w.matrix_transposed(h + "mlp.c_proj.weight", c.dim, c.inner), w.vector(h + "mlp.c_proj.bias", c.dim)};
    l.ffn.act = c.act;
    d.layers.push_back(l);
  }
  d.final_norm = w.layer_norm(p + "ln_f", c.dim, c.eps);
  const bool tied = !tensors.has("lm_head.weight");
  d.lm_head.w = w.matrix(tied ? p + "wte.weight" : "lm_head.weight", c.vocab, c.dim, tied);
  const ModelInfo info = gpt2_info(c, w);
  return std::make_unique<DecoderOnlyTransformer>(info, std::move(d), w.release());
}

std::unique_ptr<Model> build_gpt2_gguf(const nlohmann::json& meta, const TensorMap& tensors, const BuildOptions& o) {
  ConfigReader r(meta, o.source);
  Gpt2Config c;
  c.dim = r.positive_int("gpt2.embedding_length");
  c.layers = r.positive_int("gpt2.block_count", 4096);
  c.heads = r.positive_int("gpt2.attention.head_count", 4096);
  c.inner = r.positive_int("gpt2.feed_forward_length", 4 * c.dim, 1 << 24);
  c.context = r.positive_int("gpt2.context_length");
  c.eps = float(r.number("gpt2.attention.layer_norm_epsilon", 1e-5));
  c.act = nn::Activation::GeluTanh;
  AL_CHECK(c.dim % c.heads == 0, o.source, ": embedding_length ", c.dim, " is not divisible by head_count ", c.heads);
  c.vocab = int(tensors.get("token_embd.weight").dim(0));

  Weights w(tensors, o.format);
  DecoderOnlyWeights d;
  d.token_embedding = w.table("token_embd.weight", c.vocab, c.dim);
  d.position_embedding = w.table("position_embd.weight", c.context, c.dim);
  for (int i = 0; i < c.layers; ++i) {
    const std::string b = "blk." + std::to_string(i) + ".";
    nn::EncoderLayer l;
    l.placement = nn::NormPlacement::Pre;
    l.norm1 = w.layer_norm(b + "attn_norm", c.dim, c.eps);
    l.norm2 = w.layer_norm(b + "ffn_norm", c.dim, c.eps);
    l.self_attn.d_model = c.dim;
    l.self_attn.shape = nn::split_heads(c.dim, c.heads, c.heads);
    l.self_attn.qkv = w.linear(b + "attn_qkv.weight", b + "attn_qkv.bias", 3 * c.dim, c.dim);
    l.self_attn.o = w.linear(b + "attn_output.weight", b + "attn_output.bias", c.dim, c.dim);
    l.ffn.up = w.linear(b + "ffn_up.weight", b + "ffn_up.bias", c.inner, c.dim);
    l.ffn.down = w.linear(b + "ffn_down.weight", b + "ffn_down.bias", c.dim, c.inner);
    l.ffn.act = c.act;
    d.layers.push_back(l);
  }
  d.final_norm = w.layer_norm("output_norm", c.dim, c.eps);
  const bool tied = !tensors.has("output.weight");
  d.lm_head.w = w.matrix(tied ? "token_embd.weight" : "output.weight", c.vocab, c.dim, tied);
  const ModelInfo info = gpt2_info(c, w);
  return std::make_unique<DecoderOnlyTransformer>(info, std::move(d), w.release());
}

}  // namespace attnlens::models
