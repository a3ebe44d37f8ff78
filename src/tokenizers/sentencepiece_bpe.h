// Internal: SentencePiece BPE merging by piece score, for llama2.c's tokenizer.bin and GGUF metadata.
// (HF tokenizer.json files, Llama's included, are pipelines: pipeline.h.)
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tokenizers/vocab_tokenizer.h"

namespace attnlens::tok {

// When the dummy-prefix space is put in front of a stretch of text (only if it is non-empty).
enum class SpacePrefix {
  None,
  Always,  // llama2.c, llama.cpp, HF Prepend("▁") normalizer / Metaspace "always"
  First,   // HF Metaspace prepend_scheme "first": only the stretch that starts the input
};

struct SentencePieceConfig {
  VocabSpec vocab;  // pieces may spell spaces as "▁" (U+2581) or as real spaces
  std::vector<float> scores;  // merge the pair whose concatenation has the best score
  std::vector<int> token_types;  // GGUF types (6 = byte); empty: "<0xXX>" pieces are the byte tokens
  SpacePrefix space_prefix = SpacePrefix::Always;
  bool byte_fallback = true;  // characters missing from the vocabulary become <0xXX> tokens (else unk)
  bool fuse_unk = false;      // consecutive unk tokens become one (HF)
  bool marker_is_space = false;  // a "▁" typed in the text is a space (llama.cpp writes spaces as "▁")
};

std::unique_ptr<Tokenizer> make_sentencepiece_bpe(SentencePieceConfig cfg);

}  // namespace attnlens::tok
