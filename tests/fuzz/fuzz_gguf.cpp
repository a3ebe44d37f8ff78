// GGUF: the reader (metadata, tensor infos, offsets), then the tokenizer in its metadata.
#include "formats/model_file.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::expect_clean([&] {
    attnlens::ModelFile g = attnlens::read_gguf(attnlens::Bytes{data, size, "fuzz.gguf"});
    for (const auto& kv : g.tensors.all()) (void)kv.second.numel();
  });
  fuzz::expect_clean([&] {
    auto t = attnlens::runtime::load_tokenizer(*fuzz::file("fuzz.gguf", data, size));
    const auto ids = t->encode("Hello, world! é", true);
    (void)t->decode(ids);
  });
  return 0;
}
