// BERT WordPiece from a tokenizer.json built here: a small vocabulary laid out like bert-base-uncased's
// (lowercase + strip accents, BertPreTokenizer, [CLS] A [SEP]). The expected ids are worked out by
// hand from HF tokenizers' rules; each list says how.
#include <nlohmann/json.hpp>

#include "test_util.h"
#include "core/error.h"
#include "tokenizers/tokenizer.h"
#include "tokenizers/normalizers.h"

using attnlens::Tokenizer;
using json = nlohmann::json;
using Ids = std::vector<int>;

namespace {

// id = index.
const std::vector<std::string> kVocab = {
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]",                 // 0-4
    "the", "cafe", "naive", "hello", ",", "world", "!", ".",      // 5-12
    "un", "##aff", "##able", "play", "##ing",                     // 13-17
    "\xE4\xB8\xAD", "\xE6\x96\x87", "is", "fun", "'", "s", "?",   // 18-24  中 文
    "a", "##b", "deja", "vu", "$", "5", "##0",                    // 25-31
    "\xE1\x84\x92", "##\xE1\x85\xA1", "##\xE1\x86\xAB",           // 32-34  ᄒ ##ᅡ ##ᆫ (the jamo of 한)
    "viet", "angstrom", "istanbul", "##s"};                       // 35-38
enum { PAD = 0, UNK, CLS, SEP, MASK };

json bert_json() {
  json vocab = json::object();
  for (size_t i = 0; i < kVocab.size(); ++i) vocab[kVocab[i]] = i;
  json added = json::array();
  for (int id : {PAD, UNK, CLS, SEP, MASK})
    added.push_back({{"id", id}, {"content", kVocab[size_t(id)]}, {"single_word", false}, {"lstrip", false},
                     {"rstrip", false}, {"normalized", false}, {"special", true}});
  return {
      {"version", "1.0"},
      {"truncation", nullptr},
      {"padding", nullptr},
      {"added_tokens", added},
      {"normalizer",
       {{"type", "BertNormalizer"}, {"clean_text", true}, {"handle_chinese_chars", true}, {"strip_accents", nullptr},
        {"lowercase", true}}},
      {"pre_tokenizer", {{"type", "BertPreTokenizer"}}},
      {"post_processor",
       {{"type", "TemplateProcessing"},
        {"single", json::array({{{"SpecialToken", {{"id", "[CLS]"}, {"type_id", 0}}}},
                                {{"Sequence", {{"id", "A"}, {"type_id", 0}}}},
                                {{"SpecialToken", {{"id", "[SEP]"}, {"type_id", 0}}}}})},
        {"special_tokens",
         {{"[CLS]", {{"id", "[CLS]"}, {"ids", {CLS}}, {"tokens", {"[CLS]"}}}},
          {"[SEP]", {{"id", "[SEP]"}, {"ids", {SEP}}, {"tokens", {"[SEP]"}}}}}}}},
      {"decoder", {{"type", "WordPiece"}, {"prefix", "##"}, {"cleanup", true}}},
      {"model",
       {{"type", "WordPiece"}, {"unk_token", "[UNK]"}, {"continuing_subword_prefix", "##"},
        {"max_input_chars_per_word", 9}, {"vocab", vocab}}},
  };
}

std::unique_ptr<Tokenizer> load(const json& j) { return attnlens::load_hf_tokenizer(j.dump()); }

}  // namespace

