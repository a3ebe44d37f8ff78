// top_k and log_sum_exp (top_k.h).
#include "kernels/top_k.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/simd.h"

namespace attnlens::kernels {

using simd::load;
using simd::Vec;
using simd::W;

namespace {

// Entry a ranks before entry b: a larger value, or an equal one at a lower index; NaN ranks last.
inline bool ranks_before(const float* x, int a, int b) {
  const float xa = x[a], xb = x[b];
  if (xa > xb) return true;
  if (xa < xb) return false;
  const bool na = std::isnan(xa), nb = std::isnan(xb);
  if (na != nb) return nb;
  return a < b;
}

// heap[0..k) is a heap whose root is the entry ranked last among them (the first to be replaced).
void sift_down(const float* x, int* heap, int k, int i) {
  for (;;) {
    int last = i;
    const int l = 2 * i + 1, r = l + 1;
    if (l < k && ranks_before(x, heap[last], heap[l])) last = l;
    if (r < k && ranks_before(x, heap[last], heap[r])) last = r;
    if (last == i) return;
    std::swap(heap[i], heap[last]);
    i = last;
  }
}

// e^x for x ≤ 0 (x − max of a row), for the sums of log_sum_exp: 2^t with t = x·log2 e clamped at −126,
// split as t = j + f with j = round(t), |f| ≤ 1/2; 2^f = e^{f·ln 2} by its Taylor series to degree 6
// (truncation < 1.7e-7 relative), 2^j written into the exponent bits. Rounding t first costs accuracy
// only where the term is small: measured relative error ≤ 2.5e-7 + 7.1e-8·|x| over [−87, 0] (4e-6 near
// −85, where e^x < 1e-36); as 7.1e-8·|x|·e^x ≤ 2.6e-8, a row's sum moves by < 3e-7 relative — less than
// its own float rounding. Below t = −126 each term is 2^-126 instead of (or near) 0: < 1.2e-38 each.
// About 2/3 of simd::exp's operations: no Cody–Waite steps, no range selects, and j comes out of the
// float addition of 1.5·2^23 (rounding to nearest even) with its integer in the low mantissa bits,
// where simd::exp converts with a separate round and int conversion. NaN stays NaN (max keeps it).
inline Vec exp_nonpositive(const Vec& x) {
  using I = xsimd::batch<int32_t, Vec::arch_type>;
  const Vec magic(12582912.f);  // 1.5·2^23, bits 0x4B400000
  const Vec t = xsimd::max(Vec(-126.f), x * Vec(1.44269504088896341f));
  const Vec y = t + magic;  // = magic + round(t) exactly
  const Vec u = (t - (y - magic)) * Vec(0.693147180559945309f);
  Vec p = Vec(1.f / 720) * u + Vec(1.f / 120);
  p = p * u + Vec(1.f / 24);
  p = p * u + Vec(1.f / 6);
  p = p * u + Vec(0.5f);
  p = p * u + Vec(1.f);
  p = p * u + Vec(1.f);
  const I e = (xsimd::bitwise_cast<I>(y) - I(0x4B400000 - 127)) << 23;  // round(t) + 127 in the exponent field
  return p * xsimd::bitwise_cast<Vec>(e);
}

// The value an entry must exceed to enter the k best (NaN at the root: any number does).
inline float threshold(const float* x, const int* heap) {
  const float t = x[heap[0]];
  return std::isnan(t) ? -std::numeric_limits<float>::infinity() : t;
}

// A lower bound of the k-th largest value, in one vector pass: G = ⌈k/W⌉ vectors of running maxima,
// vector i of x going to accumulator i mod G, hold G·W ≥ k maxima of disjoint sets of entries, so at
// least k entries are ≥ the k-th largest of them. −∞ when that does not pay (short rows, large k, NaN).
// *mx (when given and a bound is returned) = the maximum of x[0..n).
float kth_lower_bound(const float* x, int n, int k, float* mx = nullptr) {
  constexpr float kNone = -std::numeric_limits<float>::infinity();
  constexpr int kMaxGroups = 8;
  const int groups = (k + W - 1) / W;
  if (groups > kMaxGroups || n < 4 * groups * W) return kNone;
  Vec acc[kMaxGroups];
  for (int g = 0; g < groups; ++g) acc[g] = Vec(kNone);
  int g = 0, i = 0;
  for (; i + W <= n; i += W) {
    acc[g] = xsimd::max(acc[g], load(x + i));
    if (++g == groups) g = 0;
  }
  alignas(64) float m[kMaxGroups * W];
  for (int j = 0; j < groups; ++j) acc[j].store_aligned(m + j * W);
  const int count = groups * W;
  for (int j = 0; j < count; ++j)
    if (std::isnan(m[j])) return kNone;
  if (mx) {
    float best = m[0];
    for (int j = 1; j < count; ++j) best = m[j] > best ? m[j] : best;
    for (; i < n; ++i) best = x[i] > best ? x[i] : best;  // (a NaN anywhere makes the sum NaN, as in log_sum_exp)
    *mx = best;
  }
  std::nth_element(m, m + (k - 1), m + count, [](float a, float b) { return a > b; });
  return m[k - 1];
}

// top_k's selection. With sum (the row's maximum mx known), it also adds up exp(x_i − mx) over the
// whole row in the same pass.
void select_top_k(const float* x, int n, int k, int* idx, float bound, float mx, float* sum) {
  for (int i = 0; i < k; ++i) idx[i] = i;
  for (int i = k / 2 - 1; i >= 0; --i) sift_down(x, idx, k, i);
  // A later entry enters only by ranking strictly before the root (ties go to the lower index,
  // which is already in): a vector with no lane above the threshold is skipped whole.
  auto offer = [&](int j) {
    if (ranks_before(x, j, idx[0])) {
      idx[0] = j;
      sift_down(x, idx, k, 0);
    }
  };
  // Entries below `bound` cannot be among the k largest: with it, few lanes are ever looked at, even
  // while the heap still holds the row's first (arbitrary) entries.
  const Vec vb(bound), vmx(mx);
  Vec s0(0.f);
  float s = 0.f;
  if (sum)
    for (int j = 0; j < k; ++j) s += std::exp(x[j] - mx);
  int i = k;
  Vec vt(threshold(x, idx));
  alignas(64) float above[W];
  for (; i + W <= n; i += W) {
    const Vec v = load(x + i);
    if (sum) s0 += exp_nonpositive(v - vmx);
    const auto candidate = (v > vt) && (v >= vb);
    if (!xsimd::any(candidate)) continue;
    xsimd::select(candidate, Vec(1.f), Vec(0.f)).store_aligned(above);  // only those lanes
    for (int r = 0; r < W; ++r)
      if (above[r] != 0.f) offer(i + r);
    vt = Vec(threshold(x, idx));
  }
  for (; i < n; ++i) {
    if (sum) s += std::exp(x[i] - mx);
    if (!(x[i] < bound)) offer(i);
  }
  std::sort(idx, idx + k, [x](int a, int b) { return ranks_before(x, a, b); });
  if (sum) *sum = s + simd::sum(s0);
}

// The selection when a bound is known (kth_lower_bound's, finite): at least k entries reach it and
// none below it can be among the k largest, so the k best are those of the entries ≥ bound. Their
// indices are collected in index order in one vector pass (which also sums the exponentials, the
// row's first entries included), then the k best of them sorted: no heap kept up while the row
// streams by (it cost more than the pass on short rows). False, with nothing written, when more
// than kMaxCandidates entries reach the bound (rows with many equal values): select_top_k does those.
constexpr int kMaxCandidates = 256;

bool select_candidates(const float* x, int n, int k, int* idx, float bound, float mx, float* sum) {
  int cand[kMaxCandidates];
  int count = 0;
  const Vec vb(bound), vmx(mx);
  Vec s0(0.f);
  float s = 0.f;
  alignas(64) float above[W];
  int i = 0;
  for (; i + W <= n; i += W) {
    const Vec v = load(x + i);
    if (sum) s0 += exp_nonpositive(v - vmx);
    const auto reach = v >= vb;
    if (!xsimd::any(reach)) continue;
    xsimd::select(reach, Vec(1.f), Vec(0.f)).store_aligned(above);  // only those lanes
    for (int r = 0; r < W; ++r) {
      if (above[r] == 0.f) continue;
      if (count == kMaxCandidates) return false;
      cand[count++] = i + r;
    }
  }
  for (; i < n; ++i) {
    if (sum) s += std::exp(x[i] - mx);
    if (!(x[i] >= bound)) continue;
    if (count == kMaxCandidates) return false;
    cand[count++] = i;
  }
  if (count < k) return false;  // (not for a bound of kth_lower_bound's)
  std::partial_sort(cand, cand + k, cand + count, [x](int a, int b) { return ranks_before(x, a, b); });
  std::copy(cand, cand + k, idx);
  if (sum) *sum = s + simd::sum(s0);
  return true;
}

}  // namespace

void top_k(const float* x, int n, int k, int* idx) noexcept {
  if (k <= 0 || n <= 0) return;
  if (k > n) k = n;
  const float bound = kth_lower_bound(x, n, k);
  if (bound != -std::numeric_limits<float>::infinity() && select_candidates(x, n, k, idx, bound, 0.f, nullptr)) return;
  select_top_k(x, n, k, idx, bound, 0.f, nullptr);
}

float top_k_log_sum_exp(const float* x, int n, int k, int* idx) noexcept {
  if (n <= 0) return -std::numeric_limits<float>::infinity();
  if (k > n) k = n;
  float mx = 0.f;
  const float bound = k > 0 ? kth_lower_bound(x, n, k, &mx) : -std::numeric_limits<float>::infinity();
  // No bound (short row, large k, NaN), or an infinite or NaN maximum: the two kernels one after the other.
  if (bound == -std::numeric_limits<float>::infinity() || !std::isfinite(mx)) {
    top_k(x, n, k, idx);
    return k > 0 ? log_sum_exp(x, n, x[idx[0]]) : log_sum_exp(x, n);
  }
  float s = 0.f;
  if (!select_candidates(x, n, k, idx, bound, mx, &s)) select_top_k(x, n, k, idx, bound, mx, &s);
  return mx + std::log(s);
}

float log_sum_exp(const float* x, int n) noexcept {
  if (n <= 0) return -std::numeric_limits<float>::infinity();
  return log_sum_exp(x, n, simd::max_of(x, n));
}

float log_sum_exp(const float* x, int n, float mx) noexcept {
  if (n <= 0) return -std::numeric_limits<float>::infinity();
  if (std::isinf(mx)) return mx;  // +∞ dominates; all −∞: the sum is 0
  int i = 0;
  const Vec vmx(mx);
  Vec s0(0.f), s1(0.f);
  for (i = 0; i + 2 * W <= n; i += 2 * W) {
    s0 += exp_nonpositive(load(x + i) - vmx);
    s1 += exp_nonpositive(load(x + i + W) - vmx);
  }
  for (; i + W <= n; i += W) s0 += exp_nonpositive(load(x + i) - vmx);
  float s = simd::sum(s0 + s1);
  for (; i < n; ++i) s += std::exp(x[i] - mx);
  return mx + std::log(s);
}

namespace ref {

void top_k(const float* x, int n, int k, int* idx) noexcept {
  if (k > n) k = n;
  // The r-th pick is the entry ranked first among those ranked after pick r − 1.
  for (int r = 0; r < k; ++r) {
    int best = -1;
    for (int j = 0; j < n; ++j) {
      if (r > 0 && !ranks_before(x, idx[r - 1], j)) continue;
      if (best < 0 || ranks_before(x, j, best)) best = j;
    }
    idx[r] = best;
  }
}

float log_sum_exp(const float* x, int n) noexcept {
  if (n <= 0) return -std::numeric_limits<float>::infinity();
  float mx = x[0];
  for (int i = 1; i < n; ++i) mx = std::fmax(mx, x[i]);
  if (std::isinf(mx)) return mx;
  double s = 0;
  for (int i = 0; i < n; ++i) s += std::exp(double(x[i]) - mx);
  return float(mx + std::log(s));
}

float top_k_log_sum_exp(const float* x, int n, int k, int* idx) noexcept {
  if (k > 0 && n > 0) top_k(x, n, k, idx);
  return log_sum_exp(x, n);
}

}  // namespace ref

}  // namespace attnlens::kernels
