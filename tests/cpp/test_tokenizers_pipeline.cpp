// The tokenizer.json components one by one: Unicode normalization forms (against Python's
// unicodedata, tests/fixtures/tokenizers/unicode_normalization.json), the regex engine, split
// behaviours (HF's documented example), pre-tokenizers, models, decoders, added tokens, truncation and
// padding, and what bad input does.
#include <chrono>
#include <nlohmann/json.hpp>

#include "test_util.h"
#include "core/error.h"
#include "tokenizers/decoders.h"
#include "tokenizers/models.h"
#include "tokenizers/normalizers.h"
#include "tokenizers/pipeline.h"
#include "tokenizers/post_processors.h"
#include "tokenizers/pre_tokenizers.h"
#include "tokenizers/regex.h"
#include "tokenizers/tokenizer.h"
#include "tokenizers/unicode.h"

using attnlens::Error;
using json = nlohmann::json;
using Ids = std::vector<int>;
using W = std::vector<std::string>;
namespace tok = attnlens::tok;
namespace uni = attnlens::unicode;

namespace {

uint64_t fnv(const std::string& s, uint64_t h) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001B3ull;
  }
  return h;
}

std::string hex16(uint64_t v) {
  char buf[20];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

W words_of(const tok::PreTokenizer& p, std::string_view text, bool at_start = true) {
  tok::Words w;
  w.text.assign(text);
  w.spans.push_back({0, uint32_t(text.size())});
  w.at_start = at_start;
  p.pre_tokenize(w);
  W out;
  for (size_t i = 0; i < w.spans.size(); ++i) out.emplace_back(w.word(i));
  return out;
}

W matches(const std::string& pattern, std::string_view text) {
  const tok::Regex re(pattern);
  W out;
  for (const auto& [b, e] : re.find_all(tok::Subject(text))) out.emplace_back(text.substr(b, e - b));
  return out;
}

std::string decode_with(const tok::Decoder& d, std::vector<std::string> tokens) {
  d.decode_chain(tokens, tok::DecodePosition::Text);
  std::string s;
  for (const auto& t : tokens) s += t;
  return s;
}

std::unique_ptr<attnlens::Tokenizer> load(const json& j) { return attnlens::load_hf_tokenizer(j.dump()); }

// A small BPE tokenizer.json over the given pieces (ids in order) and merges.
json bpe_json(const std::vector<std::string>& pieces, const std::vector<std::string>& merges) {
  json vocab = json::object();
  for (size_t i = 0; i < pieces.size(); ++i) vocab[pieces[i]] = i;
  return {{"model", {{"type", "BPE"}, {"vocab", vocab}, {"merges", merges}}}};
}

}  // namespace

