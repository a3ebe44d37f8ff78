// llama2.c tokenizer.bin (its vocabulary size from its record count, as loadTokenizer does).
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::expect_clean([&] {
    auto t = attnlens::runtime::load_tokenizer(*fuzz::file("tokenizer.bin", data, size));
    const auto ids = t->encode("Once upon a time, é 日本 \xff", true);
    (void)t->decode(ids);
    for (int id : ids) (void)t->piece(id);
  });
  return 0;
}
