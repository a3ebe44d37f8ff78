// The sampler's math against an independent computation: the distribution it draws from (repetition
// penalty → temperature → top-k → top-p) equals PyTorch's, computed with Hugging Face's logits
// processors' semantics by tests/fixtures/sampling/make_sampling_fixtures.py, to 1e-6; and the tokens
// it draws follow that distribution (a chi-square test over many draws and over many seeds).
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cmath>
#include <map>
#include <vector>

#include "core/error.h"
#include "generate/sampler.h"
#include "test_util.h"

using attnlens::generate::Sampler;
using attnlens::generate::SamplingOptions;

namespace {

struct Case {
  SamplingOptions options;
  std::vector<float> logits;
  std::vector<int> history;
  std::vector<double> probs;
  std::string label;
};

std::vector<Case> cases() {
  const auto doc = nlohmann::json::parse(testutil::read_text(testutil::fixture_path("sampling/sampling.json")));
  std::vector<Case> out;
  for (const auto& c : doc.at("cases")) {
    Case k;
    k.options.temperature = c.at("temperature").get<float>();
    k.options.top_k = c.at("top_k").get<int>();
    k.options.top_p = c.at("top_p").get<float>();
    k.options.repetition_penalty = c.at("repetition_penalty").get<float>();
    for (double v : c.at("logits")) k.logits.push_back(float(v));  // written as float32 values
    k.history = c.at("history").get<std::vector<int>>();
    k.probs = c.at("probs").get<std::vector<double>>();
    k.label = "vocab " + std::to_string(k.logits.size()) + ", T " + std::to_string(k.options.temperature) + ", top_k " +
              std::to_string(k.options.top_k) + ", top_p " + std::to_string(k.options.top_p) + ", penalty " +
              std::to_string(k.options.repetition_penalty);
    out.push_back(std::move(k));
  }
  return out;
}

// Pearson's chi-square of observed counts against expected probabilities (categories expected ≥ 5
// times; the rarer ones pooled into one), and its degrees of freedom.
std::pair<double, int> chi_square(const std::vector<int>& counts, const std::vector<double>& p, int n) {
  double chi = 0, pooled_e = 0, pooled_o = 0;
  int df = -1;
  for (size_t i = 0; i < p.size(); ++i) {
    const double e = p[i] * n;
    if (e >= 5) {
      chi += (counts[i] - e) * (counts[i] - e) / e;
      ++df;
    } else {
      pooled_e += e;
      pooled_o += counts[i];
    }
  }
  if (pooled_e >= 5) {
    chi += (pooled_o - pooled_e) * (pooled_o - pooled_e) / pooled_e;
    ++df;
  }
  return {chi, df};
}

// The chi-square value that a correct sampler exceeds with probability about 1e-6 (Wilson–Hilferty).
double chi_square_limit(int df) {
  const double z = 4.75;  // one-sided normal quantile of 1e-6
  const double a = 2.0 / (9.0 * df);
  return df * std::pow(1 - a + z * std::sqrt(a), 3);
}

}  // namespace

TEST_CASE("sampler: the distribution equals PyTorch's (penalty, temperature, top-k, top-p)", "[generate][sampler]") {
  const auto all = cases();
  REQUIRE(all.size() >= 40);
  for (const auto& c : all) {
    INFO(c.label);
    Sampler s(c.options);
    const auto p = s.distribution(c.logits.data(), int(c.logits.size()), c.history);
    REQUIRE(p.size() == c.probs.size());
    double sum = 0;
    for (size_t i = 0; i < p.size(); ++i) {
      INFO("token " << i);
      // the engine rounds the penalised logits and 1/T to float32 as the model's logits are: ~1e-7
      CHECK(std::abs(p[i] - c.probs[i]) <= 1e-6);
      CHECK((p[i] == 0) == (c.probs[i] == 0));  // the same tokens filtered out
      sum += p[i];
    }
    CHECK(sum == Approx(1.0).epsilon(1e-12));
  }
}

TEST_CASE("sampler: drawn tokens follow the distribution (chi-square, many draws and many seeds)", "[generate][sampler]") {
  const auto all = cases();
  int tested = 0;
  for (const auto& c : all) {
    const int vocab = int(c.logits.size());
    if (vocab > 50 || c.options.temperature == 0) continue;  // few categories: expected counts large enough
    INFO(c.label);
    const int n = 20000;
    // one sampler, n draws
    {
      SamplingOptions o = c.options;
      o.seed = 12345;
      Sampler s(o);
      std::vector<int> counts(vocab, 0);
      for (int i = 0; i < n; ++i) ++counts[s.sample(c.logits.data(), vocab, c.history)];
      for (int i = 0; i < vocab; ++i)
        if (c.probs[i] == 0) CHECK(counts[i] == 0);  // a filtered token is never drawn
      const auto [chi, df] = chi_square(counts, c.probs, n);
      INFO("one seed: chi-square " << chi << " with " << df << " degrees of freedom");
      if (df > 0) CHECK(chi < chi_square_limit(df));
    }
    // the first draw of n seeds
    {
      std::vector<int> counts(vocab, 0);
      for (int seed = 0; seed < n; ++seed) {
        SamplingOptions o = c.options;
        o.seed = uint64_t(seed);
        ++counts[Sampler(o).sample(c.logits.data(), vocab, c.history)];
      }
      const auto [chi, df] = chi_square(counts, c.probs, n);
      INFO("first draws of " << n << " seeds: chi-square " << chi << " with " << df << " degrees of freedom");
      if (df > 0) CHECK(chi < chi_square_limit(df));
    }
    ++tested;
  }
  CHECK(tested >= 20);
}

TEST_CASE("sampler: greedy takes the first maximum and draws no random number", "[generate][sampler]") {
  const float logits[] = {0.5f, 2.f, -1.f, 2.f, 1.f};
  SamplingOptions greedy;
  greedy.temperature = 0;
  Sampler g(greedy);
  CHECK(g.sample(logits, 5, {}) == 1);
  const auto p = g.distribution(logits, 5, {});
  CHECK(p == std::vector<double>{0, 1, 0, 0, 0});
  // distribution() draws nothing: a sampler that was asked for it draws what a fresh one draws
  SamplingOptions o;
  o.seed = 7;
  Sampler a(o), b(o);
  (void)a.distribution(logits, 5, {});
  for (int i = 0; i < 10; ++i) CHECK(a.sample(logits, 5, {}) == b.sample(logits, 5, {}));
}

TEST_CASE("sampler: options out of range are refused by name", "[generate][sampler]") {
  SamplingOptions o;
  o.top_p = 0;
  CHECK_THROWS_WITH(Sampler(o), Catch::Contains("top_p"));
  o = {};
  o.temperature = -1;
  CHECK_THROWS_WITH(Sampler(o), Catch::Contains("temperature"));
  o = {};
  o.repetition_penalty = 0;
  CHECK_THROWS_WITH(Sampler(o), Catch::Contains("repetition_penalty"));
  o = {};
  o.top_k = -2;
  CHECK_THROWS_WITH(Sampler(o), Catch::Contains("top_k"));
}