TEST_CASE("NFC, NFD, NFKC, NFKD equal Python's unicodedata on every code point and 20000 sequences", "[unicode][normalize]") {
  const json ref = json::parse(testutil::read_text(testutil::fixture_path("tokenizers/unicode_normalization.json")));
  REQUIRE(ref.at("unicode").get<std::string>() == uni::table_version());
  const std::pair<const char*, uni::NormalForm> forms[] = {{"NFC", uni::NormalForm::NFC}, {"NFD", uni::NormalForm::NFD},
                                                           {"NFKC", uni::NormalForm::NFKC}, {"NFKD", uni::NormalForm::NFKD}};
  for (const auto& [name, form] : forms) {
    const auto& blocks = ref.at("blocks").at(name);
    for (size_t b = 0; b < blocks.size(); ++b) {
      uint64_t h = 0xCBF29CE484222325ull;
      for (char32_t cp = char32_t(b * 4096); cp < char32_t(b * 4096 + 4096); ++cp) {
        if ((cp >= 0xD800 && cp < 0xE000) || uni::category(cp) == uni::Category::Cn) continue;
        std::string s;
        uni::append_utf8(s, cp);
        h = fnv(uni::normalize(s, form) + std::string(1, '\0'), h);
      }
      INFO(name << " block U+" << std::hex << b * 4096);
      CHECK(hex16(h) == blocks[b].get<std::string>());
    }
    const json& seq = ref.at("sequences");
    const auto bases = seq.at("bases").get<std::vector<uint32_t>>(), marks = seq.at("marks").get<std::vector<uint32_t>>();
    uint32_t x = seq.at("seed").get<uint32_t>();
    const auto rnd = [&] { return x = x * 1664525u + 1013904223u; };
    uint64_t h = 0xCBF29CE484222325ull;
    for (int k = 0; k < seq.at("count").get<int>(); ++k) {
      const uint32_t n = 2 + rnd() % 5;
      std::string s;
      uni::append_utf8(s, bases[rnd() % bases.size()]);
      for (uint32_t i = 1; i < n; ++i) {
        const bool mark = rnd() % 3 != 0;
        uni::append_utf8(s, mark ? marks[rnd() % marks.size()] : bases[rnd() % bases.size()]);
      }
      h = fnv(uni::normalize(s, form) + std::string(1, '\0'), h);
    }
    INFO(name << " on the random sequences");
    CHECK(hex16(h) == seq.at("hashes").at(name).get<std::string>());
    for (const json& c : ref.at("cases")) {
      INFO(name << " of " << json(c.at("text")).dump());
      CHECK(uni::normalize(c.at("text").get<std::string>(), form) == c.at(name).get<std::string>());
    }
  }
  CHECK(uni::normalize("a\xFF" "b", uni::NormalForm::NFC) == "a\xEF\xBF\xBD" "b");  // ill-formed -> U+FFFD
  CHECK(uni::normalize("", uni::NormalForm::NFKC).empty());
}

TEST_CASE("regex: the constructs tokenizer.json patterns use", "[regex]") {
  CHECK(matches("\\p{L}+|\\p{N}", "ab12 c") == W{"ab", "1", "2", "c"});
  CHECK(matches("\\p{Lu}\\p{Ll}*", "HelloWorld x") == W{"Hello", "World"});
  CHECK(matches("[^\\s\\p{L}]+", "ab, 12;c") == W{",", "12;"});
  CHECK(matches("(?i:'s|'t)", "'S 's 'T 'x") == W{"'S", "'s", "'T"});
  CHECK(matches("(?i:s)", "s S \xC5\xBF x") == W{"s", "S", "\xC5\xBF"});  // ſ folds to s
  CHECK(matches("\\p{N}{1,3}", "1234567") == W{"123", "456", "7"});
  CHECK(matches("a{2}", "aaaaa") == W{"aa", "aa"});
  CHECK(matches("a{2,}", "a aa aaa") == W{"aa", "aaa"});
  CHECK(matches("\\s+(?!\\S)|\\s+", "a   b  ") == W{"  ", " ", "  "});
  CHECK(matches("a(?=b)", "ab ac ab") == W{"a", "a"});
  CHECK(matches("a+?", "aaa") == W{"a", "a", "a"});
  CHECK(matches("a++a", "aaaa") == W{});          // possessive: gives nothing back
  CHECK(matches("(?>a+)b|a", "aab") == W{"aab"});
  CHECK(matches("[a-c\\d]+", "xab1d") == W{"ab1"});
  CHECK(matches("^a|b$", "ab\nab") == W{"a", "b", "a", "b"});
  CHECK(matches("\\bis\\b", "this is") == W{"is"});
  CHECK(matches("[一-龥]+", "中文abc日本") == W{"中文", "日本"});
  CHECK(matches("\\x41\\u0042\\x{43}", "ABC") == W{"ABC"});
  CHECK(matches(".+", "ab\ncd") == W{"ab", "cd"});
  CHECK(matches("\\w+", "naïve_x1 ü") == W{"naïve_x1", "ü"});
  CHECK(matches("\\d+", "12 ٣٤") == W{"12", "٣٤"});
  CHECK(matches("[\\r\\n]+", "a\r\nb") == W{"\r\n"});
  CHECK(matches("x*", "axxb") == W{"xx"});  // empty matches are skipped
  CHECK(matches("\\P{L}+", "ab12cd") == W{"12"});
  CHECK(matches("\\p{^L}+", "ab12cd") == W{"12"});
  // Ill-formed UTF-8 in the subject counts as U+FFFD (So): kept as its own bytes.
  CHECK(matches("[^\\p{L}]+", "a\xFF\xFE" "b") == W{"\xFF\xFE"});
}

