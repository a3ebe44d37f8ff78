// GGML block formats and f16/bf16 weights in the kernels:
//   * dequantization equals gguf-py's numpy decoders on blocks llama.cpp's quantizer made, bit for bit
//     (tests/fixtures/llamacpp/make_quant_fixtures.py);
//   * our quantizers (q8_0, q4_0, q5_0, q4_K) write the bytes llama.cpp's quantizer writes;
//   * matmul_q (decode and prefill, every type) equals the scalar model of its integer arithmetic
//     (ref::matmul_q) to float rounding, on awkward sizes; prefill's tiles give decode's bits;
//   * that integer model is f32 math on the dequantized weights up to the error of quantizing x,
//     whose size matches the uniform-rounding prediction (a wrong element order, scale or offset
//     would give errors of the size of y itself);
//   * f16 / bf16 matmul equals f32 math on the widened weights, subnormal halves included.
#include <nlohmann/json.hpp>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "kernels/kernels.h"
#include "test_util.h"

namespace k = attnlens::kernels;
using attnlens::DType;
using testutil::max_abs_diff;
using testutil::randn;

namespace {

const DType kBlockTypes[] = {DType::Q8_0, DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::IQ4_NL,
                             DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::IQ4_XS};

std::string blocks_path(const std::string& f) { return testutil::fixture_path("llamacpp/blocks/" + f); }

DType dtype_from_name(const std::string& n) {
  for (int i = 0; i < attnlens::kNumDTypes; ++i)
    if (n == attnlens::dtype_name(DType(i))) return DType(i);
  FAIL("unknown type " << n);
  return DType::F32;
}

// Byte offsets of the f16 scale fields of one block (as in the format descriptions, kernels/quant_blocks.h).
std::vector<int> scale_fields(DType t) {
  switch (t) {
    case DType::Q4_1: case DType::Q5_1: case DType::Q4_K: case DType::Q5_K: return {0, 2};
    case DType::Q2_K: return {80, 82};
    case DType::Q3_K: return {108};
    case DType::Q6_K: return {208};
    default: return {0};
  }
}

// m rows of k weights of type t: random bytes (every quant value and sub-block scale possible),
// f16 scales drawn from [0.5, 2]/sqrt(k) so that y stays O(1).
std::vector<uint8_t> random_blocks(DType t, int m, int kk, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> d(0.5f, 2.f);
  const size_t be = size_t(attnlens::dtype_block_elems(t)), bb = size_t(attnlens::dtype_block_bytes(t));
  const size_t blocks = size_t(m) * kk / be;
  std::vector<uint8_t> out(blocks * bb);
  for (auto& v : out) v = uint8_t(byte(rng));
  const float scale = 1.f / std::sqrt(float(kk)) / (be == 256 ? 32.f : 8.f);
  for (size_t b = 0; b < blocks; ++b)
    for (int f : scale_fields(t)) {
      const uint16_t h = attnlens::f32_to_f16(d(rng) * scale * (byte(rng) & 1 ? 1.f : -1.f));
      std::memcpy(out.data() + b * bb + f, &h, 2);
    }
  return out;
}

std::vector<float> dequantized(DType t, const std::vector<uint8_t>& w, int m, int kk) {
  std::vector<float> out(size_t(m) * kk);
  const size_t rb = attnlens::dtype_bytes(t, size_t(kk));
  for (int j = 0; j < m; ++j) k::ref::dequantize_row(t, w.data() + rb * j, out.data() + size_t(j) * kk, kk);
  return out;
}

// Float-rounding tolerance for outputs computed two ways from the same integer block sums:
// a few f32 ulps of Σ|w·x| (every partial sum is bounded by it).
std::vector<double> rounding_tol(const std::vector<float>& wf, const std::vector<float>& x, int n, int kk, int m) {
  std::vector<double> tol(size_t(n) * m);
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < m; ++j) {
      double s = 0;
      for (int c = 0; c < kk; ++c) s += std::fabs(double(wf[size_t(j) * kk + c]) * x[size_t(i) * kk + c]);
      tol[size_t(i) * m + j] = 4e-6 * s + 1e-6;
    }
  return tol;
}

}  // namespace

