// What a tokenizer's configuration adds to its vocabulary: the text of its special tokens, whether
// tokenizing a text adds BOS / EOS, its length limit, and its chat templates.
//
//   Hugging Face folder   tokenizer_config.json (bos_token … as strings or AddedToken objects,
//                         add_bos_token, add_eos_token, model_max_length, chat_template as a string
//                         or a list of {name, template}), special_tokens_map.json (special tokens
//                         the config lacks), chat_template.jinja (the default template; any other
//                         NAME.jinja is the template NAME), chat_template.json ({"chat_template"})
//   GGUF                  tokenizer.chat_template, tokenizer.chat_template.NAME,
//                         tokenizer.ggml.{bos,eos,unknown,padding,seperator,cls,mask}_token_id (the
//                         token's text from tokenizer.ggml.tokens), tokenizer.ggml.add_bos_token /
//                         add_eos_token, tokenizer.ggml.eot_token_id / eom_token_id (generation
//                         stops on them too)
//
// The templates are rendered in JavaScript (web/src/chat.mjs, with @huggingface/jinja); the engine
// reads them, checks the special tokens against the vocabulary and applies add_bos/add_eos.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "generate/generator.h"
#include "tokenizers/tokenizer.h"

namespace attnlens::runtime {

struct ChatTemplate {
  std::string name;    // "default", "tool_use", …
  std::string source;  // Jinja text
};

// Special-token roles, as transformers names them (and as chat templates see them).
inline constexpr const char* kSpecialTokenRoles[] = {"bos_token", "eos_token", "unk_token", "sep_token",
                                                     "pad_token", "cls_token", "mask_token"};

struct TokenizerConfig {
  std::vector<std::pair<std::string, std::string>> special_tokens;  // role → text (roles of kSpecialTokenRoles)
  std::optional<bool> add_bos;             // absent: the tokenizer's own choice (its post-processor)
  std::optional<bool> add_eos;
  std::optional<int64_t> model_max_length; // absent, or transformers' "no limit" sentinel (1e30)
  std::vector<ChatTemplate> chat_templates;  // "default" first when there is one
  std::vector<int> extra_stop_ids;         // GGUF end-of-turn / end-of-message tokens
  std::vector<std::string> not_applied;    // settings read but not used here (reported in model.info)
  std::vector<std::string> sources;        // the files it came from, for messages

  const std::string* special(const char* role) const;  // null when the config has no such token
  const ChatTemplate* chat_template(const std::string& name) const;
  std::string source_names() const;
};

// tokenizer_config.json. Wrong types are errors naming the file and the key.
void read_tokenizer_config(TokenizerConfig& c, const nlohmann::json& j, const std::string& source);
// special_tokens_map.json: the special tokens tokenizer_config.json did not name.
void read_special_tokens_map(TokenizerConfig& c, const nlohmann::json& j, const std::string& source);
// chat_template.jinja / NAME.jinja (text) and chat_template.json: replace the template of that name.
void set_chat_template(TokenizerConfig& c, const std::string& name, std::string source_text, const std::string& source);
void read_chat_template_json(TokenizerConfig& c, const nlohmann::json& j, const std::string& source);
// A GGUF's tokenizer metadata.
TokenizerConfig read_gguf_tokenizer_config(const nlohmann::json& meta, const std::string& source);

// Checks the configuration against the vocabulary it goes with (every special token and every
// added token of tokenizer_config.json must be a token of it; add_bos/add_eos need that token) and
// returns how tokenizing with special tokens honours add_bos_token / add_eos_token.
generate::SpecialTokenFlags resolve_special_tokens(const TokenizerConfig& c, const Tokenizer& tok);

// tokenizer_config.json's added_tokens_decoder and additional_special_tokens must name tokens of
// the vocabulary (at the ids it gives): an error names the first that does not.
void check_added_tokens(const nlohmann::json& tokenizer_config, const Tokenizer& tok, const std::string& source);

// The id of a special token of the configuration (-1 when it has none).
int special_token_id(const TokenizerConfig& c, const Tokenizer& tok, const char* role);

// A tokenizer with its configuration: what loadTokenizer() gives JavaScript.
struct LoadedTokenizer {
  std::unique_ptr<Tokenizer> tokenizer;
  TokenizerConfig config;
  generate::SpecialTokenFlags flags;
};

}  // namespace attnlens::runtime
