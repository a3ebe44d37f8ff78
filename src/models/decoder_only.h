// The decoder-only transformer shared by every causal language model here (Radford et al. 2018/2019,
// GPT and GPT-2; Touvron et al. 2023, Llama):
//
//   x₀ = E[token]·s (s = √d_model for Gemma, else 1) (+ P[pos] for learned positions)
//   xₗ₊₁ = Block(xₗ)        pre-norm: x + Attn(Norm(x)), then x + FFN(Norm(x)); causal, KV-cached;
//                           RoPE on q and k when the model uses it (see nn/layers.h for the variants)
//   logits = cap(Norm(x_L) · W_vocabᵀ)   (W_vocab = E when the embedding is tied; cap = soft-capping)
//
// Architectures differ only in the parts plugged in. An architecture is a DecoderSpec (sizes read
// from config.json or GGUF metadata, plus a few flags) and a DecoderNames table saying where each
// tensor lives: build_decoder_only() turns both into a model. See llama.cpp, qwen.cpp, gemma.cpp,
// phi3.cpp, gptneox.cpp and gpt2.cpp.
#pragma once
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "models/model.h"
#include "models/registry.h"
#include "models/weights.h"
#include "nn/layers.h"
#include "nn/positions.h"

namespace attnlens::models {

// Per layer: which attention variant it uses.
struct LayerAttention {
  int window = 0;  // sliding window (positions seen, the query's own included); 0 = every position
  int rope = 0;    // index into DecoderOnlyWeights::ropes
};

struct DecoderOnlyWeights {
  nn::Matrix token_embedding;            // [vocab, d_model]
  nn::Matrix position_embedding;         // [context, d_model], learned positions only (else empty)
  float embedding_scale = 1.f;           // E[token] multiplied by it (Gemma: √d_model)
  std::vector<nn::EncoderLayer> layers;  // pre-norm blocks: self-attention + FFN
  std::vector<LayerAttention> attention;  // per layer; empty = every layer global, rope 0
  std::vector<nn::RopeParams> ropes;      // empty = no RoPE (Gemma 3: global and local variants)
  // Phi-3's LongRoPE: sessions holding more than long_context positions use long_ropes (same
  // indices) instead — llama.cpp's rule, by the context size asked for (0 = never).
  std::vector<nn::RopeParams> long_ropes;
  int long_context = 0;
  nn::Norm final_norm;
  nn::Linear lm_head;                    // [vocab, d_model]
  float final_softcap = 0.f;             // > 0: logits ← cap·tanh(logits/cap) (Gemma 2)
};

class DecoderOnlyTransformer : public Model {
 public:
  DecoderOnlyTransformer(ModelInfo info, DecoderOnlyWeights w, WeightStorage storage);
  const ModelInfo& info() const override { return info_; }
  const float* decode(Session& s, const int* tokens, int n, bool all_logits) const override;
  void unembed(Session& s, const float* x, int rows, float* logits) const override;

 private:
  void embed(const int* tokens, int n, int pos0, float* x) const;
  nn::SelfAttentionOptions layer_options(int layer, bool long_context) const;
  ModelInfo info_;
  DecoderOnlyWeights w_;
  WeightStorage storage_;
  std::vector<std::unique_ptr<nn::Rope>> ropes_, long_ropes_;
};

// ---- building one from a table of names and a few flags -------------------------------------------

enum class FfnKind {
  Gated,  // down(act(gate·x) ⊙ up·x): SwiGLU (act = silu), GeGLU (act = gelu_tanh)
  Plain,  // down(act(up·x + b)) + b: GPT-2, GPT-NeoX
};

// Everything that distinguishes one decoder-only architecture from another.
struct DecoderSpec {
  std::string architecture;  // ModelInfo::architecture ("llama", "qwen2", "gemma3", …)
  int d_model = 0, n_layers = 0, n_heads = 0, n_kv_heads = 0, head_dim = 0, d_ff = 0, vocab = 0, context = 0;

  nn::NormKind norm = nn::NormKind::RMSNorm;  // LayerNorm: with bias
  float norm_eps = 1e-5f;
  float norm_offset = 0.f;  // RMSNorm weights applied as offset + w (Hugging Face Gemma: 1)

  // attention
  bool fused_qkv = false;      // one [Q; K; V] projection (attn_qkv)
  bool interleaved_qkv = false;  // … stored per head as [q_h; k_h; v_h] (Hugging Face GPT-NeoX): reordered at load
  bool qkv_bias = false;       // biases on q, k, v (Qwen2, GPT-NeoX)
  bool o_bias = false;         // bias on the output projection
  bool qk_norm = false;        // per-head RMSNorm of q and k before RoPE (Qwen3, Gemma 3)
  float attn_scale = 0.f;       // multiplies q·k (0 = 1/√head_dim)
  float attn_softcap = 0.f;     // attention logit soft-cap (0 = none)
  std::vector<LayerAttention> layer_attention;  // per layer (empty: all global, rope 0)

