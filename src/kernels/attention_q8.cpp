// Attention over a q8_0 KV cache (nn/kv_cache.h): keys and values stored as ggml's q8_0 quantizes
// (blocks of 32 along head_dim, q = round(x/d) in int8, d = amax/127 as f16; llama.cpp's
// --cache-type-k/v q8_0). A quarter of the f32 cache's bytes per token (34 per 32 values instead of
// 128), read without widening the cache to f32: both loops are integer dot products
// (i32x4.dot_i16x8_s: 8 multiply-adds per instruction) against a float vector written as two 16-bit
// integers per element, so that nothing of it is lost (llama.cpp rounds the query to 8 bits):
//   split    x[0..n) with one scale: e = amax/32767 (f32), t = x·(32767/amax), h = round(t),
//            l = round((t − h)·2^15), so x ≈ e·(h + l·2^-15) to f32 precision.
//   scores   the query split per block b of 32 (e_b); per key j
//              score_j = scale · Σ_b (float(Σ h·k_j) + float(Σ l·k_j)·2^-15) · (e_b·d_jb)
//            (the integer sums exact; the float steps in this order).
//   values   per block b of head_dim and run R of up to 256 keys: the weights c_jb = p_j·d_jb (the
//            weight times the value's block scale; 0 for a masked key, p_j = 0) split with one scale
//            e_Rb; then per element d
//              out_d += (float(Σ_{j∈R} h_j·v_jd) + float(Σ_{j∈R} l_j·v_jd)·2^-15) · e_Rb
//            over the runs in order (|h|·127·256 < 2^31: the run's integer sums exact). The vector code
//            pairs keys (the values of keys j and j+1 widened to int16 and interleaved, so one
//            i32x4.dot_i16x8_s lane is h_j·v_jd + h_j+1·v_j+1,d).
// So the only rounding beyond the f32 cache's is the cache's own 8 bits (tests/cpp/test_nn_kv_q8.cpp
// checks against float64 attention on the dequantized cache, tests/fixtures/make_kv_q8_fixtures.py).
// The vector code and the scalar twins (namespace ref) perform the same float operations in the same
// order on the same exact integer sums: their results are equal bit for bit.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "kernels/half.h"
#include "kernels/kernels.h"
#include "kernels/quant_simd.h"

