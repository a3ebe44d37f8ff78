// Marian's vocab.json ({piece: id}) beside a fixed source.spm (runtime::make_marian_tokenizer
// through the loader's file roles): ids distinct and in range, "</s>", "<unk>", "<pad>" present,
// language codes as tokens of their own; then text encoded and decoded.
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const auto spm = fuzz::repo_file("tests/fixtures/spm/unigram_nfkc.model", "source.spm");
  fuzz::expect_clean([&] {
    const auto t = attnlens::runtime::load_tokenizer_files({spm, fuzz::file("vocab.json", data, size)});
    fuzz::exercise_tokenizer(*t.tokenizer, t.flags);
  });
  return 0;
}
