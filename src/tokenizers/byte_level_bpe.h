// Internal: GPT-2 style byte-level BPE (HF tokenizer.json with a ByteLevel pre-tokenizer).
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokenizers/vocab_tokenizer.h"

namespace attnlens::tok {

struct ByteLevelBpeConfig {
  VocabSpec vocab;  // pieces in GPT-2's byte-to-unicode spelling ("Ġthe" = " the")
  std::vector<std::pair<std::string, std::string>> merges;  // rank = index
  bool add_prefix_space = false;  // put a space before text that does not start with one
  bool use_regex = true;          // split with the GPT-2 pattern before BPE (else one word per stretch)
};

std::unique_ptr<Tokenizer> make_byte_level_bpe(ByteLevelBpeConfig cfg);

// The words of text under GPT-2's pre-tokenizer pattern
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// as views into text. \s is the White_Space property; ill-formed UTF-8 bytes count as [^\s\p{L}\p{N}].
std::vector<std::string_view> gpt2_pretokenize(std::string_view text);

}  // namespace attnlens::tok
