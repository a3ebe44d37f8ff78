// TokenizerHandle: a tokenizer on its own (tokenizer.bin, tokenizer.json or a GGUF's metadata), with
// its configuration files (tokenizer_config.json, special_tokens_map.json, chat_template.jinja).
#include <emscripten/bind.h>

#include "bindings/handles.h"

namespace attnlens::bindings {

using namespace emscripten;

namespace {

val text_or_null(const std::string* s) { return s ? val(*s) : val::null(); }

val flag_or_null(const std::optional<bool>& b) { return b ? val(*b) : val::null(); }

}  // namespace

val tokenizer_card(const Tokenizer& t, const runtime::TokenizerConfig& c, const generate::SpecialTokenFlags& flags) {
  val tok = val::object();
  tok.set("kind", t.kind());
  tok.set("vocabSize", t.vocab_size());
  tok.set("bosId", flags.bos);
  tok.set("eosId", flags.eos);
  // bos_token → bosToken, …
  const std::pair<const char*, const char*> names[] = {
      {"bos_token", "bosToken"}, {"eos_token", "eosToken"}, {"unk_token", "unkToken"},   {"sep_token", "sepToken"},
      {"pad_token", "padToken"}, {"cls_token", "clsToken"}, {"mask_token", "maskToken"}};
  for (const auto& [role, key] : names) tok.set(key, text_or_null(c.special(role)));
  tok.set("addBosToken", flag_or_null(c.add_bos));
  tok.set("addEosToken", flag_or_null(c.add_eos));
  tok.set("modelMaxLength", c.model_max_length ? val(double(*c.model_max_length)) : val::null());
  std::vector<std::string> templates;
  for (const runtime::ChatTemplate& ct : c.chat_templates) templates.push_back(ct.name);
  tok.set("chatTemplates", to_array(templates));
  tok.set("settingsNotApplied", to_array(c.not_applied));
  return tok;
}

val chat_templates(const runtime::TokenizerConfig& c) {
  val out = val::object();
  for (const runtime::ChatTemplate& ct : c.chat_templates) out.set(ct.name, ct.source);
  return out;
}

class TokenizerHandle {
 public:
  TokenizerHandle(FileSet& files, int vocab_size) {
    guarded([&] {
      t_ = runtime::load_tokenizer_files(files.take(), vocab_size);
      return 0;
    });
  }
  val tokenize(const val& text, bool add_special) const {
    return guarded([&] { return to_int32_array(generate::encode_text(*t_.tokenizer, t_.flags, utf8(text, "text"), add_special)); });
  }
  val pieces(const val& ids) const {
    return guarded([&] {
      val out = val::array();
      for (int id : to_ints(ids, "ids")) out.call<void>("push", val(t_.tokenizer->piece(id)));
      return out;
    });
  }
  val special(const val& ids) const {
    return guarded([&] {
      val out = val::array();
      for (int id : to_ints(ids, "ids")) out.call<void>("push", val(t_.tokenizer->is_special(id)));
      return out;
    });
  }
  std::string detokenize(const val& ids) const { return guarded([&] { return t_.tokenizer->decode(to_ints(ids, "ids")); }); }
  std::string kind() const { return t_.tokenizer->kind(); }
  int vocab_size() const { return t_.tokenizer->vocab_size(); }
  val info() const { return guarded([&] { return tokenizer_card(*t_.tokenizer, t_.config, t_.flags); }); }
  val templates() const { return guarded([&] { return chat_templates(t_.config); }); }

 private:
  runtime::LoadedTokenizer t_;
};

EMSCRIPTEN_BINDINGS(attnlens_tokenizer) {
  class_<TokenizerHandle>("Tokenizer")
      .constructor<FileSet&, int>()
      .function("tokenize", &TokenizerHandle::tokenize)
      .function("pieces", &TokenizerHandle::pieces)
      .function("special", &TokenizerHandle::special)
      .function("detokenize", &TokenizerHandle::detokenize)
      .function("kind", &TokenizerHandle::kind)
      .function("vocabSize", &TokenizerHandle::vocab_size)
      .function("info", &TokenizerHandle::info)
      .function("chatTemplates", &TokenizerHandle::templates);
}

}  // namespace attnlens::bindings
