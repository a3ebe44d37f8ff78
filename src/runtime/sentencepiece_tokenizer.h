// The tokenizer a SentencePiece model file describes (formats/sentencepiece_model.h), assembled from
// the tokenizer pipeline's components (tokenizers/pipeline.h):
//
//   normalizer     tok::SentencePieceNormalizer (charsmap, user-defined symbols, whitespace rules,
//                  dummy prefix, "▁")
//   pre-tokenizer  none: sentencepiece runs its model over the whole normalized text
//   model          tok::UnigramModel (Viterbi, float32 path scores, sentencepiece's piece kinds) or
//                  tok::SentencePieceBpeModel (merges by piece score)
//   post-processor none: sentencepiece adds no BOS/EOS itself (a tokenizer_config.json's
//                  add_bos_token / add_eos_token do, see runtime/tokenizer_config.h)
//   decoder        tok::SentencePieceDecoder
//
// Ids equal python sentencepiece's SentencePieceProcessor.encode(text) (tests/cpp/test_runtime_spm.cpp).
// What the engine does not apply is refused with the file's name: model_type WORD / CHAR,
// treat_whitespace_as_suffix, a denormalizer charsmap, UNUSED pieces in a BPE model, byte pieces
// without byte_fallback (or byte_fallback without all 256), no or several UNKNOWN pieces, a piece
// defined twice, special ids outside the vocabulary. self_test_data samples are checked at load.
#pragma once
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "formats/sentencepiece_model.h"
#include "tokenizers/tokenizer.h"

namespace attnlens::runtime {

// How a vocabulary is applied when it does not come from a .model file.
struct SentencePieceOptions {
  // llama.cpp's UGM (GGUF t5): user-defined, control and unknown pieces typed in the text are split
  // out first and each stretch between them is normalized on its own (its own dummy prefix), and
  // unknown characters are <unk> even when byte pieces exist. false: sentencepiece's own rules.
  bool llamacpp_ugm = false;
  // T5Tokenizer (a T5 folder's spiece.model without tokenizer.json): text encoded with special tokens
  // ends with the model's </s> (eos_id), as tokenization_t5.py appends it.
  bool append_eos = false;
};

std::unique_ptr<Tokenizer> make_sentencepiece_model_tokenizer(const SentencePieceModelProto& m,
                                                              const SentencePieceOptions& options = {});

// Marian (transformers' MarianTokenizer): the text is segmented by the SentencePiece model
// (source.spm), each piece's id is looked up in vocab.json ({piece: id}, the model's own ids; a piece
// missing there is "<unk>"), and "</s>" closes the sequence when special tokens are added. Language
// codes of the vocabulary (">>fra<<") typed in the text are tokens of their own. Decoding maps the ids
// back to pieces and decodes them as sentencepiece does. vocab.json must hold "</s>", "<unk>" and
// "<pad>"; its ids must be distinct and below limits::kMaxVocab.
std::unique_ptr<Tokenizer> make_marian_tokenizer(const SentencePieceModelProto& m, const nlohmann::json& vocab,
                                                 const std::string& vocab_name);

// read_sentencepiece_model + make_sentencepiece_model_tokenizer.
std::unique_ptr<Tokenizer> load_sentencepiece_model(const Bytes& file);

}  // namespace attnlens::runtime
