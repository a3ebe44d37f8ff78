// Hugging Face tokenizer.json: builds a Pipeline (pipeline.h) from the file's own description:
// normalizer, pre_tokenizer, model, post_processor, decoder, added_tokens, truncation, padding.
// Every component is named by its JSON path in errors, e.g.
//   tokenizer.json: pre_tokenizer.pretokenizers[1].type = "Foo" is not a supported pre-tokenizer (...)
// Options a component has but AttnLens does not apply are errors too (BPE dropout, a pair-only
// template, ...), never silently ignored; options that only concern offsets (trim_offsets) or pairs of
// sequences do not change the ids of one sequence and are accepted.
#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json.h"
#include "core/limits.h"
#include "tokenizers/decoders.h"
#include "tokenizers/json_vocab.h"
#include "tokenizers/models.h"
#include "tokenizers/normalizers.h"
#include "tokenizers/pipeline.h"
#include "tokenizers/post_processors.h"
#include "tokenizers/pre_tokenizers.h"
#include "tokenizers/tokenizer.h"

namespace attnlens {

namespace {

using json = nlohmann::json;
using namespace tok;

constexpr int64_t kMaxVocab = limits::kMaxVocab;  // far above any real vocabulary; guards against absurd ids
const char* const kSpaceMarker = "\xE2\x96\x81";  // "▁"

struct Ctx {
  std::string source;        // file name for messages
  bool byte_level = false;   // a ByteLevel pre-tokenizer / decoder: kind "byte-level-bpe"
  bool metaspace = false;    // "▁" spaces (Metaspace, Prepend / Replace with "▁"): "sentencepiece-bpe"
  int64_t max_vocab = kMaxVocab;  // ids must be below it (the model's vocabulary, when there is a model)

  template <class... Parts>
  [[noreturn]] void bad(const Parts&... parts) const {
    fail(source, ": ", parts...);
  }

