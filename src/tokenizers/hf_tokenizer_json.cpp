// Hugging Face tokenizer.json: reads the pipeline description (normalizer, pre_tokenizer, model,
// post_processor, decoder, added_tokens) and builds the matching tokenizer kind. Only the
// configurations AttnLens' model families use are accepted; anything else throws naming it.
//   model BPE  + pre_tokenizer ByteLevel                        -> byte-level BPE (GPT-2, RoBERTa)
//   model BPE  + normalizer [Prepend "▁", Replace " " -> "▁"]
//              or pre_tokenizer Metaspace (split false)        -> SentencePiece BPE merged by rank (Llama)
//   model WordPiece + BertNormalizer + BertPreTokenizer        -> WordPiece (BERT)
#include <algorithm>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/json.h"
#include "core/limits.h"
#include "tokenizers/byte_level_bpe.h"
#include "tokenizers/sentencepiece_bpe.h"
#include "tokenizers/tokenizer.h"
#include "tokenizers/wordpiece.h"

namespace attnlens {

namespace {

using json = nlohmann::json;
using tok::AddedToken;
using tok::VocabSpec;

constexpr int kMaxVocab = limits::kMaxVocab;  // far above any real vocabulary; guards against absurd ids
const char* const kSpaceMarker = "\xE2\x96\x81";  // "▁"

template <class... Parts>
[[noreturn]] void bad(const Parts&... parts) {
  fail("tokenizer.json: ", parts...);
}

// The member key of obj, or nullptr when it is absent or null.
const json* get(const json& obj, const char* key) {
  auto it = obj.find(key);
  return it == obj.end() || it->is_null() ? nullptr : &*it;
}

const json& require_object(const json& obj, const char* key, const char* where) {
  const json* v = get(obj, key);
  if (!v) bad(where, ".", key, " is missing");
  if (!v->is_object()) bad(where, ".", key, " must be an object");
  return *v;
}

std::string string_of(const json& obj, const char* key, const char* where, const std::string& fallback) {
  const json* v = get(obj, key);
  if (!v) return fallback;
  if (!v->is_string()) bad(where, ".", key, " must be a string");
  return v->get<std::string>();
}

bool bool_of(const json& obj, const char* key, const char* where, bool fallback) {
  const json* v = get(obj, key);
  if (!v) return fallback;
  if (!v->is_boolean()) bad(where, ".", key, " must be true or false");
  return v->get<bool>();
}

int id_of(const json& v, const std::string& what) {
  if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() >= kMaxVocab)
    bad(what, " is ", json_brief(v), ": it must be a token id (a non-negative integer below ", kMaxVocab, ")");
  return int(v.get<int64_t>());
}

// "type" of a pipeline component, or "" for null / absent components.
std::string type_of(const json& root, const char* component) {
  const json* c = get(root, component);
  if (!c) return "";
  if (!c->is_object()) bad(component, " must be an object or null");
  const std::string t = string_of(*c, "type", component, "");
  if (t.empty()) bad(component, ".type is missing");
  return t;
}

// --- vocabulary ---------------------------------------------------------------------------------

std::vector<AddedToken> read_added_tokens(const json& root) {
  std::vector<AddedToken> out;
  const json* list = get(root, "added_tokens");
  if (!list) return out;
  if (!list->is_array()) bad("added_tokens must be an array");
  for (size_t i = 0; i < list->size(); ++i) {
    const json& t = (*list)[i];
    const std::string where = "added_tokens[" + std::to_string(i) + "]";
    if (!t.is_object() || !t.contains("id") || !t.contains("content")) bad(where, " needs an id and a content");
    AddedToken a;
    a.id = id_of(t["id"], where + ".id");
    a.content = string_of(t, "content", where.c_str(), "");
    if (a.content.empty()) bad(where, ".content is empty");
    a.special = bool_of(t, "special", where.c_str(), false);
    a.lstrip = bool_of(t, "lstrip", where.c_str(), false);
    a.rstrip = bool_of(t, "rstrip", where.c_str(), false);
    a.single_word = bool_of(t, "single_word", where.c_str(), false);
    out.push_back(std::move(a));
  }
  return out;
}

// model.vocab ({piece: id}) plus the added tokens, as pieces indexed by id.
std::vector<std::string> read_vocab(const json& model, const std::vector<AddedToken>& added) {
  const json& vocab = require_object(model, "vocab", "model");
  int n = 0;
  for (auto it = vocab.begin(); it != vocab.end(); ++it) n = std::max(n, id_of(it.value(), "model.vocab[\"" + it.key() + "\"]") + 1);
  for (const AddedToken& a : added) n = std::max(n, a.id + 1);
  if (n == 0) bad("model.vocab is empty");
  std::vector<std::string> pieces(static_cast<size_t>(n));
  std::vector<uint8_t> seen(static_cast<size_t>(n), 0);
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    const int id = it.value().get<int>();
    if (seen[size_t(id)]) bad("model.vocab gives id ", id, " to both \"", pieces[size_t(id)], "\" and \"", it.key(), "\"");
    seen[size_t(id)] = 1;
    pieces[size_t(id)] = it.key();
  }
  for (const AddedToken& a : added) {
    if (seen[size_t(a.id)] && pieces[size_t(a.id)] != a.content)
      bad("added token \"", a.content, "\" has id ", a.id, ", which model.vocab gives to \"", pieces[size_t(a.id)], "\"");
    seen[size_t(a.id)] = 1;
    pieces[size_t(a.id)] = a.content;
  }
  return pieces;
}

