// llama2.c checkpoints: the header checks, the arrays, and the model built from them.
#include "formats/model_file.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::expect_clean([&] {
    (void)attnlens::detect_file_kind(attnlens::Bytes{data, size, "fuzz.bin"});
    attnlens::ModelFile m = attnlens::read_llama2c(attnlens::Bytes{data, size, "fuzz.bin"});
    (void)m;
  });
  fuzz::expect_clean([&] {
    auto m = attnlens::runtime::load_model({fuzz::file("fuzz.bin", data, size)});
    fuzz::exercise(*m);
  });
  return 0;
}