TEST_CASE("dequantize_row equals gguf-py's decoders on blocks made by llama.cpp's quantizer", "[kernels][quant]") {
  const auto man = nlohmann::json::parse(testutil::read_text(blocks_path("manifest.json")));
  REQUIRE(man.at("types").size() >= 10);
  for (const auto& [name, info] : man.at("types").items()) {
    const DType t = dtype_from_name(name);
    const int rows = info.at("rows"), cols = info.at("cols");
    const auto raw = testutil::read_bytes(blocks_path(name + ".bin"));
    const auto want = testutil::read_f32(blocks_path(name + ".f32"));
    REQUIRE(raw.size() == attnlens::dtype_bytes(t, size_t(rows) * cols));
    REQUIRE(want.size() == size_t(rows) * cols);
    std::vector<float> got(want.size()), got_ref(want.size());
    const size_t rb = attnlens::dtype_bytes(t, size_t(cols));
    for (int r = 0; r < rows; ++r) {
      k::dequantize_row(t, raw.data() + rb * r, got.data() + size_t(r) * cols, cols);
      k::ref::dequantize_row(t, raw.data() + rb * r, got_ref.data() + size_t(r) * cols, cols);
    }
    INFO(name << " (" << info.at("from").get<std::string>() << ")");
    CHECK(max_abs_diff(got, want) == 0.0);
    CHECK(max_abs_diff(got_ref, want) == 0.0);
  }
}

TEST_CASE("quantize_row writes the bytes llama.cpp's quantizer writes", "[kernels][quant]") {
  const auto man = nlohmann::json::parse(testutil::read_text(blocks_path("manifest.json")));
  REQUIRE(man.at("quantize").size() == 4);
  for (const auto& [name, info] : man.at("quantize").items()) {
    const DType t = dtype_from_name(name);
    REQUIRE(k::can_quantize(t));
    const int rows = info.at("rows"), cols = info.at("cols");
    const auto src = testutil::read_f32(blocks_path("quantize-" + name + ".src.f32"));
    const auto want = testutil::read_bytes(blocks_path("quantize-" + name + ".bin"));
    REQUIRE(src.size() == size_t(rows) * cols);
    REQUIRE(want.size() == attnlens::dtype_bytes(t, src.size()));
    std::vector<uint8_t> got(want.size());
    const size_t rb = attnlens::dtype_bytes(t, size_t(cols));
    for (int r = 0; r < rows; ++r) k::quantize_row(t, src.data() + size_t(r) * cols, got.data() + rb * r, cols);
    size_t differing = 0;
    for (size_t i = 0; i < got.size(); ++i) differing += got[i] != want[i];
    INFO(name << " (" << info.at("from").get<std::string>() << "): " << differing << " of " << got.size()
              << " bytes differ");
    CHECK(differing == 0);
  }
}

TEST_CASE("quantizers on edge blocks: zeros, ties, one outlier", "[kernels][quant]") {
  // An all-zero block quantizes to scale 0 and dequantizes to zeros; a block with one large value
  // keeps it to within half a step. q4_0 maps the largest-magnitude value to -8 exactly.
  for (DType t : {DType::Q8_0, DType::Q4_0, DType::Q5_0, DType::Q4_K}) {
    const int kk = attnlens::dtype_block_elems(t) == 256 ? 256 : 64;
    std::vector<float> x(kk, 0.f);
    std::vector<uint8_t> q(attnlens::dtype_bytes(t, kk));
    std::vector<float> back(kk);
    k::quantize_row(t, x.data(), q.data(), kk);
    k::dequantize_row(t, q.data(), back.data(), kk);
    INFO(attnlens::dtype_name(t));
    CHECK(max_abs_diff(back, x) == 0.0);
    x[5] = -3.f;
    x[40] = 0.25f;
    k::quantize_row(t, x.data(), q.data(), kk);
    k::dequantize_row(t, q.data(), back.data(), kk);
    CHECK(std::fabs(back[5] + 3.f) <= 3.f / 15);
    if (t == DType::Q4_0) CHECK(back[5] == -3.f);
  }
}