  // The member key of obj, or nullptr when it is absent or null.
  static const json* get(const json& obj, const char* key) {
    auto it = obj.find(key);
    return it == obj.end() || it->is_null() ? nullptr : &*it;
  }
  const json& object(const json& obj, const char* key, const std::string& path) const {
    const json* v = get(obj, key);
    if (!v) bad(path, ".", key, " is missing");
    if (!v->is_object()) bad(path, ".", key, " must be an object");
    return *v;
  }
  const json& array(const json& obj, const char* key, const std::string& path) const {
    const json* v = get(obj, key);
    if (!v) bad(path, ".", key, " is missing");
    if (!v->is_array()) bad(path, ".", key, " must be an array");
    return *v;
  }
  std::string str(const json& obj, const char* key, const std::string& path, const std::string& fallback) const {
    const json* v = get(obj, key);
    if (!v) return fallback;
    if (!v->is_string()) bad(path, ".", key, " must be a string");
    return v->get<std::string>();
  }
  std::string required_str(const json& obj, const char* key, const std::string& path) const {
    if (!get(obj, key)) bad(path, ".", key, " is missing");
    return str(obj, key, path, "");
  }
  bool flag(const json& obj, const char* key, const std::string& path, bool fallback) const {
    const json* v = get(obj, key);
    if (!v) return fallback;
    if (!v->is_boolean()) bad(path, ".", key, " must be true or false");
    return v->get<bool>();
  }
  int64_t integer(const json& obj, const char* key, const std::string& path, int64_t fallback, int64_t lo, int64_t hi) const {
    const json* v = get(obj, key);
    if (!v) return fallback;
    if (!v->is_number_integer() || v->get<int64_t>() < lo || v->get<int64_t>() > hi)
      bad(path, ".", key, " must be an integer in [", lo, ", ", hi, "]");
    return v->get<int64_t>();
  }
  int id(const json& v, const std::string& path) const {
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= kMaxVocab)
      bad(path, " is ", json_brief(v), ": it must be a token id (a non-negative integer below ", kMaxVocab, ")");
    if (v.get<int64_t>() >= max_vocab) bad(path, " is id ", v.get<int64_t>(), ", but the model has only ", max_vocab, " tokens");
    return int(v.get<int64_t>());
  }
  // "type" of a component object.
  std::string type(const json& c, const std::string& path) const {
    if (!c.is_object()) bad(path, " must be an object or null");
    const json* t = get(c, "type");
    if (!t) bad(path, ".type is missing");
    if (!t->is_string()) bad(path, ".type must be a string");
    return t->get<std::string>();
  }
  [[noreturn]] void unsupported(const std::string& path, const std::string& type, const char* family,
                                const char* supported) const {
    bad(path, ".type = \"", brief_name(type), "\" is not a supported ", family, " (supported: ", supported, ")");
  }
  // Members the component may have; anything else is an option we would silently ignore.
  void known_keys(const json& c, const std::string& path, std::initializer_list<const char*> keys) const {
    for (auto it = c.begin(); it != c.end(); ++it) {
      if (it.key() == "type") continue;
      if (std::none_of(keys.begin(), keys.end(), [&](const char* k) { return it.key() == k; }))
        bad(path, ".", brief_name(it.key()), " is not an option AttnLens knows for this component");
    }
  }
};

std::string index_path(const std::string& path, const char* key, size_t i) {
  return path + "." + key + "[" + std::to_string(i) + "]";
}

// --- patterns -------------------------------------------------------------------------------------

Pattern pattern_of(Ctx& ctx, const json& c, const std::string& path) {
  const json& p = ctx.object(c, "pattern", path);
  const std::string where = path + ".pattern";
  if (p.size() != 1) ctx.bad(where, " must be {\"String\": ...} or {\"Regex\": ...}");
  if (const json* s = Ctx::get(p, "String")) {
    if (!s->is_string()) ctx.bad(where, ".String must be a string");
    return Pattern::literal(s->get<std::string>());
  }
  if (const json* r = Ctx::get(p, "Regex")) {
    if (!r->is_string()) ctx.bad(where, ".Regex must be a string");
    try {
      return Pattern::regex(r->get<std::string>());
    } catch (const Error& e) {
      ctx.bad(where, ".Regex: ", e.what());
    }
  }
  ctx.bad(where, " must be {\"String\": ...} or {\"Regex\": ...}");
}

// --- normalizers ----------------------------------------------------------------------------------

std::string decode_base64(Ctx& ctx, const std::string& s, const std::string& path) {
  std::string out;
  out.reserve(s.size() / 4 * 3);
  uint32_t acc = 0;
  int bits = 0;
  size_t pad = 0;
  for (char ch : s) {
    int v;
    if (ch >= 'A' && ch <= 'Z') v = ch - 'A';
    else if (ch >= 'a' && ch <= 'z') v = ch - 'a' + 26;
    else if (ch >= '0' && ch <= '9') v = ch - '0' + 52;
    else if (ch == '+' || ch == '-') v = 62;
    else if (ch == '/' || ch == '_') v = 63;
    else if (ch == '=') { ++pad; continue; }
    else ctx.bad(path, " is not base64 (character ", int(uint8_t(ch)), ")");
    if (pad) ctx.bad(path, " is not base64 (data after '=')");
    acc = (acc << 6) | uint32_t(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(char((acc >> bits) & 0xFF));
    }
  }
  return out;
}

std::unique_ptr<Normalizer> normalizer(Ctx& ctx, const json& c, const std::string& path) {
  const std::string t = ctx.type(c, path);
  if (t == "NFC" || t == "NFD" || t == "NFKC" || t == "NFKD") {
    ctx.known_keys(c, path, {});
    const unicode::NormalForm f = t == "NFC" ? unicode::NormalForm::NFC : t == "NFD" ? unicode::NormalForm::NFD
                                : t == "NFKC" ? unicode::NormalForm::NFKC : unicode::NormalForm::NFKD;
    return std::make_unique<UnicodeNormalizer>(f);
  }
  if (t == "Lowercase") {
    ctx.known_keys(c, path, {});
    return std::make_unique<LowercaseNormalizer>();
  }
  if (t == "Strip") {
    ctx.known_keys(c, path, {"strip_left", "strip_right"});
    return std::make_unique<StripNormalizer>(ctx.flag(c, "strip_left", path, true), ctx.flag(c, "strip_right", path, true));
  }
  if (t == "StripAccents") {
    ctx.known_keys(c, path, {});
    return std::make_unique<StripAccentsNormalizer>();
  }
  if (t == "Replace") {
    ctx.known_keys(c, path, {"pattern", "content"});
    const std::string content = ctx.required_str(c, "content", path);
    if (content.find(kSpaceMarker) != std::string::npos) ctx.metaspace = true;
    return std::make_unique<ReplaceNormalizer>(pattern_of(ctx, c, path), content);
  }
  if (t == "Prepend") {
    ctx.known_keys(c, path, {"prepend"});
    const std::string p = ctx.required_str(c, "prepend", path);
    if (p == kSpaceMarker) ctx.metaspace = true;
    return std::make_unique<PrependNormalizer>(p);
  }
  if (t == "BertNormalizer") {
    ctx.known_keys(c, path, {"clean_text", "handle_chinese_chars", "strip_accents", "lowercase"});
    BertNormalizerOptions o;
    o.clean_text = ctx.flag(c, "clean_text", path, true);
    o.handle_chinese_chars = ctx.flag(c, "handle_chinese_chars", path, true);
    o.lowercase = ctx.flag(c, "lowercase", path, true);
    o.strip_accents = ctx.flag(c, "strip_accents", path, o.lowercase);  // null: as lowercase
    return std::make_unique<BertNormalizer>(o);
  }
  if (t == "Precompiled") {
    ctx.known_keys(c, path, {"precompiled_charsmap"});
    const std::string b64 = ctx.str(c, "precompiled_charsmap", path, "");
    try {
      return std::make_unique<PrecompiledNormalizer>(decode_base64(ctx, b64, path + ".precompiled_charsmap"));
    } catch (const Error& e) {
      ctx.bad(path, ".precompiled_charsmap: ", e.what());
    }
  }
  if (t == "Sequence") {
    ctx.known_keys(c, path, {"normalizers"});
    const json& list = ctx.array(c, "normalizers", path);
    std::vector<std::unique_ptr<Normalizer>> parts;
    for (size_t i = 0; i < list.size(); ++i) parts.push_back(normalizer(ctx, list[i], index_path(path, "normalizers", i)));
    return std::make_unique<SequenceNormalizer>(std::move(parts));
  }
  ctx.unsupported(path, t, "normalizer",
                  "NFC, NFD, NFKC, NFKD, Lowercase, Strip, StripAccents, Replace, Prepend, BertNormalizer, "
                  "Precompiled, Sequence");
}

// --- pre-tokenizers -------------------------------------------------------------------------------

SplitBehavior behavior_of(Ctx& ctx, const json& c, const std::string& path, SplitBehavior fallback) {
  const std::string b = ctx.str(c, "behavior", path, "");
  if (b.empty()) return fallback;
  if (b == "Removed") return SplitBehavior::Removed;
  if (b == "Isolated") return SplitBehavior::Isolated;
  if (b == "MergedWithPrevious") return SplitBehavior::MergedWithPrevious;
  if (b == "MergedWithNext") return SplitBehavior::MergedWithNext;
  if (b == "Contiguous") return SplitBehavior::Contiguous;
  ctx.bad(path, ".behavior = \"", b, "\" is not one of Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous");
}

MetaspaceOptions metaspace_of(Ctx& ctx, const json& c, const std::string& path) {
  ctx.metaspace = true;
  MetaspaceOptions o;
  o.replacement = ctx.str(c, "replacement", path, kSpaceMarker);
  if (o.replacement.empty() || unicode::decode_utf8(o.replacement, 0).len != o.replacement.size())
    ctx.bad(path, ".replacement must be one character");
  std::string scheme = ctx.str(c, "prepend_scheme", path, "");
  if (scheme.empty()) scheme = ctx.flag(c, "add_prefix_space", path, true) ? "always" : "never";  // older files
  if (scheme == "always") o.prepend_scheme = PrependScheme::Always;
  else if (scheme == "first") o.prepend_scheme = PrependScheme::First;
  else if (scheme == "never") o.prepend_scheme = PrependScheme::Never;
  else ctx.bad(path, ".prepend_scheme = \"", scheme, "\" is not one of always, first, never");
  o.split = ctx.flag(c, "split", path, true);
  return o;
}

std::unique_ptr<PreTokenizer> pre_tokenizer(Ctx& ctx, const json& c, const std::string& path) {
  const std::string t = ctx.type(c, path);
  if (t == "ByteLevel") {
    ctx.known_keys(c, path, {"add_prefix_space", "trim_offsets", "use_regex"});
    ctx.byte_level = true;
    return std::make_unique<ByteLevelPreTokenizer>(ctx.flag(c, "add_prefix_space", path, true),
                                                   ctx.flag(c, "use_regex", path, true));
  }
  if (t == "Split") {
    ctx.known_keys(c, path, {"pattern", "behavior", "invert"});
    if (!Ctx::get(c, "behavior")) ctx.bad(path, ".behavior is missing");
    return std::make_unique<SplitPreTokenizer>(pattern_of(ctx, c, path), behavior_of(ctx, c, path, SplitBehavior::Isolated),
                                               ctx.flag(c, "invert", path, false));
  }
  if (t == "Metaspace") {
    ctx.known_keys(c, path, {"replacement", "prepend_scheme", "split", "add_prefix_space", "str_rep"});
    return std::make_unique<MetaspacePreTokenizer>(metaspace_of(ctx, c, path));
  }
  if (t == "Whitespace") {
    ctx.known_keys(c, path, {});
    return std::make_unique<WhitespacePreTokenizer>();
  }
  if (t == "WhitespaceSplit") {
    ctx.known_keys(c, path, {});
    return std::make_unique<WhitespaceSplitPreTokenizer>();
  }
  if (t == "Punctuation") {
    ctx.known_keys(c, path, {"behavior"});
    return std::make_unique<PunctuationPreTokenizer>(behavior_of(ctx, c, path, SplitBehavior::Isolated));
  }
  if (t == "Digits") {
    ctx.known_keys(c, path, {"individual_digits"});
    return std::make_unique<DigitsPreTokenizer>(ctx.flag(c, "individual_digits", path, false));
  }
  if (t == "BertPreTokenizer") {
    ctx.known_keys(c, path, {});
    return std::make_unique<BertPreTokenizer>();
  }
  if (t == "CharDelimiterSplit") {
    ctx.known_keys(c, path, {"delimiter"});
    const std::string d = ctx.required_str(c, "delimiter", path);
    const unicode::Utf8Step s = unicode::decode_utf8(d, 0);
    if (d.empty() || !s.valid || s.len != d.size()) ctx.bad(path, ".delimiter must be one character");
    return std::make_unique<CharDelimiterSplitPreTokenizer>(s.cp);
  }
  if (t == "Sequence") {
    ctx.known_keys(c, path, {"pretokenizers"});
    const json& list = ctx.array(c, "pretokenizers", path);
    std::vector<std::unique_ptr<PreTokenizer>> parts;
    for (size_t i = 0; i < list.size(); ++i) parts.push_back(pre_tokenizer(ctx, list[i], index_path(path, "pretokenizers", i)));
    return std::make_unique<SequencePreTokenizer>(std::move(parts));
  }
  ctx.unsupported(path, t, "pre-tokenizer",
                  "ByteLevel, Split, Metaspace, Whitespace, WhitespaceSplit, Punctuation, Digits, BertPreTokenizer, "
                  "CharDelimiterSplit, Sequence");
}

// --- models ---------------------------------------------------------------------------------------

std::unique_ptr<Model> model(Ctx& ctx, const json& m, VocabLists& lists, bool& byte_fallback) {
  const std::string path = "model";
  if (!m.is_object()) ctx.bad("model must be an object");
  const json* tj = Ctx::get(m, "type");
  std::string t;
  if (tj) {
    if (!tj->is_string()) ctx.bad("model.type must be a string");
    t = tj->get<std::string>();
  } else if (lists.has_merges) {
    t = "BPE";  // older files leave the type out
  } else {
    ctx.bad("model.type is missing");
  }
  const auto need_vocab = [&](bool object) {
    if (!lists.has_vocab) ctx.bad("model.vocab is missing");
    if (object && !lists.vocab_is_object) ctx.bad("model.vocab must be an object {\"piece\": id}");
    if (!object && lists.vocab_is_object) ctx.bad("model.vocab must be an array of [\"piece\", score]");
  };
  if (t == "BPE") {
    need_vocab(true);
    ctx.known_keys(m, path, {"dropout", "unk_token", "continuing_subword_prefix", "end_of_word_suffix", "fuse_unk",
                             "byte_fallback", "ignore_merges", "vocab", "merges"});
    if (const json* d = Ctx::get(m, "dropout"); d && !(d->is_number() && d->get<double>() == 0.0))
      ctx.bad("model.dropout = ", json_brief(*d), ": BPE dropout (random segmentation for training) is not supported");
    BpeConfig c;
    c.pieces = std::move(lists.pieces);
    c.merges = std::move(lists.merges);
    c.unk_token = ctx.str(m, "unk_token", path, "");
    c.continuing_subword_prefix = ctx.str(m, "continuing_subword_prefix", path, "");
    c.end_of_word_suffix = ctx.str(m, "end_of_word_suffix", path, "");
    c.byte_fallback = byte_fallback = ctx.flag(m, "byte_fallback", path, false);
    c.fuse_unk = ctx.flag(m, "fuse_unk", path, false);
    c.ignore_merges = ctx.flag(m, "ignore_merges", path, false);
    return std::make_unique<BpeModel>(std::move(c));
  }
  if (lists.has_merges && (t == "WordPiece" || t == "Unigram")) ctx.bad("model.merges: a ", t, " model has no merges");
  if (t == "WordPiece") {
    need_vocab(true);
    ctx.known_keys(m, path, {"unk_token", "continuing_subword_prefix", "max_input_chars_per_word", "vocab"});
    WordPieceConfig c;
    c.pieces = std::move(lists.pieces);
    c.unk_token = ctx.str(m, "unk_token", path, "[UNK]");
    c.continuing_subword_prefix = ctx.str(m, "continuing_subword_prefix", path, "##");
    c.max_input_chars_per_word = int(ctx.integer(m, "max_input_chars_per_word", path, 100, 1, 1000000));
    return std::make_unique<WordPieceModel>(std::move(c));
  }
  if (t == "Unigram") {
    need_vocab(false);
    ctx.known_keys(m, path, {"unk_id", "vocab", "byte_fallback"});
    UnigramConfig c;
    c.vocab = std::move(lists.scored);
    c.unk_id = int(ctx.integer(m, "unk_id", path, -1, 0, int64_t(c.vocab.size()) - 1));
    c.byte_fallback = byte_fallback = ctx.flag(m, "byte_fallback", path, false);
    return std::make_unique<UnigramModel>(std::move(c));
  }
  ctx.bad("model.type = \"", t, "\" is not a supported model (supported: BPE, WordPiece, Unigram)");
}

// --- added tokens ---------------------------------------------------------------------------------

std::vector<AddedToken> added_tokens(Ctx& ctx, const json& root) {
  std::vector<AddedToken> out;
  const json* list = Ctx::get(root, "added_tokens");
  if (!list) return out;
  if (!list->is_array()) ctx.bad("added_tokens must be an array");
  if (list->size() > size_t(kMaxVocab)) ctx.bad("added_tokens has ", list->size(), " entries (at most ", kMaxVocab, ")");
  for (size_t i = 0; i < list->size(); ++i) {
    const json& t = (*list)[i];
    const std::string path = "added_tokens[" + std::to_string(i) + "]";
    if (!t.is_object() || !t.contains("id") || !t.contains("content")) ctx.bad(path, " needs an id and a content");
    AddedToken a;
    a.id = ctx.id(t["id"], path + ".id");
    a.content = ctx.str(t, "content", path, "");
    if (a.content.empty()) ctx.bad(path, ".content is empty");
    if (a.content.size() > size_t(limits::kMaxTokenBytes))
      ctx.bad(path, ".content has ", a.content.size(), " bytes (at most ", limits::kMaxTokenBytes, ")");
    if (!unicode::decode_utf8(a.content, 0).valid && unicode::sanitize_utf8(a.content) != a.content)
      ctx.bad(path, ".content is not valid UTF-8");
    a.special = ctx.flag(t, "special", path, false);
    a.lstrip = ctx.flag(t, "lstrip", path, false);
    a.rstrip = ctx.flag(t, "rstrip", path, false);
    a.single_word = ctx.flag(t, "single_word", path, false);
    a.normalized = ctx.flag(t, "normalized", path, !a.special);
    out.push_back(std::move(a));
  }
  return out;
}

// --- post-processors ------------------------------------------------------------------------------

int token_pair_id(Ctx& ctx, const json& pp, const char* key, const std::string& path) {
  const json* v = Ctx::get(pp, key);
  if (!v || !v->is_array() || v->size() != 2 || !(*v)[0].is_string()) ctx.bad(path, ".", key, " must be [\"token\", id]");
  return ctx.id((*v)[1], path + "." + key + "[1]");
}

std::unique_ptr<PostProcessor> template_processor(Ctx& ctx, const json& pp, const std::string& path) {
  const json& single = ctx.array(pp, "single", path);
  const json* specials = Ctx::get(pp, "special_tokens");
  std::vector<int> prefix, suffix;
  bool after_sequence = false;
  for (size_t i = 0; i < single.size(); ++i) {
    const json& item = single[i];
    const std::string where = index_path(path, "single", i);
    if (item.is_object() && item.contains("Sequence")) {
      const json& s = item["Sequence"];
      if (!s.is_object() || ctx.str(s, "id", where + ".Sequence", "A") != "A")
        ctx.bad(where, ": the single-sequence template can only use sequence A");
      if (after_sequence) ctx.bad(where, ": sequence A appears twice");
      after_sequence = true;
      continue;
    }
    if (!item.is_object() || !item.contains("SpecialToken") || !item["SpecialToken"].is_object())
      ctx.bad(where, " is neither a Sequence nor a SpecialToken");
    const std::string name = ctx.required_str(item["SpecialToken"], "id", where + ".SpecialToken");
    if (!specials || !specials->contains(name) || !(*specials)[name].is_object() || !(*specials)[name].contains("ids") ||
        !(*specials)[name]["ids"].is_array())
      ctx.bad(path, ".special_tokens has no ids for \"", name, "\"");
    for (const json& id : (*specials)[name]["ids"])
      (after_sequence ? suffix : prefix).push_back(ctx.id(id, path + ".special_tokens[\"" + name + "\"].ids"));
  }
  if (!after_sequence) ctx.bad(path, ".single has no Sequence");
  return std::make_unique<WrapProcessor>(std::move(prefix), std::move(suffix));
}

std::unique_ptr<PostProcessor> post_processor(Ctx& ctx, const json& pp, const std::string& path) {
  const std::string t = ctx.type(pp, path);
  if (t == "ByteLevel") {  // offsets only
    ctx.known_keys(pp, path, {"add_prefix_space", "trim_offsets", "use_regex"});
    return std::make_unique<WrapProcessor>(std::vector<int>{}, std::vector<int>{});
  }
  if (t == "TemplateProcessing") {
    ctx.known_keys(pp, path, {"single", "pair", "special_tokens"});
    return template_processor(ctx, pp, path);
  }
  if (t == "BertProcessing" || t == "RobertaProcessing") {  // [CLS] A [SEP] / <s> A </s>
    ctx.known_keys(pp, path, {"sep", "cls", "trim_offsets", "add_prefix_space"});
    return std::make_unique<WrapProcessor>(std::vector<int>{token_pair_id(ctx, pp, "cls", path)},
                                           std::vector<int>{token_pair_id(ctx, pp, "sep", path)});
  }
  if (t == "Sequence") {
    ctx.known_keys(pp, path, {"processors"});
    const json& list = ctx.array(pp, "processors", path);
    std::vector<std::unique_ptr<PostProcessor>> parts;
    for (size_t i = 0; i < list.size(); ++i) parts.push_back(post_processor(ctx, list[i], index_path(path, "processors", i)));
    return std::make_unique<SequenceProcessor>(std::move(parts));
  }
  ctx.unsupported(path, t, "post-processor", "TemplateProcessing, BertProcessing, RobertaProcessing, ByteLevel, Sequence");
}

// --- decoders -------------------------------------------------------------------------------------

std::unique_ptr<Decoder> decoder(Ctx& ctx, const json& c, const std::string& path) {
  const std::string t = ctx.type(c, path);
  if (t == "ByteLevel") {
    ctx.known_keys(c, path, {"add_prefix_space", "trim_offsets", "use_regex"});
    ctx.byte_level = true;
    return std::make_unique<ByteLevelDecoder>();
  }
  if (t == "Metaspace") {
    ctx.known_keys(c, path, {"replacement", "prepend_scheme", "split", "add_prefix_space", "str_rep"});
    return std::make_unique<MetaspaceDecoder>(metaspace_of(ctx, c, path));
  }
  if (t == "ByteFallback") {
    ctx.known_keys(c, path, {});
    return std::make_unique<ByteFallbackDecoder>();
  }
  if (t == "Fuse") {
    ctx.known_keys(c, path, {});
    return std::make_unique<FuseDecoder>();
  }
  if (t == "Strip") {
    ctx.known_keys(c, path, {"content", "start", "stop"});
    const std::string content = ctx.required_str(c, "content", path);
    if (content.empty() || unicode::decode_utf8(content, 0).len != content.size()) ctx.bad(path, ".content must be one character");
    return std::make_unique<StripDecoder>(content, size_t(ctx.integer(c, "start", path, 0, 0, 1 << 20)),
                                          size_t(ctx.integer(c, "stop", path, 0, 0, 1 << 20)));
  }
  if (t == "Replace") {
    ctx.known_keys(c, path, {"pattern", "content"});
    return std::make_unique<ReplaceDecoder>(pattern_of(ctx, c, path), ctx.required_str(c, "content", path));
  }
  if (t == "WordPiece") {
    ctx.known_keys(c, path, {"prefix", "cleanup"});
    return std::make_unique<WordPieceDecoder>(ctx.str(c, "prefix", path, "##"), ctx.flag(c, "cleanup", path, true));
  }
  if (t == "BPEDecoder") {
    ctx.known_keys(c, path, {"suffix"});
    return std::make_unique<BpeDecoder>(ctx.str(c, "suffix", path, "</w>"));
  }
  if (t == "CTC") {
    ctx.known_keys(c, path, {"pad_token", "word_delimiter_token", "cleanup"});
    return std::make_unique<CtcDecoder>(ctx.str(c, "pad_token", path, "<pad>"), ctx.str(c, "word_delimiter_token", path, "|"),
                                        ctx.flag(c, "cleanup", path, true));
  }
  if (t == "Sequence") {
    ctx.known_keys(c, path, {"decoders"});
    const json& list = ctx.array(c, "decoders", path);
    std::vector<std::unique_ptr<Decoder>> parts;
    for (size_t i = 0; i < list.size(); ++i) parts.push_back(decoder(ctx, list[i], index_path(path, "decoders", i)));
    return std::make_unique<SequenceDecoder>(std::move(parts));
  }
  ctx.unsupported(path, t, "decoder",
                  "ByteLevel, Metaspace, ByteFallback, Fuse, Strip, Replace, WordPiece, BPEDecoder, CTC, Sequence");
}

// --- truncation and padding -----------------------------------------------------------------------

Limits limits(Ctx& ctx, const json& root) {
  Limits l;
  if (const json* t = Ctx::get(root, "truncation")) {
    const std::string path = "truncation";
    if (!t->is_object()) ctx.bad("truncation must be an object or null");
    ctx.known_keys(*t, path, {"max_length", "strategy", "stride", "direction"});
    l.max_length = int(ctx.integer(*t, "max_length", path, 512, 0, kMaxVocab));
    const std::string dir = ctx.str(*t, "direction", path, "Right");
    if (dir != "Right" && dir != "Left") ctx.bad("truncation.direction = \"", dir, "\" is not Right or Left");
    l.truncate_left = dir == "Left";
    const std::string strategy = ctx.str(*t, "strategy", path, "LongestFirst");
    if (strategy != "LongestFirst" && strategy != "OnlyFirst" && strategy != "OnlySecond")
      ctx.bad("truncation.strategy = \"", strategy, "\" is not LongestFirst, OnlyFirst or OnlySecond");
  }
  if (const json* p = Ctx::get(root, "padding")) {
    const std::string path = "padding";
    if (!p->is_object()) ctx.bad("padding must be an object or null");
    ctx.known_keys(*p, path, {"strategy", "direction", "pad_to_multiple_of", "pad_id", "pad_type_id", "pad_token"});
    l.pad = true;
    l.pad_id = ctx.id(p->contains("pad_id") ? (*p)["pad_id"] : json(0), "padding.pad_id");
    l.pad_to_multiple_of = int(ctx.integer(*p, "pad_to_multiple_of", path, 0, 0, 1 << 20));
    const std::string dir = ctx.str(*p, "direction", path, "Right");
    if (dir != "Right" && dir != "Left") ctx.bad("padding.direction = \"", dir, "\" is not Right or Left");
    l.pad_left = dir == "Left";
    if (const json* s = Ctx::get(*p, "strategy")) {
      if (s->is_object() && s->contains("Fixed")) l.pad_to = int(ctx.integer(*s, "Fixed", "padding.strategy", 0, 0, kMaxVocab));
      else if (!(s->is_string() && s->get<std::string>() == "BatchLongest"))
        ctx.bad("padding.strategy must be \"BatchLongest\" or {\"Fixed\": n}");
    }
  }
  return l;
}

// --- the whole file -------------------------------------------------------------------------------

// BOS/EOS/PAD: tokenizer.json does not name them, so look for the usual spellings.
SpecialIds special_ids(const Pipeline& p) {
  const auto find = [&](std::initializer_list<const char*> names) {
    for (const char* name : names) {
      for (const AddedToken& a : p.added)
        if (a.content == name) return a.id;
      if (const int id = p.model->token_to_id(name); id >= 0) return id;
    }
    return -1;
  };
  SpecialIds ids;
  ids.bos = find({"<s>", "[CLS]", "<|begin_of_text|>", "<bos>",
                  "<\xEF\xBD\x9C" "begin\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>", "<|endoftext|>"});
  ids.eos = find({"</s>", "[SEP]", "<|end_of_text|>", "<eos>",
                  "<\xEF\xBD\x9C" "end\xE2\x96\x81of\xE2\x96\x81sentence\xEF\xBD\x9C>", "<|endoftext|>"});
  ids.pad = find({"[PAD]", "<pad>", "<|padding|>"});
  ids.unk = p.model->unk_id();
  return ids;
}

std::string kind_of(const Ctx& ctx, const Model& m, bool byte_fallback) {
  const std::string name = m.name();
  if (name == "WordPiece") return "wordpiece";
  if (name == "Unigram") return "unigram";
  if (ctx.byte_level) return "byte-level-bpe";
  if (ctx.metaspace || byte_fallback) return "sentencepiece-bpe";
  return "bpe";
}

std::unique_ptr<Tokenizer> build(Ctx& ctx, const json& root, VocabLists& lists) {
  Pipeline p;
  bool byte_fallback = false;
  p.model = model(ctx, root.at("model"), lists, byte_fallback);
  if (const json* n = Ctx::get(root, "normalizer")) p.normalizer = normalizer(ctx, *n, "normalizer");
  if (const json* n = Ctx::get(root, "pre_tokenizer")) p.pre_tokenizer = pre_tokenizer(ctx, *n, "pre_tokenizer");
  if (const json* n = Ctx::get(root, "post_processor")) p.post_processor = post_processor(ctx, *n, "post_processor");
  if (const json* n = Ctx::get(root, "decoder")) p.decoder = decoder(ctx, *n, "decoder");
  p.added = added_tokens(ctx, root);
  p.limits = limits(ctx, root);
  p.kind = kind_of(ctx, *p.model, byte_fallback);
  p.ids = special_ids(p);
  return make_pipeline_tokenizer(std::move(p));
}

}  // namespace

