// tokenizer.json: every supported pipeline; a tokenizer that loads must encode and decode anything.
#include "fuzz_util.h"
#include "tokenizers/tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::expect_clean([&] {
    auto t = attnlens::load_hf_tokenizer(std::string_view(reinterpret_cast<const char*>(data), size), "tokenizer.json", 4096);
    for (const char* text : {"Hello, world!", " the  cat\n\tsat é 日本語 🙂 <|endoftext|> [CLS]", "\xff\xfe bad utf8 \xc3"}) {
      const auto ids = t->encode(text, true);
      (void)t->decode(ids);
      for (int id : ids) (void)t->piece(id);
    }
    for (int id = 0; id < std::min(t->vocab_size(), 64); ++id) (void)t->token_bytes(id);
  });
  return 0;
}
