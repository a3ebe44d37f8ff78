// nn::linear split over threads: the same bits with 1, 2 and 4 threads (the split into blocks of
// rows depends on the shape only), and the same values as one kernel call over the whole matrix.
#include <cmath>
#include <cstring>
#include <vector>

#include "core/parallel.h"
#include "kernels/kernels.h"
#include "nn/linear.h"
#include "test_util.h"

using namespace attnlens;
using namespace attnlens::nn;
using testutil::randn;

namespace {

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

std::vector<float> run(const Linear& l, const std::vector<float>& x, int n, int threads) {
  parallel::Threads use(threads);
  std::vector<float> y(size_t(n) * l.out(), -1.f);
  linear(l, x.data(), n, y.data());
  return y;
}

}  // namespace

TEST_CASE("row_split: blocks of whole 4-row groups covering the matrix; prefill's independent of threads, decode's one per thread",
          "[nn][threads]") {
  for (int rows : {1, 3, 4, 31, 32, 33, 100, 288, 768, 1376, 2048, 32000, 128256}) {
    for (int n : {1, 2, 64}) {
      for (int threads : {1, 2, 3, 4, 8}) {
        const RowSplit s = row_split(rows, n, threads);
        INFO(rows << " rows, n = " << n << ", " << threads << " threads");
        REQUIRE(s.tasks >= 1);
        CHECK(s.rows % 4 == 0);
        CHECK(s.tasks <= 24);
        CHECK(size_t(s.rows) * (s.tasks - 1) < size_t(rows));  // no empty block
        CHECK(size_t(s.rows) * s.tasks >= size_t(rows));
        if (n > 1) {
          const RowSplit one = row_split(rows, n, 1);
          CHECK((s.rows == one.rows && s.tasks == one.tasks));
        } else {
          CHECK(s.tasks <= threads);                      // one long block per thread
          CHECK((s.tasks == threads || s.rows <= 35));     // fewer only where the blocks would be < 32 rows
        }
      }
    }
  }
}

TEST_CASE("linear: identical bits with 1, 2 and 4 threads, f32 and q8_0, decode and prefill", "[nn][threads]") {
  parallel::reserve(4);
  // (out, in): multiples of the blocks and not, a single block, the output projection's width
  const int shapes[][2] = {{288, 288}, {768, 288}, {97, 64}, {1376, 512}, {8000, 96}, {30, 32}};
  for (const auto& sh : shapes) {
    const int out = sh[0], in = sh[1];
    std::vector<float> w = randn(size_t(out) * in, uint32_t(out * 7 + in), 1.f / std::sqrt(float(in)));
    std::vector<float> b = randn(size_t(out), uint32_t(out + 3), 0.1f);
    std::vector<uint8_t> wq(dtype_bytes(DType::Q8_0, size_t(out) * in));
    for (int r = 0; r < out; ++r)
      kernels::quantize_row_q8_0(w.data() + size_t(r) * in, wq.data() + dtype_bytes(DType::Q8_0, size_t(r) * in), in);
    const Linear lf{Matrix{DType::F32, out, in, w.data()}, b.data()};
    const Linear lq{Matrix{DType::Q8_0, out, in, wq.data()}, nullptr};
    for (int n : {1, 2, 7, 64, 300}) {
      const std::vector<float> x = randn(size_t(n) * in, uint32_t(n * 31 + out));
      for (const Linear* l : {&lf, &lq}) {
        INFO(out << "×" << in << ", n = " << n << ", " << dtype_name(l->w.dtype));
        const std::vector<float> one = run(*l, x, n, 1);
        CHECK(same_bits(one, run(*l, x, n, 2)));
        CHECK(same_bits(one, run(*l, x, n, 4)));
        CHECK(same_bits(one, run(*l, x, n, 3)));
        // and the same values as one call of the kernel over the whole matrix
        std::vector<float> whole(size_t(n) * out);
        if (l->w.dtype == DType::F32) kernels::matmul(x.data(), w.data(), b.data(), whole.data(), n, in, out);
        else kernels::matmul_q8_0(x.data(), wq.data(), nullptr, whole.data(), n, in, out);
        CHECK(testutil::max_abs_diff(one.data(), whole.data(), whole.size()) <= 1e-5);
      }
    }
  }
}

