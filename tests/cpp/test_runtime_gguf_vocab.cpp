// GGUF tokenizers against llama.cpp: vocabulary-only GGUFs (tests/fixtures/gguf_vocab/
// make_gguf_vocab_fixtures.py) of each tokenizer model llama.cpp defines, with the ids llama.cpp gives
// (llamacpp_ids.mjs, node-llama-cpp): llama (SentencePiece BPE), t5 (Unigram with a charsmap), bert
// (WordPiece), gpt2
// with tokenizer.ggml.pre = gpt-2, llama-bpe, qwen2, deepseek-v3, gpt-4o, smollm (one vocabulary;
// the key is changed in memory). Our tokenizers recognise special tokens typed in the text, so they
// are compared with llama.cpp's ids with special tokens parsed.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "formats/model_file.h"
#include "runtime/gguf_tokenizer.h"
#include "test_util.h"

using namespace attnlens;
using json = nlohmann::json;
using Ids = std::vector<int>;
using Catch::Matchers::Contains;

namespace {

const json& refs() {
  static const json doc = json::parse(testutil::read_text(testutil::fixture_path("gguf_vocab/llamacpp_ids.json")));
  return doc;
}

json metadata(const std::string& file) {
  const auto bytes = testutil::read_bytes(testutil::fixture_path("gguf_vocab/" + file));
  return read_gguf(Bytes{bytes.data(), bytes.size(), file}).config;
}

void check(const std::string& name, const std::string& file, const char* pre = nullptr) {
  json meta = metadata(file);
  if (pre) meta["tokenizer.ggml.pre"] = pre;
  const auto tok = runtime::gguf_tokenizer(meta, file);
  REQUIRE(tok);
  size_t n = 0, mismatches = 0;
  for (const json& c : refs().at("files").at(name).at("cases")) {
    const std::string text = c.at("text").get<std::string>();
    INFO(name << " text " << json(text).dump());
    const Ids expected = c.contains("special") ? c.at("special").get<Ids>() : c.at("ids").get<Ids>();
    const Ids got = tok->encode(text, false);
    CHECK(got == expected);
    mismatches += got != expected;
    ++n;
  }
  CHECK(n >= 100);
  CHECK(mismatches == 0);
}

}  // namespace

TEST_CASE("GGUF llama (SentencePiece BPE) tokenizer = llama.cpp", "[runtime][gguf-vocab][llama]") { check("llama-spm", "llama-spm.gguf"); }
TEST_CASE("GGUF t5 (Unigram, charsmap) tokenizer = llama.cpp", "[runtime][gguf-vocab][t5]") { check("t5-ugm", "t5-ugm.gguf"); }
TEST_CASE("GGUF bert (WordPiece, phantom-space vocabulary) tokenizer = llama.cpp", "[runtime][gguf-vocab][bert]") { check("bert", "bert.gguf"); }
TEST_CASE("GGUF gpt2 tokenizer, pre gpt-2 = llama.cpp", "[runtime][gguf-vocab][gpt2]") { check("gpt2", "gpt2.gguf"); }
TEST_CASE("GGUF gpt2 tokenizer, pre llama-bpe = llama.cpp", "[runtime][gguf-vocab][gpt2]") { check("gpt2-llama-bpe", "gpt2.gguf", "llama-bpe"); }
TEST_CASE("GGUF gpt2 tokenizer, pre qwen2 = llama.cpp", "[runtime][gguf-vocab][gpt2]") { check("gpt2-qwen2", "gpt2.gguf", "qwen2"); }
TEST_CASE("GGUF gpt2 tokenizer, pre deepseek-v3 = llama.cpp", "[runtime][gguf-vocab][gpt2]") { check("gpt2-deepseek-v3", "gpt2.gguf", "deepseek-v3"); }
TEST_CASE("GGUF gpt2 tokenizer, pre gpt-4o = llama.cpp", "[runtime][gguf-vocab][gpt2]") { check("gpt2-gpt-4o", "gpt2.gguf", "gpt-4o"); }
TEST_CASE("GGUF gpt2 tokenizer, pre smollm = llama.cpp", "[runtime][gguf-vocab][gpt2]") { check("gpt2-smollm", "gpt2.gguf", "smollm"); }

TEST_CASE("GGUF tokenizer: unknown model and pre names are errors naming the key", "[runtime][gguf-vocab][bad]") {
  json meta = metadata("gpt2.gguf");
  meta["tokenizer.ggml.pre"] = "no-such-pre";
  try {
    runtime::gguf_tokenizer(meta, "x.gguf");
    FAIL("no error");
  } catch (const Error& e) {
    CHECK_THAT(std::string(e.what()), Contains("x.gguf: tokenizer.ggml.pre \"no-such-pre\" is not a pre-tokenizer the engine knows"));
  }
  meta["tokenizer.ggml.model"] = "rwkv";
  try {
    runtime::gguf_tokenizer(meta, "x.gguf");
    FAIL("no error");
  } catch (const Error& e) {
    CHECK_THAT(std::string(e.what()), Contains("unsupported GGUF tokenizer model \"rwkv\" (supported: llama, gpt2, bert, t5)"));
  }
}

TEST_CASE("GGUF tokenizer: a token that is not valid UTF-8 is an error naming it, for every tokenizer model",
          "[runtime][gguf-vocab][bad]") {
  for (const char* file : {"llama-spm.gguf", "t5-ugm.gguf", "bert.gguf", "gpt2.gguf"}) {
    INFO(file);
    for (const char* bad : {"ab\xC3", "\xED\xA0\x80", "\xC0\xAF"}) {  // truncated, a surrogate, overlong
      json meta = metadata(file);
      meta["tokenizer.ggml.tokens"][7] = std::string(bad);
      try {
        runtime::gguf_tokenizer(meta, "x.gguf");
        FAIL("no error");
      } catch (const Error& e) {
        CHECK_THAT(std::string(e.what()), Contains("x.gguf: tokenizer.ggml.tokens[7] (") && Contains("bytes) is not valid UTF-8"));
      }
    }
  }
}
