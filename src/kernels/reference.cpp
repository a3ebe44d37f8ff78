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

void softcap(float* x, int n, float cap) noexcept {
  for (int i = 0; i < n; ++i) x[i] = float(double(cap) * std::tanh(double(x[i]) / cap));
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
