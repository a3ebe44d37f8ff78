// SentencePiece BPE: llama2.c tokenizer.bin against llama2.c's own encode (../shared/golden/tokenizer),
// the GGUF-array constructor, piece()/token_bytes(), and bad input.
#include <chrono>

#include "test_util.h"
#include "core/error.h"
#include "tokenizers/tokenizer.h"
#include "tokenizers/unicode.h"

using attnlens::Error;
using attnlens::Tokenizer;

namespace {

std::vector<std::string> read_lines(const std::string& path) {
  std::istringstream in(testutil::read_text(path));
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::vector<int> parse_ids(const std::string& line) {
  std::istringstream in(line);
  std::vector<int> ids;
  for (int id; in >> id;) ids.push_back(id);
  return ids;
}

std::unique_ptr<Tokenizer> load_llama2c(const std::string& path, int vocab_size) {
  auto bytes = testutil::read_bytes(path);
  return attnlens::load_llama2c_tokenizer(bytes.data(), bytes.size(), vocab_size);
}

const std::string kTok512 = testutil::shared_path("models/stories260K/tok512.bin");
const std::string kLlama2 = testutil::shared_path("models/llama2-tokenizer/tokenizer.bin");
const std::string kCases = testutil::shared_path("golden/tokenizer/cases.txt");

void check_golden(const std::string& tokenizer_path, int vocab_size, const std::string& ids_file) {
  SKIP_UNLESS_FILE(tokenizer_path);
  SKIP_UNLESS_FILE(kCases);
  auto tok = load_llama2c(tokenizer_path, vocab_size);
  CHECK(tok->kind() == "sentencepiece-bpe");
  CHECK(tok->vocab_size() == vocab_size);
  const auto cases = read_lines(kCases);
  const auto expected = read_lines(testutil::shared_path("golden/tokenizer/" + ids_file));
  REQUIRE(cases.size() == expected.size());
  REQUIRE(cases.size() >= 8);
  for (size_t i = 0; i < cases.size(); ++i) {
    INFO("case " << i << ": \"" << cases[i] << "\"");
    const auto ids = tok->encode(cases[i]);
    CHECK(ids == parse_ids(expected[i]));
    CHECK(tok->decode(ids) == cases[i]);
    // Without BOS: the same ids minus the first, and still a round trip.
    const auto no_bos = tok->encode(cases[i], false);
    CHECK(no_bos == std::vector<int>(ids.begin() + 1, ids.end()));
    CHECK(tok->decode(no_bos) == cases[i]);
  }
}

}  // namespace

TEST_CASE("llama2.c tok512 matches llama2.c encode on every golden case", "[sentencepiece][golden]") {
  check_golden(kTok512, 512, "tok512_ids.txt");
}

TEST_CASE("llama2.c Llama 2 tokenizer (32000) matches llama2.c encode on every golden case", "[sentencepiece][golden]") {
  check_golden(kLlama2, 32000, "llama2_ids.txt");
}

TEST_CASE("llama2.c tokenizer: specials, byte fallback, pieces", "[sentencepiece]") {
  SKIP_UNLESS_FILE(kLlama2);
  auto tok = load_llama2c(kLlama2, 32000);
  CHECK(tok->bos_id() == 1);
  CHECK(tok->eos_id() == 2);
  CHECK(tok->unk_id() == 0);
  CHECK(tok->pad_id() == -1);
  CHECK(tok->encode("") == std::vector<int>{1});
  CHECK(tok->encode("", false).empty());

  // Special tokens: named labels, no text.
  CHECK(tok->piece(1) == "<s>");  // stored as "\n<s>\n"
  CHECK(tok->piece(2) == "</s>");
  CHECK(tok->token_bytes(1).empty());
  CHECK(tok->token_bytes(2).empty());
  CHECK(tok->is_special(1));
  CHECK_FALSE(tok->is_special(29871));
  CHECK(tok->token_id("<s>") == 1);
  CHECK(tok->decode({1, 2}).empty());

  // Byte fallback tokens: <0xXX> = byte + 3; the raw byte; label "<0xF0>" or the ASCII character.
  CHECK(tok->token_bytes(3 + 0xF0) == "\xF0");
  CHECK(tok->piece(3 + 0xF0) == "<0xF0>");
  CHECK(tok->token_bytes(3 + '\n') == "\n");
  CHECK(tok->piece(3 + '\n') == "\\n");
  CHECK(tok->piece(3 + 'A') == "A");
  CHECK(tok->token_id("<0x0A>") == 13);
  // "😀" is not in the vocabulary: four byte tokens that decode back to the character.
  const auto smile = tok->encode("\xF0\x9F\x98\x80", false);
  CHECK(smile == std::vector<int>{29871, 243, 162, 155, 131});
  CHECK(tok->decode(smile) == "\xF0\x9F\x98\x80");
  std::string joined;
  for (int id : smile) joined += tok->token_bytes(id);
  CHECK(joined == " \xF0\x9F\x98\x80");

  // Normal pieces: real spaces; the dummy prefix survives in token_bytes, decode drops it after BOS.
  CHECK(tok->token_id("\xE2\x96\x81the") == tok->token_id(" the"));
  const int the = tok->token_id(" the");
  REQUIRE(the > 0);
  CHECK(tok->piece(the) == " the");
  CHECK(tok->token_bytes(the) == " the");
  CHECK(tok->decode({1, the}) == "the");
  CHECK(tok->decode({the, the}) == "the the");
  CHECK(tok->token_id("no such piece") == -1);

  // A truncated character at the end of ids decodes to U+FFFD, not a crash.
  CHECK(tok->decode({1, 29871, 243, 162}) == "\xEF\xBF\xBD");
  CHECK(tok->decode({243}) == "\xEF\xBF\xBD");
}

TEST_CASE("out-of-range ids throw naming the id and the vocabulary size", "[sentencepiece][errors]") {
  SKIP_UNLESS_FILE(kTok512);
  auto tok = load_llama2c(kTok512, 512);
  for (int bad : {-1, 512, 100000}) {
    INFO("id " << bad);
    CHECK_THROWS_AS(tok->decode({1, bad}), Error);
    CHECK_THROWS_AS(tok->piece(bad), Error);
    CHECK_THROWS_AS(tok->token_bytes(bad), Error);
    CHECK_THROWS_AS(tok->is_special(bad), Error);
  }
  CHECK_THROWS_WITH(tok->piece(512), Catch::Contains("512") && Catch::Contains("vocabulary size 512"));
  CHECK_THROWS_WITH(tok->decode({1, -7}), Catch::Contains("-7") && Catch::Contains("vocabulary size 512"));
}

TEST_CASE("truncated or inconsistent tokenizer.bin throws attnlens::Error", "[sentencepiece][errors]") {
  SKIP_UNLESS_FILE(kTok512);
  const auto bytes = testutil::read_bytes(kTok512);
  REQUIRE(bytes.size() > 200);
  for (size_t len = 0; len <= 200; ++len) {
    INFO("truncated to " << len << " bytes");
    std::vector<uint8_t> cut(bytes.begin(), bytes.begin() + long(len));
    CHECK_THROWS_AS(attnlens::load_llama2c_tokenizer(cut.data(), cut.size(), 512), Error);
  }
  // The whole file minus its last byte: the last token's bytes are missing.
  CHECK_THROWS_WITH(attnlens::load_llama2c_tokenizer(bytes.data(), bytes.size() - 1, 512),
                    Catch::Contains("token 511") && Catch::Contains("remain"));
  // A vocab_size larger than the file holds.
  CHECK_THROWS_WITH(attnlens::load_llama2c_tokenizer(bytes.data(), bytes.size(), 513),
                    Catch::Contains("truncated at token 512"));
  CHECK_THROWS_AS(attnlens::load_llama2c_tokenizer(bytes.data(), bytes.size(), 0), Error);
  CHECK_THROWS_AS(attnlens::load_llama2c_tokenizer(nullptr, 0, 512), Error);

  // A length field that claims more bytes than remain (token 5 of an otherwise valid file).
  std::vector<uint8_t> bad = bytes;
  size_t off = 4;
  for (int i = 0; i < 5; ++i) {
    int32_t len;
    std::memcpy(&len, &bad[off + 4], 4);
    off += 8 + size_t(len);
  }
  const int32_t huge = 7;  // <= max_token_length (7) but past the end once the file is cut short
  std::memcpy(&bad[off + 4], &huge, 4);
  bad.resize(off + 8 + 3);
  CHECK_THROWS_WITH(attnlens::load_llama2c_tokenizer(bad.data(), bad.size(), 512),
                    Catch::Contains("token 5 claims 7 bytes") && Catch::Contains("only 3 remain"));
  const int32_t negative = -4;
  bad = bytes;
  std::memcpy(&bad[off + 4], &negative, 4);
  CHECK_THROWS_WITH(attnlens::load_llama2c_tokenizer(bad.data(), bad.size(), 512), Catch::Contains("length -4"));
  const int32_t too_long = 1 << 30;
  std::memcpy(&bad[off + 4], &too_long, 4);
  CHECK_THROWS_WITH(attnlens::load_llama2c_tokenizer(bad.data(), bad.size(), 512), Catch::Contains("max_token_length"));
}

TEST_CASE("GGUF-style SentencePiece arrays encode like the llama2.c file", "[sentencepiece][gguf]") {
  SKIP_UNLESS_FILE(kLlama2);
  SKIP_UNLESS_FILE(kCases);
  // Rebuild the Llama 2 vocabulary as GGUF stores it: "▁" for spaces, token types, "<s>" names.
  const auto bytes = testutil::read_bytes(kLlama2);
  std::vector<std::string> pieces;
  std::vector<float> scores;
  std::vector<int> types;
  size_t off = 4;
  for (int i = 0; i < 32000; ++i) {
    float score;
    int32_t len;
    std::memcpy(&score, &bytes[off], 4);
    std::memcpy(&len, &bytes[off + 4], 4);
    std::string p(reinterpret_cast<const char*>(&bytes[off + 8]), size_t(len));
    off += 8 + size_t(len);
    std::string spm;
    for (char c : p) spm += c == ' ' ? std::string("\xE2\x96\x81") : std::string(1, c);
    if (i == 0) spm = "<unk>";
    if (i == 1) spm = "<s>";
    if (i == 2) spm = "</s>";
    pieces.push_back(spm);
    scores.push_back(score);
    types.push_back(i == 0 ? 2 : i <= 2 ? 3 : i <= 258 ? 6 : 1);
  }
  auto gguf = attnlens::make_sentencepiece_tokenizer(pieces, scores, types, 1, 2, 0, true, true);
  auto l2c = load_llama2c(kLlama2, 32000);
  CHECK(gguf->piece(1) == "<s>");
  CHECK(gguf->token_id("\xE2\x96\x81the") == l2c->token_id(" the"));
  std::vector<std::string> texts = read_lines(kCases);
  texts.push_back("Line one\nLine two\ttabbed   spaced\r\n");
  texts.push_back("ünïcödé ✓ 中文 🎉🎉 العربية");
  for (const auto& text : texts) {
    INFO(text);
    const auto ids = gguf->encode(text);
    CHECK(ids == l2c->encode(text));
    CHECK(gguf->decode(ids) == text);
  }
  // Without BOS and without the space prefix.
  auto plain = attnlens::make_sentencepiece_tokenizer(pieces, scores, types, 1, 2, 0, false, false);
  const auto ids = plain->encode("Hello");
  CHECK(ids.size() >= 1);
  CHECK(ids.front() != 1);
  CHECK(plain->decode(ids) == "Hello");
  CHECK_THROWS_AS(attnlens::make_sentencepiece_tokenizer(pieces, {1.0f}, types, 1, 2, 0, true, true), Error);
  // A user-defined token (type 4) is matched in the text before the model runs, as in llama.cpp.
  {
    auto user_pieces = pieces;
    auto user_types = types;
    user_pieces[31999] = "<|user|>";
    user_types[31999] = 4;
    auto user = attnlens::make_sentencepiece_tokenizer(user_pieces, scores, user_types, 1, 2, 0, true, true);
    const auto ids = user->encode("<|user|>Hi");
    CHECK(l2c->token_id(" Hi") == 6324);
    CHECK(ids == std::vector<int>{1, 31999, 6324});  // "<|user|>", then "Hi" with its dummy prefix: " Hi"
    CHECK(user->decode(ids) == "<|user|> Hi");
    CHECK(user->piece(31999) == "<|user|>");
  }
  types[5] = 42;
  CHECK_THROWS_WITH(attnlens::make_sentencepiece_tokenizer(pieces, scores, types, 1, 2, 0, true, true),
                    Catch::Contains("token 5") && Catch::Contains("type 42"));
}

TEST_CASE("long inputs encode fast (no quadratic merging)", "[sentencepiece][perf]") {
  SKIP_UNLESS_FILE(kLlama2);
  auto tok = load_llama2c(kLlama2, 32000);
  std::string text;
  while (text.size() < 10000) text += "Once upon a time, a little girl named Lily found a shiny red ball. ";
  std::string spaces(10000, ' ');
  std::string letters(10000, 'a');
  for (const std::string* s : {&text, &spaces, &letters}) {
    const auto t0 = std::chrono::steady_clock::now();
    const auto ids = tok->encode(*s);
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    // llama2.c's O(n^2) loop takes seconds here, ours a few ms: printed, not asserted (a wall-clock
    // limit is a benchmark's business)
    WARN(s->size() << " bytes -> " << ids.size() << " tokens in " << ms << " ms");
    CHECK(tok->decode(ids) == *s);
  }
}

namespace {
// llama2.c run.c encode(), ported literally (O(n^2) rescans, bsearch replaced by a linear find):
// the reference the heap-based merge must agree with on arbitrary text.
std::vector<int> llama2c_reference_encode(const std::vector<std::string>& vocab, const std::vector<float>& scores,
                                          const std::string& text) {
  const auto lookup = [&](const std::string& s) {
    for (size_t i = 0; i < vocab.size(); ++i)
      if (vocab[i] == s) return int(i);
    return -1;
  };
  std::vector<int> tokens{1};
  if (!text.empty()) tokens.push_back(lookup(" "));
  std::string buf;
  for (size_t c = 0; c < text.size(); ++c) {
    if ((uint8_t(text[c]) & 0xC0) != 0x80) buf.clear();
    buf += text[c];
    if (c + 1 < text.size() && (uint8_t(text[c + 1]) & 0xC0) == 0x80 && buf.size() < 4) continue;
    const int id = lookup(buf);
    if (id != -1) {
      tokens.push_back(id);
    } else {
      for (char b : buf) tokens.push_back(int(uint8_t(b)) + 3);
    }
    buf.clear();
  }
  while (true) {
    float best_score = -1e10f;
    int best_id = -1, best_idx = -1;
    for (size_t i = 0; i + 1 < tokens.size(); ++i) {
      const int id = lookup(vocab[size_t(tokens[i])] + vocab[size_t(tokens[i + 1])]);
      if (id != -1 && scores[size_t(id)] > best_score) {
        best_score = scores[size_t(id)];
        best_id = id;
        best_idx = int(i);
      }
    }
    if (best_idx == -1) break;
    tokens[size_t(best_idx)] = best_id;
    tokens.erase(tokens.begin() + best_idx + 1);
  }
  return tokens;
}
}  // namespace

TEST_CASE("heap-based merging equals llama2.c's rescanning loop on random text", "[sentencepiece][reference]") {
  SKIP_UNLESS_FILE(kTok512);
  const auto bytes = testutil::read_bytes(kTok512);
  std::vector<std::string> vocab;
  std::vector<float> scores;
  for (size_t off = 4; vocab.size() < 512;) {
    float score;
    int32_t len;
    std::memcpy(&score, &bytes[off], 4);
    std::memcpy(&len, &bytes[off + 4], 4);
    vocab.emplace_back(reinterpret_cast<const char*>(&bytes[off + 8]), size_t(len));
    scores.push_back(score);
    off += 8 + size_t(len);
  }
  auto tok = load_llama2c(kTok512, 512);
  // Random strings over pieces that make long merge chains and ties ("  " runs, repeated letters).
  const std::vector<std::string> alphabet = {"a", "e", "t", "h", "n", "d", " ", " ", "  ", "the", "and", "ll",
                                             "o", "s", ".", "\n", "é", "中", "\xF0\x9F\x98\x80", "\xE2\x80"};
  uint32_t rng = 12345;
  for (int n = 0; n < 300; ++n) {
    std::string text;
    const int parts = 1 + int((rng = rng * 1664525u + 1013904223u) >> 27);
    for (int k = 0; k < parts; ++k) text += alphabet[((rng = rng * 1664525u + 1013904223u) >> 8) % alphabet.size()];
    INFO("text \"" << text << "\"");
    REQUIRE(tok->encode(text) == llama2c_reference_encode(vocab, scores, text));
  }
}

namespace {
std::string from_hex(const std::string& hex) {
  std::string out;
  for (size_t i = 0; i + 1 < hex.size(); i += 2) out.push_back(char(std::stoi(hex.substr(i, 2), nullptr, 16)));
  return out;
}
std::string lower(char32_t cp) {
  std::string s;
  attnlens::unicode::append_lowercase(s, cp);
  return s;
}
}  // namespace

TEST_CASE("UTF-8 replacement matches WHATWG TextDecoder", "[unicode]") {
  // Expected outputs were produced by Node's TextDecoder on the same bytes.
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"e282", "efbfbd"},                 {"f08080", "efbfbdefbfbdefbfbd"},
      {"eda080", "efbfbdefbfbdefbfbd"},   {"c0af", "efbfbdefbfbd"},
      {"61ff62", "61efbfbd62"},           {"f4908080", "efbfbdefbfbdefbfbdefbfbd"},
      {"e0a0", "efbfbd"},                 {"e0a080", "e0a080"},
      {"f09f98", "efbfbd"},               {"f09f9880", "f09f9880"},
      {"c2", "efbfbd"},                   {"8080", "efbfbdefbfbd"},
      {"efbfbd", "efbfbd"},               {"fc8080808080", "efbfbdefbfbdefbfbdefbfbdefbfbdefbfbd"},
  };
  for (const auto& [in, out] : cases) {
    INFO("bytes " << in);
    CHECK(attnlens::unicode::sanitize_utf8(from_hex(in)) == from_hex(out));
  }
}