// model.merges: "a b" strings (split on the single space) or [a, b] pairs.
std::vector<std::pair<std::string, std::string>> read_merges(const json& model) {
  std::vector<std::pair<std::string, std::string>> out;
  const json* merges = get(model, "merges");
  if (!merges) return out;
  if (!merges->is_array()) bad("model.merges must be an array");
  out.reserve(merges->size());
  for (size_t i = 0; i < merges->size(); ++i) {
    const json& m = (*merges)[i];
    if (m.is_string()) {
      const std::string s = m.get<std::string>();
      const size_t sp = s.find(' ');
      if (sp == std::string::npos || sp == 0 || sp + 1 == s.size() || s.find(' ', sp + 1) != std::string::npos)
        bad("model.merges[", i, "] \"", s, "\" is not two tokens separated by one space");
      out.emplace_back(s.substr(0, sp), s.substr(sp + 1));
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      out.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
    } else {
      bad("model.merges[", i, "] must be \"a b\" or [\"a\", \"b\"]");
    }
  }
  return out;
}

// BOS/EOS/PAD/UNK: tokenizer.json does not name them, so look for the usual spellings.
tok::SpecialIds special_ids(const std::vector<std::string>& pieces, const json& model, const std::string& unk_default) {
  const auto find = [&](std::initializer_list<const char*> names) {
    for (const char* name : names)
      for (size_t id = 0; id < pieces.size(); ++id)
        if (pieces[id] == name) return int(id);
    return -1;
  };
  tok::SpecialIds ids;
  ids.bos = find({"<s>", "[CLS]", "<|endoftext|>", "<|begin_of_text|>", "<bos>"});
  ids.eos = find({"</s>", "[SEP]", "<|endoftext|>", "<|end_of_text|>", "<eos>"});
  ids.pad = find({"[PAD]", "<pad>", "<|padding|>"});
  const std::string unk = string_of(model, "unk_token", "model", unk_default);
  for (size_t id = 0; !unk.empty() && id < pieces.size(); ++id)
    if (pieces[id] == unk) ids.unk = int(id);
  return ids;
}

// --- post_processor: the special ids around a single sequence -----------------------------------

int token_pair_id(const json& pp, const char* key, const std::string& where) {
  const json* v = get(pp, key);
  if (!v || !v->is_array() || v->size() != 2 || !(*v)[0].is_string()) bad(where, ".", key, " must be [\"token\", id]");
  return id_of((*v)[1], where + "." + key + "[1]");
}

