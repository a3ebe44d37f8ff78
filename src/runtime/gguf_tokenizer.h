// The tokenizer a GGUF's metadata describes, as llama.cpp reads it (src/llama-vocab.cpp of
// llama.cpp; keys as its convert_hf_to_gguf.py writes them):
//
//   tokenizer.ggml.model = llama  SentencePiece BPE over tokens / scores / token_type (llama.cpp's SPM)
//                        = gpt2   byte-level BPE over tokens / merges, pre-tokenized by the regexes
//                                 tokenizer.ggml.pre names (gpt-2, llama-bpe / llama3, qwen2,
//                                 deepseek-v3, gpt-4o, smollm / starcoder, default), each splitting
//                                 the text into matches and the stretches between them
//                        = bert   WordPiece (llama.cpp's WPM) over the "phantom space" vocabulary
//                        = t5     SentencePiece Unigram (llama.cpp's UGM): tokens / scores / types,
//                                 precompiled_charsmap, add_space_prefix, remove_extra_whitespaces,
//                                 through the same pipeline as a .model file (sentencepiece_tokenizer.h)
//
// Ids equal llama.cpp's on vocabulary-only GGUFs (tests/cpp/test_runtime_gguf_vocab.cpp, ids recorded
// by tests/fixtures/gguf_vocab/llamacpp_ids.mjs with node-llama-cpp). An unknown model or pre name
// is an error naming the file and the key.
#pragma once
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "tokenizers/tokenizer.h"

namespace attnlens::runtime {

// null when the metadata has no tokenizer.ggml.model.
std::unique_ptr<Tokenizer> gguf_tokenizer(const nlohmann::json& meta, const std::string& source);

}  // namespace attnlens::runtime
