// Every vector kernel equals its scalar reference, on awkward sizes that exercise the vector body,
// the unrolled body and the scalar tail (1, 3, 17, 63, 257, …).
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <random>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "kernels/kernels.h"
#include "test_util.h"

namespace k = attnlens::kernels;
using testutil::max_abs_diff;
using testutil::randn;

namespace {

const int kSizes[] = {1, 2, 3, 4, 5, 7, 8, 15, 16, 17, 31, 33, 63, 64, 65, 127, 257, 288, 769};

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
  for (int n : {1, 2, 3, 4, 5, 6, 7, 8, 9, 17}) {
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

namespace {

// matvec_q8_0 / matmul_q8_0 quantize x too (kernels.h): per 32-block, dx = amax/127 and
// xq = round(x·127/amax), so |x − dx·xq| ≤ dx·(1/2 + 2·127·2⁻²⁴) (the rounding, plus the float error
// of x·(127/amax) before it; |xq| ≤ 127); the dot products use dx rounded to f16 (as llama.cpp
// stores it), which moves dx·xq by at most 2⁻¹¹·dx·127 more. The integer block sums are exact, so
// against f32 math on the dequantized weights (d·q) the kernel can differ by at most, per output,
//   Σ_blocks |d|·dx·(1/2 + 2⁻¹⁶ + 127·2⁻¹¹)·Σ|q|   (worst case: every rounding error aligned)
// plus float rounding (dot_tol). The bound grows like k, the typical error like √k: for Gaussian
// data and k = 288 it is about 2.0, against |y| ≈ 17 and an RMS error ≈ 0.09 (checked below).
std::vector<double> q8_act_bound(const std::vector<float>& x, const std::vector<uint8_t>& wq, int n, int kk, int m) {
  std::vector<double> bound(size_t(n) * m);
  const int nb = kk / 32;
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < m; ++j) {
      double s = 0;
      for (int b = 0; b < nb; ++b) {
        float amax = 0;
        for (int t = 0; t < 32; ++t) amax = std::fmax(amax, std::fabs(x[size_t(i) * kk + b * 32 + t]));
        const uint8_t* blk = wq.data() + (size_t(j) * nb + b) * 34;
        uint16_t h;
        std::memcpy(&h, blk, 2);
        double qsum = 0;
        for (int t = 0; t < 32; ++t) qsum += std::abs(int(int8_t(blk[2 + t])));
        s += std::fabs(attnlens::f16_to_f32(h)) * (amax / 127.0) * (0.5 + 1.0 / 65536 + 127.0 / 2048) * qsum;
      }
      bound[size_t(i) * m + j] = s + dot_tol(kk);
    }
  }
  return bound;
}

// Expected squared error of the same sum if each rounding error is uniform in ±dx/2 and
// independent: Σ_blocks d²·dx²/12·Σq².
double q8_act_variance(const std::vector<float>& x, const std::vector<uint8_t>& wq, int i, int j, int kk) {
  const int nb = kk / 32;
  double v = 0;
  for (int b = 0; b < nb; ++b) {
    float amax = 0;
    for (int t = 0; t < 32; ++t) amax = std::fmax(amax, std::fabs(x[size_t(i) * kk + b * 32 + t]));
    const uint8_t* blk = wq.data() + (size_t(j) * nb + b) * 34;
    uint16_t h;
    std::memcpy(&h, blk, 2);
    const double d = attnlens::f16_to_f32(h), dx = amax / 127.0;
    double q2 = 0;
    for (int t = 0; t < 32; ++t) q2 += double(int8_t(blk[2 + t])) * int8_t(blk[2 + t]);
    v += d * d * dx * dx / 12 * q2;
  }
  return v;
}

std::vector<uint8_t> quantize_rows(const std::vector<float>& wf, int m, int kk) {
  std::vector<uint8_t> wq(size_t(m) * kk / 32 * 34);
  for (int j = 0; j < m; ++j) k::quantize_row_q8_0(wf.data() + size_t(j) * kk, wq.data() + size_t(j) * kk / 32 * 34, kk);
  return wq;
}

}  // namespace

TEST_CASE("matmul over several packed chunks of x equals the scalar reference", "[kernels]") {
  // k = 4099: 16 KiB per packed row of x, so matmul packs x in chunks of 32 rows; n = 67 leaves a
  // partial chunk with an odd row, m = 9 a partial panel, k % 4 = 3 a zero-padded tail.
  const int n = 67, kk = 4099, m = 9;
  auto x = randn(size_t(n) * kk, 600), w = randn(size_t(m) * kk, 601), bias = randn(m, 602);
  std::vector<float> y(size_t(n) * m), yr(size_t(n) * m);
  k::matmul(x.data(), w.data(), bias.data(), y.data(), n, kk, m);
  k::ref::matmul(x.data(), w.data(), bias.data(), yr.data(), n, kk, m);
  REQUIRE(max_abs_diff(y, yr) <= dot_tol(kk));
}