TEST_CASE("regex: unsupported constructs name themselves; matching never hangs", "[regex][errors]") {
  const auto refuses = [](const std::string& p, const std::string& part) {
    INFO("pattern " << p);
    CHECK_THROWS_AS(tok::Regex(p), Error);
    CHECK_THROWS_WITH(tok::Regex(p), Catch::Contains(part));
  };
  refuses("(?<=a)b", "lookbehind");
  refuses("\\p{Greek}", "unsupported Unicode property \\p{greek}");
  refuses("[[:alpha:]]", "POSIX bracket");
  refuses("[a&&b]", "intersection");
  refuses("(a*)*", "empty string");
  refuses("(?i:é)", "non-ASCII letter");
  refuses("\\1", "unsupported escape \\1");
  refuses("a{3,2}", "m < n");
  refuses("(ab", "unterminated group");
  refuses("ab)", "unbalanced");
  refuses("[ab", "unterminated character class");
  refuses("*a", "quantifier without");
  refuses("a{1001}", "above 1000");
  refuses("\\", "ends with a backslash");
  refuses(std::string("a\xFF"), "ill-formed UTF-8");
  // Exponential backtracking is cut off by the step budget, with an error, in bounded time.
  const auto t0 = std::chrono::steady_clock::now();
  const tok::Regex evil("(a|a)+b");
  const std::string text(40, 'a');
  CHECK_THROWS_WITH(evil.find_all(tok::Subject(text)), Catch::Contains("step budget"));
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(60));
}

TEST_CASE("split behaviours follow HF's documented example", "[pre_tokenizer]") {
  // https://huggingface.co/docs/tokenizers/api/pre-tokenizers (Split): "the-final--countdown" on "-".
  const auto split = [](tok::SplitBehavior b, bool invert = false) {
    return words_of(tok::SplitPreTokenizer(tok::Pattern::literal("-"), b, invert), "the-final--countdown");
  };
  CHECK(split(tok::SplitBehavior::Removed) == W{"the", "final", "countdown"});
  CHECK(split(tok::SplitBehavior::Isolated) == W{"the", "-", "final", "-", "-", "countdown"});
  CHECK(split(tok::SplitBehavior::MergedWithPrevious) == W{"the-", "final-", "-", "countdown"});
  CHECK(split(tok::SplitBehavior::MergedWithNext) == W{"the", "-final", "-", "-countdown"});
  CHECK(split(tok::SplitBehavior::Contiguous) == W{"the", "-", "final", "--", "countdown"});
  CHECK(split(tok::SplitBehavior::Removed, true) == W{"-", "-", "-"});  // invert: the matches are kept
  const tok::SplitPreTokenizer re(tok::Pattern::regex("\\d+"), tok::SplitBehavior::Isolated, false);
  CHECK(words_of(re, "ab12cd345") == W{"ab", "12", "cd", "345"});
}

