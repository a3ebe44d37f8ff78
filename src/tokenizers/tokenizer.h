// The tokenizers layer: text <-> token ids for the model families AttnLens runs, plus the labels
// the UI shows for each token.
//
//   kind()               loaded from                                       reference it follows
//   "sentencepiece-bpe"  llama2.c tokenizer.bin, GGUF (tokenizer.ggml.model  llama2.c run.c encode/decode,
//                        "llama"), HF tokenizer.json BPE with "▁" spaces or   llama.cpp SPM, HF tokenizers
//                        byte_fallback (Llama 2, Gemma)
//   "byte-level-bpe"     HF tokenizer.json BPE with a ByteLevel pre-tokenizer  GPT-2 encoder.py / HF tokenizers
//                        or decoder (GPT-2, Llama 3, Qwen, GPT-4o, DeepSeek)
//   "bpe"                HF tokenizer.json, any other BPE                      HF tokenizers
//   "wordpiece"          HF tokenizer.json, WordPiece model (BERT)            HF tokenizers
//   "unigram"            HF tokenizer.json, Unigram model (T5, XLM-R, ALBERT)  HF tokenizers / sentencepiece
// Every HF tokenizer.json is a pipeline of components (pipeline.h) built from the file itself.
//
// Every failure (bad file, bad JSON, unsupported configuration, out-of-range id) throws
// attnlens::Error with a precise message. A Tokenizer is immutable after loading: all methods are
// const and safe to call from several threads.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace attnlens {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Token ids of text (UTF-8; ill-formed bytes never crash). With add_special the family's special
  // tokens are added: SentencePiece BOS first (if the vocabulary adds it); BERT [CLS] ... [SEP];
  // HF tokenizer.json: whatever its post_processor adds (GPT-2: none). Added tokens of a
  // tokenizer.json (e.g. "<|endoftext|>") are recognised in text whatever add_special says.
  virtual std::vector<int> encode(std::string_view text, bool add_special = true) const = 0;

  // The text of ids, always valid UTF-8 (ill-formed byte sequences become U+FFFD). Special/control
  // tokens (BOS, EOS, [CLS], <|endoftext|>, ...) contribute nothing.
  //   sentencepiece-bpe: token bytes joined; the leading space of a token at the start of ids or
  //                      right after BOS (the dummy prefix) is removed, as llama2.c's decode does.
  //   byte-level-bpe:    token bytes joined.
  //   wordpiece:         words joined by spaces, "##" continuations glued to the previous token,
  //                      then HF's clean_up_tokenization (" ." -> ".", " n't" -> "n't", ...).
  virtual std::string decode(const std::vector<int>& ids) const = 0;

  // The raw bytes token id contributes to the text, independent of its neighbours (for streaming:
  // concatenate and emit complete UTF-8 characters). A byte-fallback token gives its one byte;
  // "▁the" / "Ġthe" give " the"; WordPiece "##ing" gives "ing" and a word-initial "the" gives
  // " the"; special/control tokens give "". decode() differs from the plain concatenation only by
  // the leading-space and clean-up rules described above.
  virtual std::string token_bytes(int id) const = 0;

  // A display label, always valid UTF-8: the token's text with real spaces ("▁the" and "Ġthe" are
  // both shown as " the"), control characters escaped visibly ("\n", "\t", "\x1b"), bytes that are
  // not a complete character shown as "<0xE2>" (SentencePiece byte-fallback tokens below 0x80 are
  // shown as the character they encode), special tokens by their name ("<s>", "[CLS]",
  // "<|endoftext|>"), WordPiece continuations with their "##".
  virtual std::string piece(int id) const = 0;

  virtual int vocab_size() const = 0;
  virtual int bos_id() const = 0;  // BERT: [CLS]; GPT-2: <|endoftext|>; -1 if none
  virtual int eos_id() const = 0;  // BERT: [SEP]; GPT-2: <|endoftext|>; -1 if none
  virtual int pad_id() const = 0;  // -1 if none
  virtual int unk_id() const = 0;  // -1 if none
  virtual bool is_special(int id) const = 0;  // control / special token (throws when out of range)
  virtual std::string kind() const = 0;
  // Id of a vocabulary piece spelled as in the file ("▁the" or " the" for SentencePiece, "Ġthe" for
  // byte-level BPE, "##ing" for WordPiece, special tokens by content); -1 if absent.
  virtual int token_id(std::string_view piece) const = 0;
};

// llama2.c's tokenizer.bin (int32 max_token_length; per token: float32 score, int32 len, bytes).
// vocab_size comes from the model header. Ids 0/1/2 are <unk>/BOS/EOS; encode follows run.c.
std::unique_ptr<Tokenizer> load_llama2c_tokenizer(const uint8_t* data, size_t size, int vocab_size);

// SentencePiece BPE from GGUF metadata (tokenizer.ggml.tokens / scores / token_type, types:
// 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte). Pieces may spell spaces as
// "▁" (U+2581) or as real spaces. token_types may be empty (then only the given ids are special and
// byte tokens are recognised by their "<0xXX>" spelling). Ids of -1 mean "none".
std::unique_ptr<Tokenizer> make_sentencepiece_tokenizer(std::vector<std::string> pieces, std::vector<float> scores,
                                                        std::vector<int> token_types, int bos, int eos, int unk,
                                                        bool add_bos, bool add_space_prefix);

// Hugging Face tokenizer.json: the pipeline the file describes (normalizer, pre_tokenizer, model,
// post_processor, decoder, added_tokens, truncation, padding). A component or option AttnLens does
// not implement throws attnlens::Error naming it and its JSON path, prefixed with source (the file's
// name), e.g. "x/tokenizer.json: pre_tokenizer.pretokenizers[1].type = \"Foo\" is not a supported
// pre-tokenizer (supported: ...)". Ids must be below max_vocab (the model's vocabulary size, when the
// tokenizer comes with a model): checked while the vocabulary is read, so a stray huge id costs nothing.
// Sizes stay within core/limits.h (vocabulary, token bytes, merges, JSON nesting).
std::unique_ptr<Tokenizer> load_hf_tokenizer(std::string_view tokenizer_json, std::string_view source = "tokenizer.json",
                                             int max_vocab = 1 << 30);

}  // namespace attnlens
