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
// Ids equal python sentencepiece's SentencePieceProcessor.encode(text) (tests/cpp/test_runtime_spm.cpp);
// with a model family's conventions (SpmFamily below) the family tokenizer's
// (tests/fixtures/spm/make_family_fixtures.py).
// What the engine does not apply is refused with the file's name: model_type WORD / CHAR,
// treat_whitespace_as_suffix, a denormalizer charsmap, UNUSED pieces in a BPE model, byte pieces
// without byte_fallback (or byte_fallback without all 256), no or several UNKNOWN pieces, a piece
// defined twice, special ids outside the vocabulary. self_test_data samples are checked at load.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include <nlohmann/json.hpp>

#include "formats/sentencepiece_model.h"
#include "tokenizers/tokenizer.h"

namespace attnlens::runtime {

// The tokenizer class of a model family that a .model file is read through (transformers' slow
// tokenizers: tokenization_t5.py, tokenization_xlm_roberta.py, tokenization_albert.py). With one, the
// family's special tokens are matched in the text (split out first; T5's sentinels swallow the
// whitespace on both sides, <mask> / [MASK] the whitespace before it), every stretch between them is
// encoded on its own, decoding drops them and strips whitespace at both ends of the text.
//   T5          ids as sentencepiece's; extra_ids sentinels "<extra_id_i>" with id
//               spm_size + extra_ids - 1 - i; </s> appended unless the ids already end with it
//   XlmRoberta  fairseq's dictionary: <s> 0, <pad> 1, </s> 2, <unk> 3, every other piece i -> i + 1,
//               <mask> spm_size + 1; <s> A </s>. The .model must have <unk> <s> </s> at 0, 1, 2.
//   Albert      each stretch preprocessed (albert_preprocess below; do_lower_case also lowercases
//               each character outside the special tokens before they are split out), a piece
//               ending with a digit (str.isdigit) and "," re-encoded without the "," which follows
//               on its own; [CLS] A [SEP]. The .model must have [CLS], [SEP].
// Whitespace is Python's (str.isspace) wherever these classes strip: the special tokens' lstrip /
// rstrip, ALBERT's remove_space, the decoded text's ends.
enum class SpmFamily : uint8_t { None, T5, XlmRoberta, Albert };

// How a vocabulary is applied.
struct SentencePieceOptions {
  // llama.cpp's UGM (GGUF t5): user-defined, control and unknown pieces typed in the text are split
  // out first and each stretch between them is normalized on its own (its own dummy prefix), and
  // unknown characters are <unk> even when byte pieces exist. false: sentencepiece's own rules.
  bool llamacpp_ugm = false;
  SpmFamily family = SpmFamily::None;
  int extra_ids = 100;  // T5
  bool remove_space = true, keep_accents = false, do_lower_case = true;  // ALBERT (transformers' defaults)
};

// The family the way transformers' AutoTokenizer picks it: tokenizer_config.json's tokenizer_class
// (T5Tokenizer, MT5Tokenizer, XLMRobertaTokenizer, AlbertTokenizer, or their *Fast names), else
// config.json's model_type (t5, mt5, umt5, xlm-roberta, albert); any other class or type: None. The
// family's settings come from tokenizer_config.json (extra_ids / additional_special_tokens;
// remove_space, keep_accents, do_lower_case); a wrong type or a setting not applied (T5's legacy
// false) is an error naming tc_name. Either JSON may be null.
SentencePieceOptions sentencepiece_family(const nlohmann::json& tokenizer_config, const nlohmann::json& config,
                                          const std::string& tc_name);

// ALBERT's preprocess_text (tokenization_albert.py) with the settings of o: remove_space
// (" ".join(text.strip().split()), Python's whitespace), `` and '' -> ", keep_accents false: NFKD
// without combining characters, do_lower_case: str.lower() (Final_Sigma included). With
// do_lower_case the tokenizer also lowercases each character outside the special tokens on its own
// before they are split out, as PreTrainedTokenizer.tokenize does.
std::string albert_preprocess(std::string_view text, const SentencePieceOptions& o);

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