TEST_CASE("Unicode tables: categories, white space, lowercase, display labels", "[unicode]") {
  using namespace attnlens::unicode;
  CHECK(std::string(table_version()) == "14.0.0");
  CHECK(category('A') == Category::Lu);
  CHECK(category(0x4E2D) == Category::Lo);     // 中
  CHECK(category(0x0301) == Category::Mn);     // combining acute
  CHECK(category(0x0663) == Category::Nd);     // Arabic-Indic three
  CHECK(category(0x00BD) == Category::No);     // ½
  CHECK(category(0x2014) == Category::Pd);     // em dash
  CHECK(category(0x1F600) == Category::So);    // 😀
  CHECK(category(0x200D) == Category::Cf);     // ZWJ
  CHECK(category(0xE000) == Category::Co);
  CHECK(category(0x10FFFF) == Category::Cn);
  CHECK(category(0x110000) == Category::Cn);
  CHECK(is_letter(0x05D0));                    // א
  CHECK_FALSE(is_letter('1'));
  CHECK(is_number(0x2163));                    // Ⅳ (Nl)
  CHECK(is_white_space(0x3000));
  CHECK(is_white_space(0x85));
  CHECK_FALSE(is_white_space(0x200B));         // zero width space is Cf, not White_Space
  CHECK(is_bert_punctuation('$'));
  CHECK(is_bert_punctuation(0x3001));          // 、
  CHECK_FALSE(is_bert_punctuation('a'));
  CHECK(is_cjk_ideograph(0x4E2D));
  CHECK_FALSE(is_cjk_ideograph(0x3042));       // あ
  CHECK(lower('Q') == "q");
  CHECK(lower(0xC9) == "\xC3\xA9");            // É -> é
  CHECK(lower(0x0130) == "i\xCC\x87");         // İ -> i + U+0307
  CHECK(lower(0x0391) == "\xCE\xB1");          // Α -> α
  CHECK(lower(0x0100) == "\xC4\x81");          // Ā -> ā (an alternating run)
  CHECK(lower(0x0101) == "\xC4\x81");          // ā unchanged
  CHECK(lower(0x10400) == "\xF0\x90\x90\xA8"); // Deseret
  CHECK(lower(0x4E2D) == "\xE4\xB8\xAD");
  CHECK(display_bytes("a\nb\t\x1b") == "a\\nb\\t\\x1b");
  CHECK(display_bytes("\xE2\x80\xA8") == "\\u2028");
  CHECK(display_bytes("\xF0\x9F\x98") == "<0xF0><0x9F><0x98>");
  CHECK(display_bytes(" caf\xC3\xA9") == " caf\xC3\xA9");
}