TEST_CASE("pre-tokenizers", "[pre_tokenizer]") {
  CHECK(words_of(tok::WhitespacePreTokenizer(), "Hey friend!  How're you?") == W{"Hey", "friend", "!", "How", "'", "re", "you", "?"});
  CHECK(words_of(tok::WhitespaceSplitPreTokenizer(), " a\tb\u00a0c \n") == W{"a", "b", "c"});
  CHECK(words_of(tok::PunctuationPreTokenizer(tok::SplitBehavior::Isolated), "Hey!? x") == W{"Hey", "!", "?", " x"});
  CHECK(words_of(tok::PunctuationPreTokenizer(tok::SplitBehavior::Contiguous), "Hey!? x") == W{"Hey", "!?", " x"});
  CHECK(words_of(tok::DigitsPreTokenizer(true), "a123b") == W{"a", "1", "2", "3", "b"});
  CHECK(words_of(tok::DigitsPreTokenizer(false), "a123b4") == W{"a", "123", "b", "4"});
  CHECK(words_of(tok::BertPreTokenizer(), "Hello, world! x$y") == W{"Hello", ",", "world", "!", "x", "$", "y"});
  CHECK(words_of(tok::CharDelimiterSplitPreTokenizer('|'), "a|b||c") == W{"a", "b", "c"});
  const std::string S = "\xE2\x96\x81";  // ▁
  tok::MetaspaceOptions m;
  CHECK(words_of(tok::MetaspacePreTokenizer(m), "Hey friend") == W{S + "Hey", S + "friend"});
  CHECK(words_of(tok::MetaspacePreTokenizer(m), " Hey") == W{S + "Hey"});  // no second ▁
  m.split = false;
  CHECK(words_of(tok::MetaspacePreTokenizer(m), "Hey friend") == W{S + "Hey" + S + "friend"});
  m.prepend_scheme = tok::PrependScheme::First;
  CHECK(words_of(tok::MetaspacePreTokenizer(m), "Hey", true) == W{S + "Hey"});
  CHECK(words_of(tok::MetaspacePreTokenizer(m), "Hey", false) == W{"Hey"});
  m.prepend_scheme = tok::PrependScheme::Never;
  CHECK(words_of(tok::MetaspacePreTokenizer(m), "Hey you") == W{"Hey" + S + "you"});
  // ByteLevel: GPT-2's split, then bytes as their stand-ins ("Ġ" = space, "Ċ" = newline).
  CHECK(words_of(tok::ByteLevelPreTokenizer(true, true), "Hello world\n") == W{"\xC4\xA0" "Hello", "\xC4\xA0" "world", "\xC4\x8A"});
  CHECK(words_of(tok::ByteLevelPreTokenizer(false, false), "a b") == W{"a\xC4\xA0" "b"});
}

TEST_CASE("normalizers", "[normalizer]") {
  CHECK(tok::LowercaseNormalizer().normalize("\xC3\x84" "BC \xC4\xB0") == "\xC3\xA4" "bc i\xCC\x87");
  CHECK(tok::StripNormalizer(true, true).normalize(" \t x y \n") == "x y");
  CHECK(tok::StripNormalizer(false, true).normalize("  x ") == "  x");
  CHECK(tok::StripAccentsNormalizer().normalize("e\xCC\x81" "a\xCC\x88") == "ea");
  CHECK(tok::ReplaceNormalizer(tok::Pattern::literal(" "), "\xE2\x96\x81").normalize("a b  c") == "a\xE2\x96\x81" "b\xE2\x96\x81\xE2\x96\x81" "c");
  CHECK(tok::ReplaceNormalizer(tok::Pattern::regex(" {2,}"), " ").normalize("a   b c") == "a b c");
  CHECK(tok::PrependNormalizer("_").normalize("x") == "_x");
  CHECK(tok::PrependNormalizer("_").normalize("").empty());
  CHECK(tok::UnicodeNormalizer(uni::NormalForm::NFKC).normalize("\xEF\xAC\x81\xEF\xBC\xA1") == "fiA");
  // A charsmap that is not one: errors at load, never a crash; an empty one changes nothing.
  CHECK(tok::PrecompiledNormalizer("").normalize("x") == "x");
  CHECK_THROWS_AS(tok::PrecompiledNormalizer("abc"), Error);
  CHECK_THROWS_AS(tok::PrecompiledNormalizer(std::string("\xFF\xFF\xFF\x7F" "abcd", 8)), Error);
  // Garbage trie units: matching stops at the first out-of-range unit.
  std::string junk("\x08\x00\x00\x00\xFF\xFF\xFF\xFF\xFF\xFF\xFF\xFFxyz", 15);
  CHECK(tok::PrecompiledNormalizer(junk).normalize("abc") == "abc");
}

