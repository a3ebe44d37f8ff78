// ModelHandle: a loaded model with its tokenizer.
#include <emscripten/bind.h>

#include "bindings/handles.h"

namespace attnlens::bindings {

using namespace emscripten;

ModelHandle::ModelHandle(FileSet& files, const std::string& quantize) {
  guarded([&] {
    runtime::LoadOptions o;
    AL_CHECK(quantize.empty() || quantize == "none" || quantize == "q8_0", "quantize must be \"q8_0\" or \"none\", got \"",
             quantize, "\"");
    if (quantize == "q8_0") o.format = models::WeightFormat::Q8_0;
    m_ = runtime::load_model(files.take(), o);
    return 0;
  });
}

std::string ModelHandle::describe() const {
  return guarded([&] { return m_->describe().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); });
}

std::string ModelHandle::prompt_format() const {
  return guarded([&] {
    const auto& p = m_->prompt_format();
    nlohmann::json j = {{"addSpecial", p.add_special},
                        {"emptyPromptToken", p.empty_prompt_token},
                        {"stopTokens", p.stop_tokens},
                        {"decoderStartToken", p.decoder_start_token},
                        {"sourceSuffixEos", p.source_suffix_eos},
                        {"eosToken", p.eos_token}};
    return j.dump();
  });
}

val ModelHandle::tokenize(const std::string& text, bool add_special) const {
  return guarded([&] { return to_int32_array(m_->require_tokenizer().encode(text, add_special)); });
}

val ModelHandle::encode_prompt(const std::string& text) const {
  return guarded([&] {
    return to_int32_array(generate::encode_prompt(m_->require_tokenizer(), m_->prompt_format(), text));
  });
}

val ModelHandle::pieces(const val& ids) const {
  return guarded([&] {
    const Tokenizer& t = m_->require_tokenizer();
    val out = val::array();
    for (int id : to_ints(ids, "ids")) out.call<void>("push", val(t.piece(id)));
    return out;
  });
}

std::string ModelHandle::detokenize(const val& ids) const {
  return guarded([&] { return m_->require_tokenizer().decode(to_ints(ids, "ids")); });
}

SessionHandle* ModelHandle::new_session(int capacity) const {
  return guarded([&] { return new SessionHandle(m_, capacity); });
}

EMSCRIPTEN_BINDINGS(attnlens_model) {
  class_<ModelHandle>("Model")
      .constructor<FileSet&, const std::string&>()
      .function("describe", &ModelHandle::describe)
      .function("promptFormat", &ModelHandle::prompt_format)
      .function("hasTokenizer", &ModelHandle::has_tokenizer)
      .function("tokenize", &ModelHandle::tokenize)
      .function("encodePrompt", &ModelHandle::encode_prompt)
      .function("pieces", &ModelHandle::pieces)
      .function("detokenize", &ModelHandle::detokenize)
      .function("newSession", &ModelHandle::new_session, allow_raw_pointers());
}

}  // namespace attnlens::bindings
