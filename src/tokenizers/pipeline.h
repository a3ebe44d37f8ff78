// Internal: a tokenizer as a pipeline of components, the way Hugging Face tokenizers describes one
// (https://huggingface.co/docs/tokenizers/pipeline):
//
//   text -> added tokens split out -> normalizer -> pre-tokenizer -> model -> post-processor -> ids
//   ids  -> tokens (specials dropped) -> decoder -> text
//
// Each family of components has its own small header and file (normalizers.h, pre_tokenizers.h,
// models.h, decoders.h, post_processors.h, added_tokens.h). hf_tokenizer_json.cpp assembles a Pipeline
// from a tokenizer.json; other loaders (SentencePiece .model, GGUF) can assemble one from C++:
//
//   tok::Pipeline p;
//   p.normalizer = std::make_unique<tok::PrecompiledNormalizer>(charsmap_bytes);
//   p.pre_tokenizer = std::make_unique<tok::MetaspacePreTokenizer>(tok::MetaspaceOptions{});
//   p.model = std::make_unique<tok::UnigramModel>(std::move(unigram_config));
//   p.decoder = std::make_unique<tok::MetaspaceDecoder>(tok::MetaspaceOptions{});
//   p.ids = {bos, eos, pad, unk};
//   auto tokenizer = tok::make_pipeline_tokenizer(std::move(p));
//
// Components are immutable once built; every method is const and safe to call from several threads.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "tokenizers/added_tokens.h"
#include "tokenizers/tokenizer.h"

namespace attnlens::tok {

// --- normalizers ---------------------------------------------------------------------------------
class Normalizer {
 public:
  virtual ~Normalizer() = default;
  virtual std::string normalize(std::string_view text) const = 0;
};

// --- pre-tokenizers ------------------------------------------------------------------------------
// The words of one stretch of text: spans of a buffer. Pre-tokenizers split spans further or
// rewrite their text (ByteLevel, Metaspace); the model then encodes each span on its own.
struct Words {
  std::string text;
  std::vector<std::pair<uint32_t, uint32_t>> spans;  // [begin, end) byte ranges of text, in order
  bool at_start = true;  // the stretch starts the input (Metaspace prepend_scheme "first")

  std::string_view word(size_t i) const { return std::string_view(text).substr(spans[i].first, spans[i].second - spans[i].first); }
};

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  virtual void pre_tokenize(Words& words) const = 0;
};

// --- models --------------------------------------------------------------------------------------
class Model {
 public:
  virtual ~Model() = default;
  // Appends the ids of one word (a pre-tokenizer span; never empty).
  virtual void encode_word(std::string_view word, std::vector<int>& out) const = 0;
  // The model's vocabulary: pieces indexed by id (ids without a piece are ""), and the lookup.
  virtual const std::vector<std::string>& pieces() const = 0;
  virtual int token_to_id(std::string_view piece) const = 0;  // -1 if absent
  virtual int unk_id() const { return -1; }
  virtual const char* name() const = 0;  // "BPE", "WordPiece", "Unigram"
};

// --- post-processors -----------------------------------------------------------------------------
// The ids a single sequence gets around it when special tokens are added.
class PostProcessor {
 public:
  virtual ~PostProcessor() = default;
  virtual void process(std::vector<int>& ids) const = 0;
  virtual void check_ids(int vocab_size) const = 0;  // throws if an id is outside the vocabulary
  virtual size_t added_count() const = 0;            // how many ids process() adds
};

// --- decoders ------------------------------------------------------------------------------------
// Decoders work on the tokens' byte strings (a ByteLevel or ByteFallback decoder may produce bytes
// that are not UTF-8 on their own; the joined result is made valid UTF-8 at the very end).
enum class DecodePosition : uint8_t {
  Text,   // decoding a whole token sequence: the first token starts the text
  Token,  // one token on its own, in the middle of a text (token_bytes(), piece labels)
};

class Decoder {
 public:
  virtual ~Decoder() = default;
  virtual void decode_chain(std::vector<std::string>& tokens, DecodePosition where) const = 0;
  // The display label of one token (piece()): by default its bytes in the middle of a text.
  // WordPiece keeps its "##" continuation marker visible.
  virtual void display(std::string& token) const {
    std::vector<std::string> one{std::move(token)};
    decode_chain(one, DecodePosition::Token);
    token.clear();
    for (auto& t : one) token += t;
  }
  virtual bool labels_are_pieces() const { return false; }  // display() leaves pieces unchanged
};

// --- truncation and padding (tokenizer.json "truncation", "padding") ---------------------------
struct Limits {
  int max_length = -1;      // truncation: at most this many ids, special ones included; -1: none
  bool truncate_left = false;
  bool pad = false;         // padding: up to pad_to (0: no fixed length), rounded up to a multiple
  int pad_id = 0, pad_to = 0, pad_to_multiple_of = 0;
  bool pad_left = false;
};

// --- the pipeline --------------------------------------------------------------------------------
struct Pipeline {
  std::unique_ptr<Normalizer> before_added;       // optional: rewrites each stretch between added
                                                  // tokens, which are then matched in the result
                                                  // (ALBERT's per-character lowercasing)
  std::unique_ptr<Normalizer> normalizer;         // optional
  std::unique_ptr<PreTokenizer> pre_tokenizer;    // optional: the whole stretch is one word
  std::unique_ptr<Model> model;                   // required
  std::unique_ptr<PostProcessor> post_processor;  // optional: no ids added
  std::unique_ptr<Decoder> decoder;               // optional: token strings concatenated
  std::vector<AddedToken> added;                  // matched in the text before the model
  std::vector<int> control;                       // special ids never matched in text (sentencepiece
                                                  // CONTROL pieces): decode drops them
  SpecialIds ids;                                 // -1: none
  Limits limits;
  std::string kind;                               // Tokenizer::kind(); "" derives one from the parts
};

std::unique_ptr<Tokenizer> make_pipeline_tokenizer(Pipeline p);

}  // namespace attnlens::tok
