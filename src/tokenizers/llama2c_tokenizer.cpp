// llama2.c's tokenizer.bin, read as run.c's build_tokenizer() does: int32 max_token_length, then for
// each of vocab_size tokens a float32 score, an int32 byte length and the bytes (spaces are real
// spaces, BOS/EOS are stored as "\n<s>\n" / "\n</s>\n"). All little-endian.
#include <cstring>

#include "core/error.h"
#include "tokenizers/sentencepiece_bpe.h"

namespace attnlens {

namespace {

class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  size_t remaining() const { return size_ - pos_; }
  size_t pos() const { return pos_; }
  int32_t i32(const char* what, int token) { return int32_t(u32(what, token)); }
  float f32(const char* what, int token) {
    const uint32_t bits = u32(what, token);
    float f;
    std::memcpy(&f, &bits, 4);
    return f;
  }
  std::string bytes(size_t n) {
    std::string s(reinterpret_cast<const char*>(data_ + pos_), n);
    pos_ += n;
    return s;
  }

 private:
  uint32_t u32(const char* what, int token) {
    if (remaining() < 4) {
      if (token < 0) fail("llama2.c tokenizer: file is truncated: ", size_, " bytes, too short for ", what);
      fail("llama2.c tokenizer: file is truncated at token ", token, ": its ", what, " needs 4 bytes at offset ", pos_,
           " but the file has ", size_, " bytes");
    }
    const uint8_t* p = data_ + pos_;
    pos_ += 4;
    return uint32_t(p[0]) | uint32_t(p[1]) << 8 | uint32_t(p[2]) << 16 | uint32_t(p[3]) << 24;
  }
  const uint8_t* data_;
  size_t size_, pos_ = 0;
};

}  // namespace

std::unique_ptr<Tokenizer> load_llama2c_tokenizer(const uint8_t* data, size_t size, int vocab_size) {
  AL_CHECK(vocab_size >= 3, "llama2.c tokenizer: vocab_size ", vocab_size, " is too small (ids 0-2 are <unk>, BOS, EOS)");
  AL_CHECK(data != nullptr || size == 0, "llama2.c tokenizer: no data");
  Reader r(data, size);
  const int32_t max_len = r.i32("max_token_length", -1);
  AL_CHECK(max_len > 0, "llama2.c tokenizer: max_token_length is ", max_len, ", expected a positive length");
  tok::SentencePieceConfig cfg;
  cfg.vocab.pieces.reserve(size_t(vocab_size));
  cfg.scores.reserve(size_t(vocab_size));
  for (int i = 0; i < vocab_size; ++i) {
    const float score = r.f32("score", i);
    const int32_t len = r.i32("length", i);
    AL_CHECK(len >= 0 && len <= max_len, "llama2.c tokenizer: token ", i, " has length ", len,
             ", outside 0..max_token_length (", max_len, ")");
    AL_CHECK(size_t(len) <= r.remaining(), "llama2.c tokenizer: token ", i, " claims ", len, " bytes at offset ", r.pos(),
             " but only ", r.remaining(), " remain (file size ", size, ", vocab_size ", vocab_size, ")");
    cfg.scores.push_back(score);
    cfg.vocab.pieces.push_back(r.bytes(size_t(len)));
  }
  cfg.vocab.ids = {/*bos*/ 1, /*eos*/ 2, /*pad*/ -1, /*unk*/ 0};
  cfg.vocab.special = {1, 2};
  cfg.vocab.prefix = {1};  // run.c encode(..., bos=1, eos=0, ...)
  cfg.space_prefix = tok::SpacePrefix::Always;
  cfg.byte_fallback = true;
  return tok::make_sentencepiece_bpe(std::move(cfg));
}

}  // namespace attnlens
