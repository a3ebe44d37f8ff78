// What the model predicts, read off its logits: the k most likely next tokens of a row, each with its
// logit and its probability under the model's own distribution softmax(logits) (temperature 1, before
// any sampling option), found by a partial selection (kernels/top_k.h) — the vocabulary is never
// sorted, nor copied anywhere.
#pragma once
#include <vector>

namespace attnlens::generate {

// The top k of `rows` logits rows, most likely first (equal logits: lower id first); flat [rows][k].
struct TopK {
  int rows = 0;
  int k = 0;
  std::vector<int> ids;
  std::vector<float> logits;
  std::vector<float> probs;

  // Fills in the top min(k, vocab) of each row of logits [rows][vocab]; k ≤ 0 leaves it empty.
  void compute(const float* logits, int rows, int vocab, int k);
  void clear() { *this = TopK(); }
};

}  // namespace attnlens::generate
