// The tokenizer's configuration (runtime/tokenizer_config.h): tokenizer_config.json,
// special_tokens_map.json, chat_template.jinja and a GGUF's metadata → special tokens' text,
// add_bos/add_eos applied to tokenization, length limit, chat templates, end tokens; bad values are
// errors naming the file and the key.
#include <algorithm>
#include <functional>

#include "core/error.h"
#include "runtime/loader.h"
#include "test_util.h"

using namespace attnlens;
using namespace attnlens::runtime;
using json = nlohmann::json;
using Catch::Matchers::Contains;

namespace {

FilePtr file(const std::string& path, const std::string& name = "") {
  auto f = std::make_shared<File>();
  f->name = name.empty() ? path.substr(path.find_last_of('/') + 1) : name;
  f->bytes = testutil::read_bytes(path);
  return f;
}

FilePtr text(const std::string& name, const std::string& content) {
  auto f = std::make_shared<File>();
  f->name = name;
  f->bytes.assign(content.begin(), content.end());
  return f;
}

TokenizerConfig config_of(const json& j) {
  TokenizerConfig c;
  read_tokenizer_config(c, j, "tokenizer_config.json");
  return c;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

const std::string kjv = testutil::source_dir() + "/models/kjv-gpt2/";
std::vector<FilePtr> kjv_files() {
  return {file(kjv + "config.json"), file(kjv + "model.safetensors"), file(kjv + "tokenizer.json")};
}
// The Llama 2 tokenizer.json (SentencePiece BPE; its post-processor adds <s>).
const std::string llama_json = testutil::fixture_path("tokenizers/llama_bpe_tokenizer.json");

}  // namespace

TEST_CASE("tokenizer_config.json: special tokens as strings or AddedToken objects, flags, length, templates", "[runtime][chat]") {
  TokenizerConfig c = config_of(json::parse(R"({
    "bos_token": {"__type": "AddedToken", "content": "<s>", "lstrip": false, "normalized": true},
    "eos_token": "</s>", "pad_token": null, "unk_token": "<unk>",
    "add_bos_token": true, "add_eos_token": false, "model_max_length": 131072,
    "chat_template": [{"name": "tool_use", "template": "T"}, {"name": "default", "template": "D"}],
    "tokenizer_class": "LlamaTokenizer", "clean_up_tokenization_spaces": false})"));
  REQUIRE(c.special("bos_token"));
  CHECK(*c.special("bos_token") == "<s>");
  CHECK(*c.special("eos_token") == "</s>");
  CHECK(c.special("pad_token") == nullptr);  // null: none
  CHECK(c.add_bos == true);
  CHECK(c.add_eos == false);
  CHECK(c.model_max_length == 131072);
  REQUIRE(c.chat_templates.size() == 2);
  CHECK(c.chat_templates[0].name == "default");  // default first
  CHECK(c.chat_templates[0].source == "D");
  CHECK(c.chat_template("tool_use")->source == "T");
  CHECK(c.not_applied == std::vector<std::string>{"clean_up_tokenization_spaces", "tokenizer_class"});

  // transformers' "no limit" sentinel, as a float or as the integer it writes.
  CHECK(!config_of(json::parse(R"({"model_max_length": 1e30})")).model_max_length);
  CHECK(!config_of(json::parse(R"({"model_max_length": 1000000000000000019884624838656})")).model_max_length);
  // A single template is the default one.
  CHECK(config_of(json::parse(R"({"chat_template": "{{ x }}"})")).chat_template("default")->source == "{{ x }}");
}

TEST_CASE("tokenizer_config.json: wrong values are errors naming the file and the key", "[runtime][chat]") {
  auto err = [](const char* j) { return error_of([&] { config_of(json::parse(j)); }); };
  CHECK_THAT(err(R"({"eos_token": 5})"), Contains("tokenizer_config.json: eos_token must be a token"));
  CHECK_THAT(err(R"({"bos_token": {"id": 1}})"), Contains("bos_token must be a token"));
  CHECK_THAT(err(R"({"add_bos_token": "yes"})"), Contains("tokenizer_config.json: add_bos_token must be true or false"));
  CHECK_THAT(err(R"({"model_max_length": -3})"), Contains("model_max_length must be a positive integer"));
  CHECK_THAT(err(R"({"model_max_length": 2.5})"), Contains("model_max_length must be a positive integer"));
  CHECK_THAT(err(R"({"chat_template": 3})"), Contains("chat_template must be a template"));
  CHECK_THAT(err(R"({"chat_template": [{"name": "a", "template": "x"}, {"name": "b"}]})"),
             Contains("chat_template[1] must be {\"name\": string, \"template\": string}"));
  CHECK_THAT(err(R"({"chat_template": [{"name": "a", "template": "x"}, {"name": "a", "template": "y"}]})"),
             Contains("names the template \"a\" twice"));
  CHECK_THAT(err(R"({"split_special_tokens": true})"), Contains("split_special_tokens = true is not supported"));
  CHECK_THAT(err(R"([1, 2])"), Contains("must be a JSON object"));
}

TEST_CASE("special_tokens_map.json fills in what tokenizer_config.json does not name", "[runtime][chat]") {
  TokenizerConfig c = config_of(json::parse(R"({"eos_token": "<|im_end|>"})"));
  read_special_tokens_map(c, json::parse(R"({"eos_token": "<|endoftext|>", "pad_token": {"content": "<|endoftext|>"},
                                             "additional_special_tokens": ["<|im_start|>"]})"),
                          "special_tokens_map.json");
  CHECK(*c.special("eos_token") == "<|im_end|>");
  CHECK(*c.special("pad_token") == "<|endoftext|>");
  CHECK(c.source_names() == "tokenizer_config.json, special_tokens_map.json");
}