void read_template(const json& pp, const std::string& where, VocabSpec& spec) {
  const json* single = get(pp, "single");
  if (!single || !single->is_array()) bad(where, ".single must be an array");
  const json* specials = get(pp, "special_tokens");
  bool after_sequence = false;
  for (const json& item : *single) {
    if (item.is_object() && item.contains("Sequence")) {
      after_sequence = true;
      continue;
    }
    if (!item.is_object() || !item.contains("SpecialToken") || !item["SpecialToken"].is_object())
      bad(where, ".single has an item that is neither a Sequence nor a SpecialToken");
    const std::string name = string_of(item["SpecialToken"], "id", (where + ".single").c_str(), "");
    if (!specials || !specials->contains(name) || !(*specials)[name].is_object() || !(*specials)[name].contains("ids") ||
        !(*specials)[name]["ids"].is_array())
      bad(where, ".special_tokens has no ids for \"", name, "\"");
    for (const json& id : (*specials)[name]["ids"])
      (after_sequence ? spec.suffix : spec.prefix).push_back(id_of(id, where + ".special_tokens[\"" + name + "\"].ids"));
  }
}

void read_post_processor(const json& pp, const std::string& where, VocabSpec& spec) {
  const std::string type = string_of(pp, "type", where.c_str(), "");
  if (type == "ByteLevel") return;  // offsets only
  if (type == "TemplateProcessing") return read_template(pp, where, spec);
  if (type == "BertProcessing" || type == "RobertaProcessing") {  // [CLS] A [SEP] / <s> A </s>
    spec.prefix.push_back(token_pair_id(pp, "cls", where));
    spec.suffix.push_back(token_pair_id(pp, "sep", where));
    return;
  }
  if (type == "Sequence") {
    const json* list = get(pp, "processors");
    if (!list || !list->is_array()) bad(where, ".processors must be an array");
    for (size_t i = 0; i < list->size(); ++i) {
      if (!(*list)[i].is_object()) bad(where, ".processors[", i, "] must be an object");
      read_post_processor((*list)[i], where + ".processors[" + std::to_string(i) + "]", spec);
    }
    return;
  }
  bad("unsupported post_processor type \"", type, "\" (supported: TemplateProcessing, BertProcessing, "
      "RobertaProcessing, ByteLevel, Sequence)");
}

VocabSpec read_common(const json& root, const json& model, const std::string& unk_default) {
  VocabSpec spec;
  spec.added = read_added_tokens(root);
  spec.pieces = read_vocab(model, spec.added);
  spec.ids = special_ids(spec.pieces, model, unk_default);
  for (int id : {spec.ids.bos, spec.ids.eos, spec.ids.pad})
    if (id >= 0) spec.special.push_back(id);
  if (!type_of(root, "post_processor").empty()) read_post_processor(root["post_processor"], "post_processor", spec);
  return spec;
}

// --- the three families -------------------------------------------------------------------------

void reject_bpe_options(const json& model) {
  if (const json* d = get(model, "dropout"); d && !(d->is_number() && d->get<double>() == 0.0))
    bad("unsupported BPE option: dropout ", json_brief(*d));
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (!string_of(model, key, "model", "").empty()) bad("unsupported BPE option: ", key);
  if (bool_of(model, "ignore_merges", "model", false)) bad("unsupported BPE option: ignore_merges");
}

std::unique_ptr<Tokenizer> byte_level_bpe(const json& root, const json& model) {
  if (!type_of(root, "normalizer").empty())
    bad("unsupported normalizer \"", type_of(root, "normalizer"), "\" for a byte-level BPE");
  const json& pre = root["pre_tokenizer"];
  tok::ByteLevelBpeConfig cfg;
  cfg.vocab = read_common(root, model, "");
  cfg.merges = read_merges(model);
  cfg.add_prefix_space = bool_of(pre, "add_prefix_space", "pre_tokenizer", false);
  cfg.use_regex = bool_of(pre, "use_regex", "pre_tokenizer", true);
  return tok::make_byte_level_bpe(std::move(cfg));
}

