// Comparing our logits with llama.cpp's, one position at a time (shared by the llama.cpp parity
// tests: test_runtime_parity_llamacpp.cpp, test_runtime_archs_quant.cpp).
#pragma once
#include <algorithm>
#include <cmath>

namespace llamacpp_compare {

// One position: largest difference, and whether llama.cpp's top-1 (when its margin over the second
// exceeds `tol`) is ours.
struct Row {
  double max = 0, sum2 = 0;
  bool top1_checked = false, top1_ok = true;
};

inline Row compare_row(const float* ours, const float* want, int V, double tol) {
  Row r;
  int best = 0, ours_best = 0;
  for (int v = 0; v < V; ++v) {
    const double d = std::isnan(ours[v]) ? INFINITY : std::fabs(double(ours[v]) - want[v]);
    r.max = std::max(r.max, d);
    r.sum2 += d * d;
    if (want[v] > want[best]) best = v;
    if (ours[v] > ours[ours_best]) ours_best = v;
  }
  float second = -INFINITY;
  for (int v = 0; v < V; ++v)
    if (v != best) second = std::max(second, want[v]);
  r.top1_checked = want[best] - second > tol;
  r.top1_ok = !r.top1_checked || ours_best == best;
  return r;
}

}  // namespace llamacpp_compare
