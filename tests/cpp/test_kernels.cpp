// Every vector kernel equals its scalar reference, on awkward sizes that exercise the vector body,
// the unrolled body and the scalar tail (1, 3, 17, 63, 257, …).
#include <cmath>
#include <random>
#include <vector>

#include "core/tensor.h"
#include "kernels/kernels.h"
#include "test_util.h"

namespace k = attnlens::kernels;
using testutil::max_abs_diff;

namespace {

const int kSizes[] = {1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 31, 33, 63, 64, 65, 127, 257, 288, 769};

std::vector<float> randn(size_t n, uint32_t seed, float sd = 1.f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.f, sd);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// Relative tolerance for a sum of n products of unit-variance values.
double dot_tol(int n) { return 2e-6 * std::sqrt(double(n)) * 4 + 1e-6; }

}  // namespace

TEST_CASE("simd arch is reported", "[kernels]") {
  INFO("xsimd arch " << k::simd_arch_name() << ", width " << k::simd_width());
  CHECK(k::simd_width() >= 4);
}

TEST_CASE("dot equals the scalar reference", "[kernels]") {
  for (int n : kSizes) {
    auto a = randn(n, 1), b = randn(n, 2);
    INFO("n = " << n);
    CHECK(std::fabs(k::dot(a.data(), b.data(), n) - k::ref::dot(a.data(), b.data(), n)) <= dot_tol(n));
  }
}

TEST_CASE("matvec and matmul equal the scalar reference", "[kernels]") {
  const int dims[] = {1, 3, 4, 5, 17, 63, 64, 257};
  for (int n : {1, 2, 3, 4, 5, 7, 9, 17}) {
    for (int kk : dims) {
      for (int m : dims) {
        auto x = randn(size_t(n) * kk, 10 + n), w = randn(size_t(m) * kk, 20 + m), bias = randn(m, 30);
        std::vector<float> y(size_t(n) * m), yr(size_t(n) * m);
        for (const float* b : {static_cast<const float*>(nullptr), static_cast<const float*>(bias.data())}) {
          k::matmul(x.data(), w.data(), b, y.data(), n, kk, m);
          k::ref::matmul(x.data(), w.data(), b, yr.data(), n, kk, m);
          INFO("n=" << n << " k=" << kk << " m=" << m << " bias=" << (b != nullptr));
          REQUIRE(max_abs_diff(y, yr) <= dot_tol(kk));
          if (n == 1) {
            k::matvec(x.data(), w.data(), b, y.data(), kk, m);
            REQUIRE(max_abs_diff(y, yr) <= dot_tol(kk));
          }
        }
      }
    }
  }
}

TEST_CASE("q8_0 quantize, dequantize, matvec and matmul", "[kernels]") {
  for (int kk : {32, 64, 96, 288}) {
    for (int m : {1, 3, 5, 17}) {
      auto wf = randn(size_t(m) * kk, 40 + kk);
      std::vector<uint8_t> wq(size_t(m) * kk / 32 * 34);
      for (int j = 0; j < m; ++j) k::quantize_row_q8_0(wf.data() + size_t(j) * kk, wq.data() + size_t(j) * kk / 32 * 34, kk);
      // Dequantized weights are within half a quantization step (d/2, d = amax/127) of the originals,
      // plus the error of storing d as f16: |q|·|d - f16(d)| ≤ 127·|d - f16(d)|.
      std::vector<float> deq(wf.size());
      for (int j = 0; j < m; ++j) k::dequantize_row_q8_0(wq.data() + size_t(j) * kk / 32 * 34, deq.data() + size_t(j) * kk, kk);
      for (size_t i = 0; i < wf.size(); i += 32) {
        float amax = 0;
        for (int t = 0; t < 32; ++t) amax = std::fmax(amax, std::fabs(wf[i + t]));
        const float d = amax / 127.f;
        const float d16 = attnlens::f16_to_f32(attnlens::f32_to_f16(d));
        const float bound = d / 2 + 127.f * std::fabs(d - d16) + 1e-6f;
        for (int t = 0; t < 32; ++t) REQUIRE(std::fabs(deq[i + t] - wf[i + t]) <= bound);
      }
      for (int n : {1, 2, 5}) {
        auto x = randn(size_t(n) * kk, 50 + n), bias = randn(m, 60);
        std::vector<float> y(size_t(n) * m), yr(size_t(n) * m), yf(size_t(n) * m);
        k::matmul_q8_0(x.data(), wq.data(), bias.data(), y.data(), n, kk, m);
        k::ref::matmul_q8_0(x.data(), wq.data(), bias.data(), yr.data(), n, kk, m);
        k::ref::matmul(x.data(), deq.data(), bias.data(), yf.data(), n, kk, m);
        INFO("n=" << n << " k=" << kk << " m=" << m);
        CHECK(max_abs_diff(y, yr) <= dot_tol(kk));
        CHECK(max_abs_diff(y, yf) <= dot_tol(kk));  // same as f32 math on the dequantized weights
        if (n == 1) {
          k::matvec_q8_0(x.data(), wq.data(), bias.data(), y.data(), kk, m);
          CHECK(max_abs_diff(y, yr) <= dot_tol(kk));
        }
      }
    }
  }
}

