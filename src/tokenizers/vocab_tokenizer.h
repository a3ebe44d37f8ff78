// Internal: what every tokenizer kind shares. The vocabulary and its lookup, special ids, added tokens
// (matched in the text before the model runs, as HF tokenizers does), the post-processor's special
// ids around the sequence, and the id range checks.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "tokenizers/added_tokens.h"
#include "tokenizers/string_table.h"
#include "tokenizers/tokenizer.h"

namespace attnlens::tok {

// Everything the shared base needs from a loader.
struct VocabSpec {
  std::vector<std::string> pieces;  // index = id, spelled as the kind stores them internally
  SpecialIds ids;
  std::vector<int> special;         // ids that are control/special tokens (skipped by decode)
  std::vector<AddedToken> added;    // matched in text; special ones are added to `special`
  std::vector<int> prefix, suffix;  // ids the post-processor puts around the sequence
};

class VocabTokenizer : public Tokenizer {
 public:
  VocabTokenizer(const VocabTokenizer&) = delete;
  VocabTokenizer& operator=(const VocabTokenizer&) = delete;

  std::vector<int> encode(std::string_view text, bool add_special = true) const final;
  std::string decode(const std::vector<int>& ids) const override;
  std::string piece(int id) const override;
  int vocab_size() const final { return int(pieces_.size()); }
  int bos_id() const final { return ids_.bos; }
  int eos_id() const final { return ids_.eos; }
  int pad_id() const final { return ids_.pad; }
  int unk_id() const final { return ids_.unk; }
  bool is_special(int id) const final;
  std::string kind() const final { return kind_; }
  int token_id(std::string_view piece) const override;

 protected:
  VocabTokenizer(std::string kind, VocabSpec spec);
  // Tokens of one stretch of text between added tokens; at_start: it begins the input.
  virtual void encode_text(std::string_view text, bool at_start, std::vector<int>& out) const = 0;
  // Display label of a non-special token (piece() handles ids and special tokens).
  virtual std::string display(int id) const = 0;

  void check_id(int id, const char* what) const;  // throws naming the id and the vocabulary size
  int find(std::string_view piece) const;          // exact spelling; -1 if absent
  const std::string& piece_str(int id) const { return pieces_[size_t(id)]; }
  bool special_unchecked(int id) const { return special_[size_t(id)] != 0; }

 private:
  std::string kind_;
  std::vector<std::string> pieces_;
  StringTable index_;              // pieces; index -> index_ids_ (the first id of a duplicated piece)
  std::vector<int> index_ids_;
  StringTable special_labels_;     // special tokens by label ("<s>" for "\n<s>\n"); index -> label_ids_
  std::vector<int> label_ids_;
  std::vector<uint8_t> special_;
  SpecialIds ids_;
  AddedTokenMatcher added_;
  std::vector<int> prefix_, suffix_;
};

// The special token names shown by piece(): content without surrounding whitespace
// (llama2.c stores BOS as "\n<s>\n").
std::string special_label(std::string_view piece);

}  // namespace attnlens::tok
