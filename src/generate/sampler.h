// Choosing the next token from the logits (top-k: Fan et al. 2018; top-p: Holtzman et al. 2020, "The
// Curious Case of Neural Text Degeneration"; repetition penalty: Keskar et al. 2019, CTRL), in the order
// Hugging Face's generate applies them:
//   repetition penalty → temperature → top-k → top-p (nucleus) → draw
// temperature 0 is greedy decoding (argmax, ties to the lowest id). The random numbers come from a
// PCG32 generator seeded by the caller, so the same seed gives the same text natively and in wasm.
#pragma once
#include <cstdint>
#include <vector>

namespace attnlens::generate {

struct SamplingOptions {
  float temperature = 1.0f;         // 0 = greedy; must be ≥ 0
  int top_k = 0;                    // keep the k most likely tokens; 0 = all
  float top_p = 1.0f;               // keep the smallest set with probability ≥ top_p; (0, 1]
  float repetition_penalty = 1.0f;  // > 0; 1 = none (CTRL: divide positive logits, multiply negative)
  uint64_t seed = 0;
};

// Throws attnlens::Error naming the bad option and its allowed range.
void check_sampling_options(const SamplingOptions& o);

// PCG32 (O'Neill 2014): a small, fast generator with identical output on every platform.
class Pcg32 {
 public:
  explicit Pcg32(uint64_t seed);
  uint32_t next();
  float uniform();  // [0, 1) with 24 random bits

 private:
  uint64_t state_, inc_;
};

class Sampler {
 public:
  explicit Sampler(const SamplingOptions& o);
  // The next token given the logits [vocab] and the tokens so far (for the repetition penalty).
  int sample(const float* logits, int vocab, const std::vector<int>& history);
  // The distribution sample() draws from for these logits: probabilities [vocab] after the
  // repetition penalty, temperature, top-k and top-p (zero for every filtered token; greedy: 1 for
  // the argmax). Draws nothing: the generator's state is unchanged.
  std::vector<double> distribution(const float* logits, int vocab, const std::vector<int>& history);

 private:
  // The candidates of one step: ids (all of 0..vocab-1 in order when `all`, else order_[0..n)) with
  // unnormalised weights weights_[0..n) summing to `total`.
  struct Candidates {
    bool all;
    int n;
    double total;
  };
  Candidates candidates(const float* logits, int vocab, const std::vector<int>& history);
  Candidates all_tokens(float inv_t, int vocab);
  Candidates nucleus(float inv_t, int vocab);
  int id(const Candidates& c, int i) const { return c.all ? i : order_[i]; }
  SamplingOptions o_;
  Pcg32 rng_;
  std::vector<float> work_;
  std::vector<int> order_;
  std::vector<double> weights_;
};

int argmax(const float* x, int n);  // first index of the maximum

}  // namespace attnlens::generate
