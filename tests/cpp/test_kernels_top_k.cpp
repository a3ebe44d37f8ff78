// top_k and log_sum_exp equal their scalar references and the obvious definitions (a full sort,
// a float64 sum), on sizes that exercise the vector body and the scalar tail, with ties and NaNs.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include <cstring>

#include "kernels/simd.h"
#include "kernels/top_k.h"
#include "test_util.h"

namespace k = attnlens::kernels;
using testutil::randn;

namespace {

// The first k of a full stable sort by descending value (equal values keep their index order).
std::vector<int> sorted_top(const std::vector<float>& x, int k) {
  std::vector<int> idx(x.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](int a, int b) { return x[a] > x[b]; });
  idx.resize(size_t(std::min<int>(k, int(x.size()))));
  return idx;
}

std::vector<int> run(void (*f)(const float*, int, int, int*) noexcept, const std::vector<float>& x, int k) {
  std::vector<int> idx(size_t(std::min<int>(k, int(x.size()))), -1);
  f(x.data(), int(x.size()), k, idx.data());
  return idx;
}

}  // namespace

TEST_CASE("top_k equals a full sort and its scalar reference", "[kernels][top_k]") {
  for (int n : {1, 2, 3, 5, 8, 17, 33, 64, 257, 2048, 32000}) {
    for (int kk : {1, 2, 5, 10, 40, 100, n}) {
      if (kk > n) continue;
      auto x = randn(size_t(n), uint32_t(n * 31 + kk));
      INFO("n = " << n << ", k = " << kk);
      const auto want = sorted_top(x, kk);
      CHECK(run(k::top_k, x, kk) == want);
      if (size_t(n) * kk <= 3000000) CHECK(run(k::ref::top_k, x, kk) == want);
    }
  }
}

TEST_CASE("top_k: ascending rows (every entry enters), ties go to the lower index", "[kernels][top_k]") {
  std::vector<float> up(1000);
  for (int i = 0; i < 1000; ++i) up[i] = float(i) * 0.5f;
  CHECK(run(k::top_k, up, 5) == std::vector<int>{999, 998, 997, 996, 995});

  std::vector<float> ties(103, 1.f);  // all equal: the first k indices, in order
  ties[50] = 2.f;
  CHECK(run(k::top_k, ties, 4) == std::vector<int>{50, 0, 1, 2});
  CHECK(run(k::ref::top_k, ties, 4) == std::vector<int>{50, 0, 1, 2});
}

TEST_CASE("top_k: rows where more entries reach the bound than the candidate list holds", "[kernels][top_k]") {
  // A third of the row ties for first, and every one of those reaches the bound: 99 candidates for
  // n = 300 (the list), more than the list's 256 for 1000 and 4099 (then the heap selection); ties
  // still go to the lower index.
  for (int n : {300, 1000, 4099}) {
    std::vector<float> x = randn(size_t(n), uint32_t(n), 0.1f);
    for (int i = 3; i < n; i += 3) x[size_t(i)] = 5.f;  // a third of the row ties for first
    INFO("n = " << n);
    CHECK(run(k::top_k, x, 10) == sorted_top(x, 10));
    std::vector<int> idx(10, -1);
    double m = 5.0, sum = 0;
    for (float v : x) sum += std::exp(double(v) - m);
    CHECK(std::fabs(k::top_k_log_sum_exp(x.data(), n, 10, idx.data()) - (m + std::log(sum))) <= 1e-5 * (m + std::log(sum)));
    CHECK(idx == sorted_top(x, 10));
  }
}

TEST_CASE("top_k: NaN is never chosen over a number; infinities rank by value", "[kernels][top_k]") {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  std::vector<float> x = {nan, 1.f, nan, -inf, 3.f, inf, 2.f, nan, 0.f};
  CHECK(run(k::top_k, x, 4) == std::vector<int>{5, 4, 6, 1});
  CHECK(run(k::ref::top_k, x, 4) == std::vector<int>{5, 4, 6, 1});
  CHECK(run(k::top_k, x, 9).back() == 7);  // NaNs last, by index
}

