// gguf_tokenizer: GGUF tokenizer metadata as a tokenizer (see gguf_tokenizer.h).
#include "runtime/gguf_tokenizer.h"

#include <cstdint>
#include <string_view>
#include <vector>

#include "core/error.h"
#include "core/json.h"
#include "core/limits.h"
#include "formats/sentencepiece_model.h"
#include "runtime/sentencepiece_tokenizer.h"
#include "tokenizers/decoders.h"
#include "tokenizers/models.h"
#include "tokenizers/normalizers.h"
#include "tokenizers/pipeline.h"
#include "tokenizers/pre_tokenizers.h"
#include "tokenizers/unicode.h"

namespace attnlens::runtime {

namespace {

// Typed reads of GGUF tokenizer metadata: a wrong type is an error naming the file and the key.
struct MetaReader {
  const nlohmann::json& meta;
  const std::string& source;

  const nlohmann::json* find(const char* key) const {
    auto it = meta.find(key);
    return it == meta.end() ? nullptr : &*it;
  }
  bool boolean(const char* key, bool fallback) const {
    const nlohmann::json* v = find(key);
    if (!v) return fallback;
    AL_CHECK(v->is_boolean(), source, ": ", key, " must be a bool, got ", json_brief(*v));
    return v->get<bool>();
  }
  // A token id: an integer in [-1, vocab limit); `fallback` when absent.
  int id(const char* key, int fallback) const {
    const nlohmann::json* v = find(key);
    if (!v) return fallback;
    AL_CHECK(v->is_number_integer() && v->get<int64_t>() >= -1 && v->get<int64_t>() < limits::kMaxVocab, source, ": ", key,
             " must be a token id, got ", json_brief(*v));
    return v->get<int>();
  }
  std::string string(const char* key) const {
    const nlohmann::json* v = find(key);
    AL_CHECK(v && v->is_string(), source, ": ", key, " must be a string, got ", v ? json_brief(*v) : "nothing");
    return v->get<std::string>();
  }
  // An array (of at most `limit` values); null when absent and not required.
  const nlohmann::json* array(const char* key, size_t limit, bool required) const {
    const nlohmann::json* v = find(key);
    AL_CHECK(v || !required, source, ": ", key, " is missing");
    if (!v) return nullptr;
    AL_CHECK(v->is_array(), source, ": ", key, " must be an array, got ", json_brief(*v));
    AL_CHECK(v->size() <= limit, source, ": ", key, " has ", v->size(), " values (at most ", limit, ")");
    return v;
  }
  template <class T, class Check>
  std::vector<T> values(const char* key, const nlohmann::json& list, const char* type, Check ok) const {
    std::vector<T> out;
    out.reserve(list.size());
    for (size_t i = 0; i < list.size(); ++i) {
      AL_CHECK(ok(list[i]), source, ": ", key, "[", i, "] must be ", type, ", got ", json_brief(list[i]));
      out.push_back(list[i].get<T>());
    }
    return out;
  }
};


// The pre-tokenizer regexes of tokenizer.ggml.pre (llama.cpp's llm_tokenizer_bpe, written in the
// form the models' own tokenizer.json files give them): each one in turn splits every piece into its
// matches and the stretches between them. ignore_merges: a word that is a token is that token.
struct PreTokenizer {
  const char* names;         // the tokenizer.ggml.pre values, space-separated
  const char* regexes[3];    // applied in turn; nullptr after the last
  bool ignore_merges;
};

#define AL_GPT2_REGEX "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"
constexpr PreTokenizer kPreTokenizers[] = {
    {"gpt-2 phi-2 mpt olmo jina-es jina-de jina-v2-es jina-v2-de gigachat modern-bert", {AL_GPT2_REGEX}, false},
    {"default", {"[\\p{P}\\$\\+<=>\\^~\\|]+", AL_GPT2_REGEX, "\\p{N}+"}, false},  // + [0-9][0-9][0-9], see find_pre
    {"llama3 llama-v3 llama-bpe falcon3 pixtral",
     {"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
     true},
    {"qwen2 stablelm2 hunyuan",
     {"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
     false},
    {"deepseek-v3",
     {"\\p{N}{1,3}", "[\u4E00-\u9FA5\u3040-\u309F\u30A0-\u30FF]+",
      "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+"},
     false},
    {"gpt-4o",
     {"[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|"
      "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|"
      "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"},
     false},
    {"smollm starcoder refact command-r codeshell exaone minerva-7b", {"\\p{N}", AL_GPT2_REGEX}, false},
};
#undef AL_GPT2_REGEX

bool names_contain(const char* names, const std::string& name) {
  for (const char* p = names; *p;) {
    const char* e = p;
    while (*e && *e != ' ') ++e;
    if (size_t(e - p) == name.size() && name.compare(0, name.size(), p, size_t(e - p)) == 0) return true;
    p = *e ? e + 1 : e;
  }
  return false;
}

// The regexes of a pre-tokenizer name; llama.cpp's "default" has a fourth one.
std::vector<const char*> find_pre(const std::string& name, const std::string& source, bool& ignore_merges) {
  for (const PreTokenizer& p : kPreTokenizers) {
    if (!names_contain(p.names, name)) continue;
    std::vector<const char*> out;
    for (const char* r : p.regexes)
      if (r) out.push_back(r);
    if (name == "default") out.push_back("[0-9][0-9][0-9]");
    ignore_merges = p.ignore_merges;
    return out;
  }
  std::string known;
  for (const PreTokenizer& p : kPreTokenizers) known += (known.empty() ? "" : " ") + std::string(p.names);
  fail(source, ": tokenizer.ggml.pre \"", brief_name(name), "\" is not a pre-tokenizer the engine knows (", known, ")");
}

// tokenizer.ggml.model = t5: the ModelProto convert_hf_to_gguf.py read the GGUF's fields from.
SentencePieceModelProto t5_proto(const MetaReader& m, const nlohmann::json& tokens, const nlohmann::json* types) {
  using Proto = SentencePieceModelProto;
  Proto p;
  p.name = m.source;
  const nlohmann::json* scores = m.array("tokenizer.ggml.scores", limits::kMaxVocab, true);
  AL_CHECK(types, m.source, ": tokenizer.ggml.token_type is missing (a t5 tokenizer needs its token types)");
  AL_CHECK(scores->size() == tokens.size() && types->size() == tokens.size(), m.source, ": ", tokens.size(),
           " tokens but ", scores->size(), " scores and ", types->size(), " token types");
  p.pieces.resize(tokens.size());
  int unk = -1;
  for (size_t i = 0; i < tokens.size(); ++i) {
    Proto::Piece& piece = p.pieces[i];
    AL_CHECK(tokens[i].is_string() && !tokens[i].get_ref<const std::string&>().empty() &&
                 tokens[i].get_ref<const std::string&>().size() <= size_t(limits::kMaxTokenBytes),
             m.source, ": tokenizer.ggml.tokens[", i, "] must be a non-empty string of at most 65536 bytes, got ", json_brief(tokens[i]));
    piece.piece = tokens[i].get<std::string>();
    AL_CHECK((*scores)[i].is_number(), m.source, ": tokenizer.ggml.scores[", i, "] must be a number, got ", json_brief((*scores)[i]));
    piece.score = (*scores)[i].get<float>();
    const nlohmann::json& t = (*types)[i];
    AL_CHECK(t.is_number_integer() && t.get<int64_t>() >= 1 && t.get<int64_t>() <= 6, m.source, ": tokenizer.ggml.token_type[", i,
             "] must be a token type (1..6), got ", json_brief(t));
    piece.type = Proto::PieceType(t.get<int>());
    if (piece.type == Proto::PieceType::Byte) p.trainer.byte_fallback = true;
    if (piece.type == Proto::PieceType::Unknown && unk < 0) unk = int(i);
  }
  p.trainer.model_type = Proto::ModelType::Unigram;
  p.trainer.unk_id = m.id("tokenizer.ggml.unknown_token_id", unk);
  p.trainer.bos_id = m.id("tokenizer.ggml.bos_token_id", -1);
  p.trainer.eos_id = m.id("tokenizer.ggml.eos_token_id", -1);
  p.trainer.pad_id = m.id("tokenizer.ggml.padding_token_id", -1);
  p.normalizer.present = true;
  p.normalizer.add_dummy_prefix = m.boolean("tokenizer.ggml.add_space_prefix", true);
  p.normalizer.remove_extra_whitespaces = m.boolean("tokenizer.ggml.remove_extra_whitespaces", false);
  p.normalizer.escape_whitespaces = true;
  if (const nlohmann::json* cm = m.array("tokenizer.ggml.precompiled_charsmap", size_t(64) << 20, false)) {
    std::string& bytes = p.normalizer.precompiled_charsmap;
    bytes.reserve(cm->size());
    for (size_t i = 0; i < cm->size(); ++i) {
      const nlohmann::json& b = (*cm)[i];
      AL_CHECK(b.is_number_integer() && b.get<int64_t>() >= -128 && b.get<int64_t>() <= 255, m.source,
               ": tokenizer.ggml.precompiled_charsmap[", i, "] must be a byte, got ", json_brief(b));
      bytes.push_back(char(uint8_t(b.get<int64_t>() & 0xFF)));
    }
  }
  return p;
}

// tokenizer.ggml.model = bert: WordPiece over convert_hf_to_gguf's "phantom space" vocabulary (a
// word-initial piece "▁abc" was "abc", a continuation "abc" was "##abc", control tokens unchanged),
// after BERT's normalizer (tokenizer.ggml.normalizer.lowercase, default true;
// tokenizer.ggml.normalizer.strip_accents, default = lowercase) and pre-tokenizer, as llama.cpp's WPM.
std::unique_ptr<Tokenizer> bert_tokenizer(const MetaReader& m, const nlohmann::json& tokens, const nlohmann::json* types) {
  AL_CHECK(types && types->size() == tokens.size(), m.source, ": a bert tokenizer needs tokenizer.ggml.token_type for each token");
  constexpr std::string_view kPhantom = "\xE2\x96\x81";
  tok::WordPieceConfig w;
  w.pieces.reserve(tokens.size());
  tok::Pipeline p;
  for (size_t i = 0; i < tokens.size(); ++i) {
    AL_CHECK(tokens[i].is_string() && tokens[i].get_ref<const std::string&>().size() <= size_t(limits::kMaxTokenBytes), m.source,
             ": tokenizer.ggml.tokens[", i, "] must be a string of at most 65536 bytes, got ", json_brief(tokens[i]));
    const nlohmann::json& t = (*types)[i];
    AL_CHECK(t.is_number_integer() && t.get<int64_t>() >= 1 && t.get<int64_t>() <= 6, m.source, ": tokenizer.ggml.token_type[", i,
             "] must be a token type (1..6), got ", json_brief(t));
    const std::string& piece = tokens[i].get_ref<const std::string&>();
    const int type = t.get<int>();
    if (type == 3 || type == 2) {  // control (and the unknown token): unchanged, recognised in the text
      w.pieces.push_back(piece);
      tok::AddedToken a;
      a.id = int(i);
      a.content = piece;
      a.special = true;
      p.added.push_back(std::move(a));
    } else if (std::string_view(piece).substr(0, kPhantom.size()) == kPhantom) {
      w.pieces.push_back(piece.substr(kPhantom.size()));
    } else {
      w.pieces.push_back("##" + piece);
    }
  }
  const int unk = m.id("tokenizer.ggml.unknown_token_id", -1);
  AL_CHECK(unk >= 0 && size_t(unk) < tokens.size(), m.source, ": a bert tokenizer needs tokenizer.ggml.unknown_token_id");
  w.unk_token = w.pieces[size_t(unk)];
  w.continuing_subword_prefix = "##";
  w.max_input_chars_per_word = limits::kMaxTokenBytes;  // llama.cpp's WPM has no word length limit
  tok::BertNormalizerOptions bn;
  bn.lowercase = m.boolean("tokenizer.ggml.normalizer.lowercase", true);
  bn.strip_accents = m.boolean("tokenizer.ggml.normalizer.strip_accents", bn.lowercase);
  p.normalizer = std::make_unique<tok::BertNormalizer>(bn);
  p.pre_tokenizer = std::make_unique<tok::BertPreTokenizer>();
  p.model = std::make_unique<tok::WordPieceModel>(std::move(w));
  p.decoder = std::make_unique<tok::WordPieceDecoder>("##", true);
  p.ids = {m.id("tokenizer.ggml.cls_token_id", m.id("tokenizer.ggml.bos_token_id", -1)),
           m.id("tokenizer.ggml.seperator_token_id", m.id("tokenizer.ggml.eos_token_id", -1)),
           m.id("tokenizer.ggml.padding_token_id", -1), unk};
  p.kind = "wordpiece";
  return tok::make_pipeline_tokenizer(std::move(p));
}

}  // namespace

// GGUF keeps the tokenizer in its metadata: SentencePiece BPE ("llama"), byte-level BPE ("gpt2",
// rebuilt as the tokenizer.json it came from) or SentencePiece Unigram ("t5", as a .model file).
std::unique_ptr<Tokenizer> gguf_tokenizer(const nlohmann::json& meta, const std::string& source) {
  if (!meta.contains("tokenizer.ggml.model")) return nullptr;
  const MetaReader m{meta, source};
  const std::string kind = m.string("tokenizer.ggml.model");
  const nlohmann::json& tokens = *m.array("tokenizer.ggml.tokens", limits::kMaxVocab, true);
  // GGUF strings are UTF-8: an ill-formed token is an error whatever the tokenizer model.
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (!tokens[i].is_string()) continue;  // named by each model's own checks
    const std::string& t = tokens[i].get_ref<const std::string&>();
    for (size_t pos = 0; pos < t.size();) {
      const unicode::Utf8Step c = unicode::decode_utf8(t, pos);
      AL_CHECK(c.valid, source, ": tokenizer.ggml.tokens[", i, "] (", t.size(), " bytes) is not valid UTF-8");
      pos += c.len;
    }
  }
  auto is_string = [](const nlohmann::json& x) {
    return x.is_string() && x.get_ref<const std::string&>().size() <= size_t(limits::kMaxTokenBytes);
  };
  auto is_type = [](const nlohmann::json& x) { return x.is_number_integer() && x.get<int64_t>() >= 0 && x.get<int64_t>() <= 255; };
  const nlohmann::json* types = m.array("tokenizer.ggml.token_type", limits::kMaxVocab, false);
  if (kind == "llama") {
    std::vector<std::string> pieces = m.values<std::string>("tokenizer.ggml.tokens", tokens, "a string of at most 65536 bytes", is_string);
    std::vector<float> scores;
    std::vector<int> token_types;
    if (const nlohmann::json* s = m.array("tokenizer.ggml.scores", limits::kMaxVocab, false))
      scores = m.values<float>("tokenizer.ggml.scores", *s, "a number", [](const nlohmann::json& x) { return x.is_number(); });
    if (types) token_types = m.values<int>("tokenizer.ggml.token_type", *types, "a token type (0..255)", is_type);
    return make_sentencepiece_tokenizer(std::move(pieces), std::move(scores), std::move(token_types),
                                        m.id("tokenizer.ggml.bos_token_id", 1), m.id("tokenizer.ggml.eos_token_id", 2),
                                        m.id("tokenizer.ggml.unknown_token_id", 0), m.boolean("tokenizer.ggml.add_bos_token", true),
                                        m.boolean("tokenizer.ggml.add_space_prefix", true));
  }
  if (kind == "gpt2") {
    nlohmann::json tj;
    nlohmann::json vocab = nlohmann::json::object();
    for (size_t i = 0; i < tokens.size(); ++i) {
      AL_CHECK(is_string(tokens[i]), source, ": tokenizer.ggml.tokens[", i, "] must be a string of at most 65536 bytes, got ",
               json_brief(tokens[i]));
      vocab[tokens[i].get<std::string>()] = i;
    }
    nlohmann::json merges = nlohmann::json::array();
    if (const nlohmann::json* list = m.array("tokenizer.ggml.merges", limits::kMaxMerges, false)) merges = *list;
    tj["model"] = {{"type", "BPE"}, {"vocab", std::move(vocab)}, {"merges", std::move(merges)}};
    bool ignore_merges = false;
    const std::vector<const char*> regexes =
        find_pre(meta.contains("tokenizer.ggml.pre") ? m.string("tokenizer.ggml.pre") : "default", source, ignore_merges);
    nlohmann::json steps = nlohmann::json::array();
    for (const char* r : regexes)
      steps.push_back({{"type", "Split"}, {"pattern", {{"Regex", r}}}, {"behavior", "Isolated"}, {"invert", false}});
    steps.push_back({{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}, {"trim_offsets", false}});
    tj["pre_tokenizer"] = {{"type", "Sequence"}, {"pretokenizers", std::move(steps)}};
    tj["model"]["ignore_merges"] = ignore_merges;
    tj["decoder"] = {{"type", "ByteLevel"}};
    nlohmann::json added = nlohmann::json::array();
    if (types) {
      for (size_t i = 0; i < types->size() && i < tokens.size(); ++i) {
        AL_CHECK(is_type((*types)[i]), source, ": tokenizer.ggml.token_type[", i, "] must be a token type (0..255), got ",
                 json_brief((*types)[i]));
        if ((*types)[i].get<int>() == 3) added.push_back({{"id", i}, {"content", tokens[i]}, {"special", true}});
      }
    }
    tj["added_tokens"] = std::move(added);
    std::string text;
    try {
      text = tj.dump();
    } catch (const nlohmann::json::type_error&) {  // 316: a string that is not UTF-8
      fail(source, ": tokenizer.ggml.tokens or tokenizer.ggml.merges holds a string that is not valid UTF-8");
    }
    return load_hf_tokenizer(text, source + " (its tokenizer as a tokenizer.json)");
  }
  if (kind == "bert") return bert_tokenizer(m, tokens, types);
  if (kind == "t5") {
    SentencePieceOptions o;
    o.llamacpp_ugm = true;
    return make_sentencepiece_model_tokenizer(t5_proto(m, tokens, types), o);
  }
  fail(source, ": unsupported GGUF tokenizer model \"", brief_name(kind), "\" (supported: llama, gpt2, bert, t5)");
}


}  // namespace attnlens::runtime