// The space handling of a SentencePiece-converted BPE: HF's Llama normalizer
// Sequence[Prepend("▁"), Replace(" ", "▁")], or a Metaspace pre-tokenizer that does not split.
tok::SpacePrefix sentencepiece_space_prefix(const json& root) {
  const std::string norm = type_of(root, "normalizer"), pre = type_of(root, "pre_tokenizer");
  if (norm == "Sequence" && pre.empty()) {
    bool replace = false, prepend = false;
    const json* list = get(root["normalizer"], "normalizers");
    if (!list || !list->is_array()) bad("normalizer.normalizers must be an array");
    for (const json& n : *list) {
      const std::string t = n.is_object() ? string_of(n, "type", "normalizer.normalizers[]", "") : "";
      if (t == "Prepend" && string_of(n, "prepend", "Prepend", "") == kSpaceMarker) {
        prepend = true;
      } else if (t == "Replace" && n.contains("pattern") && n["pattern"].is_object() &&
                 string_of(n["pattern"], "String", "Replace.pattern", "") == " " &&
                 string_of(n, "content", "Replace", "") == kSpaceMarker) {
        replace = true;
      } else {
        bad("unsupported normalizer in a SentencePiece-style BPE: ", n.is_object() ? string_of(n, "type", "normalizer.normalizers[]", "?") : json_brief(n), " (supported: Prepend \"▁\", "
            "Replace \" \" -> \"▁\")");
      }
    }
    if (!replace) bad("unsupported normalizer for a BPE: spaces are not replaced by \"▁\"");
    return prepend ? tok::SpacePrefix::Always : tok::SpacePrefix::None;
  }
  if (pre == "Metaspace" && norm.empty()) {
    const json& m = root["pre_tokenizer"];
    if (string_of(m, "replacement", "pre_tokenizer", kSpaceMarker) != kSpaceMarker)
      bad("unsupported Metaspace replacement (only \"▁\")");
    if (bool_of(m, "split", "pre_tokenizer", true)) bad("unsupported pre_tokenizer: Metaspace with split true");
    std::string scheme = string_of(m, "prepend_scheme", "pre_tokenizer", "");
    if (scheme.empty()) scheme = bool_of(m, "add_prefix_space", "pre_tokenizer", true) ? "always" : "never";
    if (scheme == "always") return tok::SpacePrefix::Always;
    if (scheme == "first") return tok::SpacePrefix::First;
    if (scheme == "never") return tok::SpacePrefix::None;
    bad("unsupported Metaspace prepend_scheme \"", scheme, "\"");
  }
  bad("unsupported BPE configuration: normalizer \"", norm, "\" with pre_tokenizer \"", pre,
      "\" (supported: pre_tokenizer ByteLevel; or the Llama normalizer Sequence[Prepend, Replace] / Metaspace)");
}

std::unique_ptr<Tokenizer> sentencepiece_bpe(const json& root, const json& model) {
  tok::SentencePieceConfig cfg;
  cfg.space_prefix = sentencepiece_space_prefix(root);
  cfg.vocab = read_common(root, model, "");
  cfg.merges = read_merges(model);
  if (cfg.merges.empty()) bad("model.merges is empty");
  cfg.byte_fallback = bool_of(model, "byte_fallback", "model", false);
  cfg.fuse_unk = bool_of(model, "fuse_unk", "model", false);
  return tok::make_sentencepiece_bpe(std::move(cfg));
}

std::unique_ptr<Tokenizer> wordpiece(const json& root, const json& model) {
  tok::WordPieceConfig cfg;
  const std::string norm = type_of(root, "normalizer");
  if (norm == "BertNormalizer") {
    const json& n = root["normalizer"];
    cfg.normalizer.clean_text = bool_of(n, "clean_text", "normalizer", true);
    cfg.normalizer.handle_chinese_chars = bool_of(n, "handle_chinese_chars", "normalizer", true);
    cfg.normalizer.lowercase = bool_of(n, "lowercase", "normalizer", true);
    cfg.normalizer.strip_accents = bool_of(n, "strip_accents", "normalizer", cfg.normalizer.lowercase);  // null: as lowercase
  } else if (!norm.empty()) {
    bad("unsupported normalizer \"", norm, "\" for WordPiece (supported: BertNormalizer)");
  }
  const std::string pre = type_of(root, "pre_tokenizer");
  if (pre == "BertPreTokenizer")
    cfg.splitter = tok::WordSplitter::Bert;
  else if (pre == "WhitespaceSplit")
    cfg.splitter = tok::WordSplitter::WhitespaceSplit;
  else
    bad("unsupported pre_tokenizer \"", pre, "\" for WordPiece (supported: BertPreTokenizer, WhitespaceSplit)");
  cfg.vocab = read_common(root, model, "[UNK]");
  cfg.continuing_prefix = string_of(model, "continuing_subword_prefix", "model", "##");
  if (const json* m = get(model, "max_input_chars_per_word")) {
    if (!m->is_number_integer() || m->get<int64_t>() <= 0 || m->get<int64_t>() > 1000000)
      bad("model.max_input_chars_per_word must be a positive integer");
    cfg.max_input_chars_per_word = int(m->get<int64_t>());
  }
  if (type_of(root, "decoder") == "WordPiece") cfg.cleanup = bool_of(root["decoder"], "cleanup", "decoder", true);
  if (cfg.vocab.ids.unk < 0)
    bad("model.unk_token \"", string_of(model, "unk_token", "model", "[UNK]"), "\" is not in the vocabulary");
  return tok::make_wordpiece(std::move(cfg));
}