namespace attnlens::kernels {

namespace {

constexpr int kChunk = 256;  // values: keys per run (one weight scale per run and block)

// A whole number as int16, saturated, NaN as 0 (wasm's i32x4.trunc_sat_f32x4 and the saturating pack do
// the same): only a non-finite input (an overflowing f16 scale in the cache) gets there out of range,
// and its result is not finite either way, but the conversion must not be undefined.
[[maybe_unused]] int16_t to_i16(float w) { return w == w ? int16_t(std::clamp(w, -32768.f, 32767.f)) : 0; }

// x[0..n) ≈ e·(h + l·2^-15), returns e (see the top of the file).
[[maybe_unused]] float split16(const float* x, int n, int16_t* h, int16_t* l) {
  float amax = 0.f;
  for (int i = 0; i < n; ++i) amax = std::max(amax, std::fabs(x[i]));
  const float iq = amax != 0.f ? 32767.f / amax : 0.f;
  for (int i = 0; i < n; ++i) {
    const float t = x[i] * iq, hi = std::nearbyint(t);
    h[i] = to_i16(hi);
    l[i] = to_i16(std::nearbyint((t - hi) * 32768.f));
  }
  return amax / 32767.f;
}

// The query head split per block of 32.
[[maybe_unused]] void quantize_query(const float* x, int hd, int16_t* qh, int16_t* ql, float* e) {
  for (int b = 0; b < hd / 32; ++b) e[b] = split16(x + 32 * b, 32, qh + 32 * b, ql + 32 * b);
}

// The weights of keys [0, n) for value block b: c_j = p_j·d_jb, 0 where p_j = 0 (a masked key's
// value is never used, whatever its scale).
[[maybe_unused]] void block_weights(const float* p, const uint16_t* d, int n, float* c) {
  for (int i = 0; i < n; ++i) c[i] = p[i] == 0.f ? 0.f : p[i] * f16_to_f32(d[i]);
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
// split16, 8 values at a time (n a multiple of 8): the same operations (nearest-even rounding both ways).
float split16_simd(const float* x, int n, int16_t* h, int16_t* l) {
  const __m128 sign = _mm_set1_ps(-0.f);
  __m128 m = _mm_setzero_ps();
  for (int i = 0; i < n; i += 4) m = _mm_max_ps(m, _mm_andnot_ps(sign, _mm_loadu_ps(x + i)));
  alignas(16) float t4[4];
  _mm_store_ps(t4, m);
  const float amax = std::max(std::max(t4[0], t4[1]), std::max(t4[2], t4[3]));
  const __m128 iq = _mm_set1_ps(amax != 0.f ? 32767.f / amax : 0.f), s15 = _mm_set1_ps(32768.f);
  for (int i = 0; i < n; i += 8) {
    __m128i hv[2], lv[2];
    for (int u = 0; u < 2; ++u) {
      const __m128 t = _mm_mul_ps(_mm_loadu_ps(x + i + 4 * u), iq), r = nearest(t);
      hv[u] = to_i32(r);
      lv[u] = to_i32(nearest(_mm_mul_ps(_mm_sub_ps(t, r), s15)));
    }
    _mm_storeu_si128(reinterpret_cast<__m128i*>(h + i), _mm_packs_epi32(hv[0], hv[1]));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(l + i), _mm_packs_epi32(lv[0], lv[1]));
  }
  return amax / 32767.f;
}
void quantize_query_simd(const float* x, int hd, int16_t* qh, int16_t* ql, float* e) {
  for (int b = 0; b < hd / 32; ++b) e[b] = split16_simd(x + 32 * b, 32, qh + 32 * b, ql + 32 * b);
}

// One key's block: its h and l partial sums (4 lanes each) folded into one vector, lanes
// (h01, h23, l01, l23), so that each key's step of the loop below ends in one vector.
inline __m128i fold_hl(__m128i th, __m128i tl) { return _mm_hadd_epi32(th, tl); }
// Four keys' folded sums → the keys' h sums and l sums (lanes: keys 0..3).
inline void sums4(const __m128i (&u)[4], __m128i& sh, __m128i& sl) {
  const __m128i a = _mm_hadd_epi32(u[0], u[1]), b = _mm_hadd_epi32(u[2], u[3]);  // h0 l0 h1 l1 | h2 l2 h3 l3
  sh = _mm_castps_si128(_mm_shuffle_ps(_mm_castsi128_ps(a), _mm_castsi128_ps(b), _MM_SHUFFLE(2, 0, 2, 0)));
  sl = _mm_castps_si128(_mm_shuffle_ps(_mm_castsi128_ps(a), _mm_castsi128_ps(b), _MM_SHUFFLE(3, 1, 3, 1)));
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
      __m128i u[4];
#if defined(__clang__)
// A loop, not 4 keys unrolled into one block: V8's TurboFan places a block's loads in program order
// and the arithmetic late, so the unrolled block loaded all 16 key vectors before the first
// multiply-add and spilled most of them to the stack (the x64 code of --print-wasm-code); one key per
// iteration keeps the key's 4 vectors, its 2 sums and the block's 8 query vectors in registers.
#pragma clang loop unroll(disable)
#endif
      for (int r = 0; r < 4; ++r) {
        const uint8_t* kr = k0 + size_t(r) * hd + 32 * b;
        __m128i th = _mm_setzero_si128(), tl = _mm_setzero_si128();
        for (int c = 0; c < 4; ++c) {
          const __m128i kv = load8_s16(kr + 8 * c);
          th = _mm_add_epi32(th, _mm_madd_epi16(kv, hv[4 * b + c]));
          tl = _mm_add_epi32(tl, _mm_madd_epi16(kv, lv[4 * b + c]));
        }
        u[r] = fold_hl(th, tl);
      }
      __m128i sh, sl;
      sums4(u, sh, sl);
      const __m128 v = _mm_add_ps(_mm_cvtepi32_ps(sh), _mm_mul_ps(_mm_cvtepi32_ps(sl), _mm_set1_ps(0x1p-15f)));
      const __m128 dk = half::f16_lo(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(k.d + b * k.d_stride + j)));
      acc = _mm_add_ps(acc, _mm_mul_ps(v, _mm_mul_ps(_mm_set1_ps(e[b]), dk)));
    }
    _mm_storeu_ps(scores + j, _mm_mul_ps(acc, _mm_set1_ps(scale)));
  }
  for (; j < count; ++j) scores[j] = score_scalar(qh, ql, e, k.q + size_t(j) * hd, k.d, k.d_stride, nb, j, scale);
}

