#include "runtime/tokenizer_config.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"

namespace attnlens::runtime {

using json = nlohmann::json;

namespace {

// A short rendering of a JSON value for messages (never a whole template or vocabulary).
std::string brief(const json& v) {
  std::string s = v.dump();
  if (s.size() > 60) s = s.substr(0, 57) + "...";
  return s;
}

bool is_role(const std::string& key) {
  for (const char* r : kSpecialTokenRoles)
    if (key == r) return true;
  return false;
}

// A special token: a string, an AddedToken object {"content": …}, or null (none).
std::optional<std::string> token_text(const json& v, const std::string& source, const std::string& key) {
  if (v.is_null()) return std::nullopt;
  if (v.is_string()) return v.get<std::string>();
  if (v.is_object() && v.contains("content") && v.at("content").is_string()) return v.at("content").get<std::string>();
  fail(source, ": ", key, " must be a token (a string or an AddedToken object with \"content\"), got ", brief(v));
}

void set_special(TokenizerConfig& c, const std::string& role, std::string text) {
  for (auto& [r, t] : c.special_tokens)
    if (r == role) {
      t = std::move(text);
      return;
    }
  c.special_tokens.emplace_back(role, std::move(text));
}

void remove_special(TokenizerConfig& c, const std::string& role) {
  c.special_tokens.erase(std::remove_if(c.special_tokens.begin(), c.special_tokens.end(),
                                        [&](const auto& p) { return p.first == role; }),
                         c.special_tokens.end());
}

std::optional<bool> flag(const json& v, const std::string& source, const char* key) {
  if (v.is_null()) return std::nullopt;
  AL_CHECK(v.is_boolean(), source, ": ", key, " must be true or false, got ", brief(v));
  return v.get<bool>();
}

// transformers writes int(1e30) (VERY_LARGE_INTEGER) when a tokenizer has no length limit.
constexpr double kNoLimit = 1e29;

std::optional<int64_t> max_length(const json& v, const std::string& source) {
  if (v.is_null()) return std::nullopt;
  AL_CHECK(v.is_number(), source, ": model_max_length must be a number, got ", brief(v));
  const double x = v.get<double>();
  if (x >= kNoLimit) return std::nullopt;
  AL_CHECK(x >= 1 && x <= 9.007199254740992e15 && std::floor(x) == x, source,
           ": model_max_length must be a positive integer (or transformers' 1e30 for none), got ", brief(v));
  return int64_t(x);
}

// The templates, "default" first (the order the names were given otherwise).
void sort_templates(std::vector<ChatTemplate>& t) {
  std::stable_sort(t.begin(), t.end(), [](const ChatTemplate& a, const ChatTemplate& b) {
    return a.name == "default" && b.name != "default";
  });
}

void read_chat_templates(TokenizerConfig& c, const json& v, const std::string& source, const char* key) {
  if (v.is_null()) return;
  if (v.is_string()) {
    set_chat_template(c, "default", v.get<std::string>(), source);
    return;
  }
  AL_CHECK(v.is_array(), source, ": ", key, " must be a template (a string) or a list of {\"name\", \"template\"}, got ",
           brief(v));
  for (size_t i = 0; i < v.size(); ++i) {
    const json& e = v[i];
    AL_CHECK(e.is_object() && e.contains("name") && e.at("name").is_string() && e.contains("template") &&
                 e.at("template").is_string(),
             source, ": ", key, "[", i, "] must be {\"name\": string, \"template\": string}, got ", brief(e));
    const std::string name = e.at("name").get<std::string>();
    AL_CHECK(!name.empty(), source, ": ", key, "[", i, "].name is empty");
    AL_CHECK(!c.chat_template(name), source, ": ", key, " names the template \"", name, "\" twice");
    c.chat_templates.push_back({name, e.at("template").get<std::string>()});
  }
  sort_templates(c.chat_templates);
}

void add_source(TokenizerConfig& c, const std::string& source) {
  if (std::find(c.sources.begin(), c.sources.end(), source) == c.sources.end()) c.sources.push_back(source);
}

}  // namespace

const std::string* TokenizerConfig::special(const char* role) const {
  for (const auto& [r, t] : special_tokens)
    if (r == role) return &t;
  return nullptr;
}

const ChatTemplate* TokenizerConfig::chat_template(const std::string& name) const {
  for (const ChatTemplate& t : chat_templates)
    if (t.name == name) return &t;
  return nullptr;
}

std::string TokenizerConfig::source_names() const {
  std::string s;
  for (const std::string& n : sources) s += (s.empty() ? "" : ", ") + n;
  return s.empty() ? "the tokenizer" : s;
}

void read_tokenizer_config(TokenizerConfig& c, const json& j, const std::string& source) {
  AL_CHECK(j.is_object(), source, ": a tokenizer_config.json must be a JSON object");
  add_source(c, source);
  for (const auto& [key, v] : j.items()) {
    if (is_role(key)) {
      if (auto t = token_text(v, source, key)) set_special(c, key, *t);
      else remove_special(c, key);
    } else if (key == "add_bos_token") {
      c.add_bos = flag(v, source, "add_bos_token");
    } else if (key == "add_eos_token") {
      c.add_eos = flag(v, source, "add_eos_token");
    } else if (key == "model_max_length") {
      c.model_max_length = max_length(v, source);
    } else if (key == "chat_template") {
      read_chat_templates(c, v, source, "chat_template");
    } else if (key == "additional_special_tokens" || key == "added_tokens_decoder") {
      // Checked against the vocabulary in resolve_special_tokens (tokenizer.json's added tokens
      // are what splits them out of text).
      if (key == "additional_special_tokens")
        AL_CHECK(v.is_null() || v.is_array(), source, ": additional_special_tokens must be a list, got ", brief(v));
      else
        AL_CHECK(v.is_null() || v.is_object(), source, ": added_tokens_decoder must be an object, got ", brief(v));
    } else if (key == "split_special_tokens") {
      // true would tokenize special tokens' text like ordinary text: AttnLens always splits them out.
      AL_CHECK(!v.is_boolean() || !v.get<bool>(), source,
               ": split_special_tokens = true is not supported (special tokens in text are always recognised)");
    } else {
      c.not_applied.push_back(key);
    }
  }
}

void read_special_tokens_map(TokenizerConfig& c, const json& j, const std::string& source) {
  AL_CHECK(j.is_object(), source, ": a special_tokens_map.json must be a JSON object");
  add_source(c, source);
  for (const auto& [key, v] : j.items()) {
    if (is_role(key)) {
      if (c.special(key.c_str())) continue;  // tokenizer_config.json says it first
      if (auto t = token_text(v, source, key)) set_special(c, key, *t);
    } else if (key == "additional_special_tokens") {
      AL_CHECK(v.is_null() || v.is_array(), source, ": additional_special_tokens must be a list, got ", brief(v));
    } else {
      c.not_applied.push_back(key);
    }
  }
}

void set_chat_template(TokenizerConfig& c, const std::string& name, std::string text, const std::string& source) {
  add_source(c, source);
  for (ChatTemplate& t : c.chat_templates)
    if (t.name == name) {
      t.source = std::move(text);
      return;
    }
  c.chat_templates.push_back({name, std::move(text)});
  sort_templates(c.chat_templates);
}

void read_chat_template_json(TokenizerConfig& c, const json& j, const std::string& source) {
  AL_CHECK(j.is_object() && j.contains("chat_template"), source, ": expected {\"chat_template\": …}");
  for (const auto& [key, v] : j.items())
    if (key == "chat_template") {
      // The file's templates replace those of tokenizer_config.json with the same names.
      TokenizerConfig mine;
      read_chat_templates(mine, v, source, "chat_template");
      for (ChatTemplate& t : mine.chat_templates) set_chat_template(c, t.name, std::move(t.source), source);
    } else {
      c.not_applied.push_back(key);
    }
}

TokenizerConfig read_gguf_tokenizer_config(const json& meta, const std::string& source) {
  TokenizerConfig c;
  add_source(c, source);
  const json* tokens = meta.contains("tokenizer.ggml.tokens") ? &meta.at("tokenizer.ggml.tokens") : nullptr;
  if (tokens && !tokens->is_array()) tokens = nullptr;
  auto id_of = [&](const std::string& key) -> int {
    if (!meta.contains(key)) return -1;
    const json& v = meta.at(key);
    AL_CHECK(v.is_number_integer() && v.get<int64_t>() >= -1 && v.get<int64_t>() < int64_t(1) << 31, source, ": ", key,
             " must be a token id, got ", brief(v));
    const int id = v.get<int>();
    AL_CHECK(id < 0 || (tokens && size_t(id) < tokens->size()), source, ": ", key, " = ", id,
             " is not a token of tokenizer.ggml.tokens (", tokens ? tokens->size() : 0, " tokens)");
    return id;
  };
  // llama.cpp's key names (gguf-py constants: tokenizer.ggml.seperator_token_id is spelled so).
  const std::pair<const char*, const char*> roles[] = {
      {"bos_token", "tokenizer.ggml.bos_token_id"},  {"eos_token", "tokenizer.ggml.eos_token_id"},
      {"unk_token", "tokenizer.ggml.unknown_token_id"}, {"sep_token", "tokenizer.ggml.seperator_token_id"},
      {"pad_token", "tokenizer.ggml.padding_token_id"}, {"cls_token", "tokenizer.ggml.cls_token_id"},
      {"mask_token", "tokenizer.ggml.mask_token_id"}};
  for (const auto& [role, key] : roles) {
    const int id = id_of(key);
    if (id >= 0 && (*tokens)[size_t(id)].is_string()) set_special(c, role, (*tokens)[size_t(id)].get<std::string>());
  }
  for (const char* key : {"tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id"}) {
    const int id = id_of(key);
    if (id >= 0) c.extra_stop_ids.push_back(id);
  }
  if (meta.contains("tokenizer.ggml.add_bos_token")) c.add_bos = flag(meta.at("tokenizer.ggml.add_bos_token"), source, "tokenizer.ggml.add_bos_token");
  if (meta.contains("tokenizer.ggml.add_eos_token")) c.add_eos = flag(meta.at("tokenizer.ggml.add_eos_token"), source, "tokenizer.ggml.add_eos_token");
  // Templates: tokenizer.chat_template (the default) and tokenizer.chat_template.NAME (gguf-py
  // writes the names in tokenizer.chat_templates too).
  const std::string prefix = "tokenizer.chat_template";
  for (const auto& [key, v] : meta.items()) {
    if (key.compare(0, prefix.size(), prefix) != 0) continue;
    if (key == "tokenizer.chat_templates") {
      AL_CHECK(v.is_array(), source, ": tokenizer.chat_templates must be a list of names, got ", brief(v));
      for (const json& n : v) {
        AL_CHECK(n.is_string(), source, ": tokenizer.chat_templates must be a list of names, got ", brief(v));
        AL_CHECK(meta.contains(prefix + "." + n.get<std::string>()), source, ": tokenizer.chat_templates names \"",
                 n.get<std::string>(), "\" but there is no ", prefix, ".", n.get<std::string>());
      }
      continue;
    }
    std::string name;
    if (key == prefix) name = "default";
    else if (key.size() > prefix.size() + 1 && key[prefix.size()] == '.') name = key.substr(prefix.size() + 1);
    else continue;
    AL_CHECK(v.is_string(), source, ": ", key, " must be a string (a Jinja template), got ", brief(v));
    set_chat_template(c, name, v.get<std::string>(), source);
  }
  return c;
}

int special_token_id(const TokenizerConfig& c, const Tokenizer& tok, const char* role) {
  const std::string* text = c.special(role);
  return text ? tok.token_id(*text) : -1;
}

namespace {

// What the tokenizer adds by itself around a text: BOS first / EOS last.
struct Added {
  bool bos = false, eos = false;
};

Added added_by_tokenizer(const Tokenizer& tok, int bos, int eos) {
  // Any short text shows the post-processor's template.
  const std::vector<int> plain = tok.encode("a", false), special = tok.encode("a", true);
  Added a;
  a.bos = bos >= 0 && !special.empty() && special.front() == bos && (plain.empty() || plain.front() != bos);
  a.eos = eos >= 0 && !special.empty() && special.back() == eos && (plain.empty() || plain.back() != eos);
  return a;
}

}  // namespace

generate::SpecialTokenFlags resolve_special_tokens(const TokenizerConfig& c, const Tokenizer& tok) {
  const std::string where = c.source_names();
  for (const auto& [role, text] : c.special_tokens)
    AL_CHECK(tok.token_id(text) >= 0, where, ": ", role, " \"", text, "\" is not a token of the vocabulary");

  generate::SpecialTokenFlags f;
  f.bos = c.special("bos_token") ? tok.token_id(*c.special("bos_token")) : tok.bos_id();
  f.eos = c.special("eos_token") ? tok.token_id(*c.special("eos_token")) : tok.eos_id();
  if (!c.add_bos && !c.add_eos) return f;
  AL_CHECK(!c.add_bos.value_or(false) || f.bos >= 0, where, ": add_bos_token is true but there is no BOS token");
  AL_CHECK(!c.add_eos.value_or(false) || f.eos >= 0, where, ": add_eos_token is true but there is no EOS token");
  const Added own = added_by_tokenizer(tok, f.bos, f.eos);
  f.add_bos = c.add_bos.value_or(own.bos);
  f.add_eos = c.add_eos.value_or(own.eos);
  f.override = f.add_bos != own.bos || f.add_eos != own.eos;
  return f;
}

// tokenizer_config.json's own lists of added tokens must agree with the vocabulary.
void check_added_tokens(const json& j, const Tokenizer& tok, const std::string& source) {
  if (j.contains("added_tokens_decoder") && j.at("added_tokens_decoder").is_object()) {
    for (const auto& [key, v] : j.at("added_tokens_decoder").items()) {
      auto text = token_text(v, source, "added_tokens_decoder[\"" + key + "\"]");
      char* end = nullptr;
      const long id = std::strtol(key.c_str(), &end, 10);
      AL_CHECK(end && *end == 0 && !key.empty() && id >= 0, source, ": added_tokens_decoder key \"", key,
               "\" is not a token id");
      AL_CHECK(text && id < tok.vocab_size() && tok.token_id(*text) == int(id), source, ": added_tokens_decoder[\"", key,
               "\"] is ", text ? "\"" + *text + "\"" : "null", " but the vocabulary has ",
               id < tok.vocab_size() ? "\"" + tok.piece(int(id)) + "\" there" : "fewer tokens");
    }
  }
  if (j.contains("additional_special_tokens") && j.at("additional_special_tokens").is_array()) {
    const json& list = j.at("additional_special_tokens");
    for (size_t i = 0; i < list.size(); ++i) {
      auto text = token_text(list[i], source, "additional_special_tokens[" + std::to_string(i) + "]");
      AL_CHECK(text && tok.token_id(*text) >= 0, source, ": additional_special_tokens[", i, "] ",
               text ? "\"" + *text + "\"" : "null", " is not a token of the vocabulary");
    }
  }
}

}  // namespace attnlens::runtime