TEST_CASE("q8_0 quantize, dequantize, matvec and matmul", "[kernels]") {
  double err2 = 0, predicted2 = 0;
  for (int kk : {32, 64, 96, 288, 768}) {
    for (int m : {1, 3, 5, 17}) {
      auto wf = randn(size_t(m) * kk, 40 + kk);
      auto wq = quantize_rows(wf, m, kk);
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
        std::vector<float> y(size_t(n) * m), yr(size_t(n) * m), yf(size_t(n) * m), yq(size_t(n) * m);
        k::matmul_q8_0(x.data(), wq.data(), bias.data(), y.data(), n, kk, m);
        k::ref::matmul_dequantized(attnlens::DType::Q8_0, x.data(), wq.data(), bias.data(), yr.data(), n, kk, m);
        k::ref::matmul(x.data(), deq.data(), bias.data(), yf.data(), n, kk, m);
        for (int i = 0; i < n; ++i)
          k::ref::matmul_q(attnlens::DType::Q8_0, x.data() + size_t(i) * kk, wq.data(), bias.data(), yq.data() + size_t(i) * m, 1, kk, m);
        const auto bound = q8_act_bound(x, wq, n, kk, m);
        INFO("n=" << n << " k=" << kk << " m=" << m);
        CHECK(max_abs_diff(yr, yf) <= dot_tol(kk));  // the f32-activation reference is f32 math on d·q
        CHECK(max_abs_diff(y, yq) <= dot_tol(kk));   // the kernel's own arithmetic, to float rounding
        for (size_t o = 0; o < y.size(); ++o) {
          CHECK(std::fabs(y[o] - yf[o]) <= bound[o]);  // activation quantization, worst case
          CHECK(std::fabs(y[o] - yr[o]) <= bound[o]);
        }
        for (int i = 0; i < n; ++i)
          for (int j = 0; j < m; ++j) {
            const double e = double(y[size_t(i) * m + j]) - double(yf[size_t(i) * m + j]);
            err2 += e * e;
            predicted2 += q8_act_variance(x, wq, i, j, kk);
          }
        if (n == 1) {
          k::matvec_q8_0(x.data(), wq.data(), bias.data(), y.data(), kk, m);
          CHECK(max_abs_diff(y, yq) <= dot_tol(kk));
        }
      }
    }
  }
  // Over all 520 outputs the RMS error matches the uniform-rounding model: a wrong rounding rule
  // (truncation doubles it) or a dropped/mis-scaled block (errors of order |y|) would not.
  const double ratio = std::sqrt(err2 / predicted2);
  INFO("RMS error / predicted RMS = " << ratio);
  CHECK(ratio > 0.7);
  CHECK(ratio < 1.3);
}

TEST_CASE("q8_0 matvec and matmul equal the scalar model of their integer arithmetic", "[kernels]") {
  // The vector kernels quantize x per block and sum q·xq in integers; ref::matmul_q does the
  // same in plain scalar code, so they agree to float rounding on every size: rows of W 1..9 (the
  // two-row body and the odd row), rows of x 1..9 (groups of 4 and the tails), 1..12 blocks.
  for (int kk = 32; kk <= 384; kk += 32) {
    for (int m = 1; m <= 9; ++m) {
      auto wq = quantize_rows(randn(size_t(m) * kk, 200 + kk + m), m, kk);
      auto bias = randn(m, 400);
      for (int n = 1; n <= 9; ++n) {
        auto x = randn(size_t(n) * kk, 300 + kk + n);
        std::vector<float> y(size_t(n) * m), yr(size_t(n) * m);
        for (const float* b : {static_cast<const float*>(nullptr), static_cast<const float*>(bias.data())}) {
          for (int i = 0; i < n; ++i)
            k::ref::matmul_q(attnlens::DType::Q8_0, x.data() + size_t(i) * kk, wq.data(), b, yr.data() + size_t(i) * m, 1, kk, m);
          INFO("n=" << n << " k=" << kk << " m=" << m << " bias=" << (b != nullptr));
          k::matmul_q8_0(x.data(), wq.data(), b, y.data(), n, kk, m);
          REQUIRE(max_abs_diff(y, yr) <= dot_tol(kk));
          if (n == 1) {
            k::matvec_q8_0(x.data(), wq.data(), b, y.data(), kk, m);
            REQUIRE(max_abs_diff(y, yr) <= dot_tol(kk));
          }
        }
      }
    }
  }
}