std::unique_ptr<Tokenizer> load_hf_tokenizer(std::string_view tokenizer_json, std::string_view source, int max_vocab) {
  Ctx ctx;
  ctx.source = source.empty() ? std::string("tokenizer.json") : std::string(source);
  ctx.max_vocab = std::min<int64_t>(max_vocab, kMaxVocab);
  VocabLists lists;
  json root;
  try {
    // The model's vocab and merges (most of a 10 MB file) are read by a lean dedicated parser
    // (json_vocab.h); nlohmann parses the rest.
    root = parse_tokenizer_json(tokenizer_json, lists, ctx.max_vocab);
  } catch (const Error& e) {
    ctx.bad(e.what());
  } catch (const json::exception& e) {
    ctx.bad("not valid JSON: ", e.what());
  }
  try {
    if (!root.is_object()) ctx.bad("the top level must be an object");
    if (!Ctx::get(root, "model")) ctx.bad("model is missing");
    return build(ctx, root, lists);
  } catch (const json::exception& e) {  // a shape the checks above did not anticipate
    ctx.bad(e.what());
  } catch (const Error& e) {  // from a component's own checks: say which file it was
    const std::string what = e.what();
    if (what.rfind(ctx.source + ": ", 0) == 0) throw;
    ctx.bad(what);
  }
}

}  // namespace attnlens
