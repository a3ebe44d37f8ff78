// SentencePiece .model files as tokenizers: ids and decoded text equal python sentencepiece's on the
// four models trained by tests/fixtures/spm/make_spm_fixtures.py (unigram with nmt_nfkc, byte
// fallback and user-defined/control symbols; unigram without normalization, dummy prefix or
// whitespace cleanup; BPE with a rule charsmap and byte fallback; plain BPE), and bad files.
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "formats/sentencepiece_model.h"
#include "runtime/loader.h"
#include "runtime/sentencepiece_tokenizer.h"
#include "spm_fixtures.h"
#include "test_util.h"
#include "tokenizers/tokenizer.h"
#include "tokenizers/unicode.h"

using namespace attnlens;
using Catch::Matchers::Contains;
using json = nlohmann::json;
using Ids = std::vector<int>;
using Proto = SentencePieceModelProto;

namespace {

using spm_fixtures::cases;
using spm_fixtures::model_bytes;

Proto proto(const std::string& name) {
  static std::map<std::string, std::vector<uint8_t>> files;
  auto& b = files[name];
  if (b.empty()) b = model_bytes(name);
  return read_sentencepiece_model(Bytes{b.data(), b.size(), name + ".model"});
}

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const attnlens::Error& e) {
    return e.what();
  }
  FAIL("no attnlens::Error thrown");
  return "";
}

void check_model(const std::string& name, const std::string& kind) {
  const auto b = model_bytes(name);
  const auto tok = runtime::load_sentencepiece_model(Bytes{b.data(), b.size(), name + ".model"});
  CHECK(tok->kind() == kind);
  const json& m = cases().at("models").at(name);
  CHECK(tok->vocab_size() == m.at("fields").at("pieces").get<int>());
  size_t n = 0;
  for (const json& c : m.at("cases")) {
    const std::string text = c.at("text").get<std::string>();
    INFO(name << " text " << json(text).dump());
    const Ids ids = c.at("ids").get<Ids>();
    CHECK(tok->encode(text, false) == ids);
    CHECK(tok->encode(text, true) == ids);  // sentencepiece adds no BOS/EOS itself
    CHECK(tok->decode(ids) == c.at("decoded").get<std::string>());
    for (int id : ids) {
      const std::string p = tok->piece(id);
      CHECK(unicode::sanitize_utf8(p) == p);
    }
    ++n;
  }
  CHECK(n >= 190);
  // Random bytes (ill-formed UTF-8 included) never crash and decode to valid UTF-8.
  uint32_t seed = 777;
  for (int k = 0; k < 50; ++k) {
    std::string bytes;
    for (int i = 0; i < 40; ++i) {
      seed = seed * 1664525u + 1013904223u;
      bytes.push_back(char(seed >> 24));
    }
    const std::string d = tok->decode(tok->encode(bytes, false));
    CHECK(unicode::sanitize_utf8(d) == d);
  }
}

}  // namespace

TEST_CASE("sentencepiece .model: unigram + nmt_nfkc + byte fallback + user-defined symbols = sentencepiece's ids", "[runtime][spm]") {
  check_model("unigram_nfkc", "sentencepiece-unigram");
}
TEST_CASE("sentencepiece .model: unigram without normalization, dummy prefix or whitespace cleanup = sentencepiece's ids", "[runtime][spm]") {
  check_model("unigram_raw", "sentencepiece-unigram");
}
TEST_CASE("sentencepiece .model: BPE with a rule charsmap, byte fallback, user-defined symbols = sentencepiece's ids", "[runtime][spm]") {
  check_model("bpe_rules", "sentencepiece-bpe");
}
TEST_CASE("sentencepiece .model: plain BPE with unknown characters = sentencepiece's ids", "[runtime][spm]") {
  check_model("bpe_plain", "sentencepiece-bpe");
}

TEST_CASE("sentencepiece .model: special ids, control pieces and labels", "[runtime][spm]") {
  const auto b = model_bytes("unigram_nfkc");
  const auto tok = runtime::load_sentencepiece_model(Bytes{b.data(), b.size(), "unigram_nfkc.model"});
  CHECK(tok->unk_id() == 0);
  CHECK(tok->bos_id() == 1);
  CHECK(tok->eos_id() == 2);
  CHECK(tok->pad_id() == -1);
  const int ctl = tok->token_id("<ctl>");
  REQUIRE(ctl >= 0);
  CHECK(tok->is_special(ctl));
  CHECK(tok->is_special(1));
  CHECK_FALSE(tok->is_special(tok->token_id("<sep>")));  // user-defined: text, not special
  CHECK(tok->decode({1, ctl, 2}) == "");
}

