// Private to src/kernels: the arithmetic of the block-format dot products, written as plainly as
// possible. These functions DEFINE what the vector kernels compute (quant_ref.cpp builds the
// ref:: functions on them, and the kernels fall back to them without SIMD):
//
//   1. Each row of activations x is quantized per block the way llama.cpp's CPU backend pairs it
//      with the weight type (ggml-cpu's vec_dot_type):
//        q8_0 (q8_0, q4_0, q5_0, iq4_nl weights), per 32: d = amax/127 stored as f16,
//             q = nearest-even(x · 127/amax)  (0 for an all-zero block);
//        q8_1 (q4_1, q5_1), the same plus s = f16(d · Σq) (d before its f16 rounding);
//        q8_K (q2_K … q6_K, iq4_xs), per 256: max = the x of largest |x|, iscale = −127/max,
//             q = min(127, nearest-even(iscale·x)), d = 1/iscale (f32), bsums = Σq per 16.
//   2. Per block, the integer sums Σ q_w·q_x are exact; sub-block integer scales multiply them in
//      integers (K-quants); then one float scale per block or super-block:
//        q8_0, q4_0, q5_0, iq4_nl  y += (d_w·d_x) · Σ q_w·q_x
//        q4_1, q5_1                y += (d_w·d_x) · Σ q_w·q_x + m_w·s_x
//        q2_K, q4_K, q5_K          y += (d_w·d_x) · Σ_j sc_j·Σ q_w·q_x − (dmin_w·d_x) · Σ_j min_j·Σ_j q_x
//        q3_K, q6_K, iq4_xs        y += (d_w·d_x) · Σ_j sc_j·Σ q_w·q_x
//      (llama.cpp's ggml_vec_dot_*_generic in ggml-cpu/quants.c compute the same integers).
#pragma once
#include <cmath>
#include <cstdint>

#include "core/tensor.h"
#include "kernels/quant_blocks.h"

