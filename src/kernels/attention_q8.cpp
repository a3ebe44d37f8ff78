// Attention over a q8_0 KV cache (nn/kv_cache.h): keys and values stored as ggml's q8_0 quantizes
// (blocks of 32 along head_dim, q = round(x/d) in int8, d = amax/127 as f16; llama.cpp's
// --cache-type-k/v q8_0). A quarter of the f32 cache's bytes per token (34 per 32 values instead of
// 128), read without widening the keys to f32:
//   scores   integer dot products (i32x4.dot_i16x8_s: 8 multiply-adds per instruction) against the
//            query head written as two 16-bit integers per element, so that nothing of the query is
//            lost (llama.cpp rounds it to 8 bits): per block b of 32, e_b = amax_b/32767 (f32),
//            t = x·(32767/amax_b), h = round(t), l = round((t − h)·2^15), x ≈ e_b·(h + l·2^-15) to
//            f32 precision; per key j
//              score_j = scale · Σ_b (float(Σ h·k_j) + float(Σ l·k_j)·2^-15) · (e_b·d_jb)
//            (the integer sums exact; the float steps in this order).
//   values   f32: out_d = Σ_j c_jb·float(v_jd) with c_jb = p_j·d_jb, the weight times the value's
//            block scale, summed over j in order (keys with p_j = 0 skipped, as attention_values does).
// So the only rounding beyond the f32 cache's is the cache's own 8 bits (tests/cpp/test_nn_kv_q8.cpp
// checks against float64 attention on the dequantized cache, tests/fixtures/make_kv_q8_fixtures.py).
// The vector code and the scalar twins (namespace ref) perform the same float operations in the same
// order on the same exact integer sums: their results are equal bit for bit.
#include <algorithm>
#include <cmath>

#include "kernels/half.h"
#include "kernels/kernels.h"
#include "kernels/quant_simd.h"

namespace attnlens::kernels {

namespace {

constexpr int kChunk = 256;  // values: weights c_jb computed per run of this many positions

// The query head as two 16-bit integers per element (see the top of the file).
[[maybe_unused]] void quantize_query(const float* x, int hd, int16_t* qh, int16_t* ql, float* e) {
  for (int b = 0; b < hd / 32; ++b) {
    float amax = 0.f;
    for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[32 * b + i]));
    e[b] = amax / 32767.f;
    const float iq = amax != 0.f ? 32767.f / amax : 0.f;
    for (int i = 0; i < 32; ++i) {
      const float t = x[32 * b + i] * iq, h = std::nearbyint(t);
      qh[32 * b + i] = int16_t(h);
      ql[32 * b + i] = int16_t(std::nearbyint((t - h) * 32768.f));
    }
  }
}

float block_value(int32_t sh, int32_t sl) { return float(sh) + float(sl) * 0x1p-15f; }

// One key's score in scalar code (the keys past the last group of 4; the scalar twin): kept out of
// line and not vectorized by the compiler, so that it stays one small copy.
[[gnu::noinline]] float score_scalar(const int16_t* qh, const int16_t* ql, const float* e, const int8_t* k, const uint16_t* d, size_t ds,
                   int nb, int j, float scale) {
  float acc = 0.f;
  for (int b = 0; b < nb; ++b) {
    int32_t sh = 0, sl = 0;
#if defined(__clang__)
#pragma clang loop vectorize(disable) unroll(disable)
#endif
    for (int i = 32 * b; i < 32 * b + 32; ++i) {
      sh += int32_t(qh[i]) * k[i];
      sl += int32_t(ql[i]) * k[i];
    }
    acc += block_value(sh, sl) * (e[b] * f16_to_f32(d[b * ds + j]));
  }
  return acc * scale;
}

}  // namespace

#if ATTNLENS_QUANT_SIMD
using namespace qsimd;