TEST_CASE("sentencepiece .model: what the engine does not apply is refused", "[runtime][spm][bad]") {
  const auto refuse = [](Proto p) { return error_of([&] { runtime::make_sentencepiece_model_tokenizer(p); }); };
  {
    Proto p = proto("bpe_plain");
    p.trainer.model_type = Proto::ModelType::Word;
    CHECK_THAT(refuse(p), Contains("bpe_plain.model: trainer_spec.model_type WORD is not supported"));
  }
  {
    Proto p = proto("bpe_plain");
    p.trainer.treat_whitespace_as_suffix = true;
    CHECK_THAT(refuse(p), Contains("treat_whitespace_as_suffix"));
  }
  {
    Proto p = proto("bpe_plain");
    p.denormalizer.present = true;
    p.denormalizer.precompiled_charsmap = "xxxxxxxx";
    CHECK_THAT(refuse(p), Contains("denormalizer_spec has a charsmap"));
  }
  {
    Proto p = proto("bpe_plain");
    p.pieces[10].type = Proto::PieceType::Unused;
    CHECK_THAT(refuse(p), Contains("is UNUSED; BPE models with UNUSED pieces are not supported"));
  }
  {
    Proto p = proto("bpe_plain");
    p.pieces[10].piece = p.pieces[11].piece;
    CHECK_THAT(refuse(p), Contains("is defined twice (ids 10 and 11)"));
  }
  {
    Proto p = proto("bpe_plain");
    p.pieces[0].type = Proto::PieceType::Normal;
    CHECK_THAT(refuse(p), Contains("no piece is UNKNOWN"));
  }
  {
    Proto p = proto("unigram_nfkc");
    p.trainer.byte_fallback = false;
    CHECK_THAT(refuse(p), Contains("is a BYTE piece but trainer_spec.byte_fallback is false"));
  }
  {
    Proto p = proto("unigram_nfkc");
    for (auto& x : p.pieces)
      if (x.piece == "<0x41>") x.type = Proto::PieceType::Normal;
    CHECK_THAT(refuse(p), Contains("only 255 of the 256 <0xXX> byte pieces exist"));
  }
  {
    Proto p = proto("bpe_plain");
    p.trainer.eos_id = 100000;
    CHECK_THAT(refuse(p), Contains("trainer_spec.eos_id 100000 is outside the vocabulary"));
  }
  {  // self-test samples are checked
    Proto p = proto("unigram_nfkc");
    p.self_test.push_back({"Hello world", "\xE2\x96\x81Hello \xE2\x96\x81world"});
    const std::string e = refuse(p);
    CHECK_THAT(e, Contains("self_test_data sample 0 encodes to"));
  }
}

TEST_CASE("sentencepiece .model: the runtime loader classifies it by content", "[runtime][spm]") {
  const auto bytes = model_bytes("bpe_rules");
  const runtime::File f{"renamed.bin", bytes};
  const auto t = runtime::load_tokenizer(f);
  CHECK(t->kind() == "sentencepiece-bpe");
  const json& c = cases().at("models").at("bpe_rules").at("cases")[0];
  CHECK(t->encode(c.at("text").get<std::string>(), false) == c.at("ids").get<Ids>());

  // With a tokenizer_config.json: add_eos_token (T5, Marian) appends </s> when special tokens are asked for.
  const std::string tc = R"({"add_bos_token": false, "add_eos_token": true, "eos_token": "</s>", "unk_token": "<unk>"})";
  std::vector<runtime::FilePtr> files{std::make_shared<runtime::File>(runtime::File{"spiece.model", bytes}),
                                      std::make_shared<runtime::File>(runtime::File{"tokenizer_config.json", std::vector<uint8_t>(tc.begin(), tc.end())})};
  const runtime::LoadedTokenizer lt = runtime::load_tokenizer_files(files);
  REQUIRE(lt.tokenizer);
  CHECK(lt.flags.add_eos);

  // Two tokenizers, and a file named .model that is not one.
  files.push_back(std::make_shared<runtime::File>(runtime::File{"other.model", model_bytes("bpe_plain")}));
  CHECK_THAT(error_of([&] { runtime::load_tokenizer_files(files); }), Contains("two SentencePiece model files given"));
  std::vector<uint8_t> broken = bytes;
  broken[4] = 0xFF;  // inside the first piece's text
  CHECK_THAT(error_of([&] { runtime::load_tokenizer(runtime::File{"broken.model", broken}); }),
             Contains("broken.model: byte 2: pieces[0]: piece (5 bytes) is not valid UTF-8"));
}

