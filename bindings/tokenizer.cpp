// TokenizerHandle: a tokenizer on its own (tokenizer.bin, tokenizer.json or a GGUF's metadata).
#include <emscripten/bind.h>

#include "bindings/handles.h"

namespace attnlens::bindings {

using namespace emscripten;

class TokenizerHandle {
 public:
  TokenizerHandle(FileSet& files, int vocab_size) {
    guarded([&] {
      auto list = files.take();
      AL_CHECK(list.size() == 1, "a tokenizer is one file, got ", list.size());
      t_ = runtime::load_tokenizer(*list[0], vocab_size);
      return 0;
    });
  }
  val tokenize(const std::string& text, bool add_special) const {
    return guarded([&] { return to_int32_array(t_->encode(text, add_special)); });
  }
  val pieces(const val& ids) const {
    return guarded([&] {
      val out = val::array();
      for (int id : to_ints(ids, "ids")) out.call<void>("push", val(t_->piece(id)));
      return out;
    });
  }
  std::string detokenize(const val& ids) const { return guarded([&] { return t_->decode(to_ints(ids, "ids")); }); }
  std::string kind() const { return t_->kind(); }
  int vocab_size() const { return t_->vocab_size(); }

 private:
  std::unique_ptr<Tokenizer> t_;
};

EMSCRIPTEN_BINDINGS(attnlens_tokenizer) {
  class_<TokenizerHandle>("Tokenizer")
      .constructor<FileSet&, int>()
      .function("tokenize", &TokenizerHandle::tokenize)
      .function("pieces", &TokenizerHandle::pieces)
      .function("detokenize", &TokenizerHandle::detokenize)
      .function("kind", &TokenizerHandle::kind)
      .function("vocabSize", &TokenizerHandle::vocab_size);
}

}  // namespace attnlens::bindings
