// A tokenizer's configuration files: the bytes as tokenizer_config.json (special tokens as strings
// or AddedToken objects, add_bos/add_eos, model_max_length, chat_template as text or a list of named
// templates, added_tokens_decoder), as special_tokens_map.json, as chat_template.json and as a
// chat_template.jinja — each read alone, then loaded beside a fixed tokenizer.json
// (runtime::load_tokenizer_files: the special and added tokens checked against its vocabulary, the
// add_bos/add_eos flags resolved), and text encoded with the flags.
#include "fuzz_util.h"
#include "core/json.h"
#include "runtime/tokenizer_config.h"

namespace {

const attnlens::runtime::FilePtr& vocabulary() {
  static const auto f = fuzz::repo_file("tests/fixtures/tokenizers/llama_bpe_tokenizer.json", "tokenizer.json");
  return f;
}

void load_beside_vocabulary(const char* name, const uint8_t* data, size_t size) {
  fuzz::expect_clean([&] {
    const auto t = attnlens::runtime::load_tokenizer_files({vocabulary(), fuzz::file(name, data, size)});
    for (const auto& ct : t.config.chat_templates) (void)t.config.chat_template(ct.name);
    fuzz::exercise_tokenizer(*t.tokenizer, t.flags);
  });
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace attnlens;
  fuzz::expect_clean([&] {
    runtime::TokenizerConfig c;
    const nlohmann::json j = parse_json(data, size, "tokenizer_config.json");
    runtime::read_tokenizer_config(c, j, "tokenizer_config.json");
    runtime::read_special_tokens_map(c, j, "special_tokens_map.json");
    runtime::read_chat_template_json(c, j, "chat_template.json");
    (void)c.source_names();
  });
  load_beside_vocabulary("tokenizer_config.json", data, size);
  load_beside_vocabulary("special_tokens_map.json", data, size);
  load_beside_vocabulary("chat_template.json", data, size);
  load_beside_vocabulary("tool_use.jinja", data, size);
  return 0;
}
