// q8_0 weights (GGML block format: f16 scale d + 32 int8, weight = d·q). The dot products read the
// int8 blocks directly: memory traffic is 34 bytes per 32 weights instead of 128.
#include <cmath>
#include <cstring>

#include "core/tensor.h"
#include "kernels/kernels.h"
#include "kernels/simd.h"

namespace attnlens::kernels {

using simd::load;
using simd::Vec;
using simd::W;

namespace {

inline float block_scale(const uint8_t* block) {
  uint16_t h;
  std::memcpy(&h, block, 2);
  return f16_to_f32(h);
}

// Σ_i q[i]·x[i] over one block of 32.
inline float block_dot(const int8_t* q, const float* x) {
  alignas(64) float wq[kQ8BlockSize];
  for (int i = 0; i < kQ8BlockSize; ++i) wq[i] = float(q[i]);
  Vec acc(0.f);
  for (int i = 0; i < kQ8BlockSize; i += W) acc += Vec::load_aligned(wq + i) * load(x + i);
  return simd::sum(acc);
}

float row_dot_q8_0(const uint8_t* row, const float* x, int k) {
  float s = 0.f;
  for (int b = 0; b < k / kQ8BlockSize; ++b) {
    const uint8_t* block = row + size_t(b) * kQ8BlockBytes;
    s += block_scale(block) * block_dot(reinterpret_cast<const int8_t*>(block + 2), x + b * kQ8BlockSize);
  }
  return s;
}

}  // namespace

void dequantize_row_q8_0(const uint8_t* w, float* y, int k) noexcept {
  ref::dequantize_row_q8_0(w, y, k);
}

void quantize_row_q8_0(const float* x, uint8_t* out, int k) noexcept {
  for (int b = 0; b < k / kQ8BlockSize; ++b) {
    const float* xb = x + b * kQ8BlockSize;
    float amax = 0.f;
    for (int i = 0; i < kQ8BlockSize; ++i) amax = std::fmax(amax, std::fabs(xb[i]));
    const float d = amax / 127.f;
    const float id = d != 0.f ? 1.f / d : 0.f;
    uint8_t* block = out + size_t(b) * kQ8BlockBytes;
    uint16_t h = f32_to_f16(d);
    std::memcpy(block, &h, 2);
    int8_t* q = reinterpret_cast<int8_t*>(block + 2);
    for (int i = 0; i < kQ8BlockSize; ++i) q[i] = int8_t(std::round(xb[i] * id));
  }
}

void matvec_q8_0(const float* x, const uint8_t* w, const float* bias, float* y, int k, int m) noexcept {
  const size_t row_bytes = size_t(k / kQ8BlockSize) * kQ8BlockBytes;
  for (int j = 0; j < m; ++j) y[j] = row_dot_q8_0(w + j * row_bytes, x, k) + (bias ? bias[j] : 0.f);
}

void matmul_q8_0(const float* x, const uint8_t* w, const float* bias, float* y, int n, int k, int m) noexcept {
  for (int i = 0; i < n; ++i) matvec_q8_0(x + size_t(i) * k, w, bias, y + size_t(i) * m, k, m);
}

}  // namespace attnlens::kernels
