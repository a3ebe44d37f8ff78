// One entry point for every supported checkpoint: give it the files (bytes in memory — the browser
// has no file system), it finds out what they are by their content and returns a runnable model
// with its tokenizer and generation conventions.
//
//   llama2.c          model.bin (+ tokenizer.bin)
//   GGUF              model.gguf (tokenizer from its metadata)
//   Hugging Face      config.json + model.safetensors | model.safetensors.index.json + shards
//                     (+ tokenizer.json)
//
// The loaded model keeps the files' bytes alive and reads its f32/q8_0 weights straight from them.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/byte_buffer.h"
#include "generate/generator.h"
#include "models/model.h"
#include "models/weights.h"
#include "runtime/embedding.h"
#include "runtime/tokenizer_config.h"
#include "tokenizers/tokenizer.h"

namespace attnlens::runtime {

struct File {
  std::string name;  // file name (a path's last component is enough), for messages and roles
  ByteBuffer bytes;  // the whole file (may pass 2 GB in wasm32, unlike a std::vector)
};
using FilePtr = std::shared_ptr<const File>;

struct LoadOptions {
  models::WeightFormat format = models::WeightFormat::AsStored;  // Q8_0: quantize f32 matrices at load
  bool llamacpp_gelu = false;  // models::BuildOptions::llamacpp_gelu (parity checks)
};

class LoadedModel {
 public:
  const models::Model& model() const { return *model_; }
  const Tokenizer* tokenizer() const { return tokenizer_.get(); }  // null when no tokenizer was given
  const Tokenizer& require_tokenizer() const;                     // throws if none
  // Encoder–decoder models may read one vocabulary and write another (Marian's separate source and
  // target vocabularies): tokenizer() encodes the source, output_tokenizer() reads the decoder's
  // tokens (generated text, pieces). It is tokenizer() unless the files pair a second one.
  const Tokenizer* output_tokenizer() const { return target_tokenizer_ ? target_tokenizer_.get() : tokenizer_.get(); }
  const Tokenizer& require_output_tokenizer() const;
  // The target side of an encoder–decoder model's text (transformers' text_target / as_target_tokenizer):
  // decoder inputs typed as text, the decoder's pieces. output_tokenizer(), but throws for a model
  // without a decoder reading a text of its own (decoder-only, encoder-only) or without a tokenizer.
  const Tokenizer& require_target_tokenizer() const;
  // True when the target side has a tokenizer of its own (Marian's target.spm), which adds its own
  // special tokens: tokenizer_config's add_bos/add_eos describe the source tokenizer.
  bool has_separate_target_tokenizer() const { return target_tokenizer_ != nullptr; }
  const generate::PromptFormat& prompt_format() const { return prompt_; }
  // Special tokens' text, add_bos/add_eos, length limit, chat templates (tokenizer_config.h).
  const TokenizerConfig& tokenizer_config() const { return tokenizer_config_; }
  const std::string& format() const { return format_; }  // "llama2c", "gguf", "safetensors"
  // The model card (architecture, sizes, tokenizer kind…) is model().info(), format(), files() and
  // tokenizer(); bindings/model.cpp turns it into the JS object model.info.
  const std::vector<FilePtr>& files() const { return files_; }
  // The model's own generation settings (encoder–decoder models: generation_config.json / config.json)
  // under the JS API's option names (maxNewTokens, numBeams, …); {} when it has none.
  const nlohmann::json& generation_defaults() const { return generation_; }
  // Encoder-only models: how to pool sentence embeddings (sentence-transformers modules.json,
  // 1_Pooling/config.json, Normalize and sentence_bert_config.json; GGUF pooling_type).
  const EmbeddingConfig& embedding() const { return embedding_; }
  size_t file_bytes() const;  // bytes of the files held
  // Bytes held whatever runs: the files plus what the model owns (weight copies, tables).
  size_t weight_memory_bytes() const { return file_bytes() + model_->info().owned_bytes; }

 private:
  friend std::unique_ptr<LoadedModel> load_model(std::vector<FilePtr> files, const LoadOptions& options);
  std::vector<FilePtr> files_;
  std::string format_;
  std::unique_ptr<models::Model> model_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::unique_ptr<Tokenizer> target_tokenizer_;  // null: the decoder uses tokenizer_
  generate::PromptFormat prompt_;
  TokenizerConfig tokenizer_config_;
  nlohmann::json generation_ = nlohmann::json::object();
  EmbeddingConfig embedding_;
};

std::unique_ptr<LoadedModel> load_model(std::vector<FilePtr> files, const LoadOptions& options = {});

// A tokenizer alone (tokenizer.bin needs the vocabulary size: pass 0 to read it from the file's
// record count), tokenizer.json or a GGUF's metadata.
std::unique_ptr<Tokenizer> load_tokenizer(const File& file, int vocab_size = 0);

// A tokenizer file with its configuration files (tokenizer_config.json, special_tokens_map.json,
// chat_template.jinja …), or a GGUF (its metadata has both).
LoadedTokenizer load_tokenizer_files(const std::vector<FilePtr>& files, int vocab_size = 0);

}  // namespace attnlens::runtime