TEST_CASE("matmul_q equals the scalar model of its integer arithmetic, every type, awkward sizes", "[kernels][quant]") {
  for (DType t : kBlockTypes) {
    const int be = attnlens::dtype_block_elems(t);
    const int max_blocks = be == 256 ? 4 : 12;
    for (int nb = 1; nb <= max_blocks; nb += (be == 256 ? 1 : 3)) {
      const int kk = nb * be;
      for (int m : {1, 2, 3, 5, 8, 9}) {
        const auto w = random_blocks(t, m, kk, uint32_t(100 * nb + m));
        const auto wf = dequantized(t, w, m, kk);
        const auto bias = randn(m, 7);
        for (int n : {1, 2, 3, 4, 5, 7, 9}) {
          auto x = randn(size_t(n) * kk, uint32_t(1000 + kk + n));
          if (n > 2) std::fill(x.begin() + kk, x.begin() + 2 * kk, 0.f);  // an all-zero row of x
          const auto tol = rounding_tol(wf, x, n, kk, m);
          std::vector<float> y(size_t(n) * m), yr(size_t(n) * m);
          for (const float* b : {static_cast<const float*>(nullptr), static_cast<const float*>(bias.data())}) {
            k::matmul_q(t, x.data(), w.data(), b, y.data(), n, kk, m);
            k::ref::matmul_q(t, x.data(), w.data(), b, yr.data(), n, kk, m);
            INFO(attnlens::dtype_name(t) << " n=" << n << " k=" << kk << " m=" << m << " bias=" << (b != nullptr));
            for (size_t o = 0; o < y.size(); ++o) REQUIRE(std::fabs(y[o] - yr[o]) <= tol[o]);
          }
        }
      }
    }
  }
}

TEST_CASE("matmul_q over row blocks and many rows equals the scalar model", "[kernels][quant]") {
  // Larger m and k: prefill walks W in cache-sized blocks; any row range of W is a valid W.
  for (DType t : kBlockTypes) {
    const int kk = 1024, m = 301;
    const auto w = random_blocks(t, m, kk, 77);
    const auto wf = dequantized(t, w, m, kk);
    for (int n : {1, 6}) {
      const auto x = randn(size_t(n) * kk, 78);
      const auto tol = rounding_tol(wf, x, n, kk, m);
      std::vector<float> y(size_t(n) * m), yr(size_t(n) * m);
      k::ref::matmul_q(t, x.data(), w.data(), nullptr, yr.data(), n, kk, m);
      k::matmul_q(t, x.data(), w.data(), nullptr, y.data(), n, kk, m);
      INFO(attnlens::dtype_name(t) << " n=" << n);
      for (size_t o = 0; o < y.size(); ++o) REQUIRE(std::fabs(y[o] - yr[o]) <= tol[o]);
      // Rows 100..199 alone (a row block, as a thread would get it).
      const size_t rb = attnlens::dtype_bytes(t, size_t(kk));
      std::vector<float> yb(size_t(n) * 100);
      k::matmul_q(t, x.data(), w.data() + rb * 100, nullptr, yb.data(), n, kk, 100);
      for (int i = 0; i < n; ++i)
        for (int j = 0; j < 100; ++j) REQUIRE(std::fabs(yb[size_t(i) * 100 + j] - yr[size_t(i) * m + 100 + j]) <= tol[size_t(i) * m + 100 + j]);
    }
  }
}

TEST_CASE("prefill (tiles of W rows x tokens) gives the bits of one token at a time, every type", "[kernels][quant]") {
  // matmul_q with n > 1 walks tiles of one W row × 8 tokens (q8_0, q4_0, q5_0, iq4_nl, q4_K, q5_K,
  // q6_K) and the leftover tokens by pairs of rows; decode (n = 1) walks pairs of rows only. Every
  // output must be bitwise the decode result: n not a multiple of the tile, m odd, several cache
  // blocks of W rows (k = 1024, m = 301), a zero row of x, with and without bias.
  for (DType t : kBlockTypes) {
    const int be = attnlens::dtype_block_elems(t);
    for (const auto& [kk, m] : {std::pair{be, 5}, std::pair{3 * be, 9}, std::pair{1024, 301}}) {
      const auto w = random_blocks(t, m, kk, uint32_t(kk + m));
      const auto bias = randn(m, 5);
      for (int n : {2, 5, 8, 13, 17}) {
        auto x = randn(size_t(n) * kk, uint32_t(3000 + n + kk));
        if (n > 4) std::fill(x.begin() + 4 * kk, x.begin() + 5 * kk, 0.f);
        for (const float* b : {static_cast<const float*>(nullptr), static_cast<const float*>(bias.data())}) {
          std::vector<float> y(size_t(n) * m), y1(m);
          k::matmul_q(t, x.data(), w.data(), b, y.data(), n, kk, m);
          INFO(attnlens::dtype_name(t) << " n=" << n << " k=" << kk << " m=" << m << " bias=" << (b != nullptr));
          for (int i = 0; i < n; ++i) {
            k::matmul_q(t, x.data() + size_t(i) * kk, w.data(), b, y1.data(), 1, kk, m);
            INFO("token " << i);
            REQUIRE(std::memcmp(y.data() + size_t(i) * m, y1.data(), sizeof(float) * m) == 0);
          }
        }
      }
    }
  }
}