TEST_CASE("GGUF metadata: template(s), special tokens' text, flags, end-of-turn tokens", "[runtime][chat]") {
  json meta = json::parse(R"({
    "tokenizer.ggml.tokens": ["<unk>", "<s>", "</s>", "<|eot_id|>", "a"],
    "tokenizer.ggml.bos_token_id": 1, "tokenizer.ggml.eos_token_id": 2, "tokenizer.ggml.unknown_token_id": 0,
    "tokenizer.ggml.eot_token_id": 3, "tokenizer.ggml.add_bos_token": true, "tokenizer.ggml.add_eos_token": false,
    "tokenizer.chat_template": "D", "tokenizer.chat_template.tool_use": "T", "tokenizer.chat_templates": ["tool_use"]})");
  TokenizerConfig c = read_gguf_tokenizer_config(meta, "m.gguf");
  CHECK(*c.special("bos_token") == "<s>");
  CHECK(*c.special("eos_token") == "</s>");
  CHECK(*c.special("unk_token") == "<unk>");
  CHECK(c.add_bos == true);
  CHECK(c.add_eos == false);
  CHECK(c.extra_stop_ids == std::vector<int>{3});
  REQUIRE(c.chat_templates.size() == 2);
  CHECK(c.chat_templates[0].name == "default");
  CHECK(c.chat_template("tool_use")->source == "T");

  meta["tokenizer.ggml.eos_token_id"] = 9;
  CHECK_THAT(error_of([&] { read_gguf_tokenizer_config(meta, "m.gguf"); }),
             Contains("m.gguf: tokenizer.ggml.eos_token_id = 9 is not a token of tokenizer.ggml.tokens (5 tokens)"));
  meta["tokenizer.ggml.eos_token_id"] = 2;
  meta["tokenizer.chat_template"] = 7;
  CHECK_THAT(error_of([&] { read_gguf_tokenizer_config(meta, "m.gguf"); }),
             Contains("m.gguf: tokenizer.chat_template must be a string"));
  meta["tokenizer.chat_template"] = "D";
  meta["tokenizer.chat_templates"] = {"rag"};
  CHECK_THAT(error_of([&] { read_gguf_tokenizer_config(meta, "m.gguf"); }),
             Contains("tokenizer.chat_templates names \"rag\" but there is no tokenizer.chat_template.rag"));
}

