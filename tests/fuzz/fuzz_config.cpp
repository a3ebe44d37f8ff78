// config.json: every architecture's reader, with fixed weights (tests/fixtures/models_torch/gpt2 and
// llama), so that a config that passes its checks builds and runs a model.
#include <fstream>
#include <iterator>

#include "fuzz_util.h"

namespace {
attnlens::runtime::FilePtr fixture(const std::string& rel, const std::string& name) {
  std::ifstream f(std::string(ATTNLENS_SOURCE_DIR "/tests/fixtures/") + rel, std::ios::binary);
  std::vector<uint8_t> b((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return fuzz::file(name, b.data(), b.size());
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const auto gpt2 = fixture("models_torch/gpt2/model.safetensors", "model.safetensors");
  static const auto llama = fixture("models_torch/llama/model.safetensors", "model.safetensors");
  static const auto tok = fixture("models_torch/gpt2/tokenizer.json", "tokenizer.json");
  const auto config = fuzz::file("config.json", data, size);
  for (const auto& weights : {gpt2, llama}) {
    fuzz::expect_clean([&] {
      auto m = attnlens::runtime::load_model({config, weights, tok});
      fuzz::exercise(*m);
    });
  }
  return 0;
}