TEST_CASE("the integer model is f32 math on the dequantized weights up to quantizing x", "[kernels][quant]") {
  // x is quantized per block of 32 (q8_0/q8_1: step dx = amax/127) or 256 (q8_K: step |max|/127);
  // each x_i then carries a rounding error e_i, uniform in ±step/2 and independent, so the error of
  // y_j = Σ w_ji·x_i has variance Σ w_ji²·step²/12 — the prediction checked here, pooled over many
  // outputs. (The f16 rounding of q8_0's d adds ~1e-4 relative: negligible.) A wrong element order
  // or scale would make errors as large as y itself.
  for (DType t : kBlockTypes) {
    const int be = attnlens::dtype_block_elems(t);
    const int ab = be == 256 ? 256 : 32;  // activation block
    const int kk = 1024, m = 64, n = 8;
    const auto w = random_blocks(t, m, kk, 5);
    const auto wf = dequantized(t, w, m, kk);
    const auto x = randn(size_t(n) * kk, 6);
    std::vector<float> yq(size_t(n) * m), yf(size_t(n) * m);
    k::ref::matmul_q(t, x.data(), w.data(), nullptr, yq.data(), n, kk, m);
    k::ref::matmul_dequantized(t, x.data(), w.data(), nullptr, yf.data(), n, kk, m);
    double err2 = 0, pred2 = 0, y2 = 0;
    for (int i = 0; i < n; ++i) {
      std::vector<double> step(kk / ab);
      for (int b = 0; b < kk / ab; ++b) {
        float amax = 0;
        for (int c = 0; c < ab; ++c) amax = std::fmax(amax, std::fabs(x[size_t(i) * kk + b * ab + c]));
        step[b] = amax / 127.0;
      }
      for (int j = 0; j < m; ++j) {
        const double e = double(yq[size_t(i) * m + j]) - yf[size_t(i) * m + j];
        err2 += e * e;
        y2 += double(yf[size_t(i) * m + j]) * yf[size_t(i) * m + j];
        for (int c = 0; c < kk; ++c) {
          const double wv = wf[size_t(j) * kk + c];
          pred2 += wv * wv * step[c / ab] * step[c / ab] / 12;
        }
      }
    }
    const double ratio = std::sqrt(err2 / pred2);
    INFO(attnlens::dtype_name(t) << ": RMS error / predicted = " << ratio << ", RMS error / RMS y = "
                                 << std::sqrt(err2 / y2));
    CHECK(ratio > 0.8);
    CHECK(ratio < 1.25);
  }
}

