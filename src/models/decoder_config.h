// Reading a decoder-only architecture's hyper-parameters into a DecoderSpec: GGUF's "<arch>.*" keys
// (llama.cpp's names: src/llama-arch.cpp of llama.cpp) and the common keys of Hugging Face
// config.json files. Every error names the file and the key.
#pragma once
#include <initializer_list>
#include <string>

#include "models/config.h"
#include "models/decoder_only.h"

namespace attnlens::models {

// ---- GGUF -------------------------------------------------------------------------------------------
// Sizes (embedding_length, block_count, attention.head_count[_kv], feed_forward_length,
// context_length, attention.key_length / value_length, vocab_size or the embedding's rows), the norm
// epsilon of spec.norm, and — when spec.ropes is non-empty (its style set by the caller) — ropes[0]'s
// base, rotated dimensions (rope.dimension_count), linear scaling and Llama 3's rope_freqs tensor.
// rope.scaling.type "longrope" (Phi-3) reads rope_factors_short / rope_factors_long and
// rope.scaling.original_context_length into ropes[0] and spec.long_ropes when allow_longrope; other
// types are errors.
void read_gguf_hparams(const ConfigReader& r, const std::string& arch, Weights& w, DecoderSpec& spec,
                       bool allow_longrope = false);
// "<arch>.attention.sliding_window" (0 or absent = none).
int gguf_sliding_window(const ConfigReader& r, const std::string& arch);
// Refuses "<arch>.*" keys no reader consumed: a hyper-parameter the engine would otherwise ignore.
void check_gguf_keys_used(const ConfigReader& r, const std::string& arch);

// ---- Hugging Face config.json ----------------------------------------------------------------------
// hidden_size, num_hidden_layers, num_attention_heads, num_key_value_heads, intermediate_size,
// max_position_embeddings, head_dim, vocab_size (or the rows of tensor `embed`).
void read_hf_sizes(const ConfigReader& r, const TensorMap& tensors, const std::string& embed, DecoderSpec& spec);

// Phi-3's LongRoPE: the long-context variant and the context length past which it applies.
struct LongRope {
  nn::RopeParams params;
  int original_context = 0;
};

// RoPE of a config: rope_theta and rope_scaling — or transformers 5's rope_parameters — into p
// (p.style, p.head_dim and p.rot_dims set by the caller): types "default", "linear" and "llama3";
// "longrope" / "su" only when `longrope` is given (Phi-3): p gets the short factors, *longrope the
// long ones, both the attention factor √(1 + ln(s)/ln(original)), s = context / original. Any other
// type or an unexpected field is an error naming it.
void read_hf_rope(const ConfigReader& r, nn::RopeParams& p, int context, LongRope* longrope = nullptr);

// The activation named by `key` (hidden_act, hidden_activation, …), which must be one of `allowed`.
nn::Activation read_hf_activation(const ConfigReader& r, const std::string& key, const std::string& fallback,
                                  std::initializer_list<nn::Activation> allowed);

// Errors unless `key` is absent, null or equal to `ok` (a feature the engine does not implement).
void require_hf_bool(const ConfigReader& r, const std::string& key, bool ok, const std::string& why);

}  // namespace attnlens::models