namespace {

runtime::FilePtr text_file(const std::string& name, const std::string& text) {
  return std::make_shared<runtime::File>(runtime::File{name, std::vector<uint8_t>(text.begin(), text.end())});
}

// One set of tests/fixtures/spm/family_cases.json as files: the .model under its folder name, and
// config.json / tokenizer_config.json when the set has them.
std::vector<runtime::FilePtr> family_files(const json& set) {
  std::vector<runtime::FilePtr> files{std::make_shared<runtime::File>(runtime::File{
      set.at("file").get<std::string>(), testutil::read_bytes(testutil::fixture_path("spm/" + set.at("model").get<std::string>()))})};
  if (!set.at("config").is_null()) files.push_back(text_file("config.json", set.at("config").dump()));
  if (!set.at("tokenizer_config").is_null()) files.push_back(text_file("tokenizer_config.json", set.at("tokenizer_config").dump()));
  return files;
}

const json& family_cases() {
  static const json doc = json::parse(testutil::read_text(testutil::fixture_path("spm/family_cases.json")));
  return doc;
}

}  // namespace

TEST_CASE("sentencepiece .model as T5, XLM-R and ALBERT read it: the family tokenizer's ids, special tokens and text",
          "[runtime][spm][family]") {
  // tests/fixtures/spm/make_family_fixtures.py: sentencepiece's pieces with each tokenizer class's rules
  size_t n = 0;
  for (const json& set : family_cases().at("sets")) {
    const std::string name = set.at("name").get<std::string>();
    INFO("set " << name);
    const runtime::LoadedTokenizer lt = runtime::load_tokenizer_files(family_files(set));
    const Tokenizer& t = *lt.tokenizer;
    CHECK(t.vocab_size() == set.at("vocab_size").get<int>());
    for (const std::string& k : lt.config.not_applied)  // the family's settings are applied
      CHECK((k != "tokenizer_class" && k != "extra_ids" && k != "remove_space" && k != "keep_accents" && k != "do_lower_case"));
    for (const auto& [content, id] : set.at("special").items()) {
      INFO("special " << content);
      CHECK(t.token_id(content) == id.get<int>());
      CHECK(t.piece(id.get<int>()) == content);
      CHECK(t.is_special(id.get<int>()));
    }
    for (const json& c : set.at("cases")) {
      const std::string text = c.at("text").get<std::string>();
      INFO("text " << json(text).dump());
      CHECK(t.encode(text, true) == c.at("ids").get<Ids>());
      CHECK(t.encode(text, false) == c.at("plain").get<Ids>());
      CHECK(t.decode(c.at("ids").get<Ids>()) == c.at("decoded").get<std::string>());
      ++n;
    }
  }
  CHECK(n >= 60);
  // T5's sentinels count down from the end of the vocabulary; piece() / token_id() map them both ways
  const runtime::LoadedTokenizer t5 = runtime::load_tokenizer_files(family_files(family_cases().at("sets").at(0)));
  CHECK(t5.tokenizer->token_id("<extra_id_0>") == 170);
  CHECK(t5.tokenizer->token_id("<extra_id_99>") == 71);
  CHECK(t5.tokenizer->piece(71) == "<extra_id_99>");
  CHECK(t5.tokenizer->eos_id() == 1);
  // without a family the same .model keeps sentencepiece's own ids (and "</s>" typed is characters)
  const runtime::LoadedTokenizer plain = runtime::load_tokenizer_files({family_files(family_cases().at("sets").at(0))[0]});
  CHECK(plain.tokenizer->vocab_size() == 71);
  CHECK(plain.tokenizer->encode("a</s>", true).size() > 2);
}