TEST_CASE("models: BPE options, WordPiece, Unigram", "[model]") {
  // continuing_subword_prefix / end_of_word_suffix (as in BPE models trained with them).
  json j = bpe_json({"[UNK]", "l", "##o", "##w", "##ow", "low</w>", "l##ow"}, {});
  tok::BpeConfig c;
  c.pieces = {"[UNK]", "l", "##o", "##w", "##ow", "l##o", "low"};
  c.merges.add("##o", "##w");  // -> "##ow"
  c.merges.add("l", "##ow");   // -> "low" (the prefix of the right piece is dropped)
  c.continuing_subword_prefix = "##";
  c.unk_token = "[UNK]";
  tok::BpeModel bpe(std::move(c));
  Ids out;
  bpe.encode_word("low", out);
  CHECK(out == Ids{6});
  out.clear();
  bpe.encode_word("lox", out);  // "##x" is unknown
  CHECK(out == Ids{1, 2, 0});
  tok::BpeConfig s;
  s.pieces = {"a", "b</w>", "ab</w>", "<0x63>"};
  s.merges.add("a", "b</w>");
  s.end_of_word_suffix = "</w>";
  s.byte_fallback = true;
  tok::BpeModel suffix(std::move(s));
  out.clear();
  suffix.encode_word("ab", out);
  CHECK(out == Ids{2});
  out.clear();
  suffix.encode_word("ac", out);  // "c</w>" has no piece: its bytes "c" "<" ... have no byte tokens but <0x63>
  CHECK(out.size() >= 1);
  // ignore_merges: a word that is a piece wins over what its merges would give.
  tok::BpeConfig im;
  im.pieces = {"a", "b", "c", "ab", "abc", "bc"};
  im.merges.add("b", "c");
  im.merges.add("a", "bc");
  im.ignore_merges = true;
  tok::BpeModel ign(std::move(im));
  out.clear();
  ign.encode_word("abc", out);
  CHECK(out == Ids{4});
  // Merged pieces resolve to the id a lookup gives, whatever the merges' order: in the order of the
  // merged ids (as real files are), against it, and with a duplicated piece (the first id wins).
  for (const bool ordered : {true, false}) {
    tok::BpeConfig o;
    o.pieces = {"a", "b", "c", "ab", "abc", "bc", "cab"};
    if (ordered) {
      o.merges.add("a", "b");    // 3
      o.merges.add("ab", "c");   // 4
      o.merges.add("b", "c");    // 5
      o.merges.add("c", "ab");   // 6
    } else {
      o.merges.add("c", "ab");   // 6
      o.merges.add("b", "c");    // 5
      o.merges.add("a", "b");    // 3
      o.merges.add("ab", "c");   // 4
    }
    tok::BpeModel m(std::move(o));
    out.clear();
    m.encode_word("abccab", out);
    // ordered: a+b (twice), ab+c, c+ab; unordered: b+c, a+b, c+ab ("a" alone: no merge has it first)
    CHECK(out == (ordered ? Ids{4, 6} : Ids{0, 5, 6}));
    out.clear();
    m.encode_word("bcab", out);
    CHECK(out == Ids{5, 3});
  }
  tok::BpeConfig dup;
  dup.pieces = {"a", "b", "ab", "x", "ab"};  // "ab" twice: id 2 is the piece's id
  dup.merges.add("a", "b");
  tok::BpeModel d(std::move(dup));
  out.clear();
  d.encode_word("ab", out);
  CHECK(out == Ids{2});
  // WordPiece: longest match first, a word that cannot be covered is [UNK].
  tok::WordPieceConfig w;
  w.pieces = {"[UNK]", "un", "##aff", "##able", "a"};
  tok::WordPieceModel wp(std::move(w));
  out.clear();
  wp.encode_word("unaffable", out);
  CHECK(out == Ids{1, 2, 3});
  out.clear();
  wp.encode_word("unx", out);
  CHECK(out == Ids{0});
  // Unigram: the best-scoring path; unknown characters fuse into one unk, or become bytes.
  tok::UnigramConfig u;
  u.vocab = {{"<unk>", 0}, {"a", -1}, {"b", -1}, {"ab", -1.5}, {"<0x78>", 0}, {"<0x79>", 0}};
  u.unk_id = 0;
  tok::UnigramModel uni1(u);
  out.clear();
  uni1.encode_word("abxyab", out);
  CHECK(out == Ids{3, 0, 3});
  u.byte_fallback = true;
  tok::UnigramModel uni2(u);
  out.clear();
  uni2.encode_word("abxy", out);
  CHECK(out == Ids{3, 4, 5});
  u.unk_id = -1;
  tok::UnigramModel no_unk(u);
  out.clear();
  CHECK_THROWS_WITH(no_unk.encode_word("z", out), Catch::Contains("no unk token"));
}

