// Dot products with weights in GGML block formats (quant_blocks.h), activations quantized per
// block the way llama.cpp pairs them (quant_scalar.h defines the arithmetic; ref::matmul_q is it
// in plain scalar code).
//
// q8_0 weights: the activation vector x is quantized once per call to 8 bits per 32-block (kept as
// int16 so it feeds a 16-bit multiply), then every block's dot product is exact integer
// arithmetic, Σ q·xq, scaled once by d·dx: per 32 weights 4 widening loads, 4 i32x4.dot_i16x8_s
// (8 products each) and 3 adds, where converting each weight to f32 would take 8 widenings, 8
// conversions and 8 multiply + 8 add. 4-wide SIMD without FMA is compute-bound at q8_0's bytes/s in
// wasm, so this is what lets q8_0 decode beat f32 decode.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/tensor.h"
#include "kernels/kernels.h"
#include "kernels/quant_blocks.h"
#include "kernels/quant_scalar.h"
#include "kernels/scratch.h"

#if defined(__SSE4_1__)
// Natively: real SSE4.1 (and F16C when -march has it). In wasm: emscripten's SSE→SIMD128 headers,
// which is also how xsimd compiles there; every intrinsic used below maps to one or two SIMD128
// operations (checked with wasm-objdump: i16x8.extend_low_i8x16_s / v128.load8x8_s,
// i32x4.dot_i16x8_s, i8x16.shuffle, f32x4.convert_i32x4_s). Avoid _mm_cvt(t)ps_epi32 and
// _mm_maddubs_epi16 here: emscripten 3.1.6 scalarizes the former and expands the latter to 8 ops.
#include <smmintrin.h>
#if defined(__F16C__)
#include <immintrin.h>
#endif
#define ATTNLENS_Q8_SSE 1
#endif

namespace attnlens::kernels {

namespace {

inline float f16_rounded(float v) { return f16_to_f32(f32_to_f16(v)); }

#if ATTNLENS_Q8_SSE
// ---- quantized activations (quant_scalar.h's definitions, 4 lanes at a time) -------------------
// Round to nearest, ties to even (f32x4.nearest in wasm, roundps natively), exactly nearbyint, then
// to int32 (exact: the values are integers, |v| ≤ 127). Rounding the product first matters: adding
// the 1.5·2^23 constant instead would let a compiler fuse multiply and add (natively), rounding the
// exact product rather than the f32 one llama.cpp rounds.
inline __m128i round_i32(__m128 v) {
  const __m128 r = _mm_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
#if defined(__wasm_simd128__)
  return wasm_i32x4_trunc_sat_f32x4(r);
#else
  return _mm_cvtps_epi32(r);
#endif
}

// max |x| over n floats (n % 4 == 0) as float: |x| as integer bits (the order of non-negative
// floats is the order of their bits).
inline float abs_max(const float* x, int n) {
  const __m128i abs_mask = _mm_set1_epi32(0x7fffffff);
  __m128i m = _mm_setzero_si128();
  for (int i = 0; i < n; i += 4) m = _mm_max_epi32(m, _mm_and_si128(_mm_castps_si128(_mm_loadu_ps(x + i)), abs_mask));
  m = _mm_max_epi32(m, _mm_shuffle_epi32(m, _MM_SHUFFLE(1, 0, 3, 2)));
  m = _mm_max_epi32(m, _mm_shuffle_epi32(m, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm_cvtss_f32(_mm_castsi128_ps(m));
}

// xq[i] = round(x[i]·scale) for n floats (n % 8 == 0) as int16; returns Σ xq.
inline int scale_round(const float* x, int n, float scale, int16_t* xq) {
  const __m128 vs = _mm_set1_ps(scale);
  __m128i sum = _mm_setzero_si128();
  for (int i = 0; i < n; i += 8) {
    const __m128i lo = round_i32(_mm_mul_ps(_mm_loadu_ps(x + i), vs));
    const __m128i hi = round_i32(_mm_mul_ps(_mm_loadu_ps(x + i + 4), vs));
    sum = _mm_add_epi32(sum, _mm_add_epi32(lo, hi));
    _mm_store_si128(reinterpret_cast<__m128i*>(xq + i), _mm_packs_epi32(lo, hi));
  }
  sum = _mm_add_epi32(sum, _mm_shuffle_epi32(sum, _MM_SHUFFLE(1, 0, 3, 2)));
  sum = _mm_add_epi32(sum, _mm_shuffle_epi32(sum, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm_cvtsi128_si32(sum);
}

// q8_0 (s == nullptr) or q8_1: per 32, d = f16(amax/127), xq = round(x·127/amax), s = f16(d·Σxq).
void quantize_act_q8(const float* x, int k, int16_t* xq, float* d, float* s) {
  for (int b = 0; b < k / 32; ++b) {
    const float amax = abs_max(x + 32 * b, 32);
    const float db = amax / 127.f;
    const int sum = scale_round(x + 32 * b, 32, amax != 0.f ? 127.f / amax : 0.f, xq + 32 * b);
    d[b] = f16_rounded(db);
    if (s) s[b] = f16_rounded(db * float(sum));
  }
}

// q8_K: per 256, max = the first x of largest |x|, iscale = −127/max, xq = round(iscale·x)
// (≤ 127 in magnitude by construction), d = 1/iscale, bsums = Σxq per 16.
[[maybe_unused]] void quantize_act_q8K(const float* x, int k, int16_t* xq, float* d, int16_t* bsums) {
  for (int b = 0; b < k / 256; ++b) {
    const float* xb = x + 256 * b;
    int16_t* qb16 = xq + 256 * b;
    const float amax = abs_max(xb, 256);
    if (amax == 0.f) {
      d[b] = 0.f;
      std::memset(qb16, 0, 256 * sizeof(int16_t));
      std::memset(bsums + 16 * b, 0, 16 * sizeof(int16_t));
      continue;
    }
    int first = 0;
    while (std::fabs(xb[first]) != amax) ++first;
    const float iscale = -127.f / xb[first];
    for (int j = 0; j < 16; ++j) bsums[16 * b + j] = int16_t(scale_round(xb + 16 * j, 16, iscale, qb16 + 16 * j));
    d[b] = 1.f / iscale;
  }
}

// The f16 block scale as f32. Natively with F16C one instruction; otherwise (wasm) a 256 KiB table
// built on first use: one scalar load per block instead of ~12 integer ops, and the entries a
// matrix uses (its scales span a few binades) stay in L1.
#if defined(__F16C__)
struct F16 {
  float operator()(const uint8_t* block) const { return _cvtsh_ss(qb::u16(block)); }
};
#else
struct F16 {
  const float* table = get();
  float operator()(const uint8_t* block) const { return table[qb::u16(block)]; }
  static const float* get() {
    static const float* t = [] {
      static float v[65536];
      for (uint32_t h = 0; h < 65536; ++h) v[h] = f16_to_f32(uint16_t(h));
      return v;
    }();
    return t;
  }
};
#endif

// ---- q8_0 ------------------------------------------------------------------------------------
// Σ q·xq over one block as 4 partial int32 sums (exact: |Σ| ≤ 32·128·127 < 2^31). The four 8-byte
// loads become v128.load8x8_s (pmovsxbw from memory natively).
inline __m128i block_dot_i32(const uint8_t* block, const __m128i* x) {
  const uint8_t* q = block + 2;
  const __m128i a = _mm_madd_epi16(_mm_cvtepi8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(q))), x[0]);
  const __m128i b = _mm_madd_epi16(_mm_cvtepi8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(q + 8))), x[1]);
  const __m128i c = _mm_madd_epi16(_mm_cvtepi8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(q + 16))), x[2]);
  const __m128i d = _mm_madd_epi16(_mm_cvtepi8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(q + 24))), x[3]);
  return _mm_add_epi32(_mm_add_epi32(a, b), _mm_add_epi32(c, d));
}

