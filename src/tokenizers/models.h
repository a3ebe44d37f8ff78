// Internal: the models (HF tokenizers' models/*): one word -> token ids.
#pragma once
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokenizers/bpe_merge.h"
#include "tokenizers/pipeline.h"
#include "tokenizers/string_table.h"

namespace attnlens::tok {

// Pieces indexed by id with a lookup from piece to id (the first id of a duplicated piece wins).
class Vocab {
 public:
  explicit Vocab(std::vector<std::string> pieces);
  int find(std::string_view piece) const {
    const int i = index_.find(piece);
    return i < 0 || one_to_one_ ? i : ids_[size_t(i)];
  }
  const std::vector<std::string>& pieces() const { return pieces_; }
  int size() const { return int(pieces_.size()); }
  // Every id has its own non-empty piece: then find(pieces()[id]) == id for every id.
  bool one_to_one() const { return one_to_one_; }

 private:
  std::vector<std::string> pieces_;
  StringTable index_;
  std::vector<int> ids_;  // index_ entry -> id
  bool one_to_one_ = true;  // ids_[i] == i (no gaps, no duplicates): find skips ids_
};

// Merges as pairs of pieces in one buffer (a 280k-merge list costs no allocation per merge):
// merge i is (first(i), second(i)), and both(i) is their concatenation.
class MergeList {
 public:
  void reserve(size_t merges, size_t bytes) {
    text_.reserve(bytes);
    bounds_.reserve(2 * merges);
  }
  void add(std::string_view a, std::string_view b) {
    bounds_.push_back(uint32_t(text_.size()));
    text_.append(a.data(), a.size());
    bounds_.push_back(uint32_t(text_.size()));
    text_.append(b.data(), b.size());
  }
  size_t size() const { return bounds_.size() / 2; }
  bool empty() const { return bounds_.empty(); }
  std::string_view both(size_t i) const { return span(bounds_[2 * i], end(i)); }
  std::string_view first(size_t i) const { return span(bounds_[2 * i], bounds_[2 * i + 1]); }
  std::string_view second(size_t i) const { return span(bounds_[2 * i + 1], end(i)); }

 private:
  size_t end(size_t i) const { return 2 * i + 2 < bounds_.size() ? bounds_[2 * i + 2] : text_.size(); }
  std::string_view span(size_t b, size_t e) const { return std::string_view(text_.data() + b, e - b); }
  std::string text_;
  std::vector<uint32_t> bounds_;
};

// The "<0xXX>" byte tokens of a vocabulary (-1 where absent).
struct ByteTokens {
  explicit ByteTokens(const Vocab& v);
  int id[256];
  bool all_present(std::string_view bytes) const;
};

// --- BPE -----------------------------------------------------------------------------------------
struct BpeConfig {
  std::vector<std::string> pieces;  // index = id ("" where the vocabulary has no piece)
  MergeList merges;                 // rank = index
  std::string unk_token;                  // "" if none
  std::string continuing_subword_prefix;  // put before every character but the first of a word
  std::string end_of_word_suffix;         // put after the last character of a word
  bool byte_fallback = false;  // a character without a piece becomes its <0xXX> tokens
  bool fuse_unk = false;       // consecutive unknown characters become one unk token
  bool ignore_merges = false;  // a word that is a piece is that piece, whatever the merges say
};

class BpeModel final : public Model {
 public:
  explicit BpeModel(BpeConfig c);
  void encode_word(std::string_view word, std::vector<int>& out) const override;
  const std::vector<std::string>& pieces() const override { return vocab_.pieces(); }
  int token_to_id(std::string_view piece) const override { return vocab_.find(piece); }
  int unk_id() const override { return unk_; }
  const char* name() const override { return "BPE"; }

