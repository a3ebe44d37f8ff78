// Weight quantizers for `quantize` at load: q8_0, q4_0, q4_K and q5_0 (q4_K's fallback for rows
// that are not whole super-blocks, as llama.cpp's), each computing exactly what ggml's reference
// quantizers compute (quantize_row_{q8_0,q4_0,q5_0,q4_K}_ref in llama.cpp's
// ggml-quants.c, which llama.cpp's own quantizer uses when it has no importance matrix), so a
// model quantized here holds the same bytes as one quantized by llama.cpp (tests/cpp/test_kernels.cpp
// checks that against gguf-py and llama.cpp's output). Plain scalar code: it runs once per weight
// at load. The order of float operations matters for bit-exactness and is kept as ggml's.
// Inputs must be finite (the callers reject NaN/Inf first: a NaN cast to an integer is undefined).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/tensor.h"
#include "kernels/kernels.h"
#include "kernels/quant_blocks.h"

namespace attnlens::kernels {

namespace {

void put_f16(uint8_t* p, float v) {
  const uint16_t h = f32_to_f16(v);
  std::memcpy(p, &h, 2);
}

// Round to nearest, ties to even, for |v| < 2^22: adding 1.5·2^23 leaves the integer in the low
// mantissa bits (ggml's nearest_int).
int nearest_int(float v) {
  const float t = v + 12582912.f;
  int32_t i;
  std::memcpy(&i, &t, 4);
  return (i & 0x007fffff) - 0x00400000;
}

// 1/d for a block scale d; 0 when d is 0 or so small (subnormal) that 1/d overflows: x·(1/d) would be
// ±inf (or NaN for x = 0) and its cast to an integer undefined behaviour (found by tests/fuzz fuzz_load).
// Such a d is 0 once stored as f16, so the block dequantizes to zeros either way.
float inverse_scale(float d) {
  const float id = d != 0.f ? 1.f / d : 0.f;
  return std::isfinite(id) ? id : 0.f;
}

// q8_0: d = amax/127, q = round-half-away(x/d).
void quantize_q8_0(const float* x, uint8_t* out, int k) {
  for (int b = 0; b < k / 32; ++b, x += 32, out += qb::kBytesQ8_0) {
    float amax = 0.f;
    for (int i = 0; i < 32; ++i) amax = std::fmax(amax, std::fabs(x[i]));
    const float d = amax / 127.f;
    const float id = inverse_scale(d);
    put_f16(out, d);
    for (int i = 0; i < 32; ++i) out[2 + i] = uint8_t(int8_t(std::round(x[i] * id)));
  }
}

// q4_0: d = max/−8 with max the value of largest magnitude (so it maps to −8 exactly),
// q = min(15, trunc(x/d + 8.5)).
void quantize_q4_0(const float* x, uint8_t* out, int k) {
  for (int b = 0; b < k / 32; ++b, x += 32, out += qb::kBytesQ4_0) {
    float amax = 0.f, max = 0.f;
    for (int i = 0; i < 32; ++i)
      if (amax < std::fabs(x[i])) {
        amax = std::fabs(x[i]);
        max = x[i];
      }
    const float d = max / -8.f;
    const float id = inverse_scale(d);
    put_f16(out, d);
    for (int j = 0; j < 16; ++j) {
      const int lo = std::min(15, int(int8_t(x[j] * id + 8.5f)));
      const int hi = std::min(15, int(int8_t(x[16 + j] * id + 8.5f)));
      out[2 + j] = uint8_t(lo | (hi << 4));
    }
  }
}

// q5_0: as q4_0 with 5 bits: d = max/−16, q = min(31, trunc(x/d + 16.5)), the 5th bits in qh.
void quantize_q5_0(const float* x, uint8_t* out, int k) {
  for (int b = 0; b < k / 32; ++b, x += 32, out += qb::kBytesQ5_0) {
    float amax = 0.f, max = 0.f;
    for (int i = 0; i < 32; ++i)
      if (amax < std::fabs(x[i])) {
        amax = std::fabs(x[i]);
        max = x[i];
      }
    const float d = max / -16.f;
    const float id = inverse_scale(d);
    put_f16(out, d);
    uint32_t qh = 0;
    for (int j = 0; j < 16; ++j) {
      const int lo = std::min(31, int(int8_t(x[j] * id + 16.5f)));
      const int hi = std::min(31, int(int8_t(x[16 + j] * id + 16.5f)));
      out[6 + j] = uint8_t((lo & 0xF) | ((hi & 0xF) << 4));
      qh |= uint32_t((lo >> 4) & 1) << j;
      qh |= uint32_t((hi >> 4) & 1) << (j + 16);
    }
    std::memcpy(out + 2, &qh, 4);
  }
}

// One sub-block of q4_K: the scale and min (returned through *min as a positive offset, weight =
// scale·L − min) that minimize the weighted squared error, by ggml's search: start from the range
// [min(x, 0), max(x)], then try nstep + 1 candidate inverse scales around nmax/(max − min) and keep
// the least-squares (scale, min) of whichever rounding fits best.
float fit_scale_min(int n, int nmax, const float* x, const float* w, uint8_t* L, float* the_min, float rmin,
                    float rdelta, int nstep) {
  uint8_t Laux[32];
  float min = x[0], max = x[0];
  float sum_w = w[0], sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    sum_w += w[i];
    sum_x += w[i] * x[i];
  }
  if (min > 0) min = 0;
  if (max == min) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    *the_min = -min;
    return 0.f;
  }
  float iscale = float(nmax) / (max - min);
  float scale = 1 / iscale;
  float best_error = 0;
  for (int i = 0; i < n; ++i) {
    const int l = nearest_int(iscale * (x[i] - min));
    L[i] = uint8_t(std::max(0, std::min(nmax, l)));
    float diff = scale * L[i] + min - x[i];
    diff = diff * diff;
    best_error += w[i] * diff;
  }
  for (int is = 0; is <= nstep; ++is) {
    iscale = (rmin + rdelta * is + nmax) / (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      int l = nearest_int(iscale * (x[i] - min));
      l = std::max(0, std::min(nmax, l));
      Laux[i] = uint8_t(l);
      sum_l += w[i] * l;
      sum_l2 += w[i] * l * l;
      sum_xl += w[i] * l * x[i];
    }
    const float D = sum_w * sum_l2 - sum_l * sum_l;
    if (D > 0) {
      float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
      float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
      if (this_min > 0) {
        this_min = 0;
        this_scale = sum_xl / sum_l2;
      }
      float cur_error = 0;
      for (int i = 0; i < n; ++i) {
        float diff = this_scale * Laux[i] + this_min - x[i];
        diff = diff * diff;
        cur_error += w[i] * diff;
      }
      if (cur_error < best_error) {
        for (int i = 0; i < n; ++i) L[i] = Laux[i];
        best_error = cur_error;
        scale = this_scale;
        min = this_min;
      }
    }
  }
  *the_min = -min;
  return scale;
}