TEST_CASE("linear: the GGML block types (q4_0, q5_0, q4_K) and f16 split over threads give the bits of 1 thread",
          "[nn][threads]") {
  parallel::reserve(4);
  const int shapes[][2] = {{768, 256}, {97, 512}, {8000, 256}};  // in: whole q4_K super-blocks
  for (const auto& sh : shapes) {
    const int out = sh[0], in = sh[1];
    const std::vector<float> w = randn(size_t(out) * in, uint32_t(out * 5 + in), 1.f / std::sqrt(float(in)));
    const std::vector<float> b = randn(size_t(out), uint32_t(out + 11), 0.1f);
    for (DType t : {DType::Q4_0, DType::Q5_0, DType::Q4_K, DType::F16}) {
      std::vector<uint8_t> wq(dtype_bytes(t, size_t(out) * in));
      for (int r = 0; r < out; ++r) {
        uint8_t* row = wq.data() + dtype_bytes(t, size_t(r) * in);
        if (t == DType::F16) {
          auto* h = reinterpret_cast<uint16_t*>(row);
          for (int i = 0; i < in; ++i) h[i] = f32_to_f16(w[size_t(r) * in + i]);
        } else {
          kernels::quantize_row(t, w.data() + size_t(r) * in, row, in);
        }
      }
      const Linear l{Matrix{t, out, in, wq.data()}, b.data()};
      for (int n : {1, 3, 64, 130}) {
        const std::vector<float> x = randn(size_t(n) * in, uint32_t(n * 17 + out));
        INFO(out << "×" << in << ", n = " << n << ", " << dtype_name(t));
        const std::vector<float> one = run(l, x, n, 1);
        CHECK(same_bits(one, run(l, x, n, 2)));
        CHECK(same_bits(one, run(l, x, n, 3)));
        CHECK(same_bits(one, run(l, x, n, 4)));
      }
    }
  }
}

TEST_CASE("release_scratch gives back the packing buffers of every thread, and the results stay the same", "[nn][threads]") {
  parallel::reserve(4);
  const int out = 768, in = 288, n = 64;
  std::vector<float> w = randn(size_t(out) * in, 5u, 1.f / std::sqrt(float(in)));
  const std::vector<float> x = randn(size_t(n) * in, 6u);
  const Linear l{Matrix{DType::F32, out, in, w.data()}, nullptr};
  kernels::release_scratch();
  REQUIRE(kernels::scratch_bytes() == 0);
  const std::vector<float> before = run(l, x, n, 4);
  CHECK(kernels::scratch_bytes() > 0);  // prefill packed x and W's panels on the threads that ran
  kernels::release_scratch();
  CHECK(kernels::scratch_bytes() == 0);
  CHECK(same_bits(before, run(l, x, n, 4)));  // the buffers regrow
  CHECK(kernels::scratch_bytes() > 0);
  kernels::release_scratch();
}

TEST_CASE("release_scratch also gives back decode's quantized row of x (block-quantized weights)", "[nn][threads]") {
  parallel::reserve(4);
  const int out = 768, in = 512;
  const std::vector<float> w = randn(size_t(out) * in, 7u, 1.f / std::sqrt(float(in)));
  const std::vector<float> x = randn(in, 8u);
  for (DType t : {DType::Q8_0, DType::Q4_K}) {
    INFO(dtype_name(t));
    std::vector<uint8_t> wq(dtype_bytes(t, size_t(out) * in));
    for (int r = 0; r < out; ++r) kernels::quantize_row(t, w.data() + size_t(r) * in, wq.data() + dtype_bytes(t, size_t(r) * in), in);
    const Linear l{Matrix{t, out, in, wq.data()}, nullptr};
    std::vector<float> whole(out);
    kernels::matmul_q(t, x.data(), wq.data(), nullptr, whole.data(), 1, in, out);
    kernels::release_scratch();
    REQUIRE(kernels::scratch_bytes() == 0);
    const std::vector<float> before = run(l, x, 1, 4);
    CHECK(same_bits(before, whole));  // the tasks' rows of the shared quantized x: matmul_q's bits
    if (kernels::quantized_rows_bytes(t, 1, in) > 0) CHECK(kernels::scratch_bytes() >= kernels::quantized_rows_bytes(t, 1, in));
    kernels::release_scratch();
    CHECK(kernels::scratch_bytes() == 0);
    CHECK(same_bits(before, run(l, x, 1, 4)));
    kernels::release_scratch();
  }
}

