// Internal: added tokens (tokenizer.json "added_tokens", GGUF user-defined tokens): strings matched
// in the text before the model runs, each becoming one token, as HF tokenizers' AddedVocabulary does.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace attnlens::tok {

// The ids a vocabulary names for its roles; -1: none.
struct SpecialIds {
  int bos = -1, eos = -1, pad = -1, unk = -1;
};

struct AddedToken {
  int id = -1;
  std::string content;
  bool special = false;      // a control token: skipped by decode, shown by its name
  bool lstrip = false;       // also swallows the whitespace before it
  bool rstrip = false;       // also swallows the whitespace after it
  bool single_word = false;  // only matched where no word character touches it
  bool normalized = false;   // matched in the normalized text (its content normalized too)
  bool python_space = false; // lstrip / rstrip as Python's str.rstrip / lstrip (transformers' slow
                             // tokenizers): U+001C..U+001F are whitespace too
};

// A stretch of the input between added tokens (added_id < 0), or one added token.
struct Segment {
  std::string_view text;
  size_t offset = 0;  // byte offset of text in the input
  int added_id = -1;
};

// Splits text around added tokens: the leftmost match, the longest content among those starting
// there (HF: Aho-Corasick, leftmost-longest, non-overlapping). A match refused by single_word is
// skipped whole, as HF's iterator does. lstrip / rstrip extend the token's segment over the
// adjacent whitespace (never into the previous token).
class AddedTokenMatcher {
 public:
  AddedTokenMatcher() = default;
  explicit AddedTokenMatcher(std::vector<AddedToken> tokens);
  std::vector<Segment> split(std::string_view text) const;
  bool empty() const { return tokens_.empty(); }

 private:
  const AddedToken* longest_at(std::string_view text, size_t pos) const;
  std::vector<AddedToken> tokens_;
  std::vector<std::vector<int>> by_first_byte_;  // indices into tokens_, longest content first
};

}  // namespace attnlens::tok