namespace {
// quantize_query, 4 lanes at a time: the same operations (nearest-even rounding both ways).
inline __m128 nearest(__m128 x) {
#if defined(__wasm_simd128__)
  return (__m128)wasm_f32x4_nearest((v128_t)x);
#else
  return _mm_round_ps(x, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
#endif
}
// Whole numbers to int32 (emscripten's _mm_cvtps_epi32 goes lane by lane through lrint).
inline __m128i to_i32(__m128 x) {
#if defined(__wasm_simd128__)
  return (__m128i)wasm_i32x4_trunc_sat_f32x4((v128_t)x);
#else
  return _mm_cvttps_epi32(x);
#endif
}
void quantize_query_simd(const float* x, int hd, int16_t* qh, int16_t* ql, float* e) {
  const __m128 sign = _mm_set1_ps(-0.f);
  for (int b = 0; b < hd / 32; ++b) {
    const float* xb = x + 32 * b;
    __m128 m = _mm_setzero_ps();
    for (int i = 0; i < 32; i += 4) m = _mm_max_ps(m, _mm_andnot_ps(sign, _mm_loadu_ps(xb + i)));
    alignas(16) float t4[4];
    _mm_store_ps(t4, m);
    const float amax = std::max(std::max(t4[0], t4[1]), std::max(t4[2], t4[3]));
    e[b] = amax / 32767.f;
    const __m128 iq = _mm_set1_ps(amax != 0.f ? 32767.f / amax : 0.f), s15 = _mm_set1_ps(32768.f);
    for (int i = 0; i < 32; i += 8) {
      __m128i h[2], l[2];
      for (int u = 0; u < 2; ++u) {
        const __m128 t = _mm_mul_ps(_mm_loadu_ps(xb + i + 4 * u), iq), hv = nearest(t);
        h[u] = to_i32(hv);
        l[u] = to_i32(nearest(_mm_mul_ps(_mm_sub_ps(t, hv), s15)));
      }
      _mm_store_si128(reinterpret_cast<__m128i*>(qh + 32 * b + i), _mm_packs_epi32(h[0], h[1]));
      _mm_store_si128(reinterpret_cast<__m128i*>(ql + 32 * b + i), _mm_packs_epi32(l[0], l[1]));
    }
  }
}

// 4 int32 lanes: the sums of s[0..3]'s lanes.
inline __m128i sum4(const __m128i (&s)[4]) { return _mm_hadd_epi32(_mm_hadd_epi32(s[0], s[1]), _mm_hadd_epi32(s[2], s[3])); }
// int16 lanes 4..7 → int32.
inline __m128i hi_i32(__m128i v) {
#if defined(__wasm_simd128__)
  return wasm_i32x4_extend_high_i16x8(v);
#else
  return _mm_cvtepi16_epi32(_mm_srli_si128(v, 8));
#endif
}
}  // namespace

void attention_scores_q8(const float* q, const Q8Rows& k, int hd, int count, float scale, float* scores) noexcept {
  const int nb = hd / 32;
  alignas(16) int16_t qh[kMaxQ8HeadDim], ql[kMaxQ8HeadDim];
  float e[kMaxQ8HeadDim / 32];
  quantize_query_simd(q, hd, qh, ql, e);
  const __m128i* hv = reinterpret_cast<const __m128i*>(qh);
  const __m128i* lv = reinterpret_cast<const __m128i*>(ql);
  int j = 0;
  for (; j + 4 <= count; j += 4) {  // 4 keys: one vector of their 4 block sums per block
    __m128 acc = _mm_setzero_ps();
    const uint8_t* k0 = reinterpret_cast<const uint8_t*>(k.q) + size_t(j) * hd;
    for (int b = 0; b < nb; ++b) {
      __m128i sh[4], sl[4];
      for (int r = 0; r < 4; ++r) {
        const uint8_t* kr = k0 + size_t(r) * hd + 32 * b;
        __m128i th = _mm_setzero_si128(), tl = _mm_setzero_si128();
        for (int c = 0; c < 4; ++c) {
          const __m128i kv = load8_s16(kr + 8 * c);
          th = _mm_add_epi32(th, _mm_madd_epi16(kv, hv[4 * b + c]));
          tl = _mm_add_epi32(tl, _mm_madd_epi16(kv, lv[4 * b + c]));
        }
        sh[r] = th;
        sl[r] = tl;
      }
      const __m128 v = _mm_add_ps(_mm_cvtepi32_ps(sum4(sh)), _mm_mul_ps(_mm_cvtepi32_ps(sum4(sl)), _mm_set1_ps(0x1p-15f)));
      const __m128 dk = half::f16_lo(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(k.d + b * k.d_stride + j)));
      acc = _mm_add_ps(acc, _mm_mul_ps(v, _mm_mul_ps(_mm_set1_ps(e[b]), dk)));
    }
    _mm_storeu_ps(scores + j, _mm_mul_ps(acc, _mm_set1_ps(scale)));
  }
  for (; j < count; ++j) scores[j] = score_scalar(qh, ql, e, k.q + size_t(j) * hd, k.d, k.d_stride, nb, j, scale);
}

