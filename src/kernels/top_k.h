// Reading predictions off a logits row without sorting (or copying) the vocabulary:
//   top_k        the k largest entries: one vector pass bounds the k-th largest from below, one pass
//                keeps the k best seen so far among the entries above that bound
//   log_sum_exp  log Σ exp(x_i), so that any entry's probability is exp(x_i − log_sum_exp)
// Both are vectorized (the pass over the row skips whole vectors below the current k-th best) and
// have plain scalar twins in namespace ref, like every kernel (kernels.h's conventions).
#pragma once

namespace attnlens::kernels {

// idx[0..k) = the indices of the k largest of x[0..n) (0 < k ≤ n), largest first; equal values are
// ordered by index (lower first), so the result is the same on every platform. NaNs are never chosen
// unless fewer than k other entries exist.
void top_k(const float* x, int n, int k, int* idx) noexcept;

// log Σ_i exp(x_i), computed as m + log Σ exp(x_i − m) with m = max x (no overflow); −∞ for n = 0.
float log_sum_exp(const float* x, int n) noexcept;
// The same when the maximum mx of x[0..n) is known already (e.g. the first entry of top_k): one pass.
float log_sum_exp(const float* x, int n, float mx) noexcept;

// Both of one row (a prediction's ids and probabilities): idx as top_k, returns log_sum_exp(x, n), in
// two passes over x instead of three — the bounding pass of top_k also finds the maximum, and the
// sum of exponentials runs in top_k's selection pass.
float top_k_log_sum_exp(const float* x, int n, int k, int* idx) noexcept;

namespace ref {
void top_k(const float* x, int n, int k, int* idx) noexcept;
float log_sum_exp(const float* x, int n) noexcept;
float top_k_log_sum_exp(const float* x, int n, int k, int* idx) noexcept;
}  // namespace ref

}  // namespace attnlens::kernels