// acc += float(s) · (d · dx), lane-wise; the lanes are summed once per row at the end.
inline __m128 scale_add(__m128 acc, __m128i s, float scale) {
  return _mm_add_ps(acc, _mm_mul_ps(_mm_cvtepi32_ps(s), _mm_set1_ps(scale)));
}

inline float lanes_sum(__m128 a) {  // (a0 + a1) + (a2 + a3)
  const __m128 t = _mm_add_ps(a, _mm_shuffle_ps(a, a, _MM_SHUFFLE(2, 3, 0, 1)));  // a0+a1, ., a2+a3, .
  return _mm_cvtss_f32(_mm_add_ss(t, _mm_movehl_ps(t, t)));
}

// Rows w[0..R) (`stride` bytes apart) · x, one block per iteration, x loads and dx shared.
// rows_dot passes rows that are m/2 rows apart, so each row pointer walks its half of the matrix
// as one long sequential stream. Reading adjacent rows side by side instead (2 or 4 short streams
// that restart every row) measured 2-3× slower from DRAM on this machine (AMD EPYC, Node 20 and
// native alike): the hardware prefetcher retrains on every restart, and wasm has no prefetch
// instruction. Two rows per pass is the sweet spot in V8: three or four rows run out of
// registers (measured slower); one row reloads x for every row.
template <int R>
void dot_rows(const uint8_t* w, size_t stride, const int16_t* xq, const float* dx, int nb, float* out) {
  const F16 f16;
  __m128 acc[R];
  for (int r = 0; r < R; ++r) acc[r] = _mm_setzero_ps();
  const __m128i* xp = reinterpret_cast<const __m128i*>(xq);
  const uint8_t* p = w;
  // Unrolling (clang's default here) makes V8 spill: keep one block per iteration.
#if defined(__clang__)
#pragma clang loop unroll(disable)
#endif
  for (int b = 0; b < nb; ++b, xp += 4, p += kQ8BlockBytes) {
    const __m128i x[4] = {_mm_load_si128(xp), _mm_load_si128(xp + 1), _mm_load_si128(xp + 2), _mm_load_si128(xp + 3)};
    const float db = dx[b];
    for (int r = 0; r < R; ++r) {
      const uint8_t* blk = p + r * stride;
      acc[r] = scale_add(acc[r], block_dot_i32(blk, x), f16(blk) * db);
    }
  }
  for (int r = 0; r < R; ++r) out[r] = lanes_sum(acc[r]);
}

