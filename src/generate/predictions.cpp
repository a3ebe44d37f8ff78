#include "generate/predictions.h"

#include <cmath>

#include "core/error.h"
#include "kernels/top_k.h"

namespace attnlens::generate {

void TopK::compute(const float* row_logits, int n_rows, int vocab, int top) {
  AL_CHECK(n_rows >= 0 && vocab > 0, "top-k: bad logits shape [", n_rows, "][", vocab, "]");
  AL_CHECK(top >= 0, "top-k: k must be ≥ 0, got ", top);
  rows = top > 0 ? n_rows : 0;
  k = top > vocab ? vocab : top;
  const size_t total = size_t(rows) * size_t(k);
  ids.resize(total);
  logits.resize(total);
  probs.resize(total);
  for (int r = 0; r < rows; ++r) {
    const float* x = row_logits + size_t(r) * vocab;
    int* id = ids.data() + size_t(r) * k;
    const float lse = kernels::top_k_log_sum_exp(x, vocab, k, id);
    for (int j = 0; j < k; ++j) {
      const float l = x[id[j]];
      logits[size_t(r) * k + j] = l;
      probs[size_t(r) * k + j] = std::exp(l - lse);
    }
  }
}

}  // namespace attnlens::generate