// q4_K: per sub-block of 32 a (scale, min) fit with weights av_x + |x| (av_x = RMS of the
// sub-block), both quantized to 6 bits against the super-block's largest (d = max_scale/63,
// dmin = max_min/63), then every weight re-quantized against the stored scales.
void quantize_q4_K(const float* x, uint8_t* out, int k) {
  for (int b = 0; b < k / 256; ++b, x += 256, out += qb::kBytesQ4K) {
    uint8_t L[256];
    float weights[32], mins[8], scales[8];
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < 8; ++j) {
      float sum_x2 = 0;
      for (int l = 0; l < 32; ++l) sum_x2 += x[32 * j + l] * x[32 * j + l];
      const float av_x = std::sqrt(sum_x2 / 32);
      for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(x[32 * j + l]);
      scales[j] = fit_scale_min(32, 15, x + 32 * j, weights, L + 32 * j, &mins[j], -1.f, 0.1f, 20);
      if (scales[j] > max_scale) max_scale = scales[j];
      if (mins[j] > max_min) max_min = mins[j];
    }
    const float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
    const float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
    uint8_t* sc = out + 4;
    std::memset(sc, 0, 12);
    for (int j = 0; j < 8; ++j) {
      const uint8_t ls = uint8_t(std::min(63, int(uint8_t(nearest_int(inv_scale * scales[j])))));
      const uint8_t lm = uint8_t(std::min(63, int(uint8_t(nearest_int(inv_min * mins[j])))));
      if (j < 4) {
        sc[j] = ls;
        sc[j + 4] = lm;
      } else {
        sc[j + 4] = uint8_t((ls & 0xF) | ((lm & 0xF) << 4));
        sc[j - 4] |= uint8_t((ls >> 4) << 6);
        sc[j] |= uint8_t((lm >> 4) << 6);
      }
    }
    put_f16(out, max_scale / 63.f);
    put_f16(out + 2, max_min / 63.f);
    const float d_all = qb::f16(out), dmin_all = qb::f16(out + 2);
    for (int j = 0; j < 8; ++j) {
      int s, m;
      qb::k4_scale_min(sc, j, &s, &m);
      const float d = d_all * s;
      if (d == 0.f) continue;
      const float dm = dmin_all * m;
      for (int i = 0; i < 32; ++i) {
        const int l = nearest_int((x[32 * j + i] + dm) / d);
        L[32 * j + i] = uint8_t(std::max(0, std::min(15, l)));
      }
    }
    uint8_t* q = out + 16;
    for (int j = 0; j < 256; j += 64, q += 32)
      for (int l = 0; l < 32; ++l) q[l] = uint8_t(L[j + l] | (L[j + l + 32] << 4));
  }
}

}  // namespace