  // positions: RoPE variants (index LayerAttention::rope) or learned absolute embeddings
  std::vector<nn::RopeParams> ropes;
  std::vector<nn::RopeParams> long_ropes;  // LongRoPE: used by sessions longer than long_context
  int long_context = 0;
  bool learned_positions = false;

  // feed-forward
  FfnKind ffn = FfnKind::Gated;
  nn::Activation act = nn::Activation::SiLU;
  bool fused_gate_up = false;  // one [gate; up] projection (Phi-3's gate_up_proj, GGUF ffn_up of 2·d_ff rows)
  bool ffn_bias = false;

  // block
  bool parallel_residual = false;  // x + Attn(Norm₁(x)) + FFN(Norm₂(x)) (GPT-NeoX)
  bool post_norms = false;         // Gemma 2/3 "sandwich": norms on the attention and FFN outputs

  bool conv1d = false;  // matrices stored [in, out] (Hugging Face GPT-2's Conv1D): transposed at load
  // GGUF, as llama.cpp's loader reads it: q/k/v fused (attn_qkv) or separate, whichever the file
  // holds, and every linear layer's bias (and the output's) used when its tensor is present.
  bool gguf_flexible = false;
  float embedding_scale = 1.f;
  float final_softcap = 0.f;
  bool tied_output = false;  // the output projection is the token embedding (no output tensor)
};

// Roles of a block's tensors, as GGUF names them: blk.N.<role>.weight / .bias.
namespace role {
inline constexpr const char* attn_norm = "attn_norm";
inline constexpr const char* attn_q = "attn_q";
inline constexpr const char* attn_k = "attn_k";
inline constexpr const char* attn_v = "attn_v";
inline constexpr const char* attn_qkv = "attn_qkv";
inline constexpr const char* attn_output = "attn_output";
inline constexpr const char* attn_q_norm = "attn_q_norm";
inline constexpr const char* attn_k_norm = "attn_k_norm";
inline constexpr const char* attn_post_norm = "post_attention_norm";
inline constexpr const char* ffn_norm = "ffn_norm";
inline constexpr const char* ffn_gate = "ffn_gate";
inline constexpr const char* ffn_up = "ffn_up";  // also the fused [gate; up] when DecoderSpec::fused_gate_up
inline constexpr const char* ffn_down = "ffn_down";
inline constexpr const char* ffn_post_norm = "post_ffw_norm";
}  // namespace role

// Where the tensors live in one naming scheme; names are given without ".weight" / ".bias".
struct DecoderNames {
  std::string embed, position, final_norm, output;
  std::string layer_prefix;  // "{i}" is replaced by the layer index: "blk.{i}.", "model.layers.{i}."
  // GGUF role → this scheme's name after the prefix; roles not listed keep their GGUF name.
  std::vector<std::pair<std::string, std::string>> roles;

  std::string layer(int i, const std::string& role) const;
};
DecoderNames gguf_decoder_names();  // llama.cpp's: token_embd, blk.N.attn_q, output_norm, output, …
// Hugging Face's Llama-style naming (Llama, Mistral, Qwen2/3, Phi-3, Gemma): model.embed_tokens,
// model.layers.N.self_attn.q_proj, mlp.gate_proj, input_layernorm, post_attention_layernorm (the FFN's
// pre-norm), model.norm, lm_head.
DecoderNames hf_llama_names();

// Older Hugging Face checkpoints also store RoPE's inverse frequencies per layer
// ("<prefix>rotary_emb.inv_freq"): each one found is checked against the frequencies `rope` uses
// (so it is applied, not skipped) and marked used; a mismatch is an error naming the tensor.
void accept_inv_freq(Weights& w, const std::string& name, const nn::RopeParams& rope);

// Builds the model; every tensor of the file must be used by it (or marked used by the caller, e.g.
// rope_freqs once applied), else an error lists the ones left.
std::unique_ptr<Model> build_decoder_only(const DecoderSpec& spec, const DecoderNames& names, Weights& w,
                                          const BuildOptions& o);

// RoPE frequency factors of Llama 3's rope_scaling (type "llama3"): θ_i is divided by factor_i
// (what convert_hf_to_gguf.py stores as GGUF's rope_freqs tensor).
struct Llama3RopeScaling {
  double factor, low_freq_factor, high_freq_factor;
  int original_max_position_embeddings;
};
std::vector<float> llama3_rope_factors(const Llama3RopeScaling& s, float base, int rot_dims);

// The per-layer windows of a model whose layers alternate: layer l is local (window `window`) when
// l % pattern < pattern − 1, global otherwise (Gemma 2: pattern 2, Gemma 3: 6), local layers using
// rope `local_rope`.
std::vector<LayerAttention> swa_pattern(int n_layers, int pattern, int window, int local_rope);

}  // namespace attnlens::models
