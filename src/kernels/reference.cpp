// Scalar references for every kernel: the definitions the vector code is tested against.
// Accumulation is in double where it makes the reference a better yardstick.
#include <cmath>
#include <cstring>
#include <vector>

#include "core/tensor.h"
#include "kernels/kernels.h"

namespace attnlens::kernels::ref {

float dot(const float* a, const float* b, int n) noexcept {
  double s = 0;
  for (int i = 0; i < n; ++i) s += double(a[i]) * double(b[i]);
  return float(s);
}

void matvec(const float* x, const float* w, const float* bias, float* y, int k, int m) noexcept {
  for (int j = 0; j < m; ++j) y[j] = dot(x, w + size_t(j) * k, k) + (bias ? bias[j] : 0.f);
}

void matmul(const float* x, const float* w, const float* bias, float* y, int n, int k, int m) noexcept {
  for (int i = 0; i < n; ++i) matvec(x + size_t(i) * k, w, bias, y + size_t(i) * m, k, m);
}

void dequantize_row_q8_0(const uint8_t* w, float* y, int k) noexcept {
  for (int b = 0; b < k / kQ8BlockSize; ++b) {
    const uint8_t* block = w + size_t(b) * kQ8BlockBytes;
    uint16_t h;
    std::memcpy(&h, block, 2);
    float d = f16_to_f32(h);
    const int8_t* q = reinterpret_cast<const int8_t*>(block + 2);
    for (int i = 0; i < kQ8BlockSize; ++i) y[b * kQ8BlockSize + i] = d * float(q[i]);
  }
}

void matvec_q8_0(const float* x, const uint8_t* w, const float* bias, float* y, int k, int m) noexcept {
  const size_t row_bytes = size_t(k / kQ8BlockSize) * kQ8BlockBytes;
  for (int j = 0; j < m; ++j) {
    const uint8_t* row = w + j * row_bytes;
    double s = 0;
    for (int b = 0; b < k / kQ8BlockSize; ++b) {
      const uint8_t* block = row + size_t(b) * kQ8BlockBytes;
      uint16_t h;
      std::memcpy(&h, block, 2);
      const int8_t* q = reinterpret_cast<const int8_t*>(block + 2);
      double blk = 0;
      for (int i = 0; i < kQ8BlockSize; ++i) blk += double(q[i]) * double(x[b * kQ8BlockSize + i]);
      s += blk * double(f16_to_f32(h));
    }
    y[j] = float(s) + (bias ? bias[j] : 0.f);
  }
}

void matmul_q8_0(const float* x, const uint8_t* w, const float* bias, float* y, int n, int k, int m) noexcept {
  for (int i = 0; i < n; ++i) matvec_q8_0(x + size_t(i) * k, w, bias, y + size_t(i) * m, k, m);
}

void matvec_q8_0_qx(const float* x, const uint8_t* w, const float* bias, float* y, int k, int m) noexcept {
  const int nb = k / kQ8BlockSize;
  // x → per-block int8: dx = amax/127, xq = nearest-even(x / dx) (computed as x · (1/dx)).
  std::vector<int32_t> xq(k);
  std::vector<float> dx(nb);
  for (int b = 0; b < nb; ++b) {
    float amax = 0.f;
    for (int i = 0; i < kQ8BlockSize; ++i) amax = std::fmax(amax, std::fabs(x[b * kQ8BlockSize + i]));
    dx[b] = amax / 127.f;
    const float id = dx[b] != 0.f ? 1.f / dx[b] : 0.f;
    for (int i = 0; i < kQ8BlockSize; ++i) xq[b * kQ8BlockSize + i] = int32_t(std::nearbyint(x[b * kQ8BlockSize + i] * id));
  }
  const size_t row_bytes = size_t(nb) * kQ8BlockBytes;
  for (int j = 0; j < m; ++j) {
    float acc = 0.f;
    for (int b = 0; b < nb; ++b) {
      const uint8_t* block = w + j * row_bytes + size_t(b) * kQ8BlockBytes;
      uint16_t h;
      std::memcpy(&h, block, 2);
      const int8_t* q = reinterpret_cast<const int8_t*>(block + 2);
      int32_t s = 0;  // exact: |s| <= 32 * 128 * 127
      for (int i = 0; i < kQ8BlockSize; ++i) s += int32_t(q[i]) * xq[b * kQ8BlockSize + i];
      acc += float(s) * (f16_to_f32(h) * dx[b]);
    }
    y[j] = acc + (bias ? bias[j] : 0.f);
  }
}

void softmax(float* x, int n) noexcept {
  if (n <= 0) return;
  float mx = x[0];
  for (int i = 1; i < n; ++i) mx = std::fmax(mx, x[i]);
  double sum = 0;
  for (int i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - mx);
    sum += x[i];
  }
  for (int i = 0; i < n; ++i) x[i] = float(x[i] / sum);
}