namespace {
// Keys j and j+1: 16 int8 values of each (at r0, r1). H[k] += h_j·v_j + h_j+1·v_j+1 for the values
// 4k..4k+3 (hp: the pair's h, lanes h_j, h_j+1 repeated), L[k] the same with l. Each 8 values widened
// by the load (v128.load8x8_s), then the two keys' int16 lanes interleaved.
inline void weigh_pair(const uint8_t* r0, const uint8_t* r1, __m128i hp, __m128i lp, __m128i (&H)[4], __m128i (&L)[4]) {
  const __m128i x0 = load8_s16(r0), x1 = load8_s16(r0 + 8), y0 = load8_s16(r1), y1 = load8_s16(r1 + 8);
  const __m128i a[4] = {_mm_unpacklo_epi16(x0, y0), _mm_unpackhi_epi16(x0, y0), _mm_unpacklo_epi16(x1, y1),
                        _mm_unpackhi_epi16(x1, y1)};  // x0 y0 x1 y1 …
  for (int k = 0; k < 4; ++k) {
    H[k] = _mm_add_epi32(H[k], _mm_madd_epi16(a[k], hp));
    L[k] = _mm_add_epi32(L[k], _mm_madd_epi16(a[k], lp));
  }
}
inline __m128i pair_of(const int16_t* w, int i) {  // lanes: w[i], w[i+1], repeated
  int32_t v;
  std::memcpy(&v, w + i, sizeof v);
  return _mm_set1_epi32(v);
}
}  // namespace

void attention_values_q8(const float* p, const Q8Rows& v, int hd, int count, float* out) noexcept {
  alignas(16) float c[kChunk];
  alignas(16) int16_t ch[kChunk], cl[kChunk];
  std::fill(out, out + hd, 0.f);
  for (int c0 = 0; c0 < count; c0 += kChunk) {
    const int n = std::min(kChunk, count - c0), n8 = (n + 7) / 8 * 8;
    const uint8_t* rows = reinterpret_cast<const uint8_t*>(v.q) + size_t(c0) * hd;
    for (int b = 0; b < hd / 32; ++b) {
      const uint16_t* d = v.d + b * v.d_stride + c0;
      int i = 0;
      for (; i + 8 <= n; i += 8) {  // c_jb = p_j · d_jb, 0 where p_j = 0
        const __m128i hv = _mm_loadu_si128(reinterpret_cast<const __m128i*>(d + i));
        for (int u = 0; u < 2; ++u) {
          const __m128 pj = _mm_loadu_ps(p + c0 + i + 4 * u);
          const __m128 cj = _mm_mul_ps(pj, u == 0 ? half::f16_lo(hv) : half::f16_hi(hv));
          _mm_store_ps(c + i + 4 * u, _mm_and_ps(cj, _mm_cmpneq_ps(pj, _mm_setzero_ps())));
        }
      }
      block_weights(p + c0 + i, d + i, n - i, c + i);
      std::fill(c + n, c + n8, 0.f);
      const float e = split16_simd(c, n8, ch, cl);
      if (e == 0.f) continue;  // no weight in this run
      for (int half = 0; half < 2; ++half) {
        __m128i H[4], L[4];
        for (int k = 0; k < 4; ++k) H[k] = L[k] = _mm_setzero_si128();
        const uint8_t* r = rows + 32 * b + 16 * half;
        int j = 0;
        for (; j + 2 <= n; j += 2, r += 2 * size_t(hd)) weigh_pair(r, r + hd, pair_of(ch, j), pair_of(cl, j), H, L);
        if (j < n) weigh_pair(r, r, pair_of(ch, j), pair_of(cl, j), H, L);  // the last key; its pair's weight is 0
        float* o = out + 32 * b + 16 * half;
        for (int k = 0; k < 4; ++k) {
          const __m128 s = _mm_add_ps(_mm_cvtepi32_ps(H[k]), _mm_mul_ps(_mm_cvtepi32_ps(L[k]), _mm_set1_ps(0x1p-15f)));
          _mm_storeu_ps(o + 4 * k, _mm_add_ps(_mm_loadu_ps(o + 4 * k), _mm_mul_ps(s, _mm_set1_ps(e))));
        }
      }
    }
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
  float c[kChunk];
  int16_t ch[kChunk], cl[kChunk];
  std::fill(out, out + hd, 0.f);
  for (int c0 = 0; c0 < count; c0 += kChunk) {
    const int n = std::min(kChunk, count - c0);
    for (int b = 0; b < hd / 32; ++b) {
      block_weights(p + c0, v.d + b * v.d_stride + c0, n, c);
      const float e = split16(c, n, ch, cl);
      if (e == 0.f) continue;
      for (int d = 32 * b; d < 32 * b + 32; ++d) {
        int32_t sh = 0, sl = 0;
        for (int j = 0; j < n; ++j) {
          const int32_t x = v.q[size_t(c0 + j) * hd + d];
          sh += ch[j] * x;
          sl += cl[j] * x;
        }
        out[d] += block_value(sh, sl) * e;
      }
    }
  }
}

}  // namespace ref

}  // namespace attnlens::kernels
