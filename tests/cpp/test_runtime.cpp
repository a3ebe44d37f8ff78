// The loader and generation end to end on the real stories260K checkpoint: llama2.c's greedy text,
// seeded sampling, stop strings, aborting, streaming text, and bad files.
#include <cstring>
#include <fstream>
#include <numeric>
#include <set>

#include "core/error.h"
#include "runtime/loader.h"
#include "test_util.h"

using namespace attnlens;
using namespace attnlens::runtime;

namespace {

FilePtr file(const std::string& path, const std::string& name = "") {
  auto f = std::make_shared<File>();
  f->name = name.empty() ? path.substr(path.find_last_of('/') + 1) : name;
  f->bytes = testutil::read_bytes(path);
  return f;
}

FilePtr bytes(const std::string& name, const std::string& content) {
  auto f = std::make_shared<File>();
  f->name = name;
  f->bytes.assign(content.begin(), content.end());
  return f;
}

std::unique_ptr<LoadedModel> stories() {
  // Names that say nothing: the loader must recognise the files by their content.
  return load_model({file(testutil::shared_path("models/stories260K/tok512.bin"), "a"),
                     file(testutil::shared_path("models/stories260K/stories260K.bin"), "b")});
}

std::vector<int> golden_tokens(int c) {
  std::ifstream f(testutil::shared_path("golden/stories260K/case" + std::to_string(c) + "/tokens.txt"));
  std::vector<int> t;
  for (int x; f >> x;) t.push_back(x);
  return t;
}

}  // namespace

TEST_CASE("loader: stories260K + tok512 by content; model card", "[runtime]") {
  SKIP_UNLESS_FILE(testutil::shared_path("models/stories260K/stories260K.bin"));
  auto m = stories();
  CHECK(m->format() == "llama2c");
  REQUIRE(m->tokenizer());
  CHECK(m->tokenizer()->kind() == "sentencepiece-bpe");
  const models::ModelInfo& card = m->model().info();
  CHECK(card.architecture == "llama");
  CHECK(card.n_layers == 5);
  CHECK(card.n_kv_heads == 4);
  CHECK(m->file_bytes() == 1056540 + 6227);
  CHECK(m->model().info().owned_bytes > 0);  // the RoPE table
  CHECK(m->weight_memory_bytes() == m->file_bytes() + m->model().info().owned_bytes);
  CHECK(m->prompt_format().stop_tokens == std::vector<int>{1, 2});
}

