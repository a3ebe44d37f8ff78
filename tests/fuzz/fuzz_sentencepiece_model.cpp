// SentencePiece .model files (protobuf ModelProto): the content test the loader classifies files
// with, then the reader (pieces, trainer and normalizer specs, self-test samples).
#include "formats/sentencepiece_model.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const attnlens::Bytes bytes{data, size, "fuzz.model"};
  fuzz::expect_clean([&] { (void)attnlens::looks_like_sentencepiece_model(bytes); });
  fuzz::expect_clean([&] {
    const attnlens::SentencePieceModelProto m = attnlens::read_sentencepiece_model(bytes);
    for (const auto& p : m.pieces) (void)attnlens::piece_type_name(p.type);
    (void)attnlens::model_type_name(m.trainer.model_type);
  });
  return 0;
}
