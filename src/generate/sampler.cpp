#include "generate/sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "core/error.h"

namespace attnlens::generate {

void check_sampling_options(const SamplingOptions& o) {
  AL_CHECK(std::isfinite(o.temperature) && o.temperature >= 0.f, "temperature must be ≥ 0, got ", o.temperature);
  AL_CHECK(o.top_k >= 0, "top_k must be ≥ 0 (0 = off), got ", o.top_k);
  AL_CHECK(std::isfinite(o.top_p) && o.top_p > 0.f && o.top_p <= 1.f, "top_p must be in (0, 1], got ", o.top_p);
  AL_CHECK(std::isfinite(o.repetition_penalty) && o.repetition_penalty > 0.f,
           "repetition_penalty must be > 0 (1 = none), got ", o.repetition_penalty);
}

Pcg32::Pcg32(uint64_t seed) : state_(0), inc_((seed << 1u) | 1u) {
  next();
  state_ += 0x853c49e6748fea9bULL ^ seed;
  next();
}

uint32_t Pcg32::next() {
  const uint64_t old = state_;
  state_ = old * 6364136223846793005ULL + inc_;
  const uint32_t xorshifted = uint32_t(((old >> 18u) ^ old) >> 27u);
  const uint32_t rot = uint32_t(old >> 59u);
  return (xorshifted >> rot) | (xorshifted << ((32 - rot) & 31));
}

float Pcg32::uniform() { return float(next() >> 8) * (1.0f / 16777216.0f); }

int argmax(const float* x, int n) {
  int best = 0;
  for (int i = 1; i < n; ++i)
    if (x[i] > x[best]) best = i;
  return best;
}

Sampler::Sampler(const SamplingOptions& o) : o_(o), rng_(o.seed) { check_sampling_options(o); }

int Sampler::sample(const float* logits, int vocab, const std::vector<int>& history) {
  work_.assign(logits, logits + vocab);
  if (o_.repetition_penalty != 1.f) {
    std::vector<char> seen(vocab, 0);
    for (int t : history) {
      if (t < 0 || t >= vocab || seen[t]) continue;
      seen[t] = 1;
      float& l = work_[t];
      l = l > 0 ? l / o_.repetition_penalty : l * o_.repetition_penalty;
    }
  }
  if (o_.temperature == 0.f) return argmax(work_.data(), vocab);
  const float inv_t = 1.f / o_.temperature;
  if (o_.top_k == 0 && o_.top_p >= 1.f) return sample_all(inv_t, vocab);
  return sample_nucleus(inv_t, vocab);
}

// Plain temperature sampling: one pass over the vocabulary, no sorting.
int Sampler::sample_all(float inv_t, int vocab) {
  const float top = work_[argmax(work_.data(), vocab)];
  double sum = 0;
  for (int i = 0; i < vocab; ++i) sum += std::exp(double(work_[i] - top) * inv_t);
  double r = double(rng_.uniform()) * sum;
  int last = 0;
  for (int i = 0; i < vocab; ++i) {
    const double p = std::exp(double(work_[i] - top) * inv_t);
    if (p > 0) last = i;
    r -= p;
    if (r < 0) return i;
  }
  return last;  // rounding left a sliver of r: the last token with any probability
}

// top-k and/or top-p: candidates sorted by logit (ties: lower id first), cut to k, then to the
// smallest prefix whose probability reaches top_p.
int Sampler::sample_nucleus(float inv_t, int vocab) {
  order_.resize(vocab);
  std::iota(order_.begin(), order_.end(), 0);
  const int k = o_.top_k > 0 && o_.top_k < vocab ? o_.top_k : vocab;
  auto better = [&](int a, int b) { return work_[a] > work_[b] || (work_[a] == work_[b] && a < b); };
  std::partial_sort(order_.begin(), order_.begin() + k, order_.end(), better);
  order_.resize(k);
  const float top = work_[order_[0]];
  std::vector<double> p(k);
  double sum = 0;
  for (int i = 0; i < k; ++i) sum += p[i] = std::exp(double(work_[order_[i]] - top) * inv_t);
  int keep = k;
  if (o_.top_p < 1.f) {
    double cum = 0;
    for (int i = 0; i < k; ++i) {
      cum += p[i] / sum;
      if (cum >= o_.top_p) {
        keep = i + 1;
        break;
      }
    }
  }
  double kept = 0;
  for (int i = 0; i < keep; ++i) kept += p[i];
  double r = double(rng_.uniform()) * kept;
  for (int i = 0; i < keep; ++i) {
    r -= p[i];
    if (r < 0) return order_[i];
  }
  return order_[keep - 1];
}

}  // namespace attnlens::generate
