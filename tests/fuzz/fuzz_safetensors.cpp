// safetensors: one file (header JSON, dtypes, shapes, offsets tiling the data).
#include "formats/model_file.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::expect_clean([&] {
    std::vector<std::string> skipped;
    attnlens::TensorMap m = attnlens::read_safetensors(attnlens::Bytes{data, size, "fuzz.safetensors"}, &skipped);
    for (const auto& kv : m.all()) (void)kv.second.numel();
  });
  return 0;
}