namespace attnlens::kernels::qs {

// Which activation format a weight type is paired with.
enum class Act { Q8_0, Q8_1, Q8_K };

inline Act act_of(DType t) {
  switch (t) {
    case DType::Q4_1:
    case DType::Q5_1: return Act::Q8_1;
    case DType::Q2_K:
    case DType::Q3_K:
    case DType::Q4_K:
    case DType::Q5_K:
    case DType::Q6_K:
    case DType::IQ4_XS: return Act::Q8_K;
    default: return Act::Q8_0;
  }
}

inline int act_block(Act a) { return a == Act::Q8_K ? qb::kQKK : qb::kQK; }

// ---- 1. activations --------------------------------------------------------------------------
// q[k]; d[k/32] (or [k/256]); s[k/32] for q8_1; bsums[k/16] for q8_K.

inline void quantize_q8_0(const float* x, int k, int8_t* q, float* d, float* s) {
  for (int b = 0; b < k / 32; ++b) {
    const float* xb = x + 32 * b;
    float amax = 0.f;
    for (int i = 0; i < 32; ++i) amax = std::fmax(amax, std::fabs(xb[i]));
    const float db = amax / 127.f;
    const float id = amax != 0.f ? 127.f / amax : 0.f;
    int sum = 0;
    for (int i = 0; i < 32; ++i) {
      q[32 * b + i] = int8_t(std::nearbyint(xb[i] * id));
      sum += q[32 * b + i];
    }
    d[b] = f16_to_f32(f32_to_f16(db));
    if (s) s[b] = f16_to_f32(f32_to_f16(db * float(sum)));
  }
}

inline void quantize_q8_K(const float* x, int k, int8_t* q, float* d, int16_t* bsums) {
  for (int b = 0; b < k / 256; ++b) {
    const float* xb = x + 256 * b;
    float amax = 0.f, max = 0.f;
    for (int i = 0; i < 256; ++i)
      if (std::fabs(xb[i]) > amax) {
        amax = std::fabs(xb[i]);
        max = xb[i];
      }
    if (amax == 0.f) {
      d[b] = 0.f;
      for (int i = 0; i < 256; ++i) q[256 * b + i] = 0;
    } else {
      const float iscale = -127.f / max;
      for (int i = 0; i < 256; ++i) q[256 * b + i] = int8_t(std::fmin(127.f, std::nearbyint(iscale * xb[i])));
      d[b] = 1.f / iscale;
    }
    for (int j = 0; j < 16; ++j) {
      int sum = 0;
      for (int i = 0; i < 16; ++i) sum += q[256 * b + 16 * j + i];
      bsums[16 * b + j] = int16_t(sum);
    }
  }
}

// ---- 2. one row of weights · one quantized row of x -------------------------------------------

struct ActRow {
  const int8_t* q;
  const float* d;
  const float* s;          // q8_1 only
  const int16_t* bsums;    // q8_K only
};

inline int isum32(const int* w, const int8_t* x) {
  int s = 0;
  for (int i = 0; i < 32; ++i) s += w[i] * x[i];
  return s;
}

// Blocks of 32: Σ over nb blocks, accumulated in double (the reference's float error is then
// negligible beside the kernels').
inline double dot_row_32(DType t, const uint8_t* row, const ActRow& a, int nb) {
  double acc = 0;
  int w[32];
  for (int b = 0; b < nb; ++b) {
    const int8_t* x = a.q + 32 * b;
    double term = 0;
    switch (t) {
      case DType::Q8_0: {
        const uint8_t* blk = row + size_t(b) * qb::kBytesQ8_0;
        for (int i = 0; i < 32; ++i) w[i] = int8_t(blk[2 + i]);
        term = double(qb::f16(blk) * a.d[b]) * isum32(w, x);
        break;
      }
      case DType::Q4_0: {
        const uint8_t* blk = row + size_t(b) * qb::kBytesQ4_0;
        qb::decode_nibbles(blk + 2, w);
        for (int& v : w) v -= 8;
        term = double(qb::f16(blk) * a.d[b]) * isum32(w, x);
        break;
      }
      case DType::Q4_1: {
        const uint8_t* blk = row + size_t(b) * qb::kBytesQ4_1;
        qb::decode_nibbles(blk + 4, w);
        term = double(qb::f16(blk) * a.d[b]) * isum32(w, x) + double(qb::f16(blk + 2) * a.s[b]);
        break;
      }
      case DType::Q5_0: {
        const uint8_t* blk = row + size_t(b) * qb::kBytesQ5_0;
        qb::decode_q5(blk + 2, blk + 6, w);
        for (int& v : w) v -= 16;
        term = double(qb::f16(blk) * a.d[b]) * isum32(w, x);
        break;
      }
      case DType::Q5_1: {
        const uint8_t* blk = row + size_t(b) * qb::kBytesQ5_1;
        qb::decode_q5(blk + 4, blk + 8, w);
        term = double(qb::f16(blk) * a.d[b]) * isum32(w, x) + double(qb::f16(blk + 2) * a.s[b]);
        break;
      }
      case DType::IQ4_NL: {
        const uint8_t* blk = row + size_t(b) * qb::kBytesIQ4NL;
        qb::decode_nibbles(blk + 2, w);
        for (int& v : w) v = qb::kIQ4NL[v];
        term = double(qb::f16(blk) * a.d[b]) * isum32(w, x);
        break;
      }
      default: return NAN;
    }
    acc += term;
  }
  return acc;
}

// Super-blocks of 256.
inline double dot_row_256(DType t, const uint8_t* row, const ActRow& a, int nb) {
  double acc = 0;
  int w[256];
  for (int b = 0; b < nb; ++b) {
    const int8_t* x = a.q + 256 * b;
    const int16_t* bs = a.bsums + 16 * b;
    const float dx = a.d[b];
    int64_t isum = 0, imin = 0;  // exact; int32 would do (|isum| < 2^31), int64 keeps it obviously so
    float d = 0, dmin = 0;
    switch (t) {
      case DType::Q2_K: {
        const uint8_t* blk = row + size_t(b) * qb::kBytesQ2K;
        qb::decode_q2k(blk, w);
        for (int j = 0; j < 16; ++j) {
          int s = 0;
          for (int i = 0; i < 16; ++i) s += w[16 * j + i] * x[16 * j + i];
          isum += int64_t(blk[j] & 0xF) * s;
          imin += int64_t(blk[j] >> 4) * bs[j];
        }
        d = qb::f16(blk + 80);
        dmin = qb::f16(blk + 82);
        break;
      }
      case DType::Q3_K: {
        const uint8_t* blk = row + size_t(b) * qb::kBytesQ3K;
        qb::decode_q3k(blk, w);
        for (int j = 0; j < 16; ++j) {
          int s = 0;
          for (int i = 0; i < 16; ++i) s += w[16 * j + i] * x[16 * j + i];
          isum += int64_t(qb::k3_scale(blk + 96, j)) * s;
        }
        d = qb::f16(blk + 108);
        break;
      }
      case DType::Q4_K:
      case DType::Q5_K: {
        const uint8_t* blk = row + size_t(b) * (t == DType::Q4_K ? qb::kBytesQ4K : qb::kBytesQ5K);
        if (t == DType::Q4_K) qb::decode_q4k(blk + 16, w);
        else qb::decode_q5k(blk, w);
        for (int j = 0; j < 8; ++j) {
          int sc, mn;
          qb::k4_scale_min(blk + 4, j, &sc, &mn);
          int s = 0;
          for (int i = 0; i < 32; ++i) s += w[32 * j + i] * x[32 * j + i];
          isum += int64_t(sc) * s;
          imin += int64_t(mn) * (bs[2 * j] + bs[2 * j + 1]);
        }
        d = qb::f16(blk);
        dmin = qb::f16(blk + 2);
        break;
      }
      case DType::Q6_K: {
        const uint8_t* blk = row + size_t(b) * qb::kBytesQ6K;
        qb::decode_q6k(blk, w);
        for (int j = 0; j < 16; ++j) {
          int s = 0;
          for (int i = 0; i < 16; ++i) s += w[16 * j + i] * x[16 * j + i];
          isum += int64_t(int8_t(blk[192 + j])) * s;
        }
        d = qb::f16(blk + 208);
        break;
      }
      case DType::IQ4_XS: {
        const uint8_t* blk = row + size_t(b) * qb::kBytesIQ4XS;
        for (int j = 0; j < 8; ++j) {
          qb::decode_nibbles(blk + 8 + 16 * j, w + 32 * j);
          int s = 0;
          for (int i = 0; i < 32; ++i) s += qb::kIQ4NL[w[32 * j + i]] * x[32 * j + i];
          isum += int64_t(qb::iq4xs_scale(blk, j)) * s;
        }
        d = qb::f16(blk);
        break;
      }
      default: return NAN;
    }
    acc += double(d * dx) * double(isum) - double(dmin * dx) * double(imin);
  }
  return acc;
}

inline double dot_row(DType t, const uint8_t* row, const ActRow& a, int k) {
  return act_of(t) == Act::Q8_K ? dot_row_256(t, row, a, k / 256) : dot_row_32(t, row, a, k / 32);
}

}  // namespace attnlens::kernels::qs
