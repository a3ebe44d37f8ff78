// Internal: decoders (HF tokenizers' decoders/*): token strings -> text. They work on bytes: the
// ByteLevel and ByteFallback decoders may produce partial UTF-8 sequences, which the tokenizer turns
// into U+FFFD only once everything is joined (as TextDecoder would).
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "tokenizers/normalizers.h"
#include "tokenizers/pipeline.h"
#include "tokenizers/pre_tokenizers.h"

namespace attnlens::tok {

class ByteLevelDecoder final : public Decoder {  // byte-level stand-ins -> bytes
 public:
  void decode_chain(std::vector<std::string>& tokens, DecodePosition where) const override;
};

// "▁" -> " "; the first token of a text loses one leading "▁" unless prepend_scheme is never.
class MetaspaceDecoder final : public Decoder {
 public:
  explicit MetaspaceDecoder(MetaspaceOptions o) : o_(std::move(o)) {}
  void decode_chain(std::vector<std::string>& tokens, DecodePosition where) const override;

 private:
  MetaspaceOptions o_;
};

class ByteFallbackDecoder final : public Decoder {  // "<0xXX>" -> that byte
 public:
  void decode_chain(std::vector<std::string>& tokens, DecodePosition where) const override;
};

class FuseDecoder final : public Decoder {  // all tokens -> one
 public:
  void decode_chain(std::vector<std::string>& tokens, DecodePosition where) const override;
};

// Removes up to start leading and stop trailing copies of content from each token (only when
// decoding a whole text: a token on its own keeps them, so token_bytes() loses no space).
class StripDecoder final : public Decoder {
 public:
  StripDecoder(std::string content, size_t start, size_t stop) : content_(std::move(content)), start_(start), stop_(stop) {}
  void decode_chain(std::vector<std::string>& tokens, DecodePosition where) const override;

 private:
  std::string content_;
  size_t start_, stop_;
};

class ReplaceDecoder final : public Decoder {
 public:
  ReplaceDecoder(Pattern pattern, std::string content) : pattern_(std::move(pattern)), content_(std::move(content)) {}
  void decode_chain(std::vector<std::string>& tokens, DecodePosition where) const override;

 private:
  Pattern pattern_;
  std::string content_;
};

// Continuations ("##ing") are glued to the previous token, other tokens but the first get a space;
// with cleanup, HF's clean_up_tokenization (" ." -> ".", " n't" -> "n't", ...). Labels keep "##".
class WordPieceDecoder final : public Decoder {
 public:
  WordPieceDecoder(std::string prefix, bool cleanup) : prefix_(std::move(prefix)), cleanup_(cleanup) {}
  void decode_chain(std::vector<std::string>& tokens, DecodePosition where) const override;
  void display(std::string&) const override {}
  bool labels_are_pieces() const override { return true; }

 private:
  std::string prefix_;
  bool cleanup_;
};

class BpeDecoder final : public Decoder {  // end-of-word suffix -> " " (nothing after the last token)
 public:
  explicit BpeDecoder(std::string suffix) : suffix_(std::move(suffix)) {}
  void decode_chain(std::vector<std::string>& tokens, DecodePosition where) const override;

 private:
  std::string suffix_;
};

// CTC: repeated tokens collapse, the pad token disappears, the word delimiter becomes a space.
class CtcDecoder final : public Decoder {
 public:
  CtcDecoder(std::string pad, std::string delimiter, bool cleanup)
      : pad_(std::move(pad)), delimiter_(std::move(delimiter)), cleanup_(cleanup) {}
  void decode_chain(std::vector<std::string>& tokens, DecodePosition where) const override;

 private:
  std::string pad_, delimiter_;
  bool cleanup_;
};

class SequenceDecoder final : public Decoder {
 public:
  explicit SequenceDecoder(std::vector<std::unique_ptr<Decoder>> parts) : parts_(std::move(parts)) {}
  void decode_chain(std::vector<std::string>& tokens, DecodePosition where) const override {
    for (const auto& d : parts_) d->decode_chain(tokens, where);
  }
  void display(std::string& token) const override;
  bool labels_are_pieces() const override;

 private:
  std::vector<std::unique_ptr<Decoder>> parts_;
};

// HF decoders::wordpiece::cleanup.
std::string cleanup_tokenization(std::string s);

}  // namespace attnlens::tok
