// SentencePiece .model reader (protobuf ModelProto): the fixtures trained by
// tests/fixtures/spm/make_spm_fixtures.py, checked against what python's protobuf module read from
// the same files (cases.json "fields"), and bad input.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "formats/model_file.h"
#include "formats/sentencepiece_model.h"
#include "spm_fixtures.h"
#include "test_util.h"

using namespace attnlens;
using Catch::Matchers::Contains;
using json = nlohmann::json;
using Proto = SentencePieceModelProto;

namespace {

using spm_fixtures::cases;
using spm_fixtures::model_bytes;

Proto read(const std::vector<uint8_t>& b, const std::string& name = "x.model") {
  return read_sentencepiece_model(Bytes{b.data(), b.size(), name});
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

// Protobuf encoding helpers for hand-built messages.
void varint(std::vector<uint8_t>& out, uint64_t v) {
  do {
    uint8_t b = v & 0x7F;
    v >>= 7;
    out.push_back(uint8_t(b | (v ? 0x80 : 0)));
  } while (v);
}
void tag(std::vector<uint8_t>& out, uint32_t field, uint8_t wire) { varint(out, uint64_t(field) << 3 | wire); }
void len_field(std::vector<uint8_t>& out, uint32_t field, const std::vector<uint8_t>& body) {
  tag(out, field, 2);
  varint(out, body.size());
  out.insert(out.end(), body.begin(), body.end());
}
std::vector<uint8_t> bytes_of(const std::string& s) { return std::vector<uint8_t>(s.begin(), s.end()); }
std::vector<uint8_t> piece(const std::string& text, float score, int type) {
  std::vector<uint8_t> p;
  len_field(p, 1, bytes_of(text));
  tag(p, 2, 5);
  uint8_t f[4];
  std::memcpy(f, &score, 4);
  p.insert(p.end(), f, f + 4);
  tag(p, 3, 0);
  varint(p, uint64_t(type));
  return p;
}
std::vector<uint8_t> with_piece(const std::vector<uint8_t>& body) {
  std::vector<uint8_t> m;
  len_field(m, 1, piece("<unk>", 0, 2));
  len_field(m, 1, body);
  return m;
}

}  // namespace

TEST_CASE("sentencepiece .model: the fixtures read as python's protobuf reads them", "[formats][spm]") {
  for (const auto& [name, m] : cases().at("models").items()) {
    INFO(name);
    const auto b = model_bytes(name);
    const Proto p = read(b, name + ".model");
    const json& f = m.at("fields");
    REQUIRE(p.pieces.size() == f.at("pieces").get<size_t>());
    std::map<std::string, int> types;
    double score_sum = 0;
    for (const auto& x : p.pieces) {
      ++types[std::to_string(int(x.type))];
      score_sum += x.score;
    }
    CHECK(types == f.at("types").get<std::map<std::string, int>>());
    CHECK(score_sum == Approx(f.at("score_sum").get<double>()).epsilon(1e-9));
    for (size_t i = 0; i < f.at("first").size(); ++i) {
      const json& e = f.at("first")[i];
      CHECK(p.pieces[i].piece == e[0].get<std::string>());
      CHECK(p.pieces[i].score == e[1].get<float>());
      CHECK(int(p.pieces[i].type) == e[2].get<int>());
    }
    CHECK(p.pieces.back().piece == f.at("last")[0].get<std::string>());
    CHECK(p.pieces.back().score == f.at("last")[1].get<float>());
    CHECK(int(p.trainer.model_type) == f.at("model_type").get<int>());
    CHECK(p.trainer.byte_fallback == f.at("byte_fallback").get<bool>());
    CHECK(p.trainer.unk_id == f.at("unk_id").get<int>());
    CHECK(p.trainer.bos_id == f.at("bos_id").get<int>());
    CHECK(p.trainer.eos_id == f.at("eos_id").get<int>());
    CHECK(p.trainer.pad_id == f.at("pad_id").get<int>());
    CHECK(p.normalizer.present);
    CHECK(p.normalizer.name == f.at("normalizer_name").get<std::string>());
    CHECK(p.normalizer.precompiled_charsmap.size() == f.at("charsmap_bytes").get<size_t>());
    CHECK(p.normalizer.add_dummy_prefix == f.at("add_dummy_prefix").get<bool>());
    CHECK(p.normalizer.remove_extra_whitespaces == f.at("remove_extra_whitespaces").get<bool>());
    CHECK(p.normalizer.escape_whitespaces == f.at("escape_whitespaces").get<bool>());
    std::vector<std::string> user, control;
    for (const auto& x : p.pieces) {
      if (x.type == Proto::PieceType::UserDefined) user.push_back(x.piece);
      if (x.type == Proto::PieceType::Control) control.push_back(x.piece);
    }
    CHECK(user == f.at("user_defined").get<std::vector<std::string>>());
    CHECK(control == f.at("control").get<std::vector<std::string>>());
    CHECK(p.trainer.user_defined_symbols == f.at("user_defined").get<std::vector<std::string>>());
    CHECK_FALSE(p.denormalizer.present);
    CHECK(looks_like_sentencepiece_model(Bytes{b.data(), b.size(), name}));
  }
}

TEST_CASE("sentencepiece .model: every truncation either throws or reads whole pieces", "[formats][spm][bad]") {
  const auto full = model_bytes("bpe_plain");
  const Proto whole = read(full);
  size_t threw = 0, parsed = 0;
  for (size_t n = 0; n < full.size(); ++n) {
    const std::vector<uint8_t> cut(full.begin(), full.begin() + long(n));
    try {
      const Proto p = read(cut);
      ++parsed;  // a cut at a field boundary of ModelProto is a valid, shorter message
      REQUIRE(p.pieces.size() <= whole.pieces.size());
      for (size_t i = 0; i < p.pieces.size(); ++i) REQUIRE(p.pieces[i].piece == whole.pieces[i].piece);
    } catch (const attnlens::Error& e) {
      ++threw;
      REQUIRE_THAT(std::string(e.what()), Contains("x.model: "));
    }
  }
  CHECK(threw > parsed);
  CHECK(parsed >= whole.pieces.size() - 1);
}

TEST_CASE("sentencepiece .model: bad fields give precise errors", "[formats][spm][bad]") {
  // A valid minimal file reads.
  const auto ok = with_piece(piece("a", -1.5f, 1));
  const Proto p = read(ok);
  REQUIRE(p.pieces.size() == 2);
  CHECK(p.pieces[1].piece == "a");
  CHECK(p.pieces[1].score == -1.5f);

  CHECK_THAT(error_of([&] { read(with_piece(piece("a", 0, 9))); }), Contains("x.model: byte") && Contains("pieces[1]: type is 9, not a SentencePiece.Type"));
  CHECK_THAT(error_of([&] { read(with_piece(piece("a", NAN, 1))); }), Contains("pieces[1]: score is nan, not a finite number"));
  CHECK_THAT(error_of([&] { read(with_piece(piece("\xC3\x28", 0, 1))); }), Contains("pieces[1]: piece (2 bytes) is not valid UTF-8"));
  CHECK_THAT(error_of([&] { read(with_piece(piece("\xED\xA0\x80", 0, 1))); }), Contains("is not valid UTF-8"));  // a surrogate
  CHECK_THAT(error_of([&] { read(with_piece(piece("\xC0\xAF", 0, 1))); }), Contains("is not valid UTF-8"));      // overlong
  CHECK_THAT(error_of([&] { read(with_piece(piece("", 0, 1))); }), Contains("pieces[1] has an empty piece"));
  {  // score as a varint
    std::vector<uint8_t> b;
    len_field(b, 1, bytes_of("a"));
    tag(b, 2, 0);
    varint(b, 3);
    CHECK_THAT(error_of([&] { read(with_piece(b)); }), Contains("score (field 2) is varint but the schema says 32-bit"));
  }
  {  // a field number the schema does not have
    std::vector<uint8_t> b = ok;
    tag(b, 9, 0);
    varint(b, 1);
    CHECK_THAT(error_of([&] { read(b); }), Contains("field number 9 (varint) is not part of sentencepiece's ModelProto schema"));
  }
  {  // an unknown trainer_spec field, and a known one skipped
    std::vector<uint8_t> t;
    tag(t, 4, 0);
    varint(t, 8000);  // vocab_size: the trainer's, skipped
    tag(t, 99, 0);
    varint(t, 1);
    std::vector<uint8_t> b = ok;
    len_field(b, 2, t);
    CHECK_THAT(error_of([&] { read(b); }), Contains("trainer_spec: field number 99 (varint) is not part of sentencepiece's trainer_spec schema"));
  }
  {  // trainer fields that matter
    std::vector<uint8_t> t;
    tag(t, 3, 0);
    varint(t, 2);  // BPE
    tag(t, 35, 0);
    varint(t, 1);
    tag(t, 43, 0);
    varint(t, uint64_t(int64_t(-1)));  // pad_id -1: ten bytes
    tag(t, 40, 0);
    varint(t, 5);
    std::vector<uint8_t> b = ok;
    len_field(b, 2, t);
    const Proto q = read(b);
    CHECK(q.trainer.model_type == Proto::ModelType::Bpe);
    CHECK(q.trainer.byte_fallback);
    CHECK(q.trainer.pad_id == -1);
    CHECK(q.trainer.unk_id == 5);
    CHECK(q.trainer.bos_id == 1);  // schema defaults
    CHECK(q.trainer.eos_id == 2);
  }
  {  // bool out of range, model_type out of range, int32 out of range
    std::vector<uint8_t> t;
    tag(t, 35, 0);
    varint(t, 2);
    std::vector<uint8_t> b = ok;
    len_field(b, 2, t);
    CHECK_THAT(error_of([&] { read(b); }), Contains("byte_fallback is 2, not a bool"));
    t.clear();
    tag(t, 3, 0);
    varint(t, 7);
    b = ok;
    len_field(b, 2, t);
    CHECK_THAT(error_of([&] { read(b); }), Contains("model_type is 7, not a TrainerSpec.ModelType"));
    t.clear();
    tag(t, 41, 0);
    varint(t, uint64_t(1) << 40);
    b = ok;
    len_field(b, 2, t);
    CHECK_THAT(error_of([&] { read(b); }), Contains("bos_id is 1099511627776, outside the int32 range"));
  }
  {  // a length past the end of the file, a group, a varint longer than 10 bytes
    std::vector<uint8_t> b = ok;
    tag(b, 1, 2);
    varint(b, 1000);
    b.push_back('x');
    CHECK_THAT(error_of([&] { read(b); }), Contains("needs 1000 bytes but 1 remain in the file"));
    b = ok;
    tag(b, 1, 3);
    CHECK_THAT(error_of([&] { read(b); }), Contains("field 1 has wire type 3 (start-group), which ModelProto never uses"));
    b = ok;
    tag(b, 1, 2);
    for (int i = 0; i < 11; ++i) b.push_back(0xFF);
    CHECK_THAT(error_of([&] { read(b); }), Contains("varint"));
  }
  {  // a length inside a piece that runs past the piece's own end
    std::vector<uint8_t> body;
    tag(body, 1, 2);
    varint(body, 5);
    body.push_back('a');
    CHECK_THAT(error_of([&] { read(with_piece(body)); }), Contains("needs 5 bytes but 1 remain in pieces[1]"));
  }
  {  // normalizer and denormalizer specs, self-test data
    std::vector<uint8_t> n;
    len_field(n, 1, bytes_of("identity"));
    tag(n, 3, 0);
    varint(n, 0);
    std::vector<uint8_t> s, sample;
    len_field(sample, 1, bytes_of("ab"));
    len_field(sample, 2, bytes_of("\xE2\x96\x81" "ab"));
    len_field(s, 1, sample);
    std::vector<uint8_t> b = ok;
    len_field(b, 3, n);
    len_field(b, 4, s);
    len_field(b, 5, n);
    const Proto q = read(b);
    CHECK(q.normalizer.name == "identity");
    CHECK_FALSE(q.normalizer.add_dummy_prefix);
    CHECK(q.normalizer.remove_extra_whitespaces);
    CHECK(q.denormalizer.present);
    REQUIRE(q.self_test.size() == 1);
    CHECK(q.self_test[0].second == "\xE2\x96\x81" "ab");
  }
  CHECK_THAT(error_of([&] { read({}); }), Contains("x.model: a SentencePiece model needs pieces"));
  const std::vector<uint8_t> gguf = {'G', 'G', 'U', 'F', 3, 0, 0, 0};
  CHECK_FALSE(looks_like_sentencepiece_model(Bytes{gguf.data(), gguf.size(), "g"}));
}
