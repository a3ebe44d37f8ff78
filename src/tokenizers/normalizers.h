// Internal: normalizers (HF tokenizers' normalizers/*): text -> text before pre-tokenization.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizers/pipeline.h"
#include "tokenizers/regex.h"
#include "tokenizers/unicode.h"

namespace attnlens::tok {

class UnicodeNormalizer final : public Normalizer {  // NFC, NFD, NFKC, NFKD
 public:
  explicit UnicodeNormalizer(unicode::NormalForm form) : form_(form) {}
  std::string normalize(std::string_view text) const override;

 private:
  unicode::NormalForm form_;
};

class LowercaseNormalizer final : public Normalizer {  // full lowercase mapping per code point
 public:
  std::string normalize(std::string_view text) const override;
};

class StripNormalizer final : public Normalizer {  // White_Space at either end
 public:
  StripNormalizer(bool left, bool right) : left_(left), right_(right) {}
  std::string normalize(std::string_view text) const override;

 private:
  bool left_, right_;
};

class StripAccentsNormalizer final : public Normalizer {  // drops \p{M}
 public:
  std::string normalize(std::string_view text) const override;
};

// A search pattern: a literal string or a regex (tokenizer.json {"String": ...} / {"Regex": ...}).
class Pattern {
 public:
  static Pattern literal(std::string s);
  static Pattern regex(std::string_view pattern);
  // Non-empty, non-overlapping matches, left to right, as byte ranges.
  std::vector<std::pair<size_t, size_t>> find_all(std::string_view text) const;
  // Matches of a literal single code point can be tested per character.
  bool is_literal() const { return !regex_; }
  const std::string& literal_text() const { return literal_; }

 private:
  std::string literal_;
  std::shared_ptr<const Regex> regex_;
};

// Every match replaced by content (content is literal text).
std::string replace_all(std::string_view text, const Pattern& pattern, std::string_view content);

class ReplaceNormalizer final : public Normalizer {
 public:
  ReplaceNormalizer(Pattern pattern, std::string content) : pattern_(std::move(pattern)), content_(std::move(content)) {}
  std::string normalize(std::string_view text) const override { return replace_all(text, pattern_, content_); }

 private:
  Pattern pattern_;
  std::string content_;
};

class PrependNormalizer final : public Normalizer {  // prepends to non-empty text
 public:
  explicit PrependNormalizer(std::string prefix) : prefix_(std::move(prefix)) {}
  std::string normalize(std::string_view text) const override;

 private:
  std::string prefix_;
};

// HF BertNormalizer (normalizers/bert.rs): clean_text drops NUL, U+FFFD and \p{C} except \t \n \r and
// turns whitespace into " "; handle_chinese_chars puts spaces around CJK ideographs; strip_accents
// is NFD then dropping Mn; lowercase. strip_accents is resolved by the loader (tokenizer.json's
// null means "same as lowercase").
struct BertNormalizerOptions {
  bool clean_text = true, handle_chinese_chars = true, strip_accents = true, lowercase = true;
};
class BertNormalizer final : public Normalizer {
 public:
  explicit BertNormalizer(BertNormalizerOptions o) : o_(o) {}
  std::string normalize(std::string_view text) const override;

 private:
  BertNormalizerOptions o_;
};

// SentencePiece's precompiled charsmap (the normalizer_spec of a .model; tokenizer.json's
// Precompiled normalizer): [uint32 little-endian trie size][darts-clone double-array trie]
// [NUL-terminated replacement strings]. Normalization follows sentencepiece's normalizer.cc: at each
// position the longest key of the trie that is a prefix of the rest is replaced by its string;
// without one, a well-formed character is copied and an ill-formed byte becomes U+FFFD.
// An empty charsmap normalizes nothing. Throws on a malformed charsmap.
class PrecompiledNormalizer final : public Normalizer {
 public:
  explicit PrecompiledNormalizer(std::string charsmap);
  std::string normalize(std::string_view text) const override;
  // Longest match at text[pos...]: its length (0 if none) and the replacement (a view into the
  // charsmap). sentencepiece's whole normalizer (SentencePieceNormalizer) steps with it.
  size_t longest_match(std::string_view text, size_t pos, std::string_view& replacement) const;

 private:
  std::string blob_;
  std::vector<uint32_t> units_;
  std::string_view strings_;
};

class SequenceNormalizer final : public Normalizer {
 public:
  explicit SequenceNormalizer(std::vector<std::unique_ptr<Normalizer>> parts) : parts_(std::move(parts)) {}
  std::string normalize(std::string_view text) const override;

 private:
  std::vector<std::unique_ptr<Normalizer>> parts_;
};

}  // namespace attnlens::tok