TEST_CASE("decoders", "[decoder]") {
  const std::string S = "\xE2\x96\x81";
  CHECK(decode_with(tok::ByteLevelDecoder(), {"Hello", "\xC4\xA0" "world", "<|im_start|>"}) == "Hello world<|im_start|>");
  tok::MetaspaceOptions m;
  CHECK(decode_with(tok::MetaspaceDecoder(m), {S + "Hey", S + "you", S + S}) == "Hey you  ");
  CHECK(decode_with(tok::MetaspaceDecoder(m), {S + S + "x"}) == " x");  // one ▁ removed at the start, as sentencepiece
  CHECK(decode_with(tok::ByteFallbackDecoder(), {"a", "<0x41>", "<0xE4>", "<0xB8>", "<0xAD>"}) == "aA\xE4\xB8\xAD");
  CHECK(decode_with(tok::StripDecoder(" ", 1, 0), {"  a"}) == " a");
  CHECK(decode_with(tok::StripDecoder("x", 0, 2), {"axxx"}) == "ax");
  CHECK(decode_with(tok::ReplaceDecoder(tok::Pattern::literal(S), " "), {S + "a" + S}) == " a ");
  CHECK(decode_with(tok::WordPieceDecoder("##", true), {"un", "##aff", "##able", "world", "."}) == "unaffable world.");
  CHECK(decode_with(tok::WordPieceDecoder("##", false), {"a", "."}) == "a .");
  CHECK(decode_with(tok::BpeDecoder("</w>"), {"hel", "lo</w>", "world</w>"}) == "hello world");
  CHECK(decode_with(tok::CtcDecoder("<pad>", "|", true), {"h", "h", "<pad>", "e", "l", "l", "<pad>", "l", "o", "|", "w"}) == "hello w");
  std::vector<std::unique_ptr<tok::Decoder>> seq;
  seq.push_back(std::make_unique<tok::ReplaceDecoder>(tok::Pattern::literal(S), " "));
  seq.push_back(std::make_unique<tok::ByteFallbackDecoder>());
  seq.push_back(std::make_unique<tok::FuseDecoder>());
  seq.push_back(std::make_unique<tok::StripDecoder>(" ", 1, 0));
  CHECK(decode_with(tok::SequenceDecoder(std::move(seq)), {S + "Hi", "<0x21>"}) == "Hi!");
}

