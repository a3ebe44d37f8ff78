// The nn tests' attention capture: the weights written into a buffer of the test's, nothing else
// (AttentionCapture, src/nn/multi_head_attention.h).
#pragma once
#include "nn/multi_head_attention.h"

namespace testutil {

inline attnlens::nn::AttentionCapture into(float* w) {
  attnlens::nn::AttentionCapture c;
  c.weights = w;
  return c;
}

}  // namespace testutil