TEST_CASE("f16 and bf16 matmul equal f32 math on the widened weights", "[kernels][quant]") {
  const int dims[] = {1, 3, 7, 8, 9, 17, 64, 257};
  for (DType t : {DType::F16, DType::BF16}) {
    for (int n : {1, 2, 3, 5}) {
      for (int kk : dims) {
        for (int m : {1, 3, 4, 5, 9}) {
          const auto wf0 = randn(size_t(m) * kk, uint32_t(kk * 31 + m));
          std::vector<uint16_t> w(wf0.size());
          for (size_t i = 0; i < w.size(); ++i) {
            uint32_t bits;
            std::memcpy(&bits, &wf0[i], 4);
            w[i] = t == DType::F16 ? attnlens::f32_to_f16(wf0[i]) : uint16_t(bits >> 16);
          }
          // Subnormal, zero and largest halves (f16) exercise the exponent rebias.
          if (t == DType::F16 && w.size() > 4) {
            w[0] = 0x0001;  // 2^-24
            w[1] = 0x83FF;  // -largest subnormal
            w[2] = 0x7BFF;  // 65504
            w[3] = 0x8000;  // -0
          }
          const auto x = randn(size_t(n) * kk, uint32_t(kk + n));
          const auto bias = randn(m, 3);
          std::vector<float> wf(w.size());
          k::ref::dequantize_row(t, reinterpret_cast<const uint8_t*>(w.data()), wf.data(), int(w.size()));
          std::vector<float> y(size_t(n) * m), yr(size_t(n) * m);
          if (t == DType::F16) k::matmul_f16(x.data(), w.data(), bias.data(), y.data(), n, kk, m);
          else k::matmul_bf16(x.data(), w.data(), bias.data(), y.data(), n, kk, m);
          k::ref::matmul(x.data(), wf.data(), bias.data(), yr.data(), n, kk, m);
          const auto tol = rounding_tol(wf, x, n, kk, m);
          INFO(attnlens::dtype_name(t) << " n=" << n << " k=" << kk << " m=" << m);
          for (size_t o = 0; o < y.size(); ++o) REQUIRE(std::fabs(y[o] - yr[o]) <= tol[o] + 1e-5 * std::fabs(bias[o % m]));
          // Bit-identical to the f32 kernels on the widened weights (same lanes, same order), so that
          // decode and prefill of an f16 model agree exactly as they do for f32 — where the compiler
          // does not fuse multiply and add (wasm has no FMA; natively g++ may fuse one path and not
          // the other, and the tolerance above applies).
#if !defined(__FMA__)
          std::vector<float> yw(y.size());
          k::matmul(x.data(), wf.data(), bias.data(), yw.data(), n, kk, m);
          REQUIRE(max_abs_diff(y, yw) == 0.0);
#endif
        }
      }
    }
  }
  // Every half converts exactly (finite ones): the kernel's widening against f16_to_f32.
  std::vector<uint16_t> all;
  for (uint32_t h = 0; h < 65536; ++h)
    if ((h & 0x7C00) != 0x7C00) all.push_back(uint16_t(h));
  std::vector<float> one(all.size(), 0.f), y(1);
  for (size_t i = 0; i < all.size(); i += 997) {
    std::fill(one.begin(), one.end(), 0.f);
    one[i] = 1.f;
    k::matmul_f16(one.data(), all.data(), nullptr, y.data(), 1, int(all.size()), 1);
    REQUIRE(y[0] == attnlens::f16_to_f32(all[i]));
  }
}

TEST_CASE("first_non_finite finds NaN and infinity in every type", "[kernels][quant]") {
  std::vector<float> f(100, 1.f);
  CHECK(k::first_non_finite(DType::F32, reinterpret_cast<const uint8_t*>(f.data()), f.size()) == -1);
  f[37] = NAN;
  CHECK(k::first_non_finite(DType::F32, reinterpret_cast<const uint8_t*>(f.data()), f.size()) == 37);
  std::vector<uint16_t> h(10000, 0x3C00);
  CHECK(k::first_non_finite(DType::F16, reinterpret_cast<const uint8_t*>(h.data()), h.size()) == -1);
  h[9000] = 0x7C00;  // +inf
  CHECK(k::first_non_finite(DType::F16, reinterpret_cast<const uint8_t*>(h.data()), h.size()) == 9000);
  std::vector<uint16_t> bf(10000, 0x3F80);  // 1.0 as bf16
  CHECK(k::first_non_finite(DType::BF16, reinterpret_cast<const uint8_t*>(bf.data()), bf.size()) == -1);
  bf[9001] = 0xFF80;  // -inf
  CHECK(k::first_non_finite(DType::BF16, reinterpret_cast<const uint8_t*>(bf.data()), bf.size()) == 9001);
  for (DType t : kBlockTypes) {
    auto w = random_blocks(t, 4, 512, 9);
    CHECK(k::first_non_finite(t, w.data(), 4 * 512) == -1);
    const size_t bb = size_t(attnlens::dtype_block_bytes(t)), be = size_t(attnlens::dtype_block_elems(t));
    const uint16_t nan = 0x7E00;
    std::memcpy(w.data() + 3 * bb + size_t(scale_fields(t).back()), &nan, 2);
    INFO(attnlens::dtype_name(t));
    CHECK(k::first_non_finite(t, w.data(), 4 * 512) == int64_t(3 * be));
  }
}