namespace {
uint32_t crc32(std::string_view s) {  // zlib.crc32 (the reflected polynomial 0xEDB88320)
  uint32_t c = 0xFFFFFFFFu;
  for (const char ch : s) {
    c ^= uint8_t(ch);
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
  }
  return ~c;
}
std::string utf8(char32_t cp) {
  std::string s;
  unicode::append_utf8(s, cp);
  return s;
}
std::vector<bool> from_ranges(const json& ranges) {  // [[first, last], ...] -> a flag per code point
  std::vector<bool> in(0x110000, false);
  for (const json& r : ranges)
    for (char32_t cp = r[0].get<char32_t>(); cp <= r[1].get<char32_t>(); ++cp) in[cp] = true;
  return in;
}
}  // namespace

TEST_CASE("Python's str.lower / isspace / isdigit and ALBERT's preprocessing agree with CPython on every code point",
          "[runtime][spm][family][unicode]") {
  // tests/fixtures/spm/make_python_str_fixture.py: /usr/bin/python3's own results
  const json doc = json::parse(testutil::read_text(testutil::fixture_path("spm/python_str.json")));
  REQUIRE(doc.at("unicode").get<std::string>() == unicode::table_version());
  std::map<char32_t, std::string> lower;
  for (const json& e : doc.at("lower")) lower[e[0].get<char32_t>()] = e[1].get<std::string>();
  std::vector<bool> space(0x110000, false);
  for (const json& cp : doc.at("isspace")) space[cp.get<size_t>()] = true;
  const std::vector<bool> digit = from_ranges(doc.at("isdigit"));
  const std::string sigma = utf8(0x3A3), final_sigma = utf8(0x3C2);
  const std::string probes[3] = {"c" + sigma, "Ac" + sigma, "A" + sigma + "c"};
  std::vector<bool> finals[3];
  for (int k = 0; k < 3; ++k) finals[k] = from_ranges(doc.at("sigma").at(probes[k]));
  size_t lower_wrong = 0, space_wrong = 0, digit_wrong = 0, sigma_wrong = 0;
  for (char32_t cp = 0; cp < 0x110000; ++cp) {
    if (cp >= 0xD800 && cp < 0xE000) continue;
    const std::string c = utf8(cp);
    const auto it = lower.find(cp);
    std::string l;
    unicode::append_lowercase(l, cp);
    if (l != (it == lower.end() ? c : it->second) || unicode::python_lower(c) != l) ++lower_wrong;
    space_wrong += unicode::is_python_space(cp) != space[cp];
    digit_wrong += unicode::is_python_digit(cp) != digit[cp];
    // Σ after c, after "A" then c, and before c: final ς exactly where Python's lower() gives it
    const std::string after = unicode::python_lower(c + sigma), after_a = unicode::python_lower("A" + c + sigma),
                      before = unicode::python_lower("A" + sigma + c);
    const bool got[3] = {after.compare(after.size() - 2, 2, final_sigma) == 0,
                         after_a.compare(after_a.size() - 2, 2, final_sigma) == 0, before.compare(1, 2, final_sigma) == 0};
    for (int k = 0; k < 3; ++k)
      if (got[k] != finals[k][cp] && sigma_wrong++ < 5)
        UNSCOPED_INFO("probe " << probes[k] << ": final sigma wrong at U+" << std::hex << uint32_t(cp));
  }
  CHECK(lower_wrong == 0);
  CHECK(space_wrong == 0);
  CHECK(digit_wrong == 0);
  CHECK(sigma_wrong == 0);
  CHECK(lower.size() > 1400);

  // ALBERT: the per-character lowercasing of PreTrainedTokenizer.tokenize, then preprocess_text,
  // of each probe with every code point, as CRC-32 per block (the first wrong block is named)
  for (const json& a : doc.at("albert")) {
    runtime::SentencePieceOptions o;
    o.remove_space = a.at("settings")[0].get<bool>();
    o.keep_accents = a.at("settings")[1].get<bool>();
    o.do_lower_case = a.at("settings")[2].get<bool>();
    const auto probes = a.at("probes").get<std::vector<std::string>>();
    const char32_t block = a.at("block").get<char32_t>();
    const json& crcs = a.at("crc32");
    INFO("ALBERT settings " << a.at("settings").dump());
    size_t wrong_blocks = 0;
    for (char32_t start = 0; start < 0x110000; start += block) {
      std::string joined;
      bool first = true;
      for (char32_t cp = start; cp < start + block; ++cp) {
        if (cp >= 0xD800 && cp < 0xE000) continue;
        for (const std::string& p : probes) {
          std::string text;
          for (const char ch : p) text += ch == 'c' ? utf8(cp) : std::string(1, ch);  // no other 'c' byte in a probe
          std::string lowered;
          if (o.do_lower_case) {
            for (size_t pos = 0; pos < text.size();) {
              const unicode::Utf8Step s = unicode::decode_utf8(text, pos);
              unicode::append_lowercase(lowered, s.cp);
              pos += s.len;
            }
          } else {
            lowered = text;
          }
          if (!first) joined.push_back('\n');
          first = false;
          joined += runtime::albert_preprocess(lowered, o);
        }
      }
      if (crc32(joined) != crcs.at(start / block).get<uint32_t>() && wrong_blocks++ == 0)
        UNSCOPED_INFO("first block differing from Python: U+" << std::hex << uint32_t(start));
    }
    CHECK(wrong_blocks == 0);
  }
}

