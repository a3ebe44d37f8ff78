#include "runtime/loader.h"

#include <algorithm>
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
  const File* generation_config = nullptr;
  // The tokenizer's configuration (tokenizer_config.h).
  const File* tokenizer_config = nullptr;
  const File* special_tokens_map = nullptr;
  const File* chat_template_json = nullptr;
  std::vector<const File*> jinja;  // chat_template.jinja, NAME.jinja
};

bool ends_with(const std::string& s, const char* suffix) {
  const size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
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
        if (name == "config.json") assign(r.config, f, "config.json");
        else if (name == "tokenizer.json") assign(r.tokenizer_json, f, "tokenizer.json");
        else if (name == "generation_config.json") assign(r.generation_config, f, "generation_config.json");
        else if (name == "tokenizer_config.json") assign(r.tokenizer_config, f, "tokenizer_config.json");
        else if (name == "special_tokens_map.json") assign(r.special_tokens_map, f, "special_tokens_map.json");
        else if (name == "chat_template.json") assign(r.chat_template_json, f, "chat_template.json");
        else if (name == "vocab.json") assign(r.vocab_json, f, "vocab.json");
        else {  // by content: a tokenizer.json has "model"; a config.json "architectures" or "model_type";
                // a tokenizer_config.json "tokenizer_class", "chat_template" or "added_tokens_decoder"
          // (the member names only: a DOM of a 10 MB tokenizer.json took 2/3 of its loading time)
          const std::string names = tok::json_member_names(
              std::string_view(reinterpret_cast<const char*>(f.bytes.data()), f.bytes.size()), f.name + ": ");
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

// The SentencePiece model of the files (Marian's when a vocab.json comes with it).
std::unique_ptr<Tokenizer> spm_tokenizer(const Roles& r) {
  const SentencePieceModelProto m = read_sentencepiece_model(bytes_of(*r.spm));
  if (!r.vocab_json) return make_sentencepiece_model_tokenizer(m);
  return make_marian_tokenizer(m, parse_json(*r.vocab_json), r.vocab_json->name);
}

void set_prompt_format(const std::string& arch, const Tokenizer* tok, const nlohmann::json& config,
                       const TokenizerConfig& tc, const generate::SpecialTokenFlags& special, generate::PromptFormat& p) {
  const int bos = tok ? tok->bos_id() : -1, eos = tok ? tok->eos_id() : -1;
  p.special = special;
  if (arch == "seq2seq") {
    p.add_special = false;
    p.eos_token = first_id(config, "eos_token_id") >= 0 ? first_id(config, "eos_token_id") : eos;
    p.decoder_start_token = first_id(config, "decoder_start_token_id") >= 0 ? first_id(config, "decoder_start_token_id")
                                                                            : first_id(config, "bos_token_id");
    const auto suffix = config.find("source_suffix_eos");
    AL_CHECK(suffix == config.end() || suffix->is_boolean(), "config.json: source_suffix_eos must be true or false, got ",
             suffix == config.end() ? "" : json_brief(*suffix));
    p.source_suffix_eos = suffix == config.end() ? true : suffix->get<bool>();
    p.stop_tokens = {p.eos_token};
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

}  // namespace

const Tokenizer& LoadedModel::require_tokenizer() const {
  AL_CHECK(tokenizer_, "no tokenizer was loaded with this model (give tokenizer.bin, tokenizer.json or a GGUF with one)");
  return *tokenizer_;
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
  AL_CHECK(!r.llama2c && r.safetensors.empty() && !r.index && !r.config, "a tokenizer was asked for, but model files (",
           r.llama2c ? r.llama2c->name : !r.safetensors.empty() ? r.safetensors[0]->name : r.index ? r.index->name : r.config->name,
           ") were given: give the tokenizer file and its configuration files");
  const File* main = r.tokenizer_json ? r.tokenizer_json : r.llama_tokenizer_bin ? r.llama_tokenizer_bin
                   : r.spm ? r.spm : r.spm_target ? r.spm_target : r.gguf;
  AL_CHECK(main, "no tokenizer among the files given (expected tokenizer.json, tokenizer.bin, a SentencePiece .model or a GGUF)");
  AL_CHECK(int(!!r.tokenizer_json) + int(!!r.llama_tokenizer_bin) + int(!!r.gguf) + int(!!r.spm) + int(!!r.spm_target) == 1,
           "several tokenizers were given: give one (tokenizer.json, tokenizer.bin, a SentencePiece .model or a GGUF) and ",
           "its configuration files");
  LoadedTokenizer out;
  out.tokenizer = main == r.spm ? in_file(r.spm->name, [&] { return spm_tokenizer(r); }) : load_tokenizer(*main, vocab_size);
  if (r.gguf) out.config = read_gguf_tokenizer_config(read_gguf(bytes_of(*r.gguf)).config, r.gguf->name);
  const nlohmann::json tc = read_config_files(r, out.config);
  out.flags = apply_config(r, out.config, tc, out.tokenizer.get());
  return out;
}

std::unique_ptr<LoadedModel> load_model(std::vector<FilePtr> files, const LoadOptions& options) {
  AL_CHECK(!files.empty(), "no model files given");
  auto out = std::unique_ptr<LoadedModel>(new LoadedModel());
  out->files_ = files;
  const Roles r = classify(files);
  models::BuildOptions build;
  build.format = options.format;
  build.llamacpp_gelu = options.llamacpp_gelu;
  nlohmann::json config;

  if (r.gguf) {
    AL_CHECK(!r.llama2c && r.safetensors.empty(), "a GGUF file and another checkpoint were given together");
    build.source = r.gguf->name;
    in_file(r.gguf->name, [&] {
      ModelFile g = read_gguf(bytes_of(*r.gguf));
      out->format_ = "gguf";
      out->model_ = models::build_from_gguf(g.config, g.tensors, build);
      out->tokenizer_ = gguf_tokenizer(g.config, r.gguf->name);
      out->tokenizer_config_ = read_gguf_tokenizer_config(g.config, r.gguf->name);
      if (g.config.contains("tokenizer.ggml.eos_token_id")) config["eos_token_id"] = g.config["tokenizer.ggml.eos_token_id"];
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

  AL_CHECK(!(r.tokenizer_json && r.spm), "two tokenizers were given: ", r.tokenizer_json ? r.tokenizer_json->name : "", " and ",
           r.spm ? r.spm->name : "", " (give one)");
  if (r.spm_target)
    fail(r.spm_target->name, ": a separate target vocabulary (Marian's target.spm) needs an encoder-decoder model that ",
         "reads its output with a second tokenizer");
  if (r.spm) out->tokenizer_ = in_file(r.spm->name, [&] { return spm_tokenizer(r); });
  if (r.tokenizer_json)
    out->tokenizer_ = in_file(r.tokenizer_json->name, [&] {
      return load_hf_tokenizer(
          std::string_view(reinterpret_cast<const char*>(r.tokenizer_json->bytes.data()), r.tokenizer_json->bytes.size()),
          r.tokenizer_json->name, out->model_->info().vocab_size);
    });
  if (out->tokenizer_)
    AL_CHECK(out->tokenizer_->vocab_size() <= out->model_->info().vocab_size, "the tokenizer has ",
             out->tokenizer_->vocab_size(), " tokens but the model only ", out->model_->info().vocab_size);
  if (r.generation_config) {
    nlohmann::json gc = parse_json(*r.generation_config);
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
  const generate::SpecialTokenFlags special = apply_config(r, out->tokenizer_config_, tc, out->tokenizer_.get());
  in_file(r.config ? r.config->name : "the model's metadata", [&] {
    set_prompt_format(out->model_->info().architecture, out->tokenizer_.get(), config, out->tokenizer_config_, special,
                      out->prompt_);
  });
  return out;
}

}  // namespace attnlens::runtime