TEST_CASE("q8_0 quantization matches ggml on hand-checked values", "[kernels]") {
  std::vector<float> x(32, 0.f);
  x[0] = 1.27f;   // amax → d = 0.01, q = 127
  x[1] = -0.635f; // q = round(-63.5) = -64 (roundf: half away from zero)
  x[2] = 0.004f;  // q = 0
  std::vector<uint8_t> q(34);
  k::quantize_row_q8_0(x.data(), q.data(), 32);
  uint16_t h;
  std::memcpy(&h, q.data(), 2);
  CHECK(attnlens::f16_to_f32(h) == Approx(0.01f).epsilon(1e-3));
  CHECK(int8_t(q[2]) == 127);
  CHECK(int8_t(q[3]) == -64);
  CHECK(int8_t(q[4]) == 0);
}

TEST_CASE("softmax is stable and equals the reference", "[kernels]") {
  for (int n : kSizes) {
    auto x = randn(n, 70 + n, 5.f), xr = x;
    k::softmax(x.data(), n);
    k::ref::softmax(xr.data(), n);
    INFO("n = " << n);
    CHECK(max_abs_diff(x, xr) <= 1e-6);
    double s = 0;
    for (float v : x) s += v;
    CHECK(s == Approx(1.0).epsilon(1e-5));
  }
  // Huge logits: no overflow, the max entry wins.
  std::vector<float> big = {1000.f, 999.f, -1000.f};
  k::softmax(big.data(), 3);
  CHECK(big[0] == Approx(1.0 / (1.0 + std::exp(-1.0))).epsilon(1e-6));
  CHECK(big[2] == 0.f);
  // -inf entries (masked keys) get exactly zero weight.
  std::vector<float> masked = {0.f, -INFINITY, 0.f, -INFINITY, 0.f};
  k::softmax(masked.data(), 5);
  CHECK(masked[1] == 0.f);
  CHECK(masked[0] == Approx(1.0 / 3));
}

TEST_CASE("layernorm and rmsnorm equal the reference", "[kernels]") {
  for (int n : kSizes) {
    auto x = randn(n, 80 + n, 3.f), g = randn(n, 81), b = randn(n, 82);
    for (auto& v : x) v += 2.f;  // a mean far from 0 tests the two-pass variance
    std::vector<float> y(n), yr(n);
    k::layernorm(x.data(), g.data(), b.data(), y.data(), n, 1e-5f);
    k::ref::layernorm(x.data(), g.data(), b.data(), yr.data(), n, 1e-5f);
    INFO("n = " << n);
    CHECK(max_abs_diff(y, yr) <= 2e-5);
    k::layernorm(x.data(), g.data(), nullptr, y.data(), n, 1e-5f);
    k::ref::layernorm(x.data(), g.data(), nullptr, yr.data(), n, 1e-5f);
    CHECK(max_abs_diff(y, yr) <= 2e-5);
    k::rmsnorm(x.data(), g.data(), y.data(), n, 1e-5f);
    k::ref::rmsnorm(x.data(), g.data(), yr.data(), n, 1e-5f);
    CHECK(max_abs_diff(y, yr) <= 2e-5);
  }
}

