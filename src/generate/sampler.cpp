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
  const Candidates c = candidates(logits, vocab, history);
  if (o_.temperature == 0.f) return id(c, 0);  // greedy draws no random number
  double r = double(rng_.uniform()) * c.total;
  int last = 0;
  for (int i = 0; i < c.n; ++i) {
    if (weights_[i] > 0) last = i;
    r -= weights_[i];
    if (r < 0) return id(c, i);
  }
  return id(c, last);  // rounding left a sliver of r: the last candidate with any probability
}

std::vector<double> Sampler::distribution(const float* logits, int vocab, const std::vector<int>& history) {
  const Candidates c = candidates(logits, vocab, history);
  std::vector<double> p(size_t(vocab), 0.0);
  for (int i = 0; i < c.n; ++i) p[size_t(id(c, i))] = weights_[i] / c.total;
  return p;
}

Sampler::Candidates Sampler::candidates(const float* logits, int vocab, const std::vector<int>& history) {
  AL_CHECK(vocab > 0, "sampling needs at least one logit");
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
  if (o_.temperature == 0.f) {  // greedy: the argmax alone
    order_.assign(1, argmax(work_.data(), vocab));
    weights_.assign(1, 1.0);
    return {false, 1, 1.0};
  }
  const float inv_t = 1.f / o_.temperature;
  if (o_.top_k == 0 && o_.top_p >= 1.f) return all_tokens(inv_t, vocab);
  return nucleus(inv_t, vocab);
}

// Plain temperature sampling: every token, in id order, no sorting.
Sampler::Candidates Sampler::all_tokens(float inv_t, int vocab) {
  const float top = work_[argmax(work_.data(), vocab)];
  weights_.resize(vocab);
  double sum = 0;
  for (int i = 0; i < vocab; ++i) sum += weights_[i] = std::exp(double(work_[i] - top) * inv_t);
  return {true, vocab, sum};
}

// top-k and/or top-p: candidates sorted by logit (ties: lower id first), cut to k, then to the
// smallest prefix whose probability reaches top_p.
Sampler::Candidates Sampler::nucleus(float inv_t, int vocab) {
  order_.resize(vocab);
  std::iota(order_.begin(), order_.end(), 0);
  const int k = o_.top_k > 0 && o_.top_k < vocab ? o_.top_k : vocab;
  auto better = [&](int a, int b) { return work_[a] > work_[b] || (work_[a] == work_[b] && a < b); };
  std::partial_sort(order_.begin(), order_.begin() + k, order_.end(), better);
  order_.resize(k);
  const float top = work_[order_[0]];
  weights_.resize(k);
  double sum = 0;
  for (int i = 0; i < k; ++i) sum += weights_[i] = std::exp(double(work_[order_[i]] - top) * inv_t);
  int keep = k;
  if (o_.top_p < 1.f) {
    double cum = 0;
    for (int i = 0; i < k; ++i) {
      cum += weights_[i] / sum;
      if (cum >= o_.top_p) {
        keep = i + 1;
        break;
      }
    }
  }
  double kept = 0;
  for (int i = 0; i < keep; ++i) kept += weights_[i];
  return {false, keep, kept};
}

}  // namespace attnlens::generate
