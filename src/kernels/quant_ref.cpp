// Scalar references for the block formats and f16/bf16 weights: dequantization (in ggml's order
// of float operations, so that it equals llama.cpp's and gguf-py's bit for bit), the integer
// arithmetic of the quantized dot products (quant_scalar.h), and f32 math on the dequantized or
// widened weights.
#include <cmath>
#include <cstring>
#include <vector>

#include "core/tensor.h"
#include "kernels/kernels.h"
#include "kernels/quant_blocks.h"
#include "kernels/quant_scalar.h"

namespace attnlens::kernels::ref {

namespace {

void dequant_32(DType t, const uint8_t* w, float* y, int nb) {
  int q[32];
  for (int b = 0; b < nb; ++b, y += 32) {
    switch (t) {
      case DType::Q8_0: {
        const uint8_t* blk = w + size_t(b) * qb::kBytesQ8_0;
        const float d = qb::f16(blk);
        for (int i = 0; i < 32; ++i) y[i] = float(int8_t(blk[2 + i])) * d;
        break;
      }
      case DType::Q4_0: {
        const uint8_t* blk = w + size_t(b) * qb::kBytesQ4_0;
        const float d = qb::f16(blk);
        qb::decode_nibbles(blk + 2, q);
        for (int i = 0; i < 32; ++i) y[i] = float(q[i] - 8) * d;
        break;
      }
      case DType::Q4_1: {
        const uint8_t* blk = w + size_t(b) * qb::kBytesQ4_1;
        const float d = qb::f16(blk), m = qb::f16(blk + 2);
        qb::decode_nibbles(blk + 4, q);
        for (int i = 0; i < 32; ++i) {
          const float v = float(q[i]) * d;
          y[i] = v + m;
        }
        break;
      }
      case DType::Q5_0: {
        const uint8_t* blk = w + size_t(b) * qb::kBytesQ5_0;
        const float d = qb::f16(blk);
        qb::decode_q5(blk + 2, blk + 6, q);
        for (int i = 0; i < 32; ++i) y[i] = float(q[i] - 16) * d;
        break;
      }
      case DType::Q5_1: {
        const uint8_t* blk = w + size_t(b) * qb::kBytesQ5_1;
        const float d = qb::f16(blk), m = qb::f16(blk + 2);
        qb::decode_q5(blk + 4, blk + 8, q);
        for (int i = 0; i < 32; ++i) {
          const float v = float(q[i]) * d;
          y[i] = v + m;
        }
        break;
      }
      case DType::IQ4_NL: {
        const uint8_t* blk = w + size_t(b) * qb::kBytesIQ4NL;
        const float d = qb::f16(blk);
        qb::decode_nibbles(blk + 2, q);
        for (int i = 0; i < 32; ++i) y[i] = d * float(qb::kIQ4NL[q[i]]);
        break;
      }
      default: break;
    }
  }
}

void dequant_256(DType t, const uint8_t* w, float* y, int nb) {
  int q[256];
  for (int b = 0; b < nb; ++b, y += 256) {
    switch (t) {
      case DType::Q2_K: {
        const uint8_t* blk = w + size_t(b) * qb::kBytesQ2K;
        const float d = qb::f16(blk + 80), dmin = qb::f16(blk + 82);
        qb::decode_q2k(blk, q);
        for (int j = 0; j < 16; ++j) {
          const float dl = d * float(blk[j] & 0xF), ml = dmin * float(blk[j] >> 4);
          for (int i = 0; i < 16; ++i) {
            const float v = dl * float(q[16 * j + i]);
            y[16 * j + i] = v - ml;
          }
        }
        break;
      }
      case DType::Q3_K: {
        const uint8_t* blk = w + size_t(b) * qb::kBytesQ3K;
        const float d = qb::f16(blk + 108);
        qb::decode_q3k(blk, q);
        for (int j = 0; j < 16; ++j) {
          const float dl = d * float(qb::k3_scale(blk + 96, j));
          for (int i = 0; i < 16; ++i) y[16 * j + i] = dl * float(q[16 * j + i]);
        }
        break;
      }
      case DType::Q4_K:
      case DType::Q5_K: {
        const uint8_t* blk = w + size_t(b) * (t == DType::Q4_K ? qb::kBytesQ4K : qb::kBytesQ5K);
        const float d = qb::f16(blk), dmin = qb::f16(blk + 2);
        if (t == DType::Q4_K) qb::decode_q4k(blk + 16, q);
        else qb::decode_q5k(blk, q);
        for (int j = 0; j < 8; ++j) {
          int sc, mn;
          qb::k4_scale_min(blk + 4, j, &sc, &mn);
          const float d1 = d * float(sc), m1 = dmin * float(mn);
          for (int i = 0; i < 32; ++i) {
            const float v = d1 * float(q[32 * j + i]);
            y[32 * j + i] = v - m1;
          }
        }
        break;
      }
      case DType::Q6_K: {
        const uint8_t* blk = w + size_t(b) * qb::kBytesQ6K;
        const float d = qb::f16(blk + 208);
        qb::decode_q6k(blk, q);
        for (int j = 0; j < 16; ++j) {
          const float dl = d * float(int8_t(blk[192 + j]));
          for (int i = 0; i < 16; ++i) y[16 * j + i] = dl * float(q[16 * j + i]);
        }
        break;
      }
      case DType::IQ4_XS: {
        const uint8_t* blk = w + size_t(b) * qb::kBytesIQ4XS;
        const float d = qb::f16(blk);
        for (int j = 0; j < 8; ++j) {
          qb::decode_nibbles(blk + 8 + 16 * j, q + 32 * j);
          const float dl = d * float(qb::iq4xs_scale(blk, j));
          for (int i = 0; i < 32; ++i) y[32 * j + i] = dl * float(qb::kIQ4NL[q[32 * j + i]]);
        }
        break;
      }
      default: break;
    }
  }
}

}  // namespace

void dequantize_row(DType t, const uint8_t* w, float* y, int k) noexcept {
  switch (t) {
    case DType::F32: std::memcpy(y, w, size_t(k) * 4); return;
    case DType::F16:
    case DType::BF16:
      for (int i = 0; i < k; ++i) {
        const uint16_t h = qb::u16(w + 2 * size_t(i));
        y[i] = t == DType::F16 ? f16_to_f32(h) : bf16_to_f32(h);
      }
      return;
    default:
      if (qs::act_of(t) == qs::Act::Q8_K) dequant_256(t, w, y, k / 256);
      else dequant_32(t, w, y, k / 32);
  }
}

void matmul_q(DType t, const float* x, const uint8_t* w, const float* bias, float* y, int n, int k, int m) noexcept {
  const qs::Act act = qs::act_of(t);
  const int nb = k / qs::act_block(act);
  std::vector<int8_t> q(static_cast<size_t>(k));
  std::vector<float> d(static_cast<size_t>(nb)), s(static_cast<size_t>(nb));
  std::vector<int16_t> bsums(static_cast<size_t>(k / 16));
  const size_t row_bytes = qb::row_bytes(t, k);
  for (int i = 0; i < n; ++i) {
    const float* xi = x + size_t(i) * k;
    if (act == qs::Act::Q8_K) qs::quantize_q8_K(xi, k, q.data(), d.data(), bsums.data());
    else qs::quantize_q8_0(xi, k, q.data(), d.data(), act == qs::Act::Q8_1 ? s.data() : nullptr);
    const qs::ActRow a{q.data(), d.data(), s.data(), bsums.data()};
    for (int j = 0; j < m; ++j)
      y[size_t(i) * m + j] = float(qs::dot_row(t, w + row_bytes * size_t(j), a, k)) + (bias ? bias[j] : 0.f);
  }
}

void matmul_dequantized(DType t, const float* x, const uint8_t* w, const float* bias, float* y, int n, int k,
                        int m) noexcept {
  std::vector<float> row(static_cast<size_t>(k));
  const size_t row_bytes = qb::row_bytes(t, k);
  for (int j = 0; j < m; ++j) {
    dequantize_row(t, w + row_bytes * size_t(j), row.data(), k);
    for (int i = 0; i < n; ++i) y[size_t(i) * m + j] = dot(x + size_t(i) * k, row.data(), k) + (bias ? bias[j] : 0.f);
  }
}

void matmul_f16(const float* x, const uint16_t* w, const float* bias, float* y, int n, int k, int m) noexcept {
  matmul_dequantized(DType::F16, x, reinterpret_cast<const uint8_t*>(w), bias, y, n, k, m);
}

void matmul_bf16(const float* x, const uint16_t* w, const float* bias, float* y, int n, int k, int m) noexcept {
  matmul_dequantized(DType::BF16, x, reinterpret_cast<const uint8_t*>(w), bias, y, n, k, m);
}

}  // namespace attnlens::kernels::ref