TEST_CASE("activations equal the reference", "[kernels]") {
  using Fn = void (*)(float*, int) noexcept;
  struct Case {
    const char* name;
    Fn simd, scalar;
  } cases[] = {{"gelu_tanh", k::gelu_tanh, k::ref::gelu_tanh},
               {"gelu_erf", k::gelu_erf, k::ref::gelu_erf},
               {"silu", k::silu, k::ref::silu},
               {"relu", k::relu, k::ref::relu}};
  for (const auto& c : cases) {
    for (int n : kSizes) {
      auto x = randn(n, 90 + n, 4.f), xr = x;
      c.simd(x.data(), n);
      c.scalar(xr.data(), n);
      INFO(c.name << " n = " << n);
      CHECK(max_abs_diff(x, xr) <= 2e-6 * 4);
    }
  }
  // Known values: GELU(1) exact = 0.8413447, tanh form = 0.8411920; SiLU(1) = 0.7310586.
  float v[1] = {1.f};
  k::gelu_erf(v, 1);
  CHECK(v[0] == Approx(0.8413447f).epsilon(1e-6));
  v[0] = 1.f;
  k::gelu_tanh(v, 1);
  CHECK(v[0] == Approx(0.8411920f).epsilon(1e-6));
  v[0] = 1.f;
  k::silu(v, 1);
  CHECK(v[0] == Approx(0.7310586f).epsilon(1e-6));
}

TEST_CASE("swiglu, add, axpy, scale equal the reference", "[kernels]") {
  for (int n : kSizes) {
    auto g = randn(n, 100 + n), u = randn(n, 101), gr = g;
    k::swiglu(g.data(), u.data(), n);
    k::ref::swiglu(gr.data(), u.data(), n);
    INFO("n = " << n);
    CHECK(max_abs_diff(g, gr) <= 1e-6 * 4);
    auto y = randn(n, 102), yr = y, x = randn(n, 103);
    k::add(y.data(), x.data(), n);
    k::ref::add(yr.data(), x.data(), n);
    CHECK(max_abs_diff(y, yr) == 0.0);
    k::axpy(0.37f, x.data(), y.data(), n);
    k::ref::axpy(0.37f, x.data(), yr.data(), n);
    CHECK(max_abs_diff(y, yr) <= 1e-6);
    k::scale(y.data(), -1.5f, n);
    k::ref::scale(yr.data(), -1.5f, n);
    CHECK(max_abs_diff(y, yr) <= 1e-6);
  }
}

TEST_CASE("rope kernels equal the reference", "[kernels]") {
  for (int head_dim : {2, 4, 8, 16, 18, 32, 64, 128}) {
    for (int heads : {1, 3}) {
      auto x = randn(size_t(heads) * head_dim, 110 + head_dim), xr = x;
      auto c = randn(head_dim / 2, 111), s = randn(head_dim / 2, 112);
      k::rope_adjacent(x.data(), c.data(), s.data(), heads, head_dim);
      k::ref::rope_adjacent(xr.data(), c.data(), s.data(), heads, head_dim);
      INFO("adjacent head_dim=" << head_dim << " heads=" << heads);
      CHECK(max_abs_diff(x, xr) <= 1e-6);
      x = randn(size_t(heads) * head_dim, 113);
      xr = x;
      k::rope_half(x.data(), c.data(), s.data(), heads, head_dim);
      k::ref::rope_half(xr.data(), c.data(), s.data(), heads, head_dim);
      INFO("half head_dim=" << head_dim);
      CHECK(max_abs_diff(x, xr) <= 1e-6);
    }
  }
}
