#include "runtime/loader.h"

#include <algorithm>
#include <cctype>
#include <cstring>

#include "core/error.h"
#include "core/json.h"
#include "core/limits.h"
#include "formats/model_file.h"
#include "models/registry.h"
#include "runtime/gguf_tokenizer.h"
#include "runtime/sentencepiece_tokenizer.h"
#include "runtime/tokenizer_config.h"
#include "tokenizers/json_vocab.h"

namespace attnlens::runtime {

namespace {

Bytes bytes_of(const File& f) { return Bytes{f.bytes.data(), f.bytes.size(), f.name}; }

std::string base_name(const std::string& path) {
  size_t slash = path.find_last_of("/\\");
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

nlohmann::json parse_json(const File& f) { return attnlens::parse_json(f.bytes.data(), f.bytes.size(), f.name); }

// Number of records in a llama2.c tokenizer.bin (its vocabulary size is not stored in it).
int count_llama2c_tokens(const File& f) {
  size_t off = 4;
  int n = 0;
  while (off < f.bytes.size()) {
    AL_CHECK(off + 8 <= f.bytes.size(), f.name, ": truncated token record at byte ", off);
    int32_t len;
    std::memcpy(&len, f.bytes.data() + off + 4, 4);
    AL_CHECK(len >= 0 && off + 8 + size_t(len) <= f.bytes.size(), f.name, ": token ", n, " claims ", len,
             " bytes past the end of the file");
    off += 8 + size_t(len);
    ++n;
  }
  return n;
}

// First id of a config value that may be an int or a list of ints; -1 when absent.
int first_id(const nlohmann::json& j, const char* key) {
  if (!j.is_object() || !j.contains(key)) return -1;
  const auto& v = j.at(key);
  auto id = [](const nlohmann::json& x) { return x.is_number_integer() && x.get<int64_t>() >= 0 && x.get<int64_t>() < limits::kMaxVocab; };
  if (id(v)) return v.get<int>();
  if (v.is_array() && !v.empty() && id(v[0])) return v[0].get<int>();
  return -1;
}

std::vector<int> all_ids(const nlohmann::json& j, const char* key) {
  std::vector<int> out;
  if (!j.is_object() || !j.contains(key)) return out;
  auto id = [](const nlohmann::json& x) { return x.is_number_integer() && x.get<int64_t>() >= 0 && x.get<int64_t>() < limits::kMaxVocab; };
  const auto& v = j.at(key);
  if (id(v)) out.push_back(v.get<int>());
  if (v.is_array())
    for (const auto& x : v)
      if (id(x)) out.push_back(x.get<int>());
  return out;
}

// The files of one checkpoint, sorted by role.
struct Roles {
  const File* llama2c = nullptr;
  const File* gguf = nullptr;
  const File* llama_tokenizer_bin = nullptr;
  std::vector<const File*> safetensors;
  const File* index = nullptr;
  const File* config = nullptr;
  const File* tokenizer_json = nullptr;
  const File* spm = nullptr;         // a SentencePiece model (spiece.model, Marian's source.spm, ...)
  const File* spm_target = nullptr;  // Marian's target.spm
  const File* vocab_json = nullptr;  // Marian's vocab.json (piece -> id), used with a SentencePiece model
  const File* target_vocab_json = nullptr;  // Marian's target_vocab.json (separate vocabularies), with target.spm
  const File* generation_config = nullptr;
  // The tokenizer's configuration (tokenizer_config.h).
  const File* tokenizer_config = nullptr;
  const File* special_tokens_map = nullptr;
  const File* chat_template_json = nullptr;
  std::vector<const File*> jinja;  // chat_template.jinja, NAME.jinja
  // sentence-transformers: modules.json, sentence_bert_config.json, and each module's config.json
  // (e.g. 1_Pooling/config.json), by the module folder's name.
  const File* modules = nullptr;
  const File* st_config = nullptr;
  std::vector<std::pair<std::string, const File*>> module_configs;
};

bool ends_with(const std::string& s, const char* suffix) {
  const size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

// The folder a file sits in, when its name has one ("1_Pooling/config.json" → "1_Pooling").
std::string parent_name(const std::string& path) {
  const size_t slash = path.find_last_of("/\\");
  if (slash == std::string::npos) return "";
  const size_t before = path.find_last_of("/\\", slash == 0 ? 0 : slash - 1);
  return path.substr(before == std::string::npos ? 0 : before + 1, slash - (before == std::string::npos ? 0 : before + 1));
}

void assign(const File*& slot, const File& f, const char* role) {
  AL_CHECK(!slot, "two ", role, " files given: ", slot ? slot->name : "", " and ", f.name);
  slot = &f;
}

Roles classify(const std::vector<FilePtr>& files) {
  Roles r;
  for (const FilePtr& fp : files) {
    const File& f = *fp;
    const std::string name = base_name(f.name);
    if (ends_with(name, ".jinja")) {  // a chat template: text, recognised by its name only
      r.jinja.push_back(&f);
      continue;
    }
    switch (detect_file_kind(bytes_of(f))) {
      case FileKind::Llama2c: assign(r.llama2c, f, "llama2.c checkpoint"); break;
      case FileKind::Gguf: assign(r.gguf, f, "GGUF"); break;
      case FileKind::LlamaTokenizerBin: assign(r.llama_tokenizer_bin, f, "tokenizer.bin"); break;
      case FileKind::Safetensors: r.safetensors.push_back(&f); break;
      case FileKind::SafetensorsIndex: assign(r.index, f, "model.safetensors.index.json"); break;
      case FileKind::Json: {
        const std::string parent = parent_name(f.name);
        // A sentence-transformers module's config sits in the module's folder ("1_Pooling/…").
        if (name == "config.json" && !parent.empty() && std::isdigit(static_cast<unsigned char>(parent[0])) &&
            parent.find('_') != std::string::npos)
          r.module_configs.push_back({parent, &f});
        else if (name == "modules.json") assign(r.modules, f, "modules.json");
        else if (name == "sentence_bert_config.json") assign(r.st_config, f, "sentence_bert_config.json");
        else if (name == "config.json") assign(r.config, f, "config.json");
        else if (name == "tokenizer.json") assign(r.tokenizer_json, f, "tokenizer.json");
        else if (name == "generation_config.json") assign(r.generation_config, f, "generation_config.json");
        else if (name == "tokenizer_config.json") assign(r.tokenizer_config, f, "tokenizer_config.json");
        else if (name == "special_tokens_map.json") assign(r.special_tokens_map, f, "special_tokens_map.json");
        else if (name == "chat_template.json") assign(r.chat_template_json, f, "chat_template.json");
        else if (name == "vocab.json") assign(r.vocab_json, f, "vocab.json");
        else if (name == "target_vocab.json") assign(r.target_vocab_json, f, "target_vocab.json");
        else {  // by content: a tokenizer.json has "model"; a config.json "architectures" or "model_type";
                // a tokenizer_config.json "tokenizer_class", "chat_template" or "added_tokens_decoder"
          // (the member names only: a DOM of a 10 MB tokenizer.json took 2/3 of its loading time)
          const std::string names = tok::json_member_names(
              std::string_view(reinterpret_cast<const char*>(f.bytes.data()), f.bytes.size()), f.name + ": ", "model");
          const auto has = [&](const char* key) { return names.find(key) != std::string::npos; };
          if (has("\nmodel\n{")) assign(r.tokenizer_json, f, "tokenizer.json");
          else if (has("\narchitectures\n") || has("\nmodel_type\n")) assign(r.config, f, "config.json");
          else if (has("\ntokenizer_class\n") || has("\nchat_template\n") || has("\nadded_tokens_decoder\n"))
            assign(r.tokenizer_config, f, "tokenizer_config.json");
          // other JSON (preprocessor configs, …) is not needed
        }
        break;
      }
      case FileKind::SentencePieceModel:
        if (name == "target.spm") assign(r.spm_target, f, "target.spm");
        else assign(r.spm, f, "SentencePiece model");
        break;
      case FileKind::Unknown:
        // A file named as a SentencePiece model that does not read as one: say what is wrong with it.
        if (ends_with(name, ".model") || ends_with(name, ".spm")) read_sentencepiece_model(bytes_of(f));
        fail(f.name, ": not a model file AttnLens recognises (", f.bytes.size(),
             " bytes; expected a llama2.c checkpoint or tokenizer.bin, a GGUF file, safetensors, JSON, or a SentencePiece .model)");
    }
  }
  return r;
}

// The SentencePiece model of the files (Marian's when a vocab.json comes with it), read through the
// tokenizer class of its model family (sentencepiece_family: tokenizer_config.json's
// tokenizer_class, else config.json's model_type).
std::unique_ptr<Tokenizer> spm_tokenizer(const Roles& r, const nlohmann::json& config, SpmFamily* family = nullptr) {
  const SentencePieceModelProto m = read_sentencepiece_model(bytes_of(*r.spm));
  if (r.vocab_json) return make_marian_tokenizer(m, parse_json(*r.vocab_json), r.vocab_json->name);
  const nlohmann::json tc = r.tokenizer_config ? parse_json(*r.tokenizer_config) : nlohmann::json();
  const SentencePieceOptions o = sentencepiece_family(tc, config, r.tokenizer_config ? r.tokenizer_config->name : "");
  if (family) *family = o.family;
  return make_sentencepiece_model_tokenizer(m, o);
}

// tokenizer_config.json's settings that a SentencePiece model's family reads (sentencepiece_family)
// are not reported as not applied (model.info's notApplied).
void mark_family_settings(TokenizerConfig& c, SpmFamily f) {
  if (f == SpmFamily::None) return;
  std::vector<std::string> kept;
  for (std::string& k : c.not_applied)
    if (std::string_view(" tokenizer_class extra_ids legacy remove_space keep_accents do_lower_case ").find(" " + k + " ") ==
        std::string_view::npos)
      kept.push_back(std::move(k));
  c.not_applied = std::move(kept);
}

// Marian's target tokenizer (transformers' MarianTokenizer in target mode): target.spm segments a
// target text and decodes the decoder's tokens, whose ids are vocab.json's (target_vocab.json's when
// the vocabularies are separate).
std::unique_ptr<Tokenizer> marian_target_tokenizer(const Roles& r) {
  AL_CHECK(r.spm && r.vocab_json, r.spm_target->name, ": Marian's target.spm is read together with source.spm and ",
           "vocab.json (", r.spm ? "vocab.json" : "source.spm", " was not given)");
  const File& vocab = r.target_vocab_json ? *r.target_vocab_json : *r.vocab_json;
  const SentencePieceModelProto m = read_sentencepiece_model(bytes_of(*r.spm_target));
  return make_marian_tokenizer(m, parse_json(vocab), vocab.name);
}

void set_prompt_format(const models::Model& model, const Tokenizer* tok, const nlohmann::json& config,
                       const TokenizerConfig& tc, const generate::SpecialTokenFlags& special, generate::PromptFormat& p) {
  const std::string arch = model.info().architecture;
  const int bos = tok ? tok->bos_id() : -1, eos = tok ? tok->eos_id() : -1;
  p.special = special;
  if (model.kind() == models::ModelKind::EncoderDecoder) {
    // The source is encoded as the tokenizer does it (T5, BART, Marian: their post-processor adds
    // </s>); our own seq2seq has no post-processor and appends its end token itself.
    const bool ours = arch == "seq2seq";
    p.add_special = !ours;
    p.eos_token = first_id(config, "eos_token_id") >= 0 ? first_id(config, "eos_token_id") : eos;
    // generate(): decoder_start_token_id, else bos_token_id.
    p.decoder_start_token = first_id(config, "decoder_start_token_id") >= 0 ? first_id(config, "decoder_start_token_id")
                                                                            : first_id(config, "bos_token_id");
    const auto suffix = config.find("source_suffix_eos");
    AL_CHECK(suffix == config.end() || suffix->is_boolean(), "config.json: source_suffix_eos must be true or false, got ",
             suffix == config.end() ? "" : json_brief(*suffix));
    p.source_suffix_eos = ours && (suffix == config.end() ? true : suffix->get<bool>());
    p.stop_tokens = all_ids(config, "eos_token_id");
    if (p.stop_tokens.empty() && p.eos_token >= 0) p.stop_tokens = {p.eos_token};
    return;
  }
  p.add_special = true;
  // Every end token anyone names: config.json / generation_config.json (lists included), the
  // tokenizer's, the configuration's eos_token, a GGUF's end-of-turn tokens.
  std::vector<int> stops = all_ids(config, "eos_token_id");
  if (eos >= 0) stops.push_back(eos);
  if (tok && special_token_id(tc, *tok, "eos_token") >= 0) stops.push_back(special_token_id(tc, *tok, "eos_token"));
  stops.insert(stops.end(), tc.extra_stop_ids.begin(), tc.extra_stop_ids.end());
  if (arch == "llama" && bos >= 0) stops.push_back(bos);  // llama2.c stops when the model emits BOS
  if (arch == "gpt2") p.empty_prompt_token = eos >= 0 ? eos : first_id(config, "bos_token_id");
  std::sort(stops.begin(), stops.end());
  stops.erase(std::unique(stops.begin(), stops.end()), stops.end());
  p.stop_tokens = stops;
}

// Runs one stage of loading `file`: a JSON library exception that slipped past the readers' own
// checks (a value of an unexpected type) becomes an attnlens::Error naming the file, never the
// library's bare text.
template <class F>
auto in_file(const std::string& file, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (const nlohmann::json::exception& e) {
    fail(file, ": a JSON value of an unexpected type or shape (", e.what(), ")");
  }
}

// The tokenizer's configuration from the files that carry it (on top of a GGUF's metadata, if any).
// Returns tokenizer_config.json's JSON (null if none) for the added-token check.
nlohmann::json read_config_files(const Roles& r, TokenizerConfig& c) {
  nlohmann::json tc;
  if (r.tokenizer_config) {
    tc = parse_json(*r.tokenizer_config);
    read_tokenizer_config(c, tc, r.tokenizer_config->name);
  }
  if (r.special_tokens_map) read_special_tokens_map(c, parse_json(*r.special_tokens_map), r.special_tokens_map->name);
  if (r.chat_template_json) read_chat_template_json(c, parse_json(*r.chat_template_json), r.chat_template_json->name);
  for (const File* f : r.jinja) {  // chat_template.jinja is the default template; NAME.jinja the template NAME
    std::string name = base_name(f->name);
    name = name.substr(0, name.size() - std::strlen(".jinja"));
    AL_CHECK(!name.empty(), f->name, ": a chat template file needs a name (chat_template.jinja or NAME.jinja)");
    set_chat_template(c, name == "chat_template" ? "default" : name,
                      std::string(reinterpret_cast<const char*>(f->bytes.data()), f->bytes.size()), f->name);
  }
  return tc;
}

bool has_config_files(const Roles& r) {
  return r.tokenizer_config || r.special_tokens_map || r.chat_template_json || !r.jinja.empty();
}

// Checks the configuration against the tokenizer and works out how it adds special tokens.
generate::SpecialTokenFlags apply_config(const Roles& r, const TokenizerConfig& c, const nlohmann::json& tc,
                                         const Tokenizer* tok) {
  if (!tok) {
    AL_CHECK(!has_config_files(r), c.source_names(),
             ": a tokenizer configuration was given without a tokenizer (tokenizer.json, tokenizer.bin or a GGUF with one)");
    return {};
  }
  if (r.tokenizer_config) check_added_tokens(tc, *tok, r.tokenizer_config->name);
  return resolve_special_tokens(c, *tok);
}

// The model's own generation settings, as the JS API names its options: what Hugging Face's
// generate() would use for the options a caller leaves out (generation_config.json over config.json).
// Encoder–decoder models only (decoder-only models keep AttnLens's defaults).
nlohmann::json generation_defaults(const models::Model& model, const nlohmann::json& config, const std::string& source) {
  nlohmann::json d = nlohmann::json::object();
  if (model.kind() != models::ModelKind::EncoderDecoder || !config.is_object()) return d;
  auto integer = [&](const char* key, int min) -> int {
    const auto& v = config.at(key);
    AL_CHECK(v.is_number_integer() && v.get<int64_t>() >= min && v.get<int64_t>() <= (1 << 24), source, ": \"", key,
             "\" must be an integer ≥ ", min, ", got ", v.dump());
    return v.get<int>();
  };
  auto number = [&](const char* key) -> double {
    const auto& v = config.at(key);
    AL_CHECK(v.is_number(), source, ": \"", key, "\" must be a number, got ", v.dump());
    return v.get<double>();
  };
  auto has = [&](const char* key) { return config.contains(key) && !config.at(key).is_null(); };
  // The decoder prompt is one token (the start token): max_length / min_length count it.
  if (has("max_new_tokens")) d["maxNewTokens"] = integer("max_new_tokens", 0);
  else if (has("max_length")) d["maxNewTokens"] = std::max(0, integer("max_length", 0) - 1);
  if (has("min_new_tokens")) d["minNewTokens"] = integer("min_new_tokens", 0);
  else if (has("min_length")) d["minNewTokens"] = std::max(0, integer("min_length", 0) - 1);
  if (has("num_beams")) d["numBeams"] = integer("num_beams", 1);
  if (has("length_penalty")) d["lengthPenalty"] = number("length_penalty");
  if (has("early_stopping")) {
    const auto& v = config.at("early_stopping");
    AL_CHECK(v.is_boolean() || v == "never", source, ": \"early_stopping\" must be true, false or \"never\", got ",
             v.dump());
    d["earlyStopping"] = v;
  }
  if (has("no_repeat_ngram_size")) d["noRepeatNgramSize"] = integer("no_repeat_ngram_size", 0);
  if (has("repetition_penalty")) d["repetitionPenalty"] = number("repetition_penalty");
  if (has("forced_bos_token_id")) d["forcedBosTokenId"] = integer("forced_bos_token_id", 0);
  if (has("forced_eos_token_id")) d["forcedEosTokenId"] = first_id(config, "forced_eos_token_id");
  if (has("bad_words_ids")) {
    const auto& v = config.at("bad_words_ids");
    AL_CHECK(v.is_array(), source, ": \"bad_words_ids\" must be a list of lists of token ids");
    for (const auto& seq : v)
      AL_CHECK(seq.is_array() && !seq.empty() &&
                   std::all_of(seq.begin(), seq.end(), [](const nlohmann::json& t) { return t.is_number_integer(); }),
               source, ": \"bad_words_ids\" must be a list of non-empty lists of token ids, got ", v.dump());
    d["badWordsIds"] = v;
  }
  // do_sample false (generate()'s default) is greedy; true samples at the given temperature / top-k / top-p.
  const bool sample = has("do_sample") && config.at("do_sample") == true;
  d["temperature"] = sample ? (has("temperature") ? number("temperature") : 1.0) : 0.0;
  if (sample && has("top_k")) d["topK"] = integer("top_k", 0);
  if (sample && has("top_p")) d["topP"] = number("top_p");
  return d;
}

// sentence-transformers' pipeline (modules.json: Transformer → Pooling [→ Normalize]) or GGUF's
// pooling_type; every module and option AttnLens does not run is an error naming it.
EmbeddingConfig embedding_config(const models::Model& model, const Roles& r, const nlohmann::json& gguf) {
  EmbeddingConfig e;
  const bool encoder = model.kind() == models::ModelKind::EncoderOnly;
  if (!r.modules) {
    AL_CHECK(r.module_configs.empty() && !r.st_config, "sentence-transformers files were given without modules.json");
    if (encoder && gguf.contains("pooling_type")) {
      // llama.cpp's enum llama_pooling_type: 0 none, 1 mean, 2 cls, 3 last, 4 rank
      const int t = gguf.at("pooling_type").get<int>();
      AL_CHECK(t >= 0 && t <= 2, "GGUF bert.pooling_type ", t, " (last / rank) is not supported (none, mean, cls)");
      e.pooling = t == 2 ? models::Pooling::Cls : models::Pooling::Mean;
      e.from = "gguf";
    }
    return e;
  }
  AL_CHECK(encoder, r.modules->name, ": sentence-transformers pipelines are supported over encoder-only models, not ",
           models::model_kind_name(model.kind()), " ones");
  const nlohmann::json modules = parse_json(*r.modules);
  AL_CHECK(modules.is_array() && !modules.empty(), r.modules->name, ": must be a non-empty list of modules");
  e.from = "sentence-transformers";
  bool pooled = false;
  for (size_t i = 0; i < modules.size(); ++i) {
    const nlohmann::json& m = modules[i];
    AL_CHECK(m.is_object() && m.contains("type") && m.at("type").is_string(), r.modules->name, ": module ", i,
             " has no type");
    const std::string type = m.at("type"), path = m.value("path", "");
    if (type == "sentence_transformers.models.Transformer") {
      AL_CHECK(i == 0 && path.empty(), r.modules->name, ": the Transformer module must come first, at the top folder");
    } else if (type == "sentence_transformers.models.Pooling") {
      const File* cfg = nullptr;
      for (const auto& [folder, f] : r.module_configs)
        if (folder == path) cfg = f;
      AL_CHECK(cfg, r.modules->name, ": module ", i, " (Pooling) needs ", path, "/config.json, which was not given");
      const nlohmann::json p = parse_json(*cfg);
      int modes = 0;
      for (auto it = p.begin(); it != p.end(); ++it) {
        const std::string k = it.key();
        if (k.rfind("pooling_mode_", 0) != 0 || it.value() != true) continue;
        ++modes;
        if (k == "pooling_mode_mean_tokens") e.pooling = models::Pooling::Mean;
        else if (k == "pooling_mode_cls_token") e.pooling = models::Pooling::Cls;
        else if (k == "pooling_mode_max_tokens") e.pooling = models::Pooling::Max;
        else fail(cfg->name, ": ", k, " is not supported (mean, cls or max tokens)");
      }
      AL_CHECK(modes == 1, cfg->name, ": ", modes, " pooling modes are on; AttnLens runs exactly one");
      AL_CHECK(p.value("include_prompt", true), cfg->name, ": include_prompt false is not supported");
      if (p.contains("word_embedding_dimension"))
        AL_CHECK(p.at("word_embedding_dimension") == model.info().d_model, cfg->name, ": word_embedding_dimension ",
                 p.at("word_embedding_dimension").dump(), " differs from the model's ", model.info().d_model);
      pooled = true;
    } else if (type == "sentence_transformers.models.Normalize") {
      AL_CHECK(pooled && i + 1 == modules.size(), r.modules->name, ": Normalize must follow Pooling, last");
      e.normalize = true;
    } else {
      fail(r.modules->name, ": module ", i, " is a ", type, ", which AttnLens does not run (Transformer, Pooling, Normalize)");
    }
  }
  AL_CHECK(pooled, r.modules->name, ": no Pooling module");
  if (r.st_config) {
    const nlohmann::json c = parse_json(*r.st_config);
    if (c.contains("max_seq_length") && !c.at("max_seq_length").is_null()) {
      AL_CHECK(c.at("max_seq_length").is_number_integer() && c.at("max_seq_length").get<int64_t>() > 0, r.st_config->name,
               ": max_seq_length must be a positive integer");
      e.max_length = int(std::min<int64_t>(c.at("max_seq_length").get<int64_t>(), model.info().context_length));
    }
    AL_CHECK(!c.value("do_lower_case", false), r.st_config->name, ": do_lower_case true is not supported");
  }
  return e;
}

}  // namespace

const Tokenizer& LoadedModel::require_tokenizer() const {
  AL_CHECK(tokenizer_, "no tokenizer was loaded with this model (give tokenizer.bin, tokenizer.json or a GGUF with one)");
  return *tokenizer_;
}

const Tokenizer& LoadedModel::require_output_tokenizer() const {
  const Tokenizer* t = output_tokenizer();
  AL_CHECK(t, "no tokenizer was loaded with this model (give tokenizer.bin, tokenizer.json or a GGUF with one)");
  return *t;
}

const Tokenizer& LoadedModel::require_target_tokenizer() const {
  const models::ModelInfo& i = model_->info();
  AL_CHECK(i.kind == models::ModelKind::EncoderDecoder, "the target side of the text (the decoder's text) is for ",
           "encoder-decoder models; ", i.architecture, " is ", models::model_kind_name(i.kind),
           ": its one tokenizer reads all its text");
  return require_output_tokenizer();
}

size_t LoadedModel::file_bytes() const {
  size_t n = 0;
  for (const auto& f : files_) n += f->bytes.size();
  return n;
}

std::unique_ptr<Tokenizer> load_tokenizer(const File& file, int vocab_size) {
  return in_file(file.name, [&]() -> std::unique_ptr<Tokenizer> {
  switch (detect_file_kind(bytes_of(file))) {
    case FileKind::LlamaTokenizerBin:
      return load_llama2c_tokenizer(file.bytes.data(), file.bytes.size(),
                                    vocab_size > 0 ? vocab_size : count_llama2c_tokens(file));
    case FileKind::Json:
      return load_hf_tokenizer(std::string_view(reinterpret_cast<const char*>(file.bytes.data()), file.bytes.size()), file.name);
    case FileKind::Gguf: {
      ModelFile g = read_gguf(bytes_of(file));
      auto t = gguf_tokenizer(g.config, file.name);
      AL_CHECK(t, file.name, ": this GGUF has no tokenizer");
      return t;
    }
    case FileKind::SentencePieceModel: return load_sentencepiece_model(bytes_of(file));
    default:
      if (ends_with(base_name(file.name), ".model") || ends_with(base_name(file.name), ".spm"))
        read_sentencepiece_model(bytes_of(file));  // says what is wrong with it
      fail(file.name, ": not a tokenizer (expected tokenizer.bin, tokenizer.json, a SentencePiece .model or a GGUF)");
  }
  });
}

LoadedTokenizer load_tokenizer_files(const std::vector<FilePtr>& files, int vocab_size) {
  AL_CHECK(!files.empty(), "no tokenizer file given");
  const Roles r = classify(files);
  // (config.json may come along: its model_type picks a SentencePiece model's family)
  AL_CHECK(!r.llama2c && r.safetensors.empty() && !r.index, "a tokenizer was asked for, but model files (",
           r.llama2c ? r.llama2c->name : !r.safetensors.empty() ? r.safetensors[0]->name : r.index ? r.index->name : "",
           ") were given: give the tokenizer file and its configuration files");
  const File* main = r.tokenizer_json ? r.tokenizer_json : r.llama_tokenizer_bin ? r.llama_tokenizer_bin
                   : r.spm ? r.spm : r.spm_target ? r.spm_target : r.gguf;
  AL_CHECK(main, "no tokenizer among the files given (expected tokenizer.json, tokenizer.bin, a SentencePiece .model or a GGUF)");
  AL_CHECK(int(!!r.tokenizer_json) + int(!!r.llama_tokenizer_bin) + int(!!r.gguf) + int(!!r.spm) + int(!!r.spm_target) == 1,
           "several tokenizers were given: give one (tokenizer.json, tokenizer.bin, a SentencePiece .model or a GGUF) and ",
           "its configuration files");
  AL_CHECK(!r.target_vocab_json, r.target_vocab_json ? r.target_vocab_json->name : "",
           ": a target vocabulary belongs to an encoder-decoder model's files (a tokenizer alone reads its input)");
  LoadedTokenizer out;
  SpmFamily family = SpmFamily::None;
  out.tokenizer = main == r.spm ? in_file(r.spm->name, [&] { return spm_tokenizer(r, r.config ? parse_json(*r.config) : nlohmann::json(), &family); })
                                : load_tokenizer(*main, vocab_size);
  if (r.gguf) out.config = read_gguf_tokenizer_config(read_gguf(bytes_of(*r.gguf)).config, r.gguf->name);
  const nlohmann::json tc = read_config_files(r, out.config);
  mark_family_settings(out.config, family);
  out.flags = apply_config(r, out.config, tc, out.tokenizer.get());
  return out;
}

std::unique_ptr<LoadedModel> load_model(std::vector<FilePtr> files, const LoadOptions& options) {
  AL_CHECK(!files.empty(), "no model files given");
  auto out = std::unique_ptr<LoadedModel>(new LoadedModel());
  models::BuildOptions build;
  // Files handed over (the bindings move theirs in) belong to this model alone; files the caller
  // still holds (a test loading one file twice) are never written.
  build.own_file_bytes = std::all_of(files.begin(), files.end(), [](const FilePtr& f) { return f.use_count() == 1; });
  out->files_ = files;
  const Roles r = classify(files);
  build.format = options.format;
  build.llamacpp_gelu = options.llamacpp_gelu;
  nlohmann::json config;
  nlohmann::json gguf_meta;

  if (r.gguf) {
    AL_CHECK(!r.llama2c && r.safetensors.empty(), "a GGUF file and another checkpoint were given together");
    build.source = r.gguf->name;
    in_file(r.gguf->name, [&] {
      ModelFile g = read_gguf(bytes_of(*r.gguf));
      out->format_ = "gguf";
      if (g.config.contains("bert.pooling_type")) gguf_meta["pooling_type"] = g.config["bert.pooling_type"];
      out->model_ = models::build_from_gguf(g.config, g.tensors, build);
      out->tokenizer_ = gguf_tokenizer(g.config, r.gguf->name);
      out->tokenizer_config_ = read_gguf_tokenizer_config(g.config, r.gguf->name);
      if (g.config.contains("tokenizer.ggml.eos_token_id")) config["eos_token_id"] = g.config["tokenizer.ggml.eos_token_id"];
      const std::string start_key = g.config.value("general.architecture", "") + ".decoder_start_token_id";
      if (g.config.contains(start_key)) config["decoder_start_token_id"] = g.config[start_key];
    });
  } else if (r.llama2c) {
    AL_CHECK(r.safetensors.empty(), "a llama2.c checkpoint and safetensors were given together");
    build.source = r.llama2c->name;
    ModelFile m = read_llama2c(bytes_of(*r.llama2c));
    out->format_ = "llama2c";
    out->model_ = models::build_from_gguf(m.config, m.tensors, build);
    if (r.llama_tokenizer_bin)
      out->tokenizer_ = load_llama2c_tokenizer(r.llama_tokenizer_bin->bytes.data(), r.llama_tokenizer_bin->bytes.size(),
                                               out->model_->info().vocab_size);
  } else if (!r.safetensors.empty()) {
    AL_CHECK(r.config, "safetensors weights need their config.json");
    build.source = r.config->name;
    config = parse_json(*r.config);
    in_file(r.config->name, [&] {
    TensorMap tensors;
    if (r.index) {
      SafetensorsIndex index = read_safetensors_index(bytes_of(*r.index));
      std::vector<Bytes> shards;
      for (const File* f : r.safetensors) shards.push_back(bytes_of(*f));
      tensors = read_safetensors_shards(index, shards, &build.skipped_buffers);
    } else {
      AL_CHECK(r.safetensors.size() == 1, r.safetensors.size(),
               " safetensors files were given without model.safetensors.index.json to say how they fit together");
      tensors = read_safetensors(bytes_of(*r.safetensors[0]), &build.skipped_buffers);
    }
    out->format_ = "safetensors";
    out->model_ = models::build_from_hf_config(config, tensors, build);
    });
  } else {
    fail("no model weights among the files given (need a llama2.c .bin, a .gguf, or .safetensors + config.json)");
  }

  // The tokenizer reads the model's input: the encoder's vocabulary (source_vocab_size) for an
  // encoder–decoder; a separate target tokenizer must fit the decoder's (vocab_size).
  const models::ModelInfo& mi = out->model_->info();
  AL_CHECK(!(r.tokenizer_json && r.spm), "two tokenizers were given: ", r.tokenizer_json ? r.tokenizer_json->name : "", " and ",
           r.spm ? r.spm->name : "", " (give one)");
  SpmFamily family = SpmFamily::None;
  if (r.spm)
    out->tokenizer_ = in_file(r.spm->name, [&] {
      std::unique_ptr<Tokenizer> t = spm_tokenizer(r, config, &family);
      // A RoBERTa-family model whose folder does not name XLM-R's tokenizer would read the .model's
      // own ids, not fairseq's: refused rather than feeding the model ids off by one.
      AL_CHECK(r.vocab_json || mi.architecture != "roberta" || family == SpmFamily::XlmRoberta, r.spm->name,
               ": a SentencePiece model for a RoBERTa-family model gives ids that are not the model's unless read as XLM-R's ",
               "(fairseq's dictionary): give tokenizer_config.json with \"tokenizer_class\": \"XLMRobertaTokenizer\", a config.json ",
               "with \"model_type\": \"xlm-roberta\", or the folder's tokenizer.json");
      return t;
    });
  AL_CHECK(!r.target_vocab_json || r.spm_target, r.target_vocab_json ? r.target_vocab_json->name : "",
           ": target_vocab.json is read with Marian's target.spm, which was not given");
  if (r.spm_target) {
    AL_CHECK(mi.kind == models::ModelKind::EncoderDecoder, r.spm_target->name, ": a target tokenizer (Marian's target.spm) ",
             "reads an encoder-decoder's output, but ", mi.architecture, " is ", models::model_kind_name(mi.kind));
    out->target_tokenizer_ = in_file(r.spm_target->name, [&] { return marian_target_tokenizer(r); });
  }
  if (r.tokenizer_json)
    out->tokenizer_ = in_file(r.tokenizer_json->name, [&] {
      return load_hf_tokenizer(
          std::string_view(reinterpret_cast<const char*>(r.tokenizer_json->bytes.data()), r.tokenizer_json->bytes.size()),
          r.tokenizer_json->name, mi.source_vocab_size);
    });
  if (out->tokenizer_)
    AL_CHECK(out->tokenizer_->vocab_size() <= mi.source_vocab_size, "the tokenizer has ", out->tokenizer_->vocab_size(),
             " tokens but the model only ", mi.source_vocab_size);
  if (out->target_tokenizer_)
    AL_CHECK(out->target_tokenizer_->vocab_size() <= mi.vocab_size, "the target tokenizer has ",
             out->target_tokenizer_->vocab_size(), " tokens but the decoder only ", mi.vocab_size);
  else if (out->tokenizer_ && mi.source_vocab_size != mi.vocab_size)
    AL_CHECK(out->tokenizer_->vocab_size() <= mi.vocab_size, "this model has separate source (", mi.source_vocab_size,
             ") and target (", mi.vocab_size, ") vocabularies but only one tokenizer of ", out->tokenizer_->vocab_size(),
             " tokens was given: give the target one too");
  nlohmann::json settings = config;  // generation_config.json over config.json, as generate() reads them
  if (r.generation_config) {
    nlohmann::json gc = parse_json(*r.generation_config);
    AL_CHECK(gc.is_object(), r.generation_config->name, ": must be a JSON object");
    for (auto it = gc.begin(); it != gc.end(); ++it) settings[it.key()] = it.value();
    for (const char* k : {"eos_token_id", "bos_token_id", "decoder_start_token_id"})
      if (gc.contains(k) && !config.contains(k)) config[k] = gc[k];
    // Generation stops on every end token: generation_config.json's list (Llama 3: <|end_of_text|>,
    // <|eom_id|>, <|eot_id|>) together with config.json's.
    if (gc.contains("eos_token_id")) {
      std::vector<int> both = all_ids(config, "eos_token_id");
      for (int id : all_ids(gc, "eos_token_id"))
        if (std::find(both.begin(), both.end(), id) == both.end()) both.push_back(id);
      config["eos_token_id"] = both;
    }
  }
  const nlohmann::json tc = read_config_files(r, out->tokenizer_config_);
  mark_family_settings(out->tokenizer_config_, family);
  const generate::SpecialTokenFlags special = apply_config(r, out->tokenizer_config_, tc, out->tokenizer_.get());
  in_file(r.config ? r.config->name : "the model's metadata", [&] {
    set_prompt_format(out->model(), out->tokenizer_.get(), config, out->tokenizer_config_, special, out->prompt_);
  });
  out->embedding_ = embedding_config(out->model(), r, gguf_meta);
  out->generation_ = generation_defaults(out->model(), settings,
                                         r.generation_config ? r.generation_config->name : build.source);
  return out;
}

}  // namespace attnlens::runtime