TEST_CASE("sentencepiece .model with a RoBERTa / ALBERT model: XLM-R's fairseq ids when the folder names XLM-R, else refused",
          "[runtime][spm][family]") {
  // tests/fixtures/encoders (make_encoder_fixtures.py): a RoBERTa and an ALBERT of 64 ids, no tokenizer
  const auto folder = [](const std::string& name, const std::string& model, const std::string& spm_name) {
    std::vector<runtime::FilePtr> files;
    for (const char* f : {"config.json", "model.safetensors"})
      files.push_back(std::make_shared<runtime::File>(
          runtime::File{f, testutil::read_bytes(testutil::fixture_path("encoders/" + name + "/" + f))}));
    files.push_back(std::make_shared<runtime::File>(runtime::File{spm_name, model_bytes(model)}));
    return files;
  };
  // model_type "roberta" without tokenizer_class: the .model's own ids would be off by one
  CHECK_THAT(error_of([&] { runtime::load_model(folder("roberta", "xlmr_spm", "sentencepiece.bpe.model")); }),
             Contains("sentencepiece.bpe.model: a SentencePiece model for a RoBERTa-family model gives ids that are not the model's") &&
                 Contains("XLMRobertaTokenizer"));
  const json& sets = family_cases().at("sets");
  const auto set_named = [&](const char* name) {
    for (const json& s : sets)
      if (s.at("name") == name) return s;
    FAIL("no set " << name);
    return json();
  };
  {
    auto files = folder("roberta", "xlmr_spm", "sentencepiece.bpe.model");
    files.push_back(text_file("tokenizer_config.json", R"({"tokenizer_class": "XLMRobertaTokenizerFast"})"));
    auto m = runtime::load_model(files);
    const Tokenizer& t = m->require_tokenizer();
    CHECK(t.vocab_size() == 64);
    for (const json& c : set_named("xlmr_class").at("cases")) {
      INFO("text " << c.at("text").dump());
      CHECK(t.encode(c.at("text").get<std::string>(), true) == c.at("ids").get<Ids>());
    }
  }
  {  // ALBERT: config.json's model_type picks AlbertTokenizer
    auto m = runtime::load_model(folder("albert", "albert_spm", "spiece.model"));
    const Tokenizer& t = m->require_tokenizer();
    for (const json& c : set_named("albert_model_type").at("cases")) {
      INFO("text " << c.at("text").dump());
      CHECK(t.encode(c.at("text").get<std::string>(), true) == c.at("ids").get<Ids>());
    }
  }
}

