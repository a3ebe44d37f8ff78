// A GGUF's tokenizer (runtime/gguf_tokenizer.h: llama SentencePiece BPE, gpt2 byte-level BPE with
// the pre-tokenizer regexes tokenizer.ggml.pre names, bert WordPiece, t5 Unigram) and its
// configuration (special token ids, add_bos/add_eos, chat templates, end-of-turn ids), loaded as
// loadTokenizer() does (runtime::load_tokenizer_files), then text encoded with special tokens
// typed in. Seeds: vocabulary-only GGUFs (fuzz_gguf's seeds are models).
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::expect_clean([&] {
    const auto t = attnlens::runtime::load_tokenizer_files({fuzz::file("vocab.gguf", data, size)});
    fuzz::exercise_tokenizer(*t.tokenizer, t.flags);
  });
  return 0;
}