TEST_CASE("q8_0 matmul over several cache blocks of W equals the scalar model", "[kernels]") {
  // k = 4096: 4352-byte rows, so prefill walks W in blocks of 60 rows; m = 131 leaves an odd
  // partial block and an odd middle row in the decode pass.
  const int kk = 4096, m = 131;
  auto wq = quantize_rows(randn(size_t(m) * kk, 500), m, kk);
  auto bias = randn(m, 501);
  for (int n : {1, 3}) {
    auto x = randn(size_t(n) * kk, 502 + n);
    std::vector<float> y(size_t(n) * m), yr(size_t(n) * m);
    k::matmul_q8_0(x.data(), wq.data(), bias.data(), y.data(), n, kk, m);
    for (int i = 0; i < n; ++i)
      k::ref::matmul_q(attnlens::DType::Q8_0, x.data() + size_t(i) * kk, wq.data(), bias.data(), yr.data() + size_t(i) * m, 1, kk, m);
    INFO("n=" << n);
    REQUIRE(max_abs_diff(y, yr) <= dot_tol(kk));
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

TEST_CASE("gelu_tanh_f16 is llama.cpp's table GELU: f16 in, f16 out", "[kernels]") {
  // f16(gelu_tanh(f16(x))) computed in numpy; beyond ±10 the table's clamps.
  float x[6] = {1.f, -0.5f, 3.3f, 0.1234f, -11.f, 12.f};
  k::gelu_tanh_f16(x, 6);
  CHECK(x[0] == 0.84130859375f);
  CHECK(x[1] == -0.154296875f);
  CHECK(x[2] == 3.298828125f);
  CHECK(x[3] == 0.0677490234375f);
  CHECK(x[4] == 0.f);
  CHECK(x[5] == 12.f);
  // Within f16 rounding of the exact form everywhere in between.
  auto v = randn(1000, 140, 3.f), e = v;
  k::gelu_tanh_f16(v.data(), 1000);
  k::ref::gelu_tanh(e.data(), 1000);
  for (size_t i = 0; i < v.size(); ++i) CHECK(std::fabs(v[i] - e[i]) <= 2e-3 * std::max(1.f, std::fabs(e[i])));
}

TEST_CASE("swiglu, mul, add, axpy, scale equal the reference", "[kernels]") {
  for (int n : kSizes) {
    auto g = randn(n, 100 + n), u = randn(n, 101), gr = g;
    k::swiglu(g.data(), u.data(), n);
    k::ref::swiglu(gr.data(), u.data(), n);
    INFO("n = " << n);
    CHECK(max_abs_diff(g, gr) <= 1e-6 * 4);
    auto y = randn(n, 102), yr = y, x = randn(n, 103);
    k::mul(y.data(), x.data(), n);
    k::ref::mul(yr.data(), x.data(), n);
    CHECK(max_abs_diff(y, yr) == 0.0);
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

TEST_CASE("rope kernels equal the reference, whole and partial rotation", "[kernels]") {
  for (int head_dim : {2, 4, 8, 16, 18, 32, 64, 128}) {
    // rot_dims: every dimension, a quarter (GPT-NeoX rotary_pct 0.25), and odd multiples of 2
    for (int rot : {head_dim, head_dim / 4 / 2 * 2, head_dim - 2, 2}) {
      if (rot < 2 || rot % 2) continue;
      for (int heads : {1, 3}) {
        auto x = randn(size_t(heads) * head_dim, 110 + head_dim), xr = x, x0 = x;
        auto c = randn(rot / 2, 111), s = randn(rot / 2, 112);
        k::rope_adjacent(x.data(), c.data(), s.data(), heads, head_dim, rot);
        k::ref::rope_adjacent(xr.data(), c.data(), s.data(), heads, head_dim, rot);
        INFO("adjacent head_dim=" << head_dim << " rot=" << rot << " heads=" << heads);
        CHECK(max_abs_diff(x, xr) <= 1e-6);
        for (int h = 0; h < heads; ++h)  // dimensions past rot_dims are untouched
          for (int d = rot; d < head_dim; ++d) CHECK(x[size_t(h) * head_dim + d] == x0[size_t(h) * head_dim + d]);
        x = randn(size_t(heads) * head_dim, 113);
        xr = x;
        x0 = x;
        k::rope_half(x.data(), c.data(), s.data(), heads, head_dim, rot);
        k::ref::rope_half(xr.data(), c.data(), s.data(), heads, head_dim, rot);
        INFO("half head_dim=" << head_dim << " rot=" << rot);
        CHECK(max_abs_diff(x, xr) <= 1e-6);
        for (int h = 0; h < heads; ++h)
          for (int d = rot; d < head_dim; ++d) CHECK(x[size_t(h) * head_dim + d] == x0[size_t(h) * head_dim + d]);
      }
    }
  }
}

TEST_CASE("attention row kernels equal the reference", "[kernels]") {
  // Keys strided as in a KV cache row of several heads (stride > head_dim), counts that exercise
  // the W-keys-at-a-time body and the tail, head dims that are and are not multiples of W.
  for (int hd : {1, 3, 4, 8, 17, 32, 64, 80, 128, 256}) {
    for (int count : {1, 2, 3, 5, 8, 17, 64, 65}) {
      const size_t stride = size_t(hd) * 3 + 1;
      auto q = randn(hd, 120 + hd), kv = randn(stride * count, 121 + count);
      std::vector<float> s(count), sr(count);
      k::attention_scores(q.data(), kv.data(), stride, hd, count, 0.125f, s.data());
      k::ref::attention_scores(q.data(), kv.data(), stride, hd, count, 0.125f, sr.data());
      INFO("head_dim=" << hd << " count=" << count);
      CHECK(max_abs_diff(s, sr) <= dot_tol(hd) * 0.125);
      // Weights with exact zeros (masked keys); their value rows hold NaN, which must never be read.
      auto p = randn(count, 122);
      auto vals = kv;
      for (int j = 0; j < count; j += 3) {
        p[j] = 0.f;
        for (int d = 0; d < hd; ++d) vals[size_t(j) * stride + d] = std::nanf("");
      }
      std::vector<float> o(hd), orf(hd);
      k::attention_values(p.data(), vals.data(), stride, hd, count, o.data());
      k::ref::attention_values(p.data(), vals.data(), stride, hd, count, orf.data());
      for (float v : o) REQUIRE(std::isfinite(v));
      CHECK(max_abs_diff(o, orf) <= dot_tol(count));
    }
  }
}

TEST_CASE("softcap and mul equal the reference", "[kernels]") {
  for (int n : kSizes) {
    auto x = randn(n, 130 + n), xr = x;
    for (float& v : x) v *= 80.f;  // beyond the cap: tanh saturates
    xr = x;
    k::softcap(x.data(), n, 50.f);
    k::ref::softcap(xr.data(), n, 50.f);
    INFO("n = " << n);
    CHECK(max_abs_diff(x, xr) <= 50.f * 2e-6);
    for (float v : x) CHECK(std::fabs(v) < 50.f);
    auto y = randn(n, 131), yr = y, z = randn(n, 132);
    k::mul(y.data(), z.data(), n);
    k::ref::mul(yr.data(), z.data(), n);
    CHECK(max_abs_diff(y, yr) == 0.0);
  }
  float v[2] = {50.f, -1e-3f};  // 50·tanh(1) and (near 0) the identity
  k::softcap(v, 2, 50.f);
  CHECK(v[0] == Approx(50.0 * std::tanh(1.0)).epsilon(1e-6));
  CHECK(v[1] == Approx(-1e-3).epsilon(1e-5));
}

TEST_CASE("transpose moves every element of 2 and 4 bytes, unaligned, across tile edges", "[kernels]") {
  for (size_t bytes : {size_t(2), size_t(4)})
    for (auto [rows, cols] : {std::pair<int64_t, int64_t>{1, 1}, {1, 70}, {70, 1}, {31, 33}, {37, 70}, {64, 96}, {129, 65}}) {
      // src at an odd address: file data is not aligned to the element size.
      std::vector<uint8_t> buf(size_t(rows * cols) * bytes + 1), dst(size_t(rows * cols) * bytes);
      uint8_t* src = buf.data() + 1;
      for (size_t i = 0; i < size_t(rows * cols) * bytes; ++i) src[i] = uint8_t(i * 131 + (i >> 8) * 7 + 3);
      k::transpose(src, dst.data(), rows, cols, bytes);
      int wrong = 0;
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c)
          wrong += std::memcmp(dst.data() + (c * rows + r) * bytes, src + (r * cols + c) * bytes, bytes) != 0;
      INFO(bytes << "-byte elements, " << rows << " × " << cols);
      CHECK(wrong == 0);
    }
}