TEST_CASE("BERT WordPiece: exact ids", "[bert]") {
  auto tok = load(bert_json());
  CHECK(tok->kind() == "wordpiece");
  CHECK(tok->vocab_size() == int(kVocab.size()));
  CHECK(tok->bos_id() == CLS);
  CHECK(tok->eos_id() == SEP);
  CHECK(tok->pad_id() == PAD);
  CHECK(tok->unk_id() == UNK);

  // Lowercased; "," and "!" are punctuation words of their own.
  CHECK(tok->encode("Hello, world!") == Ids{CLS, 8, 9, 10, 11, SEP});
  // Accents stripped (NFD, drop Mn) before lowercasing: "Café naïve" -> "cafe naive".
  CHECK(tok->encode("Caf\xC3\xA9 na\xC3\xAFve") == Ids{CLS, 6, 7, SEP});
  // Uppercase accented letters too: "DÉJÀ VU." -> "deja vu" "."
  CHECK(tok->encode("D\xC3\x89J\xC3\x80 VU.") == Ids{CLS, 27, 28, 12, SEP});
  // Vietnamese stacked marks "Việt" (ệ = e + U+0323 + U+0302), and "Ångström".
  CHECK(tok->encode("Vi\xE1\xBB\x87t \xC3\x85ngstr\xC3\xB6m") == Ids{CLS, 35, 36, SEP});
  // Greedy longest-match-first with ## continuations: un ##aff ##able, play ##ing.
  CHECK(tok->encode("unaffable playing") == Ids{CLS, 13, 14, 15, 16, 17, SEP});
  // CJK ideographs get spaces around them, so "中文is" is three words: 中 文 is.
  CHECK(tok->encode("\xE4\xB8\xAD\xE6\x96\x87is fun") == Ids{CLS, 18, 19, 20, 21, SEP});
  // Hangul is not "Chinese"; NFD turns 한 into the jamo ᄒ ᅡ ᆫ, which are letters (not Mn): ᄒ ##ᅡ ##ᆫ.
  CHECK(tok->encode("\xED\x95\x9C") == Ids{CLS, 32, 33, 34, SEP});
  // Unknown words become one [UNK]: "zebra" has no pieces; "playx" matches "play" but not "##x".
  CHECK(tok->encode("hello zebra") == Ids{CLS, 8, UNK, SEP});
  CHECK(tok->encode("playx") == Ids{CLS, UNK, SEP});
  // "It's": "it" is unknown, the apostrophe is punctuation, "s" is a word.
  CHECK(tok->encode("It's") == Ids{CLS, UNK, 22, 23, SEP});
  // clean_text drops control/format characters (U+200B, BEL) and maps whitespace (tab, NBSP) to ' '.
  CHECK(tok->encode("hello\xE2\x80\x8B\tworld\x07\xC2\xA0!") == Ids{CLS, 8, 10, 11, SEP});
  // ASCII symbols count as punctuation for BERT: "$50" -> "$" "5" "##0".
  CHECK(tok->encode("$50") == Ids{CLS, 29, 30, 31, SEP});
  // max_input_chars_per_word is 9 here: "abbbbbbbb" (9) splits, "abbbbbbbbb" (10) is [UNK].
  CHECK(tok->encode("abbbbbbbb") == Ids{CLS, 25, 26, 26, 26, 26, 26, 26, 26, 26, SEP});
  CHECK(tok->encode("abbbbbbbbb") == Ids{CLS, UNK, SEP});
  // "İstanbul": accents are stripped before lowercasing, so İ -> I + U+0307 -> I -> i.
  CHECK(tok->encode("\xC4\xB0stanbul") == Ids{CLS, 37, SEP});
  CHECK(tok->encode("istanbul's") == Ids{CLS, 37, 22, 23, SEP});
  // Special tokens typed in the text are matched as added tokens (not normalized, not split).
  CHECK(tok->encode("[CLS] hello [MASK]?") == Ids{CLS, CLS, 8, MASK, 24, SEP});
  // Empty text; and without the post-processor.
  CHECK(tok->encode("") == Ids{CLS, SEP});
  CHECK(tok->encode("Hello, world!", false) == Ids{8, 9, 10, 11});
}

TEST_CASE("BERT WordPiece: decode, pieces, token bytes", "[bert]") {
  auto tok = load(bert_json());
  // Special tokens skipped, "##" glued, the decoder's clean-up removes spaces before , and !
  CHECK(tok->decode({CLS, 8, 9, 10, 11, SEP}) == "hello, world!");
  CHECK(tok->decode({CLS, 13, 14, 15, 16, 17, SEP}) == "unaffable playing");
  CHECK(tok->decode(tok->encode("Caf\xC3\xA9 na\xC3\xAFve")) == "cafe naive");
  CHECK(tok->decode({CLS, 8, UNK, SEP}) == "hello");  // [UNK] is special: skipped
  CHECK(tok->decode({18, 19}) == "\xE4\xB8\xAD \xE6\x96\x87");
  CHECK(tok->decode({}).empty());
  CHECK(tok->piece(14) == "##aff");
  CHECK(tok->token_bytes(14) == "aff");
  CHECK(tok->token_bytes(8) == " hello");
  CHECK(tok->token_bytes(9) == ",");  // clean-up: " ," -> ","
  CHECK(tok->piece(CLS) == "[CLS]");
  CHECK(tok->token_bytes(CLS).empty());
  CHECK(tok->is_special(SEP));
  CHECK_FALSE(tok->is_special(8));
  CHECK(tok->token_id("##ing") == 17);
  CHECK(tok->token_id("ing") == -1);
  CHECK_THROWS_WITH(tok->decode({8, 39}), Catch::Contains("39") && Catch::Contains("vocabulary size 39"));
}