TEST_CASE("log_sum_exp equals a float64 sum and its reference", "[kernels][top_k]") {
  for (int n : {1, 3, 4, 7, 16, 17, 100, 2048, 32000}) {
    auto x = randn(size_t(n), uint32_t(n), 4.f);
    double m = *std::max_element(x.begin(), x.end()), s = 0;
    for (float v : x) s += std::exp(double(v) - m);
    const double want = m + std::log(s);
    INFO("n = " << n);
    CHECK(std::fabs(k::log_sum_exp(x.data(), n) - want) <= 1e-5 * std::max(1.0, std::fabs(want)));
    CHECK(std::fabs(k::ref::log_sum_exp(x.data(), n) - want) <= 1e-5 * std::max(1.0, std::fabs(want)));
    CHECK(std::fabs(k::log_sum_exp(x.data(), n, float(m)) - want) <= 1e-5 * std::max(1.0, std::fabs(want)));
  }
  std::vector<float> big = {1000.f, 1000.f};  // no overflow
  CHECK(k::log_sum_exp(big.data(), 2) == Approx(1000.0 + std::log(2.0)));
  CHECK(std::isinf(k::log_sum_exp(nullptr, 0)));
}

TEST_CASE("top_k_log_sum_exp equals top_k and log_sum_exp (and its reference)", "[kernels][top_k]") {
  for (int n : {1, 3, 5, 17, 64, 257, 2048, 32000}) {
    for (int kk : {1, 5, 10, 40, n}) {
      if (kk > n) continue;
      auto x = randn(size_t(n), uint32_t(n * 7 + kk), 4.f);
      if (n > 40) x[size_t(n) - 1] = 30.f;  // the maximum in the scalar tail
      INFO("n = " << n << ", k = " << kk);
      double m = *std::max_element(x.begin(), x.end()), s = 0;
      for (float v : x) s += std::exp(double(v) - m);
      const double want = m + std::log(s);
      std::vector<int> idx(size_t(kk), -1), ref_idx(size_t(kk), -1);
      const float got = k::top_k_log_sum_exp(x.data(), n, kk, idx.data());
      CHECK(idx == sorted_top(x, kk));
      CHECK(std::fabs(got - want) <= 1e-5 * std::max(1.0, std::fabs(want)));
      if (size_t(n) * kk <= 3000000) {
        const float r = k::ref::top_k_log_sum_exp(x.data(), n, kk, ref_idx.data());
        CHECK(ref_idx == idx);
        CHECK(std::fabs(r - want) <= 1e-5 * std::max(1.0, std::fabs(want)));
      }
    }
  }
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> x(100, 0.f);
  x[70] = inf;  // +∞ dominates: log Σ = +∞, and it ranks first
  std::vector<int> idx(3);
  CHECK(k::top_k_log_sum_exp(x.data(), 100, 3, idx.data()) == inf);
  CHECK(idx == std::vector<int>{70, 0, 1});
  x[70] = std::numeric_limits<float>::quiet_NaN();  // a NaN: never chosen, the sum is NaN
  CHECK(std::isnan(k::top_k_log_sum_exp(x.data(), 100, 3, idx.data())));
  CHECK(idx == std::vector<int>{0, 1, 2});
}

TEST_CASE("simd::exp is xsimd::exp bit for bit (in wasm without its lane-by-lane int conversion)", "[kernels][exp]") {
  namespace simd = attnlens::kernels::simd;
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> x = {0.f, -0.f, inf, -inf, std::numeric_limits<float>::quiet_NaN(), 1e-40f, -1e-40f,
                          1e30f, -1e30f, 88.3762626647949f, 88.38f, -87.3365447504019f, -87.34f, -103.f, -104.f};
  for (float v = -130.f; v <= 130.f; v += 0.0137f) x.push_back(v);
  for (uint64_t bits = 0; bits <= 0xffffffffu; bits += 0x00812345u) {  // every exponent, both signs
    const uint32_t b = uint32_t(bits);
    float v;
    std::memcpy(&v, &b, 4);
    x.push_back(v);
  }
  while (x.size() % simd::W) x.push_back(1.f);
  size_t differ = 0;
  for (size_t i = 0; i < x.size(); i += simd::W) {
    alignas(64) float a[simd::W], b[simd::W];
    simd::exp(simd::load(&x[i])).store_aligned(a);
    xsimd::exp(simd::load(&x[i])).store_aligned(b);
    for (int j = 0; j < simd::W; ++j) {
      const bool same = std::isnan(a[j]) ? std::isnan(b[j]) : std::memcmp(&a[j], &b[j], 4) == 0;
      if (!same && differ++ < 5) FAIL_CHECK("exp(" << x[i + size_t(j)] << "): " << a[j] << " vs xsimd " << b[j]);
    }
    for (int j = 0; j < simd::W; ++j)  // and close to the true value where it is a normal float
      if (std::isfinite(x[i + size_t(j)]) && std::fabs(x[i + size_t(j)]) < 80.f)
        CHECK(std::fabs(a[j] / std::exp(double(x[i + size_t(j)])) - 1) < 1e-6);
  }
  CHECK(differ == 0);
}

