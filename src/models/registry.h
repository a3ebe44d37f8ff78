// From a checkpoint's configuration and tensors to a runnable Model: one builder per architecture,
// chosen by GGUF's general.architecture or config.json's architectures / model_type.
#pragma once
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "core/tensor.h"
#include "models/model.h"
#include "models/weights.h"

namespace attnlens::models {

struct BuildOptions {
  WeightFormat format = WeightFormat::AsStored;
  std::string source = "model";  // file name for messages
};

// GGUF metadata (also what the llama.2c reader produces): architectures "llama", "gpt2".
std::unique_ptr<Model> build_from_gguf(const nlohmann::json& metadata, const TensorMap& tensors, const BuildOptions& o);
// Hugging Face config.json: LlamaForCausalLM, GPT2LMHeadModel (and GPT2Model), BertModel (and
// BertForMaskedLM), AttnLensSeq2Seq.
std::unique_ptr<Model> build_from_hf_config(const nlohmann::json& config, const TensorMap& tensors, const BuildOptions& o);

// The builders themselves (one file each).
std::unique_ptr<Model> build_llama_gguf(const nlohmann::json& metadata, const TensorMap& tensors, const BuildOptions& o);
std::unique_ptr<Model> build_llama_hf(const nlohmann::json& config, const TensorMap& tensors, const BuildOptions& o);
std::unique_ptr<Model> build_gpt2_gguf(const nlohmann::json& metadata, const TensorMap& tensors, const BuildOptions& o);
std::unique_ptr<Model> build_gpt2_hf(const nlohmann::json& config, const TensorMap& tensors, const BuildOptions& o);
std::unique_ptr<Model> build_bert_hf(const nlohmann::json& config, const TensorMap& tensors, const BuildOptions& o);
std::unique_ptr<Model> build_seq2seq_hf(const nlohmann::json& config, const TensorMap& tensors, const BuildOptions& o);

}  // namespace attnlens::models
