// Internal: pre-tokenizers (HF tokenizers' pre_tokenizers/*): split a stretch of text into words, and
// for ByteLevel / Metaspace rewrite them.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "tokenizers/normalizers.h"
#include "tokenizers/pipeline.h"

namespace attnlens::tok {

// What happens to the pieces a pattern matches (HF SplitDelimiterBehavior).
enum class SplitBehavior : uint8_t { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

class SplitPreTokenizer final : public PreTokenizer {
 public:
  SplitPreTokenizer(Pattern pattern, SplitBehavior behavior, bool invert)
      : pattern_(std::move(pattern)), behavior_(behavior), invert_(invert) {}
  void pre_tokenize(Words& w) const override;

 private:
  Pattern pattern_;
  SplitBehavior behavior_;
  bool invert_;
};

// GPT-2's byte-level pre-tokenizer: optionally a space before each stretch that does not start with
// one, optionally the GPT-2 split pattern, then every byte spelled as its printable stand-in
// (bytes_to_unicode(): "Ġ" for " ", ...).
class ByteLevelPreTokenizer final : public PreTokenizer {
 public:
  ByteLevelPreTokenizer(bool add_prefix_space, bool use_regex);
  void pre_tokenize(Words& w) const override;

 private:
  bool add_prefix_space_, use_regex_;
  std::unique_ptr<SplitPreTokenizer> split_;
};

// The GPT-2 split pattern (HF pre_tokenizers/byte_level.rs).
extern const char* const kGpt2Pattern;
// The UTF-8 spelling of byte b in the byte-level alphabet, and the byte a code point stands for (-1
// if it is not in the alphabet).
const std::string& byte_level_char(uint8_t b);
int byte_level_byte(char32_t cp);

// SentencePiece's whitespace handling as a pre-tokenizer: spaces become the replacement ("▁"),
// which is prepended (always, only to the stretch that starts the input, or never) unless the word
// already starts with it; with split, a word is cut before each replacement.
enum class PrependScheme : uint8_t { Always, First, Never };
struct MetaspaceOptions {
  std::string replacement = "\xE2\x96\x81";
  PrependScheme prepend_scheme = PrependScheme::Always;
  bool split = true;
};
class MetaspacePreTokenizer final : public PreTokenizer {
 public:
  explicit MetaspacePreTokenizer(MetaspaceOptions o) : o_(std::move(o)) {}
  void pre_tokenize(Words& w) const override;

 private:
  MetaspaceOptions o_;
};

// A predicate on code points, split with a behaviour: Whitespace ([\w]+ | [^\w\s]+ kept),
// WhitespaceSplit (White_Space removed), Punctuation, Digits, BertPreTokenizer, CharDelimiterSplit.
class WhitespacePreTokenizer final : public PreTokenizer {
 public:
  void pre_tokenize(Words& w) const override;
};
class WhitespaceSplitPreTokenizer final : public PreTokenizer {
 public:
  void pre_tokenize(Words& w) const override;
};
class PunctuationPreTokenizer final : public PreTokenizer {
 public:
  explicit PunctuationPreTokenizer(SplitBehavior b) : behavior_(b) {}
  void pre_tokenize(Words& w) const override;

 private:
  SplitBehavior behavior_;
};
class DigitsPreTokenizer final : public PreTokenizer {  // \p{N}, each alone or in runs
 public:
  explicit DigitsPreTokenizer(bool individual) : individual_(individual) {}
  void pre_tokenize(Words& w) const override;

 private:
  bool individual_;
};
class BertPreTokenizer final : public PreTokenizer {
 public:
  void pre_tokenize(Words& w) const override;
};
class CharDelimiterSplitPreTokenizer final : public PreTokenizer {
 public:
  explicit CharDelimiterSplitPreTokenizer(char32_t delimiter) : delimiter_(delimiter) {}
  void pre_tokenize(Words& w) const override;

 private:
  char32_t delimiter_;
};

class SequencePreTokenizer final : public PreTokenizer {
 public:
  explicit SequencePreTokenizer(std::vector<std::unique_ptr<PreTokenizer>> parts) : parts_(std::move(parts)) {}
  void pre_tokenize(Words& w) const override {
    for (const auto& p : parts_) p->pre_tokenize(w);
  }

 private:
  std::vector<std::unique_ptr<PreTokenizer>> parts_;
};

}  // namespace attnlens::tok
