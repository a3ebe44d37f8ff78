// The whole load path: the input is a bundle of files (see split() below) given to load_model, as
// loadModel() gives them: recognised by content, paired by role, built into a model and tokenizer,
// then run (a forward pass, a short generation).
#include <cstring>

#include "fuzz_util.h"

namespace {
// The bundle: repeated { u8 name index; u32 length (little-endian, clamped to what remains); bytes }.
// Names give the loader's role hints (config.json, tokenizer.json, …); content decides the rest.
std::vector<attnlens::runtime::FilePtr> split(const uint8_t* data, size_t size) {
  static const char* const kNames[] = {"config.json", "model.safetensors", "tokenizer.json", "model.gguf",
                                       "model.bin", "tokenizer.bin", "model.safetensors.index.json",
                                       "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors",
                                       "generation_config.json", "other.json"};
  std::vector<attnlens::runtime::FilePtr> files;
  size_t at = 0;
  while (at + 5 <= size && files.size() < 6) {
    const char* name = kNames[data[at] % (sizeof kNames / sizeof kNames[0])];
    uint32_t len;
    std::memcpy(&len, data + at + 1, 4);
    at += 5;
    const size_t n = std::min<size_t>(len, size - at);
    files.push_back(fuzz::file(name, data + at, n));
    at += n;
  }
  return files;
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto files = split(data, size);
  fuzz::expect_clean([&] {
    for (bool q8 : {false, true}) {
      attnlens::runtime::LoadOptions o;
      if (q8) o.format = attnlens::models::WeightFormat::Q8_0;
      auto m = attnlens::runtime::load_model(files, o);
      fuzz::exercise(*m);
    }
  });
  return 0;
}