TEST_CASE("linears: several layers in one region give the bits of separate linear() calls", "[nn][threads]") {
  parallel::reserve(4);
  const int in = 288;
  std::vector<float> wq = randn(size_t(288) * in, 1), wk = randn(size_t(96) * in, 2), wv = randn(size_t(100) * in, 3);
  std::vector<float> bq = randn(288, 4);
  const Linear q{Matrix{DType::F32, 288, in, wq.data()}, bq.data()}, k{Matrix{DType::F32, 96, in, wk.data()}, nullptr},
      v{Matrix{DType::F32, 100, in, wv.data()}, nullptr};
  for (int n : {1, 5}) {
    const std::vector<float> x = randn(size_t(n) * in, uint32_t(9 + n));
    for (int threads : {1, 2, 4}) {
      parallel::Threads use(threads);
      std::vector<float> yq(size_t(n) * 288), yk(size_t(n) * 96), yv(size_t(n) * 100);
      linears({{&q, yq.data()}, {&k, yk.data()}, {&v, yv.data()}}, x.data(), n);
      INFO("n = " << n << ", " << threads << " threads");
      CHECK(same_bits(yq, run(q, x, n, 1)));
      CHECK(same_bits(yk, run(k, x, n, 1)));
      CHECK(same_bits(yv, run(v, x, n, 1)));
    }
  }
}

// Decode quantizes x once per call and shares it among the tasks (and among the parts of linears() with
// the same weight type): the bits must be those of one kernels::matmul_q over the whole matrix, which
// quantizes x itself, whatever the threads — mixed types as in a Q4_K_M file (q4_K, q6_K, q4_K).
TEST_CASE("linears: decode with quantized weights shares the quantized x and keeps matmul_q's bits", "[nn][threads]") {
  parallel::reserve(4);
  const int in = 512;
  struct Part {
    DType t;
    int out;
    std::vector<uint8_t> wq;
    std::vector<float> b, y;
  };
  for (const auto& types : {std::vector<DType>{DType::Q4_K, DType::Q6_K, DType::Q4_K},
                            std::vector<DType>{DType::Q4_0, DType::Q8_0, DType::Q4_0, DType::Q5_1}}) {
    std::vector<Part> parts;
    int seed = 40;
    for (DType t : types) {
      const int out = parts.size() == 1 ? 100 : 512;  // 100: a last task of 4 rows
      const std::vector<float> w = randn(size_t(out) * in, uint32_t(++seed), 1.f / std::sqrt(float(in)));
      Part p{t, out, std::vector<uint8_t>(dtype_bytes(t, size_t(out) * in)), randn(size_t(out), uint32_t(++seed), 0.1f),
             std::vector<float>(size_t(out))};
      for (int r = 0; r < out; ++r)
        kernels::quantize_row(t, w.data() + size_t(r) * in, p.wq.data() + dtype_bytes(t, size_t(r) * in), in);
      parts.push_back(std::move(p));
    }
    std::vector<Linear> ls;
    for (const Part& p : parts) ls.push_back(Linear{Matrix{p.t, p.out, in, p.wq.data()}, p.b.data()});
    const std::vector<float> x = randn(size_t(in), 77u);
    for (int threads : {1, 2, 4}) {
      parallel::Threads use(threads);
      if (ls.size() == 3) linears({{&ls[0], parts[0].y.data()}, {&ls[1], parts[1].y.data()}, {&ls[2], parts[2].y.data()}}, x.data(), 1);
      else
        linears({{&ls[0], parts[0].y.data()}, {&ls[1], parts[1].y.data()}, {&ls[2], parts[2].y.data()},
                 {&ls[3], parts[3].y.data()}},
                x.data(), 1);
      for (size_t i = 0; i < parts.size(); ++i) {
        INFO(dtype_name(parts[i].t) << ", part " << i << ", " << threads << " threads");
        std::vector<float> whole(size_t(parts[i].out));
        kernels::matmul_q(parts[i].t, x.data(), parts[i].wq.data(), parts[i].b.data(), whole.data(), 1, in, parts[i].out);
        CHECK(same_bits(parts[i].y, whole));
        CHECK(same_bits(parts[i].y, run(ls[i], x, 1, threads)));
      }
    }
  }
}
