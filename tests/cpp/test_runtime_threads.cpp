// Whole models with 1, 2 and 4 threads: logits and every recorded attention weight identical, bit
// for bit — prefill, token-by-token decode through the KV cache, an encoder–decoder's encoder, cross-
// and self-attention, f32 weights and q8_0 (quantized at load). Our own models (models/) always run;
// stories260K (Llama, from ../shared) when present.
#include <cstring>
#include <vector>

#include "core/parallel.h"
#include "runtime/loader.h"
#include "test_util.h"

using namespace attnlens;
using namespace attnlens::runtime;

namespace {

FilePtr file(const std::string& path) {
  auto f = std::make_shared<File>();
  f->name = path.substr(path.find_last_of('/') + 1);
  f->bytes = testutil::read_bytes(path);
  return f;
}

std::vector<FilePtr> folder(const std::string& dir, std::initializer_list<const char*> names) {
  std::vector<FilePtr> files;
  for (const char* n : names) files.push_back(file(dir + "/" + n));
  return files;
}

// Everything a run produces, as raw floats: logits of each call, then each attention record.
struct Trace {
  std::vector<float> values;
  void add(const float* p, size_t n) { values.insert(values.end(), p, p + n); }
  void add_attention(const nn::AttentionRecorder& r) {
    for (const auto& rec : r.records()) add(rec.weights.data(), rec.weights.size());
  }
};

bool same_bits(const Trace& a, const Trace& b) {
  return a.values.size() == b.values.size() &&
         std::memcmp(a.values.data(), b.values.data(), a.values.size() * sizeof(float)) == 0;
}

// Decoder-only: prefill of the prompt, then `steps` greedy tokens one at a time, recording attention.
Trace run_decoder(const LoadedModel& m, const std::vector<int>& prompt, int steps, int threads) {
  parallel::Threads use(threads);
  const models::Model& model = m.model();
  const int vocab = model.info().vocab_size;
  auto s = model.new_session();
  nn::AttentionRecorder rec;
  s->recorder = &rec;
  Trace t;
  const float* logits = model.decode(*s, prompt.data(), int(prompt.size()), true);
  t.add(logits, prompt.size() * size_t(vocab));
  t.add_attention(rec);
  int token = prompt.back();
  for (int i = 0; i < steps; ++i) {
    const float* last = model.decode(*s, &token, 1);
    t.add(last, size_t(vocab));
    t.add_attention(rec);
    token = int(std::max_element(last, last + vocab) - last);
  }
  return t;
}

}  // namespace

TEST_CASE("threads: kjv-gpt2 (f32 and q8_0) gives identical bits with 1, 2 and 4 threads", "[runtime][threads]") {
  parallel::reserve(4);
  for (auto format : {models::WeightFormat::AsStored, models::WeightFormat::Q8_0}) {
    LoadOptions o;
    o.format = format;
    auto m = load_model(folder(testutil::source_dir() + "/models/kjv-gpt2", {"config.json", "model.safetensors", "tokenizer.json"}), o);
    const std::vector<int> prompt = m->require_tokenizer().encode("And God said, Let there be light: and there was", true);
    REQUIRE(prompt.size() > 8);
    INFO(m->model().info().weight_dtype);
    const Trace one = run_decoder(*m, prompt, 24, 1);
    CHECK(same_bits(one, run_decoder(*m, prompt, 24, 2)));
    CHECK(same_bits(one, run_decoder(*m, prompt, 24, 4)));
    CHECK(same_bits(one, run_decoder(*m, prompt, 24, 3)));
  }
}

TEST_CASE("threads: the date-normalizer encoder–decoder gives identical bits with 1, 2 and 4 threads", "[runtime][threads]") {
  parallel::reserve(4);
  auto m = load_model(folder(testutil::source_dir() + "/models/date-normalizer",
                             {"config.json", "model.safetensors", "tokenizer.json", "generation_config.json"}));
  const std::vector<int> source = generate::encode_prompt(m->require_tokenizer(), m->prompt_format(), "3rd of March 1999");
  const std::vector<int> target = {m->prompt_format().decoder_start_token, 5, 9, 12, 7, 4, 11, 8};
  auto run = [&](int threads) {
    parallel::Threads use(threads);
    const models::Model& model = m->model();
    auto s = model.new_session();
    nn::AttentionRecorder rec;
    s->recorder = &rec;
    Trace t;
    model.encode(*s, source.data(), int(source.size()));
    t.add(model.decode(*s, target.data(), 4, true), 4 * size_t(model.info().vocab_size));
    for (size_t i = 4; i < target.size(); ++i) t.add(model.decode(*s, &target[i], 1), size_t(model.info().vocab_size));
    t.add_attention(rec);
    return t;
  };
  const Trace one = run(1);
  REQUIRE(!one.values.empty());
  CHECK(same_bits(one, run(2)));
  CHECK(same_bits(one, run(4)));
}

TEST_CASE("threads: stories260K (Llama, GQA) f32, q8_0, q4_0 and q4_K give identical bits with 1, 2 and 4 threads",
          "[runtime][threads]") {
  SKIP_UNLESS_FILE(testutil::shared_path("models/stories260K/stories260K.bin"));
  parallel::reserve(4);
  // q4_K: stories260K's 64-wide inputs take llama.cpp's q5_0 fallback (models/weights.h)
  for (auto format : {models::WeightFormat::AsStored, models::WeightFormat::Q8_0, models::WeightFormat::Q4_0,
                      models::WeightFormat::Q4_K}) {
    LoadOptions o;
    o.format = format;
    auto m = load_model({file(testutil::shared_path("models/stories260K/stories260K.bin")),
                         file(testutil::shared_path("models/stories260K/tok512.bin"))}, o);
    const std::vector<int> prompt = m->require_tokenizer().encode("Once upon a time, there was a little girl", true);
    INFO(m->model().info().weight_dtype);
    const Trace one = run_decoder(*m, prompt, 40, 1);
    CHECK(same_bits(one, run_decoder(*m, prompt, 40, 2)));
    CHECK(same_bits(one, run_decoder(*m, prompt, 40, 4)));
  }
}

TEST_CASE("threads: every architecture fixture (windows, soft-caps, q/k norms, GQA) gives identical bits", "[runtime][threads]") {
  parallel::reserve(4);
  for (const char* arch : {"llama3", "mistral", "qwen2", "qwen3", "gemma", "gemma2", "gemma3", "phi3", "gptneox"}) {
    const std::string path = testutil::fixture_path(std::string("archs/") + arch + ".gguf");
    auto m = load_model({file(path)});
    // 40 prompt tokens (past the fixtures' sliding windows), then 8 decode steps
    std::vector<int> prompt;
    for (int i = 0; i < 40; ++i) prompt.push_back(1 + (i * 37) % (m->model().info().vocab_size - 1));
    INFO(arch);
    const Trace one = run_decoder(*m, prompt, 8, 1);
    CHECK(same_bits(one, run_decoder(*m, prompt, 8, 2)));
    CHECK(same_bits(one, run_decoder(*m, prompt, 8, 4)));
  }
}