TEST_CASE("add_bos_token / add_eos_token decide the special tokens of a tokenization (Llama 2 tokenizer.json)", "[runtime][chat]") {
  SKIP_UNLESS_FILE(llama_json);
  const std::string sample = "Hello world";
  // tokenizer.json alone: its post-processor puts <s> (1) first.
  LoadedTokenizer plain = load_tokenizer_files({file(llama_json, "tokenizer.json")});
  const std::vector<int> body = plain.tokenizer->encode(sample, false);
  REQUIRE(!body.empty());
  CHECK(!plain.flags.override);
  CHECK(generate::encode_text(*plain.tokenizer, plain.flags, sample, true).front() == 1);

  auto load = [&](const std::string& config) {
    return load_tokenizer_files({file(llama_json, "tokenizer.json"), text("tokenizer_config.json", config)});
  };
  // What the post-processor does already: nothing to override.
  LoadedTokenizer same = load(R"({"add_bos_token": true, "add_eos_token": false, "bos_token": "<s>", "eos_token": "</s>"})");
  CHECK(!same.flags.override);
  // No BOS, EOS last: [body…, </s>]
  LoadedTokenizer eos = load(R"({"add_bos_token": false, "add_eos_token": true, "bos_token": "<s>", "eos_token": "</s>"})");
  CHECK(eos.flags.override);
  std::vector<int> want = body;
  want.push_back(2);
  CHECK(generate::encode_text(*eos.tokenizer, eos.flags, sample, true) == want);
  CHECK(generate::encode_text(*eos.tokenizer, eos.flags, sample, false) == body);  // without special tokens: untouched
  // Only add_eos_token given: BOS stays as the tokenizer adds it.
  LoadedTokenizer both = load(R"({"add_eos_token": true})");
  want.insert(want.begin(), 1);
  CHECK(generate::encode_text(*both.tokenizer, both.flags, sample, true) == want);

  // A special token the vocabulary lacks, an added token at the wrong id, a flag without its token.
  CHECK_THAT(error_of([&] { load(R"({"eos_token": "<|im_end|>"})"); }),
             Contains("tokenizer_config.json: eos_token \"<|im_end|>\" is not a token of the vocabulary"));
  CHECK_THAT(error_of([&] { load(R"({"added_tokens_decoder": {"5": {"content": "</s>", "special": true}}})"); }),
             Contains("tokenizer_config.json: added_tokens_decoder[\"5\"] is \"</s>\" but the vocabulary has"));
  CHECK_THAT(error_of([&] { load(R"({"additional_special_tokens": ["<|nope|>"]})"); }),
             Contains("additional_special_tokens[0] \"<|nope|>\" is not a token of the vocabulary"));
  CHECK(error_of([&] { load(R"({"added_tokens_decoder": {"2": {"content": "</s>"}}})"); }) == "(no error)");
}

