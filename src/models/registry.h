// From a checkpoint's configuration and tensors to a runnable Model: one builder per architecture,
// chosen by GGUF's general.architecture or config.json's architectures / model_type.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/tensor.h"
#include "models/model.h"
#include "models/weights.h"

namespace attnlens::models {

struct BuildOptions {
  WeightFormat format = WeightFormat::AsStored;
  std::string source = "model";  // file name for messages
  // Integer buffers (I64 / I32) the safetensors reader left out of the tensors: a builder applies
  // them consciously (BERT's position_ids) or refuses them (the decoder-only builder does).
  std::vector<std::string> skipped_buffers;
  // Reproduce llama.cpp's f32 GELU (an f16 lookup table) instead of the exact tanh form: for parity
  // checks against llama.cpp only (tests/cpp/test_runtime_archs*.cpp).
  bool llamacpp_gelu = false;
  // The tensors' bytes belong to this load alone (no one else holds the files): Weights may write
  // over them (transposed, reordered or quantized-at-load weights) instead of copying.
  bool own_file_bytes = false;
};

// GGUF metadata (also what the llama.2c reader produces): general.architecture "llama", "qwen2",
// "qwen3", "gemma", "gemma2", "gemma3", "phi3", "gptneox", "gpt2", "t5", "bert" (llama.cpp's names and keys).
std::unique_ptr<Model> build_from_gguf(const nlohmann::json& metadata, const TensorMap& tensors, const BuildOptions& o);
// Hugging Face config.json: LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM,
// GemmaForCausalLM, Gemma2ForCausalLM, Gemma3ForCausalLM, Phi3ForCausalLM, GPTNeoXForCausalLM,
// GPT2LMHeadModel (and GPT2Model), BertModel (and BertForMaskedLM), RoBERTa, XLM-R, DistilBERT, ALBERT,
// MPNet (models and masked-LM heads), T5ForConditionalGeneration (and
// MT5/UMT5), BartForConditionalGeneration, MarianMTModel, AttnLensSeq2Seq.
std::unique_ptr<Model> build_from_hf_config(const nlohmann::json& config, const TensorMap& tensors, const BuildOptions& o);

// The builders themselves (one file each).
std::unique_ptr<Model> build_llama_gguf(const nlohmann::json& metadata, const TensorMap& tensors, const BuildOptions& o);
std::unique_ptr<Model> build_llama_hf(const nlohmann::json& config, const TensorMap& tensors, const BuildOptions& o);
std::unique_ptr<Model> build_qwen_gguf(const std::string& arch, const nlohmann::json& metadata, const TensorMap& tensors,
                                       const BuildOptions& o);
std::unique_ptr<Model> build_qwen_hf(const nlohmann::json& config, const TensorMap& tensors, const BuildOptions& o);
std::unique_ptr<Model> build_gemma_gguf(const std::string& arch, const nlohmann::json& metadata, const TensorMap& tensors,
                                        const BuildOptions& o);
std::unique_ptr<Model> build_gemma_hf(const nlohmann::json& config, const TensorMap& tensors, const BuildOptions& o);
std::unique_ptr<Model> build_phi3_gguf(const nlohmann::json& metadata, const TensorMap& tensors, const BuildOptions& o);
std::unique_ptr<Model> build_phi3_hf(const nlohmann::json& config, const TensorMap& tensors, const BuildOptions& o);
std::unique_ptr<Model> build_gptneox_gguf(const nlohmann::json& metadata, const TensorMap& tensors, const BuildOptions& o);
std::unique_ptr<Model> build_gptneox_hf(const nlohmann::json& config, const TensorMap& tensors, const BuildOptions& o);
std::unique_ptr<Model> build_gpt2_gguf(const nlohmann::json& metadata, const TensorMap& tensors, const BuildOptions& o);
std::unique_ptr<Model> build_gpt2_hf(const nlohmann::json& config, const TensorMap& tensors, const BuildOptions& o);
std::unique_ptr<Model> build_bert_hf(const nlohmann::json& config, const TensorMap& tensors, const BuildOptions& o);
// family: "bert", "roberta", "distilbert", "albert", "mpnet" (bert.cpp).
std::unique_ptr<Model> build_encoder_hf(const std::string& family, const nlohmann::json& config, const TensorMap& tensors,
                                        const BuildOptions& o);
std::unique_ptr<Model> build_bert_gguf(const nlohmann::json& metadata, const TensorMap& tensors, const BuildOptions& o);
std::unique_ptr<Model> build_seq2seq_hf(const nlohmann::json& config, const TensorMap& tensors, const BuildOptions& o);
std::unique_ptr<Model> build_t5_hf(const nlohmann::json& config, const TensorMap& tensors, const BuildOptions& o);
std::unique_ptr<Model> build_t5_gguf(const nlohmann::json& metadata, const TensorMap& tensors, const BuildOptions& o);
std::unique_ptr<Model> build_bart_hf(const nlohmann::json& config, const TensorMap& tensors, const BuildOptions& o);
std::unique_ptr<Model> build_marian_hf(const nlohmann::json& config, const TensorMap& tensors, const BuildOptions& o);

}  // namespace attnlens::models