TEST_CASE("added tokens: special or not, lstrip, rstrip, single_word, normalized", "[added]") {
  json j = bpe_json({"a", "b", " "}, {});
  j["added_tokens"] = {{{"id", 3}, {"content", "<X>"}, {"special", true}},
                       {{"id", 4}, {"content", "ab"}, {"special", false}, {"single_word", true}},
                       {{"id", 5}, {"content", "[L]"}, {"lstrip", true}, {"rstrip", true}, {"special", true}}};
  auto t = load(j);
  CHECK(t->encode("a<X>b") == Ids{0, 3, 1});
  CHECK(t->encode("ab ab") == Ids{4, 2, 4});
  CHECK(t->encode("aab") == Ids{0, 0, 1});         // "ab" touches a word character: not matched (single_word)
  CHECK(t->encode("a  [L]  b") == Ids{0, 5, 1});  // the spaces around [L] are swallowed
  CHECK(t->decode({0, 3, 4}) == "aab");           // special tokens decode to nothing, others to their text
  CHECK(t->piece(3) == "<X>");
  CHECK(t->is_special(3));
  CHECK_FALSE(t->is_special(4));
  // normalized: matched after the normalizer ran (here Lowercase), on the normalized text.
  json n = bpe_json({"a", "b"}, {});
  n["normalizer"] = {{"type", "Lowercase"}};
  n["added_tokens"] = {{{"id", 2}, {"content", "XY"}, {"special", false}, {"normalized", true}},
                       {{"id", 3}, {"content", "ZZ"}, {"special", false}, {"normalized", false}}};
  auto tn = load(n);
  CHECK(tn->encode("aXYb") == Ids{0, 2, 1});
  CHECK(tn->encode("axyb") == Ids{0, 2, 1});
  CHECK(tn->encode("aZZb") == Ids{0, 3, 1});
}

TEST_CASE("truncation and padding from the file", "[limits]") {
  json j = bpe_json({"a", "b", "<s>", "</s>", "<pad>"}, {});
  j["post_processor"] = {{"type", "RobertaProcessing"}, {"sep", {"</s>", 3}}, {"cls", {"<s>", 2}}};
  j["truncation"] = {{"max_length", 4}, {"strategy", "LongestFirst"}, {"stride", 0}, {"direction", "Right"}};
  CHECK(load(j)->encode("abab") == Ids{2, 0, 1, 3});  // room left for <s> and </s>
  CHECK(load(j)->encode("abab", false) == Ids{0, 1, 0, 1});
  j["truncation"]["direction"] = "Left";
  CHECK(load(j)->encode("abab") == Ids{2, 0, 1, 3});
  CHECK(load(j)->encode("aabb") == Ids{2, 1, 1, 3});
  j["truncation"] = nullptr;
  j["padding"] = {{"strategy", {{"Fixed", 6}}}, {"direction", "Right"}, {"pad_id", 4}, {"pad_token", "<pad>"}};
  CHECK(load(j)->encode("ab") == Ids{2, 0, 1, 3, 4, 4});
  j["padding"] = {{"strategy", "BatchLongest"}, {"pad_to_multiple_of", 4}, {"pad_id", 4}, {"direction", "Left"}};
  CHECK(load(j)->encode("a") == Ids{4, 2, 0, 3});
}

TEST_CASE("a pipeline assembled in C++ (what a SentencePiece or GGUF loader does)", "[pipeline]") {
  tok::Pipeline p;
  tok::UnigramConfig u;
  u.vocab = {{"<unk>", 0}, {"<s>", 0}, {"</s>", 0}, {"\xE2\x96\x81" "hello", -1}, {"\xE2\x96\x81", -2}, {"w", -3}, {"o", -3}};
  u.unk_id = 0;
  p.model = std::make_unique<tok::UnigramModel>(std::move(u));
  p.pre_tokenizer = std::make_unique<tok::MetaspacePreTokenizer>(tok::MetaspaceOptions{});
  p.decoder = std::make_unique<tok::MetaspaceDecoder>(tok::MetaspaceOptions{});
  p.post_processor = std::make_unique<tok::WrapProcessor>(Ids{1}, Ids{2});
  p.added = {{1, "<s>", true}, {2, "</s>", true}};
  p.ids = {1, 2, -1, 0};
  auto t = tok::make_pipeline_tokenizer(std::move(p));
  CHECK(t->kind() == "unigram");
  CHECK(t->encode("hello wow") == Ids{1, 3, 4, 5, 6, 5, 2});
  CHECK(t->decode(t->encode("hello wow")) == "hello wow");
  CHECK(t->piece(3) == " hello");
  CHECK(t->token_bytes(3) == " hello");
  CHECK(t->bos_id() == 1);
  CHECK(t->encode("hello!", false) == Ids{3, 0});
}