// y[j] = W[j]·x for the rows of one block of W ([rows][row_bytes]), pairing row j with row
// j + rows/2 (see dot_rows); bias added by the caller.
void rows_dot(const uint8_t* w, int rows, size_t row_bytes, const int16_t* xq, const float* dx, int nb, float* y) {
  const int half = rows / 2;
  for (int j = 0; j < half; ++j) {
    float t[2];
    dot_rows<2>(w + size_t(j) * row_bytes, size_t(half) * row_bytes, xq, dx, nb, t);
    y[j] = t[0];
    y[j + half] = t[1];
  }
  if (rows & 1) dot_rows<1>(w + size_t(rows - 1) * row_bytes, 0, xq, dx, nb, y + rows - 1);
}

// q8_0 weights, SIMD. False when scratch memory cannot be had.
bool matmul_q8_0_simd(const float* x, const uint8_t* w, const float* bias, float* y, int n, int k, int m) {
  const int nb = k / kQ8BlockSize;
  const size_t row_bytes = size_t(nb) * kQ8BlockBytes;
  // All n rows of x quantized once: xq [n][k] int16, then dx [n][nb] (k % 32 == 0 keeps dx aligned).
  auto* xq = static_cast<int16_t*>(scratch::get(scratch::kActivations, size_t(n) * k * 2 + size_t(n) * nb * 4));
  if (!xq) return false;
  float* dx = reinterpret_cast<float*>(xq + size_t(n) * k);
  for (int i = 0; i < n; ++i) quantize_act_q8(x + size_t(i) * k, k, xq + size_t(i) * k, dx + size_t(i) * nb, nullptr);
  // Prefill: blocks of W rows small enough to stay in L2 (256 KiB) while every row of x passes over
  // them; decode (n == 1) reads all of W in one pass. Widening W once and reusing it for several
  // rows of x was measured slower in V8 (its scheduler hoists all loads and spills registers).
  const int block = n == 1 ? m : std::max(2, int((256 << 10) / row_bytes));
  for (int j0 = 0; j0 < m; j0 += block) {
    const int rows = std::min(block, m - j0);
    for (int i = 0; i < n; ++i) {
      float* yi = y + size_t(i) * m + j0;
      rows_dot(w + size_t(j0) * row_bytes, rows, row_bytes, xq + size_t(i) * k, dx + size_t(i) * nb, nb, yi);
      if (bias)
        for (int j = 0; j < rows; ++j) yi[j] += bias[j0 + j];
    }
  }
  return true;
}
#endif  // ATTNLENS_Q8_SSE

// Any block type, scalar (quant_scalar.h's arithmetic on int8 activations in scratch memory): the
// path of the types without a vector kernel yet, and of builds without SSE4.1/SIMD128.
bool matmul_q_scalar(DType t, const float* x, const uint8_t* w, const float* bias, float* y, int n, int k, int m) {
  const qs::Act act = qs::act_of(t);
  const int nb = k / qs::act_block(act);
  // q [k] int8, then d [nb], s [nb] floats, bsums [k/16] int16 (offsets kept 4-byte aligned).
  const size_t qbytes = (size_t(k) + 3) / 4 * 4;
  auto* buf = static_cast<uint8_t*>(scratch::get(scratch::kActivations, qbytes + size_t(nb) * 8 + size_t(k / 16) * 2));
  if (!buf) return false;
  auto* q = reinterpret_cast<int8_t*>(buf);
  auto* d = reinterpret_cast<float*>(buf + qbytes);
  float* s = d + nb;
  auto* bsums = reinterpret_cast<int16_t*>(s + nb);
  const size_t row_bytes = qb::row_bytes(t, k);
  for (int i = 0; i < n; ++i) {
    const float* xi = x + size_t(i) * k;
    if (act == qs::Act::Q8_K) qs::quantize_q8_K(xi, k, q, d, bsums);
    else qs::quantize_q8_0(xi, k, q, d, act == qs::Act::Q8_1 ? s : nullptr);
    const qs::ActRow a{q, d, s, bsums};
    for (int j = 0; j < m; ++j)
      y[size_t(i) * m + j] = float(qs::dot_row(t, w + row_bytes * size_t(j), a, k)) + (bias ? bias[j] : 0.f);
  }
  return true;
}

}  // namespace

void matmul_q(DType t, const float* x, const uint8_t* w, const float* bias, float* y, int n, int k, int m) noexcept {
#if ATTNLENS_Q8_SSE
  if (t == DType::Q8_0 && matmul_q8_0_simd(x, w, bias, y, n, k, m)) return;
#endif
  if (!matmul_q_scalar(t, x, w, bias, y, n, k, m)) ref::matmul_q(t, x, w, bias, y, n, k, m);
}

void dequantize_row(DType t, const uint8_t* w, float* y, int k) noexcept { ref::dequantize_row(t, w, y, k); }

}  // namespace attnlens::kernels
