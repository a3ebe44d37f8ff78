// Internal: the components a SentencePiece model (.model file, GGUF "llama"/"t5" vocabulary) is
// assembled from, where sentencepiece's own behaviour is not one of HF tokenizers' components:
//
//  - SentencePieceNormalizer: sentencepiece's Normalizer::Normalize (normalizer.cc) as one step:
//    user-defined symbols kept as they are (longest match first), the precompiled charsmap applied by
//    longest match elsewhere (ill-formed UTF-8 becomes U+FFFD, one byte at a time), leading
//    whitespace dropped and runs of spaces collapsed (remove_extra_whitespaces), the dummy prefix
//    added, spaces written as "▁" (escape_whitespaces), trailing "▁" removed. HF's tokenizer.json
//    spells this as Precompiled + Strip + Replace + Metaspace, which differs around user-defined
//    symbols and the leading/trailing whitespace a charsmap produces.
//  - SentencePieceBpeModel: sentencepiece's bpe_model.cc: the whole normalized text split into
//    characters (a user-defined symbol is one symbol that never merges), then the adjacent pair
//    whose concatenation is a piece with the best score merges first (leftmost on ties), through the
//    shared bpe_merge loop; a symbol that is not a piece is unknown.
//
//  - SentencePieceDecoder: sentencepiece's SentencePieceProcessor::Decode: "▁" as a space, the first
//    piece's leading "▁" dropped (every leading one with remove_extra_whitespaces), runs of byte
//    pieces read as UTF-8 (an ill-formed byte becomes U+FFFD), the unknown piece shown as its
//    unk_surface (" ⁇ "); control pieces are special tokens, which the pipeline drops first.
//
// The Unigram model is tok::UnigramModel with sentencepiece's piece kinds (UnigramConfig::kinds).
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizers/models.h"
#include "tokenizers/normalizers.h"
#include "tokenizers/pipeline.h"

namespace attnlens::tok {

// Longest-match lookup of sentencepiece's user-defined symbols (its PrefixMatcher).
class SymbolMatcher {
 public:
  SymbolMatcher() = default;
  explicit SymbolMatcher(std::vector<std::string> symbols);
  // Byte length of the longest symbol starting at text[pos], 0 if none.
  size_t match(std::string_view text, size_t pos) const;
  bool empty() const { return symbols_.empty(); }

 private:
  std::vector<std::string> symbols_;
  std::vector<std::vector<uint32_t>> by_byte_;   // first byte -> indices into symbols_
};

struct SentencePieceNormalizerOptions {
  std::string charsmap;                   // NormalizerSpec.precompiled_charsmap ("" = identity)
  std::vector<std::string> user_defined;  // USER_DEFINED pieces
  bool add_dummy_prefix = true;
  bool remove_extra_whitespaces = true;
  bool escape_whitespaces = true;
};

class SentencePieceNormalizer final : public Normalizer {
 public:
  explicit SentencePieceNormalizer(SentencePieceNormalizerOptions o);
  std::string normalize(std::string_view text) const override;

 private:
  // sentencepiece's NormalizePrefix: the normalized form of the longest rule at text[pos] and how
  // many bytes it consumes.
  size_t normalize_prefix(std::string_view text, size_t pos, std::string_view& out) const;
  PrecompiledNormalizer charsmap_;
  bool has_charsmap_;
  SymbolMatcher user_;
  bool dummy_prefix_, remove_extra_, escape_;
};

struct SentencePieceBpeConfig {
  std::vector<std::string> pieces;  // index = id
  std::vector<float> scores;
  std::vector<SpmPiece> kinds;
  int unk_id = -1;
  bool byte_fallback = false;  // an unknown symbol becomes its <0xXX> byte pieces (else unk)
};

class SentencePieceBpeModel final : public Model {
 public:
  explicit SentencePieceBpeModel(SentencePieceBpeConfig c);
  void encode_word(std::string_view word, std::vector<int>& out) const override;
  const std::vector<std::string>& pieces() const override { return vocab_.pieces(); }
  int token_to_id(std::string_view piece) const override { return vocab_.find(piece); }
  int unk_id() const override { return unk_; }
  const char* name() const override { return "BPE"; }

 private:
  int mergeable(std::string_view piece) const;  // the id of a NORMAL/USER_DEFINED/UNUSED piece, else -1
  Vocab vocab_;
  ByteTokens bytes_;
  std::vector<SpmPiece> kinds_;
  std::vector<int> rank_;  // rank of each piece's score among the distinct scores (0 = best)
  SymbolMatcher user_;
  int unk_;
  bool byte_fallback_;
};

struct SentencePieceDecoderOptions {
  std::string unk_piece;                  // the UNKNOWN piece ("<unk>")
  std::string unk_surface = " \xE2\x81\x87 ";  // TrainerSpec.unk_surface
  bool byte_pieces = false;               // "<0xXX>" pieces are bytes (byte_fallback models)
  bool strip_first_space = true;          // add_dummy_prefix || remove_extra_whitespaces
  bool strip_leading_spaces = true;       // remove_extra_whitespaces
  bool strip_ends = false;                // a whole text's whitespace stripped at both ends (str.strip())
                                          // (transformers' T5 / XLM-R / ALBERT tokenizers: .strip())
};

class SentencePieceDecoder final : public Decoder {
 public:
  explicit SentencePieceDecoder(SentencePieceDecoderOptions o) : o_(std::move(o)) {}
  void decode_chain(std::vector<std::string>& tokens, DecodePosition where) const override;

 private:
  SentencePieceDecoderOptions o_;
};

}  // namespace attnlens::tok