std::unique_ptr<Tokenizer> build(const json& root) {
  if (!root.is_object()) bad("the top level must be an object");
  const json& model = require_object(root, "model", "tokenizer");
  const std::string type = string_of(model, "type", "model", "");
  if (type == "WordPiece") return wordpiece(root, model);
  if (type == "BPE") {
    reject_bpe_options(model);
    if (type_of(root, "pre_tokenizer") == "ByteLevel") return byte_level_bpe(root, model);
    return sentencepiece_bpe(root, model);
  }
  if (type.empty()) bad("model.type is missing");
  bad("unsupported model type \"", type, "\" (supported: BPE, WordPiece)");
}

// The sizes a tokenizer.json asks for, checked before anything is built from it: ids below
// max_vocab (the model's vocabulary: a larger id could never be fed to it), token texts and merge
// counts within the engine's limits. One pass over the parsed values, no allocation.
void check_sizes(const json& root, int max_vocab) {
  if (!root.is_object()) return;  // build() says what is wrong
  auto check_id = [&](const json& id, const auto& where) {
    if (id.is_number_integer() && id.get<int64_t>() >= max_vocab && id.get<int64_t>() < kMaxVocab)
      bad(where(), " is id ", id.get<int64_t>(), ", but the model has only ", max_vocab, " tokens");
  };
  const json* model = get(root, "model");
  if (model && model->is_object()) {
    if (const json* vocab = get(*model, "vocab"); vocab && vocab->is_object()) {
      if (vocab->size() > size_t(kMaxVocab)) bad("model.vocab has ", vocab->size(), " entries (at most ", kMaxVocab, ")");
      for (auto it = vocab->begin(); it != vocab->end(); ++it) {
        if (it.key().size() > size_t(limits::kMaxTokenBytes))
          bad("model.vocab has a ", it.key().size(), "-byte token (at most ", limits::kMaxTokenBytes, ")");
        check_id(it.value(), [&] { return "model.vocab[\"" + brief_name(it.key()) + "\"]"; });
      }
    }
    if (const json* merges = get(*model, "merges"); merges && merges->is_array() && merges->size() > size_t(limits::kMaxMerges))
      bad("model.merges has ", merges->size(), " rules (at most ", limits::kMaxMerges, ")");
  }
  if (const json* added = get(root, "added_tokens"); added && added->is_array()) {
    if (added->size() > size_t(kMaxVocab)) bad("added_tokens has ", added->size(), " entries (at most ", kMaxVocab, ")");
    for (size_t i = 0; i < added->size(); ++i) {
      const json& t = (*added)[i];
      if (!t.is_object()) continue;
      if (const json* id = get(t, "id")) check_id(*id, [&] { return "added_tokens[" + std::to_string(i) + "].id"; });
      if (const json* c = get(t, "content"); c && c->is_string() && c->get_ref<const std::string&>().size() > size_t(limits::kMaxTokenBytes))
        bad("added_tokens[", i, "].content has ", c->get_ref<const std::string&>().size(), " bytes (at most ", limits::kMaxTokenBytes, ")");
    }
  }
}

}  // namespace

std::unique_ptr<Tokenizer> load_hf_tokenizer(std::string_view tokenizer_json, int max_vocab) {
  json root = parse_json(tokenizer_json.data(), tokenizer_json.data() + tokenizer_json.size(), "tokenizer.json");
  try {
    check_sizes(root, std::min(max_vocab, kMaxVocab));
    return build(root);
  } catch (const json::exception& e) {  // a shape the checks above did not anticipate
    bad(e.what());
  } catch (const Error& e) {  // from a tokenizer kind's own checks: say which file it was
    const std::string what = e.what();
    if (what.rfind("tokenizer.json: ", 0) == 0) throw;
    bad(what);
  }
}

}  // namespace attnlens
