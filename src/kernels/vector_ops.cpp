// Row and elementwise kernels: dot, softmax, norms, activations, residual add, RoPE.
// Each loop runs full vectors, then a scalar tail for the last n % W elements.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/kernels.h"
#include "core/tensor.h"
#include "kernels/simd.h"

namespace attnlens::kernels {

using simd::load;
using simd::store;
using simd::Vec;
using simd::W;

// "sse4.1" in the portable wasm builds (xsimd through the SSE→SIMD128 mapping), "sse4.1+relaxed" in the
// relaxed-SIMD variant (simd::madd), the native arch's name natively.
const char* simd_arch_name() noexcept { return simd::kRelaxed ? "sse4.1+relaxed" : xsimd::default_arch::name(); }
int simd_width() noexcept { return W; }

float dot(const float* a, const float* b, int n) noexcept {
  // Four independent accumulators: one would serialise on the add latency (4× slower in wasm).
  Vec s0(0.f), s1(0.f), s2(0.f), s3(0.f);
  int i = 0;
  for (; i + 4 * W <= n; i += 4 * W) {
    s0 = simd::madd(load(a + i), load(b + i), s0);
    s1 = simd::madd(load(a + i + W), load(b + i + W), s1);
    s2 = simd::madd(load(a + i + 2 * W), load(b + i + 2 * W), s2);
    s3 = simd::madd(load(a + i + 3 * W), load(b + i + 3 * W), s3);
  }
  for (; i + W <= n; i += W) s0 = simd::madd(load(a + i), load(b + i), s0);
  float s = simd::sum((s0 + s1) + (s2 + s3));
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

void softmax(float* x, int n) noexcept {
  if (n <= 0) return;
  const float mx = simd::max_of(x, n);
  const Vec vmx(mx);
  Vec vs(0.f);
  int i = 0;
  for (; i + W <= n; i += W) {
    Vec e = simd::exp(load(x + i) - vmx);
    store(x + i, e);
    vs += e;
  }
  float s = simd::sum(vs);
  for (; i < n; ++i) {
    x[i] = std::exp(x[i] - mx);
    s += x[i];
  }
  scale(x, 1.f / s, n);
}

// Sum of x[0..n) and of x², both vectorised.
static void sum_and_sumsq(const float* x, int n, float& sum, float& sumsq) {
  Vec s(0.f), q(0.f);
  int i = 0;
  for (; i + W <= n; i += W) {
    Vec v = load(x + i);
    s += v;
    q += v * v;
  }
  sum = simd::sum(s);
  sumsq = simd::sum(q);
  for (; i < n; ++i) {
    sum += x[i];
    sumsq += x[i] * x[i];
  }
}

void layernorm(const float* x, const float* gamma, const float* beta, float* y, int n, float eps) noexcept {
  float sum, sumsq;
  sum_and_sumsq(x, n, sum, sumsq);
  const float mean = sum / n;
  // Second pass for the variance: E[(x-mean)²] is better conditioned than E[x²] - mean².
  Vec vq(0.f);
  const Vec vmean(mean);
  int i = 0;
  for (; i + W <= n; i += W) {
    Vec d = load(x + i) - vmean;
    vq += d * d;
  }
  float var = simd::sum(vq);
  for (; i < n; ++i) var += (x[i] - mean) * (x[i] - mean);
  var /= n;
  const float inv = 1.f / std::sqrt(var + eps);
  const Vec vinv(inv);
  for (i = 0; i + W <= n; i += W) {
    Vec v = (load(x + i) - vmean) * vinv * load(gamma + i);
    if (beta) v += load(beta + i);
    store(y + i, v);
  }
  for (; i < n; ++i) y[i] = (x[i] - mean) * inv * gamma[i] + (beta ? beta[i] : 0.f);
}

// The mean square as llama.cpp's CPU backend forms it: each square rounded to f32, the squares added in
// f64 in order, the mean rounded to f32. A sum in f32 lanes is off by a few ulps, and that moves every
// normalized value by an ulp — enough, in quantized models, to round some activation on the other side
// of an 8-bit step from llama.cpp (README "How exact"); the f64 sum of f32 squares is exact to far below
// f32 precision in any order, so this matches llama.cpp's builds bit for bit given the same x. n scalar
// f64 adds per row cost nothing beside the matrix products.
void rmsnorm(const float* x, const float* gamma, float* y, int n, float eps) noexcept {
  double sumsq = 0;
  for (int i = 0; i < n; ++i) {
    const float sq = x[i] * x[i];
    sumsq += sq;
  }
  const float mean = float(sumsq / n);
  const float inv = 1.f / std::sqrt(mean + eps);
  const Vec vinv(inv);
  int i = 0;
  for (; i + W <= n; i += W) store(y + i, load(gamma + i) * (load(x + i) * vinv));
  for (; i < n; ++i) y[i] = gamma[i] * (x[i] * inv);
}

// Applies f to every element: vector body, then the tail through a one-lane-padded vector.
template <class F>
static void map_inplace(float* x, int n, F f) {
  int i = 0;
  for (; i + W <= n; i += W) store(x + i, f(load(x + i)));
  if (i < n) {
    alignas(64) float t[W] = {};
    for (int j = i; j < n; ++j) t[j - i] = x[j];
    Vec r = f(Vec::load_aligned(t));
    r.store_aligned(t);
    for (int j = i; j < n; ++j) x[j] = t[j - i];
  }
}

void gelu_tanh(float* x, int n) noexcept {
  const Vec c(0.7978845608028654f), k(0.044715f), half(0.5f), one(1.f);
  map_inplace(x, n, [&](Vec v) { return half * v * (one + simd::tanh(c * (v + k * v * v * v))); });
}

void gelu_tanh_f16(float* x, int n) noexcept {
  for (int i = 0; i < n; ++i) {
    const float v = x[i];
    if (v <= -10.f) {
      x[i] = 0.f;
    } else if (v < 10.f) {
      const float h = f16_to_f32(f32_to_f16(v));
      const float g = 0.5f * h * (1.0f + std::tanh(0.79788456080286535587989211986876f * h * (1.0f + 0.044715f * h * h)));
      x[i] = f16_to_f32(f32_to_f16(g));
    }
  }
}

void gelu_erf(float* x, int n) noexcept {
  const Vec r(0.7071067811865476f), half(0.5f), one(1.f);
  map_inplace(x, n, [&](Vec v) { return half * v * (one + simd::erf(v * r)); });
}

void silu(float* x, int n) noexcept {
  const Vec one(1.f);
  map_inplace(x, n, [&](Vec v) { return v / (one + simd::exp(-v)); });
}

void relu(float* x, int n) noexcept {
  const Vec zero(0.f);
  map_inplace(x, n, [&](Vec v) { return xsimd::max(v, zero); });
}

void swiglu(float* gate, const float* up, int n) noexcept {
  const Vec one(1.f);
  int i = 0;
  for (; i + W <= n; i += W) {
    Vec g = load(gate + i);
    store(gate + i, g / (one + simd::exp(-g)) * load(up + i));
  }
  for (; i < n; ++i) gate[i] = gate[i] / (1.f + std::exp(-gate[i])) * up[i];
}

void mul(float* y, const float* x, int n) noexcept {
  int i = 0;
  for (; i + W <= n; i += W) store(y + i, load(y + i) * load(x + i));
  for (; i < n; ++i) y[i] *= x[i];
}

void add(float* y, const float* x, int n) noexcept {
  int i = 0;
  for (; i + W <= n; i += W) store(y + i, load(y + i) + load(x + i));
  for (; i < n; ++i) y[i] += x[i];
}

void axpy(float a, const float* x, float* y, int n) noexcept {
  const Vec va(a);
  int i = 0;
  for (; i + W <= n; i += W) store(y + i, load(y + i) + va * load(x + i));
  for (; i < n; ++i) y[i] += a * x[i];
}

void scale(float* x, float s, int n) noexcept {
  const Vec vs(s);
  int i = 0;
  for (; i + W <= n; i += W) store(x + i, load(x + i) * vs);
  for (; i < n; ++i) x[i] *= s;
}

size_t first_nonfinite(const float* x, size_t n) noexcept {
  // x·0 is 0 for every finite x and NaN for NaN and ±inf: one multiply-add per vector, then a
  // scalar search only inside a block that holds one.
  constexpr size_t kBlock = 4096;
  const Vec zero(0.f);
  for (size_t b = 0; b < n; b += kBlock) {
    const size_t e = n - b < kBlock ? n : b + kBlock;
    Vec acc(0.f);
    size_t i = b;
    for (; i + W <= e; i += W) acc += load(x + i) * zero;
    float sum = simd::sum(acc);  // NaN if any lane is (not acc != acc: xsimd 8.1's AVX-512 != is ordered, false for NaN)
    for (; i < e; ++i) sum += x[i] * 0.f;
    if (sum != sum)
      for (size_t j = b; j < e; ++j)
        if (!std::isfinite(x[j])) return j;
  }
  return n;
}

// ---- RoPE -------------------------------------------------------------------------------------
// adjacent pairs: out = x·C + swap(x)·S with C = (c0,c0,c1,c1,…), S = (-s0,s0,-s1,s1,…) and
// swap exchanging the two lanes of every pair.
struct SwapPairs {
  static constexpr unsigned get(unsigned i, unsigned) { return i ^ 1u; }
};

void rope_adjacent(float* x, const float* cos, const float* sin, int n_heads, int head_dim, int rot_dims) noexcept {
  constexpr int kMaxHeadDim = 512;
  if (rot_dims > kMaxHeadDim || rot_dims % W != 0) return ref::rope_adjacent(x, cos, sin, n_heads, head_dim, rot_dims);
  alignas(64) float c2[kMaxHeadDim], s2[kMaxHeadDim];
  for (int i = 0; i < rot_dims / 2; ++i) {
    c2[2 * i] = c2[2 * i + 1] = cos[i];
    s2[2 * i] = -sin[i];
    s2[2 * i + 1] = sin[i];
  }
  for (int h = 0; h < n_heads; ++h) {
    float* v = x + h * head_dim;
    for (int i = 0; i < rot_dims; i += W) {
      Vec a = load(v + i);
      Vec swapped = xsimd::swizzle(a, xsimd::make_batch_constant<xsimd::batch<uint32_t, Vec::arch_type>, SwapPairs>());
      store(v + i, a * Vec::load_aligned(c2 + i) + swapped * Vec::load_aligned(s2 + i));
    }
  }
}

void rope_half(float* x, const float* cos, const float* sin, int n_heads, int head_dim, int rot_dims) noexcept {
  const int half = rot_dims / 2;
  for (int h = 0; h < n_heads; ++h) {
    float* v = x + h * head_dim;
    int i = 0;
    for (; i + W <= half; i += W) {
      Vec a = load(v + i), b = load(v + i + half), c = load(cos + i), s = load(sin + i);
      store(v + i, a * c - b * s);
      store(v + i + half, a * s + b * c);
    }
    for (; i < half; ++i) {
      float a = v[i], b = v[i + half];
      v[i] = a * cos[i] - b * sin[i];
      v[i + half] = a * sin[i] + b * cos[i];
    }
  }
}

namespace {
// Element by element through memcpy of a fixed size (one load and one store): file data need not be
// aligned to the element size. Rows [r0, r1) × columns [c0, c1) of src.
template <size_t B>
void transpose_scalar(const uint8_t* src, uint8_t* dst, int64_t rows, int64_t cols, int64_t r0, int64_t r1,
                      int64_t c0, int64_t c1) {
  for (int64_t c = c0; c < c1; ++c)
#if defined(__clang__)
#pragma clang loop unroll(disable) vectorize(disable)  // small code: the tiles' edges, f16 files
#endif
    for (int64_t r = r0; r < r1; ++r) std::memcpy(dst + (c * rows + r) * B, src + (r * cols + c) * B, B);
}

// 4-byte elements, 4 × 4 blocks through four vector registers (two rounds of zips), in 32 × 32 tiles
// so that both sides stay in cache. The bits move unchanged (loads, shuffles and stores only). With
// vectors wider than 4 lanes (AVX natively) the scalar loop does it all.
void transpose_4byte(const uint8_t* src, uint8_t* dst, int64_t rows, int64_t cols) {
  constexpr int64_t kTile = 32;
  const int64_t rows4 = W == 4 ? rows - rows % 4 : 0, cols4 = W == 4 ? cols - cols % 4 : 0;
  if constexpr (W == 4) {
    const auto at = [](const uint8_t* p, int64_t i) { return reinterpret_cast<const float*>(p + 4 * i); };
    for (int64_t r0 = 0; r0 < rows4; r0 += kTile)
      for (int64_t c0 = 0; c0 < cols4; c0 += kTile) {
        const int64_t r1 = std::min(rows4, r0 + kTile), c1 = std::min(cols4, c0 + kTile);
        for (int64_t r = r0; r < r1; r += 4)
          for (int64_t c = c0; c < c1; c += 4) {
            // Rows r … r + 3 (x0 … x3), 4 elements each.
            const Vec x0 = load(at(src, r * cols + c)), x1 = load(at(src, (r + 1) * cols + c));
            const Vec x2 = load(at(src, (r + 2) * cols + c)), x3 = load(at(src, (r + 3) * cols + c));
            const Vec lo02 = xsimd::zip_lo(x0, x2), hi02 = xsimd::zip_hi(x0, x2);  // x0₀ x2₀ x0₁ x2₁ | x0₂ x2₂ x0₃ x2₃
            const Vec lo13 = xsimd::zip_lo(x1, x3), hi13 = xsimd::zip_hi(x1, x3);
            float* out = reinterpret_cast<float*>(dst);
            store(out + c * rows + r, xsimd::zip_lo(lo02, lo13));  // x0₀ x1₀ x2₀ x3₀: column c
            store(out + (c + 1) * rows + r, xsimd::zip_hi(lo02, lo13));
            store(out + (c + 2) * rows + r, xsimd::zip_lo(hi02, hi13));
            store(out + (c + 3) * rows + r, xsimd::zip_hi(hi02, hi13));
          }
      }
  }
  transpose_scalar<4>(src, dst, rows, cols, 0, rows4, cols4, cols);  // the last cols % 4 columns
  transpose_scalar<4>(src, dst, rows, cols, rows4, rows, 0, cols);   // the last rows % 4 rows
}

void transpose_2byte(const uint8_t* src, uint8_t* dst, int64_t rows, int64_t cols) {
  constexpr int64_t kTile = 32;
  for (int64_t r0 = 0; r0 < rows; r0 += kTile)
    for (int64_t c0 = 0; c0 < cols; c0 += kTile)
      transpose_scalar<2>(src, dst, rows, cols, r0, std::min(rows, r0 + kTile), c0, std::min(cols, c0 + kTile));
}
}  // namespace

void transpose(const uint8_t* src, uint8_t* dst, int64_t rows, int64_t cols, size_t bytes) noexcept {
  if (bytes == 4) transpose_4byte(src, dst, rows, cols);
  else transpose_2byte(src, dst, rows, cols);
}

}  // namespace attnlens::kernels