// simd::tanh and simd::erf (GELU, softcap): xsimd's results bit for bit (in wasm they take simd::exp
// instead of xsimd::exp), and within a stated error of the float64 functions over the range that
// GELU and softcap feed them. Measured maximum absolute errors on these inputs: tanh 7.1e-8 (both builds),
// erf 7.9e-8 (wasm) / 8.7e-8 (native AVX2) — under one float ulp at 1 (1.19e-7).
TEST_CASE("simd::tanh and simd::erf are xsimd's bit for bit, within 1e-7 of float64 tanh and erf", "[kernels][exp]") {
  namespace simd = attnlens::kernels::simd;
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> x = {0.f, -0.f, inf, -inf, std::numeric_limits<float>::quiet_NaN(), 1e-40f, -1e-40f, 1e30f,
                          -1e30f, 0.625f, -0.625f, 0.62499994f, 2.f / 3.f, -2.f / 3.f, 44.f, 45.f, -44.f, 9.f, 10.f};
  for (float v = -12.f; v <= 12.f; v += 0.00137f) x.push_back(v);
  for (uint64_t bits = 0; bits <= 0xffffffffu; bits += 0x00812345u) {  // every exponent, both signs
    const uint32_t b = uint32_t(bits);
    float v;
    std::memcpy(&v, &b, 4);
    x.push_back(v);
  }
  // Vectors mixing the two branches of each function (|x| below and above 0.625, 2/3) and all-small ones.
  for (float v : {0.1f, 0.3f, 0.6f, 0.7f, 1.5f, 5.f}) x.insert(x.end(), {v, -v, 0.5f * v, 2.f * v});
  while (x.size() % simd::W) x.push_back(0.25f);
  // (Through pointers to functions of float arrays: in wasm a v128 cannot cross Emscripten's JS
  // trampolines, which indirect calls inside Catch2's try blocks go through.)
  struct Fn {
    const char* name;
    void (*ours)(const float*, float*);
    void (*xs)(const float*, float*);
    double (*f64)(double);
  };
  const Fn fns[] = {{"tanh", [](const float* x, float* y) { simd::tanh(simd::load(x)).store_aligned(y); },
                     [](const float* x, float* y) { xsimd::tanh(simd::load(x)).store_aligned(y); },
                     [](double v) { return std::tanh(v); }},
                    {"erf", [](const float* x, float* y) { simd::erf(simd::load(x)).store_aligned(y); },
                     [](const float* x, float* y) { xsimd::erf(simd::load(x)).store_aligned(y); },
                     [](double v) { return std::erf(v); }}};
  for (const Fn& f : fns) {
    size_t differ = 0;
    double worst = 0;
    for (size_t i = 0; i < x.size(); i += simd::W) {
      alignas(64) float a[simd::W], b[simd::W];
      f.ours(&x[i], a);
      f.xs(&x[i], b);
      for (int j = 0; j < simd::W; ++j) {
        const float v = x[i + size_t(j)];
        const bool same = std::isnan(a[j]) ? std::isnan(b[j]) : std::memcmp(&a[j], &b[j], 4) == 0;
        if (!same && differ++ < 5) FAIL_CHECK(f.name << "(" << v << "): " << a[j] << " vs xsimd " << b[j]);
        if (std::isnan(v)) CHECK(std::isnan(a[j]));
        else worst = std::max(worst, std::fabs(a[j] - f.f64(double(v))));
      }
    }
    INFO(f.name << ": max |simd − float64| = " << worst);
    CHECK(differ == 0);
    CHECK(worst <= 1e-7);
  }
}