TEST_CASE("sentencepiece .model family conventions: missing pieces and settings not applied are errors naming the file",
          "[runtime][spm][family][bad]") {
  const auto spm = [](const std::string& fixture, const std::string& name) {
    return std::make_shared<runtime::File>(runtime::File{name, model_bytes(fixture)});
  };
  const auto err = [&](const std::string& fixture, const std::string& name, const std::string& tc) {
    return error_of([&] { runtime::load_tokenizer_files({spm(fixture, name), text_file("tokenizer_config.json", tc)}); });
  };
  // unigram_raw.model: <unk> 0, </s> 1, <pad> 2 (not XLM-R's <unk> <s> </s>)
  CHECK_THAT(err("unigram_raw", "sentencepiece.bpe.model", R"({"tokenizer_class": "XLMRobertaTokenizer"})"),
             Contains("sentencepiece.bpe.model: XLM-R's tokenizer (XLMRobertaTokenizer) reads a SentencePiece model with <unk> <s> </s> at ids 0, 1, 2"));
  CHECK_THAT(err("bpe_plain", "spiece.model", R"({"tokenizer_class": "AlbertTokenizer"})"),
             Contains("spiece.model: ALBERT's tokenizer (AlbertTokenizer) puts [CLS] A [SEP] around a text, but this SentencePiece model has no [CLS] piece"));
  CHECK_THAT(err("xlmr_spm", "spiece.model", R"({"tokenizer_class": "T5Tokenizer", "legacy": false})"),
             Contains("tokenizer_config.json: legacy false"));
  CHECK_THAT(err("t5_spiece", "spiece.model", R"({"tokenizer_class": "T5Tokenizer", "extra_ids": 2, "additional_special_tokens": ["<extra_id_0>"]})"),
             Contains("tokenizer_config.json: additional_special_tokens names 1 sentinels (<extra_id_i>) but extra_ids is 2"));
  CHECK_THAT(err("t5_spiece", "spiece.model", R"({"tokenizer_class": "T5Tokenizer", "extra_ids": "100"})"),
             Contains("tokenizer_config.json: extra_ids must be an integer"));
  CHECK_THAT(err("albert_spm", "spiece.model", R"({"tokenizer_class": "AlbertTokenizer", "do_lower_case": 1})"),
             Contains("tokenizer_config.json: do_lower_case must be true or false"));
  // a sentinel tokenizer_config.json names at another id than T5Tokenizer's is refused
  CHECK_THAT(err("t5_spiece", "spiece.model",
                 R"({"tokenizer_class": "T5Tokenizer", "extra_ids": 2, "added_tokens_decoder": {"71": {"content": "<extra_id_0>", "special": true}}})"),
             Contains("added_tokens_decoder[\"71\"] is \"<extra_id_0>\""));
}

TEST_CASE("Marian: source.spm + vocab.json give MarianTokenizer's ids (sentencepiece pieces looked up in vocab.json)", "[runtime][spm][marian]") {
  const std::string vocab = testutil::read_text(testutil::fixture_path("spm/marian_vocab.json"));
  const auto file = [](const std::string& name, const std::string& bytes) {
    return std::make_shared<runtime::File>(runtime::File{name, std::vector<uint8_t>(bytes.begin(), bytes.end())});
  };
  const auto spm = model_bytes("unigram_nfkc");
  const std::string spm_text(spm.begin(), spm.end());
  const runtime::LoadedTokenizer lt = runtime::load_tokenizer_files({file("source.spm", spm_text), file("vocab.json", vocab)});
  const Tokenizer& t = *lt.tokenizer;
  CHECK(t.kind() == "marian-unigram");
  CHECK(t.eos_id() == 0);
  CHECK(t.unk_id() == 1);
  const json ref = json::parse(testutil::read_text(testutil::fixture_path("spm/marian_cases.json")));
  REQUIRE(ref.at("dropped").get<int>() > 0);  // some pieces are missing from vocab.json: <unk>
  size_t n = 0;
  for (const json& c : ref.at("cases")) {
    const std::string text = c.at("text").get<std::string>();
    INFO("text " << json(text).dump());
    const Ids ids = c.at("ids").get<Ids>();
    CHECK(t.encode(text, true) == ids);
    CHECK(t.decode(ids) == c.at("decoded").get<std::string>());
    ++n;
  }
  CHECK(n >= 150);
  // vocab.json must name Marian's special tokens, with distinct integer ids.
  CHECK_THAT(error_of([&] { runtime::load_tokenizer_files({file("source.spm", spm_text), file("vocab.json", R"({"</s>": 0, "<unk>": 1})")}); }),
             Contains("vocab.json: has no \"<pad>\""));
  CHECK_THAT(error_of([&] { runtime::load_tokenizer_files({file("source.spm", spm_text), file("vocab.json", R"({"</s>": 0, "<unk>": 0})")}); }),
             Contains("have the same id 0"));
  CHECK_THAT(error_of([&] { runtime::load_tokenizer_files({file("source.spm", spm_text), file("vocab.json", R"({"</s>": "a"})")}); }),
             Contains("vocab.json: the id of \"</s>\" must be an integer"));
}
