#include "generate/processors.h"

#include <cmath>
#include <limits>

#include "core/error.h"

namespace attnlens::generate {

void check_processor_options(const ProcessorOptions& o, int vocab) {
  AL_CHECK(std::isfinite(o.repetition_penalty) && o.repetition_penalty > 0.f,
           "repetition_penalty must be > 0 (1 = none), got ", o.repetition_penalty);
  AL_CHECK(o.no_repeat_ngram_size >= 0, "no_repeat_ngram_size must be ≥ 0 (0 = off), got ", o.no_repeat_ngram_size);
  AL_CHECK(o.min_new_tokens >= 0, "min_new_tokens must be ≥ 0, got ", o.min_new_tokens);
  auto id = [&](int t, const char* what) {
    AL_CHECK(t >= -1 && t < vocab, what, " ", t, " is out of range [0, ", vocab, ")");
  };
  id(o.forced_bos_token, "forced_bos_token");
  id(o.forced_eos_token, "forced_eos_token");
  for (size_t i = 0; i < o.bad_words.size(); ++i) {
    AL_CHECK(!o.bad_words[i].empty(), "bad_words[", i, "] is empty");
    for (int t : o.bad_words[i]) {
      AL_CHECK(t >= 0 && t < vocab, "bad_words[", i, "] holds token id ", t, ", out of range [0, ", vocab, ")");
    }
  }
}

namespace {

template <class T>
void apply(const ProcessorOptions& o, const ProcessorState& s, T* scores, int vocab, bool penalty) {
  const std::vector<int>& seq = *s.sequence;
  const int len = int(seq.size());
  const T ban = -std::numeric_limits<T>::infinity();
  if (penalty && o.repetition_penalty != 1.f) {
    std::vector<char> seen(size_t(vocab), 0);
    for (int t : seq) {
      if (t < 0 || t >= vocab || seen[size_t(t)]) continue;
      seen[size_t(t)] = 1;
      T& x = scores[t];
      x = x < 0 ? x * T(o.repetition_penalty) : x / T(o.repetition_penalty);
    }
  }
  const int n = o.no_repeat_ngram_size;
  if (n > 0 && len + 1 >= n) {
    // The last n − 1 tokens, and every earlier place they occur: the token that followed is banned.
    const int prefix = len - (n - 1);
    for (int i = 0; i + n - 1 < len; ++i) {
      bool match = true;
      for (int j = 0; j < n - 1 && match; ++j) match = seq[size_t(i + j)] == seq[size_t(prefix + j)];
      if (match) scores[seq[size_t(i + n - 1)]] = ban;
    }
  }
  for (const auto& bad : o.bad_words) {
    const int k = int(bad.size()) - 1;  // tokens that must precede the banned one
    if (k > len) continue;
    bool match = true;
    for (int j = 0; j < k && match; ++j) match = seq[size_t(len - k + j)] == bad[size_t(j)];
    if (match) scores[bad.back()] = ban;
  }
  const int generated = len - s.prompt_tokens;
  if (generated < o.min_new_tokens && s.eos_tokens)
    for (int e : *s.eos_tokens)
      if (e >= 0 && e < vocab) scores[e] = ban;
  auto force = [&](int token) {
    for (int i = 0; i < vocab; ++i) scores[i] = ban;
    scores[token] = 0;
  };
  if (o.forced_bos_token >= 0 && generated == 0) force(o.forced_bos_token);
  if (o.forced_eos_token >= 0 && generated == s.max_new_tokens - 1) force(o.forced_eos_token);
}

}  // namespace

void apply_processors(const ProcessorOptions& o, const ProcessorState& s, float* scores, int vocab, bool penalty) {
  apply(o, s, scores, vocab, penalty);
}

void apply_processors(const ProcessorOptions& o, const ProcessorState& s, double* scores, int vocab, bool penalty) {
  apply(o, s, scores, vocab, penalty);
}

}  // namespace attnlens::generate