void attention_values_q8(const float* p, const Q8Rows& v, int hd, int count, float* out) noexcept {
  alignas(16) float c[kChunk];
  for (int b = 0; b < hd / 32; ++b) {
    __m128 acc[8];
    for (auto& a : acc) a = _mm_setzero_ps();
    for (int c0 = 0; c0 < count; c0 += kChunk) {
      const int n = std::min(kChunk, count - c0);
      const uint16_t* d = v.d + b * v.d_stride + c0;
      int i = 0;
      for (; i + 8 <= n; i += 8) {  // c_jb = p_j · d_jb
        const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(d + i));
        _mm_store_ps(c + i, _mm_mul_ps(_mm_loadu_ps(p + c0 + i), half::f16_lo(h)));
        _mm_store_ps(c + i + 4, _mm_mul_ps(_mm_loadu_ps(p + c0 + i + 4), half::f16_hi(h)));
      }
      for (; i < n; ++i) c[i] = p[c0 + i] * f16_to_f32(d[i]);
      const uint8_t* row = reinterpret_cast<const uint8_t*>(v.q) + size_t(c0) * hd + 32 * b;
      for (i = 0; i < n; ++i, row += hd) {
        if (p[c0 + i] == 0.f) continue;  // masked keys: their values are never read
        const __m128 cj = _mm_set1_ps(c[i]);
        for (int g = 0; g < 4; ++g) {
          const __m128i x = load8_s16(row + 8 * g);
          acc[2 * g] = _mm_add_ps(acc[2 * g], _mm_mul_ps(cj, _mm_cvtepi32_ps(_mm_cvtepi16_epi32(x))));
          acc[2 * g + 1] = _mm_add_ps(acc[2 * g + 1], _mm_mul_ps(cj, _mm_cvtepi32_ps(hi_i32(x))));
        }
      }
    }
    for (int t = 0; t < 8; ++t) _mm_storeu_ps(out + 32 * b + 4 * t, acc[t]);
  }
}
#else
void attention_scores_q8(const float* q, const Q8Rows& k, int hd, int count, float scale, float* scores) noexcept {
  ref::attention_scores_q8(q, k, hd, count, scale, scores);
}
void attention_values_q8(const float* p, const Q8Rows& v, int hd, int count, float* out) noexcept {
  ref::attention_values_q8(p, v, hd, count, out);
}
#endif

namespace ref {

void attention_scores_q8(const float* q, const Q8Rows& k, int hd, int count, float scale, float* scores) noexcept {
  int16_t qh[kMaxQ8HeadDim], ql[kMaxQ8HeadDim];
  float e[kMaxQ8HeadDim / 32];
  quantize_query(q, hd, qh, ql, e);
  for (int j = 0; j < count; ++j)
    scores[j] = score_scalar(qh, ql, e, k.q + size_t(j) * hd, k.d, k.d_stride, hd / 32, j, scale);
}

void attention_values_q8(const float* p, const Q8Rows& v, int hd, int count, float* out) noexcept {
  for (int d = 0; d < hd; ++d) {
    float acc = 0.f;
    for (int j = 0; j < count; ++j)
      if (p[j] != 0.f) acc += (p[j] * f16_to_f32(v.d[(d / 32) * v.d_stride + j])) * float(v.q[size_t(j) * hd + d]);
    out[d] = acc;
  }
}

}  // namespace ref

}  // namespace attnlens::kernels