 private:
  int char_id(std::string_view ch) const;
  Vocab vocab_;
  ByteTokens bytes_;
  PairRanks ranks_;
  std::string prefix_, suffix_;
  int unk_ = -1;
  bool byte_fallback_, fuse_unk_, ignore_merges_;
  std::vector<int> small_char_;  // id of each code point below 0x800 as a piece (no prefix/suffix), -1 if none
};

// --- WordPiece -----------------------------------------------------------------------------------
struct WordPieceConfig {
  std::vector<std::string> pieces;
  std::string unk_token = "[UNK]";
  std::string continuing_subword_prefix = "##";
  int max_input_chars_per_word = 100;
};

// Greedy longest-match-first; a word that cannot be covered (or is too long) is one unk token.
class WordPieceModel final : public Model {
 public:
  explicit WordPieceModel(WordPieceConfig c);
  void encode_word(std::string_view word, std::vector<int>& out) const override;
  const std::vector<std::string>& pieces() const override { return vocab_.pieces(); }
  int token_to_id(std::string_view piece) const override { return vocab_.find(piece); }
  int unk_id() const override { return unk_; }
  const char* name() const override { return "WordPiece"; }
  const std::string& prefix() const { return prefix_; }

 private:
  Vocab vocab_;
  std::string prefix_;
  int unk_ = -1, max_chars_;
};

// Kinds of pieces as sentencepiece's models treat them (SentencePiece.Type).
enum class SpmPiece : uint8_t {
  Normal,       // NORMAL
  UserDefined,  // USER_DEFINED: matched whole wherever it occurs
  Unused,       // UNUSED: a BPE merge may form it (then split again); Unigram never matches it
  Reserved,     // CONTROL, UNKNOWN, BYTE: never matched in text
};

// --- Unigram -------------------------------------------------------------------------------------
struct UnigramConfig {
  std::vector<std::pair<std::string, double>> vocab;  // (piece, log probability), index = id
  int unk_id = -1;              // required when a character can be missing from the vocabulary
  bool byte_fallback = false;   // an unknown stretch becomes its <0xXX> tokens when they all exist
  bool fuse_unk = true;         // consecutive unknown characters become one token (HF always fuses)
  // Path scores summed in float32, as sentencepiece's EncodeOptimized does (HF sums in double): equal
  // sums of the same pieces in another order can then round apart, which breaks ties differently.
  bool float32_scores = false;
  // The score unknown characters are charged, minus 10: NaN means the lowest score of any piece (HF);
  // sentencepiece takes the lowest score of its normal pieces.
  double min_score = std::numeric_limits<double>::quiet_NaN();
  // sentencepiece's piece kinds, index = id (empty: every piece is matched with its score, as HF
  // does): Reserved and Unused pieces are never matched in text; a UserDefined piece of n bytes
  // scores n × max_score − 0.1 (unigram_model.cc), max_score being the best NORMAL score (at least
  // FLT_MIN, sentencepiece's initial value).
  std::vector<SpmPiece> kinds;
  double max_score = 0;
};

// The most likely segmentation (Viterbi over the pieces' scores), as HF's Unigram::encode_optimized:
// a character no piece covers costs min(score) - 10 and is unk.
class UnigramModel final : public Model {
 public:
  explicit UnigramModel(UnigramConfig c);
  void encode_word(std::string_view word, std::vector<int>& out) const override;
  const std::vector<std::string>& pieces() const override { return vocab_.pieces(); }
  int token_to_id(std::string_view piece) const override { return vocab_.find(piece); }
  int unk_id() const override { return unk_; }
  const char* name() const override { return "Unigram"; }

 private:
  static std::vector<std::string> pieces_of(const UnigramConfig& c);
  Vocab vocab_;
  ByteTokens bytes_;
  std::vector<double> scores_;
  std::vector<uint8_t> matchable_;  // empty: every piece; else 0 for pieces never matched in text
  double unk_score_ = 0;
  int unk_ = -1;
  bool byte_fallback_, fuse_unk_, float32_;
  // A byte trie of the pieces for the prefix search: node -> children (sorted by byte).
  struct TrieNode {
    int piece = -1;  // id ending here
    uint32_t first_child = 0, child_count = 0;
  };
  struct TrieEdge {
    uint8_t byte;
    uint32_t node;
  };
  std::vector<TrieNode> nodes_;
  std::vector<TrieEdge> edges_;
};

}  // namespace attnlens::tok