TEST_CASE("a model's folder: templates from tokenizer_config.json and chat_template.jinja, end tokens from everyone", "[runtime][chat]") {
  SKIP_UNLESS_FILE(kjv + "model.safetensors");
  // kjv-gpt2's vocabulary has one special token, <|endoftext|> (2047).
  std::vector<FilePtr> files = kjv_files();
  files.push_back(text("tokenizer_config.json", R"({"eos_token": "<|endoftext|>", "bos_token": "<|endoftext|>",
      "add_bos_token": true, "chat_template": "{% for m in messages %}{{ m.content }}{% endfor %}"})"));
  files.push_back(text("NAME.jinja", "{{ messages[0].content }}"));
  files.push_back(text("generation_config.json", R"({"eos_token_id": [2047, 7]})"));
  auto m = load_model(files);
  const TokenizerConfig& c = m->tokenizer_config();
  REQUIRE(c.chat_templates.size() == 2);
  CHECK(c.chat_templates[0].name == "default");
  CHECK(c.chat_template("NAME")->source == "{{ messages[0].content }}");
  // config.json says 2047, generation_config.json [2047, 7]: generation stops on both.
  CHECK(m->prompt_format().stop_tokens == std::vector<int>{7, 2047});
  // add_bos_token: the byte-level tokenizer adds nothing by itself; now <|endoftext|> comes first.
  const std::vector<int> ids = generate::encode_prompt(m->require_tokenizer(), m->prompt_format(), "And God said");
  CHECK(ids.front() == 2047);
  CHECK(std::vector<int>(ids.begin() + 1, ids.end()) == m->require_tokenizer().encode("And God said", false));

  // chat_template.jinja replaces tokenizer_config.json's default template.
  files = kjv_files();
  files.push_back(text("tokenizer_config.json", R"({"chat_template": "old"})"));
  files.push_back(text("chat_template.jinja", "new"));
  CHECK(load_model(files)->tokenizer_config().chat_template("default")->source == "new");

  // A configuration without a tokenizer applies to nothing: an error.
  files = {file(kjv + "config.json"), file(kjv + "model.safetensors"), text("tokenizer_config.json", R"({"eos_token": "x"})")};
  CHECK_THAT(error_of([&] { load_model(files); }),
             Contains("tokenizer_config.json: a tokenizer configuration was given without a tokenizer"));
}

TEST_CASE("a GGUF's chat template and end-of-turn token reach the prompt format", "[runtime][chat]") {
  const std::string path = testutil::fixture_path("chat/tiny-chat.gguf");
  SKIP_UNLESS_FILE(path);
  auto m = load_model({file(path)});
  const TokenizerConfig& c = m->tokenizer_config();
  REQUIRE(c.chat_template("default"));
  CHECK_THAT(c.chat_template("default")->source, Contains("<|im_start|>"));
  REQUIRE(c.special("eos_token"));
  CHECK(*c.special("eos_token") == "<|im_end|>");
  const int im_end = m->require_tokenizer().token_id("<|im_end|>");
  REQUIRE(im_end >= 0);
  const auto& stops = m->prompt_format().stop_tokens;
  CHECK(std::find(stops.begin(), stops.end(), im_end) != stops.end());
}

TEST_CASE("unnamed JSON files are told apart by their top-level members (tokenizer.json, tokenizer_config.json)", "[runtime][chat]") {
  SKIP_UNLESS_FILE(llama_json);
  // ArrayBuffers reach the loader as "file0", "file1": a tokenizer.json has an object "model", a
  // tokenizer_config.json "tokenizer_class" / "chat_template" / "added_tokens_decoder".
  LoadedTokenizer t = load_tokenizer_files(
      {file(llama_json, "file0"), text("file1", R"({"add_bos_token": false, "model": "not an object", "tokenizer_class": "X"})")});
  const LoadedTokenizer named = load_tokenizer_files({file(llama_json, "tokenizer.json")});
  CHECK(t.tokenizer->encode("Hello world", false) == named.tokenizer->encode("Hello world", false));
  CHECK(t.flags.override);  // the configuration was read: add_bos_token false overrides the post-processor's <s>
  // Bad JSON among them names the file and the byte.
  CHECK_THROWS_WITH(load_tokenizer_files({file(llama_json, "file0"), text("file1", R"({"a": [1, 2})")}),
                    Contains("file1: not valid JSON at byte"));
  CHECK_THROWS_WITH(load_tokenizer_files({file(llama_json, "file0"), text("file1", R"({"a": 1} x)")}),
                    Contains("file1: not valid JSON at byte"));
}