bool can_quantize(DType t) noexcept {
  return t == DType::Q8_0 || t == DType::Q4_0 || t == DType::Q5_0 || t == DType::Q4_K;
}

// One position of one head of a q8_0 KV cache (nn/kv_cache.h): the blocks of quantize_q8_0, values
// and scales stored apart.
void quantize_kv_q8_0(const float* x, int head_dim, int8_t* q, uint16_t* d, size_t d_stride) noexcept {
  uint8_t blk[qb::kBytesQ8_0];
  for (int b = 0; b < head_dim / 32; ++b) {
    quantize_q8_0(x + 32 * b, blk, 32);
    std::memcpy(d + b * d_stride, blk, 2);
    std::memcpy(q + 32 * b, blk + 2, 32);
  }
}

void quantize_row(DType t, const float* x, uint8_t* out, int k) noexcept {
  switch (t) {
    case DType::Q8_0: quantize_q8_0(x, out, k); break;
    case DType::Q4_0: quantize_q4_0(x, out, k); break;
    case DType::Q5_0: quantize_q5_0(x, out, k); break;
    case DType::Q4_K: quantize_q4_K(x, out, k); break;
    default: break;
  }
}

namespace {

// Byte offsets of the f16 scales (and mins) inside one block; -1 ends the list.
const int* scale_offsets(DType t) {
  static const int d0[] = {0, -1}, dm[] = {0, 2, -1}, q2k[] = {80, 82, -1}, q3k[] = {108, -1}, q6k[] = {208, -1};
  switch (t) {
    case DType::Q4_1:
    case DType::Q5_1:
    case DType::Q4_K:
    case DType::Q5_K: return dm;
    case DType::Q2_K: return q2k;
    case DType::Q3_K: return q3k;
    case DType::Q6_K: return q6k;
    default: return d0;
  }
}

inline bool f16_finite(uint16_t h) { return (h & 0x7C00) != 0x7C00; }
inline bool bf16_finite(uint16_t h) { return (h & 0x7F80) != 0x7F80; }

}  // namespace

int64_t first_non_finite(DType t, const uint8_t* p, size_t count) noexcept {
  switch (t) {
    case DType::F32:
      if (reinterpret_cast<uintptr_t>(p) % alignof(float) == 0) {  // the vectorized search (vector_ops.cpp)
        const size_t i = first_nonfinite(reinterpret_cast<const float*>(p), count);
        return i == count ? -1 : int64_t(i);
      }
      for (size_t i = 0; i < count; ++i) {
        float v;
        std::memcpy(&v, p + 4 * i, 4);
        if (!std::isfinite(v)) return int64_t(i);
      }
      return -1;
    case DType::F16:
    case DType::BF16: {
      // Branch-free over chunks (vectorizes), then locate the element.
      const bool f16 = t == DType::F16;
      for (size_t i0 = 0; i0 < count; i0 += 4096) {
        const size_t n = std::min<size_t>(4096, count - i0);
        bool bad = false;
        for (size_t i = 0; i < n; ++i) {
          const uint16_t h = qb::u16(p + 2 * (i0 + i));
          bad |= f16 ? !f16_finite(h) : !bf16_finite(h);
        }
        if (bad)
          for (size_t i = 0; i < n; ++i) {
            const uint16_t h = qb::u16(p + 2 * (i0 + i));
            if (f16 ? !f16_finite(h) : !bf16_finite(h)) return int64_t(i0 + i);
          }
      }
      return -1;
    }
    default: {
      const size_t elems = size_t(dtype_block_elems(t)), bytes = size_t(dtype_block_bytes(t));
      const int* offs = scale_offsets(t);
      for (size_t b = 0; b < count / elems; ++b)
        for (const int* o = offs; *o >= 0; ++o)
          if (!f16_finite(qb::u16(p + b * bytes + size_t(*o)))) return int64_t(b * elems);
      return -1;
    }
  }
}

}  // namespace attnlens::kernels
