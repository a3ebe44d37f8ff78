// Internal: BERT WordPiece (HF tokenizer.json with model.type "WordPiece").
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizers/vocab_tokenizer.h"

namespace attnlens::tok {

// HF BertNormalizer's flags (all off: no normalizer). strip_accents is resolved by the loader
// (tokenizer.json's null means "same as lowercase").
struct BertNormalizer {
  bool clean_text = false, handle_chinese_chars = false, strip_accents = false, lowercase = false;
};

enum class WordSplitter {
  Bert,             // BertPreTokenizer: split on whitespace, every punctuation character on its own
  WhitespaceSplit,  // split on whitespace only
};

struct WordPieceConfig {
  VocabSpec vocab;
  std::string continuing_prefix = "##";
  int max_input_chars_per_word = 100;
  BertNormalizer normalizer;
  WordSplitter splitter = WordSplitter::Bert;
  bool cleanup = true;  // the WordPiece decoder's clean-up (" ." -> ".", ...)
};

std::unique_ptr<Tokenizer> make_wordpiece(WordPieceConfig cfg);

// HF BertNormalizer::normalize on text (ill-formed UTF-8 counts as U+FFFD).
std::string bert_normalize(std::string_view text, const BertNormalizer& n);

}  // namespace attnlens::tok
