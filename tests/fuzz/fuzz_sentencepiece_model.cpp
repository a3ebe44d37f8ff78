// SentencePiece .model files (protobuf ModelProto): the content test the loader classifies files
// with, the reader (pieces, trainer and normalizer specs, self-test samples), then the tokenizer
// built from it (runtime/sentencepiece_tokenizer.h: Unigram or BPE, normalizer, byte fallback;
// sentencepiece's rules and llama.cpp's UGM rules) encoding and decoding text.
#include "formats/sentencepiece_model.h"
#include "fuzz_util.h"
#include "runtime/sentencepiece_tokenizer.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace attnlens;
  const Bytes bytes{data, size, "fuzz.model"};
  fuzz::expect_clean([&] { (void)looks_like_sentencepiece_model(bytes); });
  fuzz::expect_clean([&] {
    const SentencePieceModelProto m = read_sentencepiece_model(bytes);
    for (const auto& p : m.pieces) (void)piece_type_name(p.type);
    (void)model_type_name(m.trainer.model_type);
    for (bool llamacpp_ugm : {false, true})
      fuzz::expect_clean([&] {
        runtime::SentencePieceOptions o;
        o.llamacpp_ugm = llamacpp_ugm;
        fuzz::exercise_tokenizer(*runtime::make_sentencepiece_model_tokenizer(m, o));
      });
  });
  return 0;
}