TEST_CASE("BERT WordPiece: normalizer flags and processor variants", "[bert]") {
  // Cased: no lowercase, no accent stripping -> "Hello" and "Café" are unknown.
  json cased = bert_json();
  cased["normalizer"]["lowercase"] = false;
  auto t1 = load(cased);
  CHECK(t1->encode("Hello hello Caf\xC3\xA9", false) == Ids{UNK, 8, UNK});
  // strip_accents explicitly on with lowercase off: "café" -> "cafe", "Cafe" stays unknown.
  cased["normalizer"]["strip_accents"] = true;
  auto t2 = load(cased);
  CHECK(t2->encode("caf\xC3\xA9 Cafe", false) == Ids{6, UNK});
  // Lowercase without accent stripping: İ lowercases to "i" + U+0307, so "İstanbul" is unknown.
  json no_strip = bert_json();
  no_strip["normalizer"]["strip_accents"] = false;
  auto t3 = load(no_strip);
  CHECK(t3->encode("\xC4\xB0stanbul ISTANBUL", false) == Ids{UNK, 37});
  CHECK(t3->encode("caf\xC3\xA9", false) == Ids{UNK});
  // BertProcessing gives the same [CLS] ... [SEP].
  json bp = bert_json();
  bp["post_processor"] = {{"type", "BertProcessing"}, {"sep", {"[SEP]", SEP}}, {"cls", {"[CLS]", CLS}}};
  CHECK(load(bp)->encode("hello") == Ids{CLS, 8, SEP});
  // No normalizer at all and a WhitespaceSplit pre-tokenizer: "hello," is one (unknown) word.
  json raw = bert_json();
  raw["normalizer"] = nullptr;
  raw["pre_tokenizer"] = {{"type", "WhitespaceSplit"}};
  raw["post_processor"] = nullptr;
  CHECK(load(raw)->encode("hello, world") == Ids{UNK, 10});
}

TEST_CASE("BertNormalizer on its own", "[bert][unicode]") {
  const attnlens::tok::BertNormalizer n(attnlens::tok::BertNormalizerOptions{});  // every flag on
  const auto bert_normalize = [](std::string_view text, const attnlens::tok::BertNormalizer& b) { return b.normalize(text); };
  CHECK(bert_normalize("\xC3\x85NGSTR\xC3\x96M", n) == "angstrom");
  CHECK(bert_normalize("\xCE\x86\xCE\xB8\xCE\xAE\xCE\xBD\xCE\xB1", n) == "\xCE\xB1\xCE\xB8\xCE\xB7\xCE\xBD\xCE\xB1");  // Άθήνα -> αθηνα
  CHECK(bert_normalize("\xE2\x84\xA6", n) == "\xCF\x89");  // OHM SIGN -> Ω (canonical) -> ω
  CHECK(bert_normalize("\xEF\xAC\x81", n) == "\xEF\xAC\x81");  // "ﬁ" has only a compatibility decomposition: kept
  CHECK(bert_normalize("Stra\xC3\x9F" "e", n) == "stra\xC3\x9F" "e");  // ß lowercases to itself
  CHECK(bert_normalize("a\xE4\xB8\xAD" "b", n) == "a \xE4\xB8\xAD b");
  CHECK(bert_normalize("x\r\ny\x0B", n) == "x  y");  // \r \n -> spaces; \v is a control character: dropped
  CHECK(bert_normalize("bad\xFF" "byte", n) == "badbyte");  // ill-formed UTF-8 counts as U+FFFD: dropped
}