TEST_CASE("a model that owns its files rearranges and quantizes weights in their bytes: no copies, the same logits", "[runtime]") {
  // kjv-gpt2 (models/kjv-gpt2): Hugging Face's GPT-2 layout, every linear layer stored [in, out], f32.
  const std::string dir = testutil::source_dir() + "/models/kjv-gpt2/";
  auto files = [&] { return std::vector<FilePtr>{file(dir + "config.json"), file(dir + "model.safetensors"), file(dir + "tokenizer.json")}; };
  for (auto format : {models::WeightFormat::AsStored, models::WeightFormat::Q8_0}) {
    INFO(models::weight_format_name(format));
    LoadOptions o;
    o.format = format;
    const std::vector<FilePtr> kept = files();
    const std::vector<uint8_t> before(kept[1]->bytes);
    auto copied = load_model(kept, o);  // the caller keeps the files: they must not change
    CHECK(std::vector<uint8_t>(kept[1]->bytes) == before);
    auto owned = load_model(files(), o);  // handed over, as the bindings do: no one else holds them
    const auto& info = owned->model().info();
    // f32: the Conv1D copies not made (per layer c_attn [d, 3d], attn c_proj [d, d], c_fc [d, 4d], mlp
    // c_proj [4d, d]); q8_0: every matrix's q8_0 copy. Nothing else is owned (vectors read in place).
    const size_t d = size_t(info.d_model), conv1d = size_t(info.n_layers) * 12 * d * d * 4;
    CHECK(owned->model().info().owned_bytes == 0);
    if (format == models::WeightFormat::AsStored) CHECK(copied->model().info().owned_bytes == conv1d);
    else CHECK(copied->model().info().owned_bytes > conv1d / 4);
    CHECK(owned->weight_memory_bytes() == owned->file_bytes());
    // The same weights either way: every logit of a prefill equal, bit for bit.
    const std::vector<int> prompt = owned->require_tokenizer().encode("In the beginning God created", true);
    auto logits = [&](const LoadedModel& m) {
      auto s = m.model().new_session();
      const float* p = m.model().decode(*s, prompt.data(), int(prompt.size()), true);
      return std::vector<float>(p, p + prompt.size() * size_t(info.vocab_size));
    };
    const std::vector<float> a = logits(*copied), b = logits(*owned);
    REQUIRE(a.size() == b.size());
    CHECK(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
  }
}

TEST_CASE("greedy generation reproduces llama2.c's tokens and text", "[runtime][golden]") {
  SKIP_UNLESS_FILE(testutil::shared_path("golden/stories260K/case0/tokens.txt"));
  auto m = stories();
  for (int c = 0; c < 3; ++c) {
    const std::string dir = testutil::shared_path("golden/stories260K/case" + std::to_string(c));
    const std::string prompt = testutil::read_text(dir + "/prompt.txt");
    std::string output = testutil::read_text(dir + "/output.txt");
    while (!output.empty() && output.back() == '\n') output.pop_back();
    const std::vector<int> want = golden_tokens(c);
    auto s = m->model().new_session();
    generate::GenerateOptions o;
    o.sampling.temperature = 0;
    auto prompt_ids = generate::encode_prompt(m->require_tokenizer(), m->prompt_format(), prompt);
    // run.c feeds `steps` tokens and prints the piece of every token it samples, the one sampled at
    // the last position included: one more token than tokens.txt holds.
    o.max_new_tokens = int(want.size() - prompt_ids.size()) + 1;
    std::string streamed;
    auto r = generate::generate(m->model(), m->require_tokenizer(), m->prompt_format(), *s, prompt, o,
                                [&](const generate::TokenEvent& e) {
                                  streamed += e.text;
                                  return true;
                                });
    INFO("case " << c << ": " << prompt);
    REQUIRE(r.tokens.size() == want.size() + 1);
    CHECK(std::vector<int>(r.tokens.begin(), r.tokens.end() - 1) == want);
    CHECK(prompt + r.text == output);
    CHECK(streamed == r.text);
    CHECK(r.prompt_tokens == int(prompt_ids.size()));
    CHECK(r.finish_reason == "length");
  }
}

TEST_CASE("seeded sampling: same seed, same text; the options change the result", "[runtime]") {
  SKIP_UNLESS_FILE(testutil::shared_path("models/stories260K/stories260K.bin"));
  auto m = stories();
  auto run = [&](generate::SamplingOptions so, int n = 40) {
    auto s = m->model().new_session();
    generate::GenerateOptions o;
    o.sampling = so;
    o.max_new_tokens = n;
    return generate::generate(m->model(), m->require_tokenizer(), m->prompt_format(), *s, "Once upon a time", o);
  };
  generate::SamplingOptions a;
  a.temperature = 1.0f;
  a.seed = 42;
  auto r1 = run(a), r2 = run(a);
  CHECK(r1.tokens == r2.tokens);
  CHECK(r1.text == r2.text);
  generate::SamplingOptions b = a;
  b.seed = 7;
  CHECK(run(b).tokens != r1.tokens);
  // The same seed gives the same tokens on every platform (PCG32, no std:: distributions): these
  // are this checkpoint's tokens for seed 42 at temperature 1, recorded from the native build; the
  // wasm build of this test must produce them too.
  const std::vector<int> seed42_first8 = {r1.tokens.begin() + 5, r1.tokens.begin() + 13};
  INFO("seed 42 tokens 5..12 here: " << ::Catch::Detail::stringify(seed42_first8));
  CHECK(seed42_first8 == std::vector<int>{432, 383, 286, 261, 376, 298, 315, 421});
  // top_k = 1 is greedy whatever the temperature.
  generate::SamplingOptions k1 = a;
  k1.top_k = 1;
  generate::SamplingOptions greedy;
  greedy.temperature = 0;
  CHECK(run(k1).tokens == run(greedy).tokens);
  // A tiny top_p also keeps only the most likely token.
  generate::SamplingOptions p = a;
  p.top_p = 1e-6f;
  CHECK(run(p).tokens == run(greedy).tokens);
  // A strong repetition penalty avoids repeating tokens that greedy decoding repeats.
  generate::SamplingOptions rep = greedy;
  rep.repetition_penalty = 10.f;
  auto g = run(greedy, 60).tokens, rp = run(rep, 60).tokens;
  auto distinct = [](const std::vector<int>& t) { return std::set<int>(t.begin(), t.end()).size(); };
  CHECK(distinct(rp) > distinct(g));
}

TEST_CASE("stop strings, max tokens, abort", "[runtime]") {
  SKIP_UNLESS_FILE(testutil::shared_path("models/stories260K/stories260K.bin"));
  auto m = stories();
  auto s = m->model().new_session();
  generate::GenerateOptions o;
  o.sampling.temperature = 0;
  o.max_new_tokens = 100;
  o.stop = {"Lily"};
  std::string streamed;
  auto r = generate::generate(m->model(), m->require_tokenizer(), m->prompt_format(), *s, "Once upon a time", o,
                              [&](const generate::TokenEvent& e) {
                                streamed += e.text;
                                return true;
                              });
  CHECK(r.finish_reason == "stop");
  CHECK(r.text == ", there was a little girl named ");
  CHECK(streamed == r.text);  // the streamed pieces stop where the text is cut

  o.stop.clear();
  o.max_new_tokens = 5;
  r = generate::generate(m->model(), m->require_tokenizer(), m->prompt_format(), *s, "Once upon a time", o);
  CHECK(r.finish_reason == "length");
  CHECK(r.tokens.size() == r.prompt_tokens + 5u);

  o.max_new_tokens = 100;
  int calls = 0;
  r = generate::generate(m->model(), m->require_tokenizer(), m->prompt_format(), *s, "Once upon a time", o,
                         [&](const generate::TokenEvent&) { return ++calls < 3; });
  CHECK(r.finish_reason == "aborted");
  CHECK(calls == 3);
  CHECK(r.tokens.size() == r.prompt_tokens + 3u);  // the tokens so far are kept

  // A context shorter than prompt + continuation ends generation cleanly at the context's end.
  auto small = m->model().new_session(12);
  r = generate::generate(m->model(), m->require_tokenizer(), m->prompt_format(), *small, "Once upon a time", o);
  CHECK(r.finish_reason == "context");
  CHECK(r.tokens.size() == 13u);  // 12 positions fed, the 13th token chosen and returned
}

TEST_CASE("loader and generation: bad input gives precise errors", "[runtime][errors]") {
  CHECK_THROWS_WITH(load_model({}), Catch::Contains("no model files"));
  CHECK_THROWS_WITH(load_model({bytes("notes.txt", "hello, this is not a model")}),
                    Catch::Contains("notes.txt: not a model file"));
  CHECK_THROWS_WITH(load_model({bytes("config.json", "{\"architectures\": [\"GPT2LMHeadModel\"]}")}),
                    Catch::Contains("no model weights"));
  CHECK_THROWS_WITH(load_model({bytes("config.json", "{\"architectures\": [\"X\"]")}), Catch::Contains("config.json"));
  SKIP_UNLESS_FILE(testutil::shared_path("models/stories260K/stories260K.bin"));
  auto ckpt = file(testutil::shared_path("models/stories260K/stories260K.bin"));
  auto truncated = std::make_shared<File>(*ckpt);
  truncated->bytes.resize(truncated->bytes.size() - 100);
  truncated->name = "cut.bin";
  CHECK_THROWS_WITH(load_model({truncated}), Catch::Contains("cut.bin"));
  auto m = load_model({ckpt});  // no tokenizer: the model runs, text generation says what is missing
  CHECK(m->tokenizer() == nullptr);
  CHECK_THROWS_WITH(m->require_tokenizer(), Catch::Contains("no tokenizer"));
  auto with_tok = stories();
  auto s = with_tok->model().new_session();
  generate::GenerateOptions o;
  o.sampling.temperature = -1;
  CHECK_THROWS_WITH(generate::generate(with_tok->model(), with_tok->require_tokenizer(), with_tok->prompt_format(), *s, "x", o),
                    Catch::Contains("temperature must be ≥ 0, got -1"));
  o.sampling.temperature = 1;
  o.sampling.top_p = 1.5f;
  CHECK_THROWS_WITH(generate::generate(with_tok->model(), with_tok->require_tokenizer(), with_tok->prompt_format(), *s, "x", o),
                    Catch::Contains("top_p must be in (0, 1], got 1.5"));
  o.sampling.top_p = 1;
  auto tiny = with_tok->model().new_session(4);
  CHECK_THROWS_WITH(generate::generate(with_tok->model(), with_tok->require_tokenizer(), with_tok->prompt_format(), *tiny,
                                       "Once upon a time there was", o),
                    Catch::Contains("more than the context length of 4"));
}
