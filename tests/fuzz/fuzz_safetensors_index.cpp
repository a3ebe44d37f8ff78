// model.safetensors.index.json, and the index against two fixed shards (tests/fixtures/formats).
#include <fstream>
#include <iterator>

#include "formats/model_file.h"
#include "fuzz_util.h"

namespace {
std::vector<uint8_t> read(const char* name) {
  std::ifstream f(std::string(ATTNLENS_SOURCE_DIR "/tests/fixtures/formats/") + name, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::vector<uint8_t> a = read("model-00001-of-00002.safetensors");
  static const std::vector<uint8_t> b = read("model-00002-of-00002.safetensors");
  fuzz::expect_clean([&] {
    attnlens::SafetensorsIndex idx = attnlens::read_safetensors_index(attnlens::Bytes{data, size, "model.safetensors.index.json"});
    attnlens::read_safetensors_shards(idx, {attnlens::Bytes{a.data(), a.size(), "model-00001-of-00002.safetensors"},
                                            attnlens::Bytes{b.data(), b.size(), "model-00002-of-00002.safetensors"}});
  });
  return 0;
}