void layernorm(const float* x, const float* gamma, const float* beta, float* y, int n, float eps) noexcept {
  double mean = 0, var = 0;
  for (int i = 0; i < n; ++i) mean += x[i];
  mean /= n;
  for (int i = 0; i < n; ++i) var += (x[i] - mean) * (x[i] - mean);
  var /= n;  // biased variance, as LayerNorm defines it
  double inv = 1.0 / std::sqrt(var + eps);
  for (int i = 0; i < n; ++i) y[i] = float((x[i] - mean) * inv * gamma[i] + (beta ? beta[i] : 0.f));
}

void rmsnorm(const float* x, const float* gamma, float* y, int n, float eps) noexcept {
  double ss = 0;
  for (int i = 0; i < n; ++i) ss += double(x[i]) * x[i];
  double inv = 1.0 / std::sqrt(ss / n + eps);
  for (int i = 0; i < n; ++i) y[i] = float(gamma[i] * (x[i] * inv));
}

void gelu_tanh(float* x, int n) noexcept {
  const double c = std::sqrt(2.0 / M_PI);
  for (int i = 0; i < n; ++i) {
    double v = x[i];
    x[i] = float(0.5 * v * (1.0 + std::tanh(c * (v + 0.044715 * v * v * v))));
  }
}

void gelu_erf(float* x, int n) noexcept {
  for (int i = 0; i < n; ++i) x[i] = float(0.5 * x[i] * (1.0 + std::erf(x[i] / std::sqrt(2.0))));
}

void silu(float* x, int n) noexcept {
  for (int i = 0; i < n; ++i) x[i] = float(x[i] / (1.0 + std::exp(-double(x[i]))));
}

void relu(float* x, int n) noexcept {
  for (int i = 0; i < n; ++i) x[i] = x[i] > 0.f ? x[i] : 0.f;
}

void swiglu(float* gate, const float* up, int n) noexcept {
  silu(gate, n);
  for (int i = 0; i < n; ++i) gate[i] *= up[i];
}

void mul(float* y, const float* x, int n) noexcept {
  for (int i = 0; i < n; ++i) y[i] *= x[i];
}

void add(float* y, const float* x, int n) noexcept {
  for (int i = 0; i < n; ++i) y[i] += x[i];
}

void axpy(float a, const float* x, float* y, int n) noexcept {
  for (int i = 0; i < n; ++i) y[i] += a * x[i];
}

size_t first_nonfinite(const float* x, size_t n) noexcept {
  for (size_t i = 0; i < n; ++i)
    if (!std::isfinite(x[i])) return i;
  return n;
}

void scale(float* x, float s, int n) noexcept {
  for (int i = 0; i < n; ++i) x[i] *= s;
}

void rope_adjacent(float* x, const float* cos, const float* sin, int n_heads, int head_dim, int rot_dims) noexcept {
  for (int h = 0; h < n_heads; ++h) {
    float* v = x + h * head_dim;
    for (int i = 0; i < rot_dims / 2; ++i) {
      float a = v[2 * i], b = v[2 * i + 1];
      v[2 * i] = a * cos[i] - b * sin[i];
      v[2 * i + 1] = a * sin[i] + b * cos[i];
    }
  }
}

void rope_half(float* x, const float* cos, const float* sin, int n_heads, int head_dim, int rot_dims) noexcept {
  const int half = rot_dims / 2;
  for (int h = 0; h < n_heads; ++h) {
    float* v = x + h * head_dim;
    for (int i = 0; i < half; ++i) {
      float a = v[i], b = v[i + half];
      v[i] = a * cos[i] - b * sin[i];
      v[i + half] = a * sin[i] + b * cos[i];
    }
  }
}

}  // namespace attnlens::kernels::ref
