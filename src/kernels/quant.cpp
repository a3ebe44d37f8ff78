// q8_0 weights (GGML block format: f16 scale d + 32 int8, weight = d·q). The dot products read the
// int8 blocks directly: memory traffic is 34 bytes per 32 weights instead of 128.
//
// matvec_q8_0 follows llama.cpp: the activation vector x is quantized once per call to 8 bits per
// 32-block (dx = amax/127, xq = round-half-even(x/dx), kept as int16 so it feeds a 16-bit multiply),
// then every block's dot product is exact integer arithmetic, Σ q·xq, scaled once by d·dx: per 32
// weights 4 widening loads, 4 i32x4.dot_i16x8_s (8 products each) and 3 adds, where converting each
// weight to f32 would take 8 widenings, 8 conversions and 8 multiply + 8 add. 4-wide SIMD without
// FMA is compute-bound at q8_0's bytes/s in wasm, so this is what lets q8_0 decode beat f32 decode.
// Accuracy: see kernels.h (quantizing x adds an error of the same size as quantizing W).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/tensor.h"
#include "kernels/kernels.h"
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

inline float block_scale(const uint8_t* block) {
  uint16_t h;
  std::memcpy(&h, block, 2);
  return f16_to_f32(h);
}

inline uint16_t load_u16(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return h;
}

// ---- quantized activations -------------------------------------------------------------------
// Scalar definition (also the fallback and the reference): per block of 32, amax = max |x|,
// dx = amax/127, id = 1/dx (0 for an all-zero block), xq = nearest-even(x·id) ∈ [-127, 127].
[[maybe_unused]] void quantize_act_scalar(const float* x, int k, int16_t* xq, float* dx) {
  for (int b = 0; b < k / kQ8BlockSize; ++b) {
    const float* xb = x + b * kQ8BlockSize;
    float amax = 0.f;
    for (int i = 0; i < kQ8BlockSize; ++i) amax = std::fmax(amax, std::fabs(xb[i]));
    const float d = amax / 127.f;
    const float id = d != 0.f ? 1.f / d : 0.f;
    dx[b] = d;
    for (int i = 0; i < kQ8BlockSize; ++i) xq[b * kQ8BlockSize + i] = int16_t(std::nearbyint(xb[i] * id));
  }
}

#if ATTNLENS_Q8_SSE
// The same numbers as quantize_act_scalar, 4 lanes at a time. Rounding uses the 1.5·2^23 trick
// (|x·id| ≤ 127 < 2^22, so adding it rounds to an integer, nearest-even, exactly like nearbyint).
void quantize_act(const float* x, int k, int16_t* xq, float* dx) {
  const __m128i abs_mask = _mm_set1_epi32(0x7fffffff);
  const __m128 magic = _mm_set1_ps(12582912.f);
  const __m128i magic_bits = _mm_castps_si128(magic);
  for (int b = 0; b < k / kQ8BlockSize; ++b) {
    const float* xb = x + b * kQ8BlockSize;
    __m128 v[8];
    __m128i m = _mm_setzero_si128();
    for (int i = 0; i < 8; ++i) {
      v[i] = _mm_loadu_ps(xb + 4 * i);
      // |x| as integer bits: the order of non-negative floats is the order of their bits.
      m = _mm_max_epi32(m, _mm_and_si128(_mm_castps_si128(v[i]), abs_mask));
    }
    m = _mm_max_epi32(m, _mm_shuffle_epi32(m, _MM_SHUFFLE(1, 0, 3, 2)));
    m = _mm_max_epi32(m, _mm_shuffle_epi32(m, _MM_SHUFFLE(2, 3, 0, 1)));
    const float amax = _mm_cvtss_f32(_mm_castsi128_ps(m));
    const float d = amax / 127.f;
    const float id = d != 0.f ? 1.f / d : 0.f;
    dx[b] = d;
    const __m128 vid = _mm_set1_ps(id);
    __m128i* out = reinterpret_cast<__m128i*>(xq + b * kQ8BlockSize);
    for (int i = 0; i < 4; ++i) {
      __m128i lo = _mm_sub_epi32(_mm_castps_si128(_mm_add_ps(_mm_mul_ps(v[2 * i], vid), magic)), magic_bits);
      __m128i hi = _mm_sub_epi32(_mm_castps_si128(_mm_add_ps(_mm_mul_ps(v[2 * i + 1], vid), magic)), magic_bits);
      _mm_store_si128(out + i, _mm_packs_epi32(lo, hi));
    }
  }
}

// The f16 block scale as f32. Natively with F16C one instruction; otherwise (wasm) a 256 KiB table
// built on first use: one scalar load per block instead of ~12 integer ops, and the entries a
// matrix uses (its scales span a few binades) stay in L1.
#if defined(__F16C__)
struct F16 {
  float operator()(const uint8_t* block) const { return _cvtsh_ss(load_u16(block)); }
};
#else
struct F16 {
  const float* table = get();
  float operator()(const uint8_t* block) const { return table[load_u16(block)]; }
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
#endif  // ATTNLENS_Q8_SSE

// Scalar version of the same arithmetic (fallback without SSE4.1/SIMD128; ref::matvec_q8_0_qx is
// an independent copy of it in reference.cpp).
[[maybe_unused]] float dot_row1_scalar(const uint8_t* w, const int16_t* xq, const float* dx, int nb) {
  float acc = 0.f;
  for (int b = 0; b < nb; ++b) {
    const uint8_t* blk = w + size_t(b) * kQ8BlockBytes;
    const int8_t* q = reinterpret_cast<const int8_t*>(blk + 2);
    int32_t s = 0;
    for (int i = 0; i < kQ8BlockSize; ++i) s += int32_t(q[i]) * int32_t(xq[b * kQ8BlockSize + i]);
    acc += float(s) * (block_scale(blk) * dx[b]);
  }
  return acc;
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
  matmul_q8_0(x, w, bias, y, 1, k, m);
}

void matmul_q8_0(const float* x, const uint8_t* w, const float* bias, float* y, int n, int k, int m) noexcept {
  const int nb = k / kQ8BlockSize;
  const size_t row_bytes = size_t(nb) * kQ8BlockBytes;
  // All n rows of x quantized once: xq [n][k] int16, then dx [n][nb] (k % 32 == 0 keeps dx aligned).
  auto* xq = static_cast<int16_t*>(scratch::get(scratch::kActivations, size_t(n) * k * 2 + size_t(n) * nb * 4));
  if (!xq) return ref::matmul_q8_0(x, w, bias, y, n, k, m);
  float* dx = reinterpret_cast<float*>(xq + size_t(n) * k);
#if ATTNLENS_Q8_SSE
  for (int i = 0; i < n; ++i) quantize_act(x + size_t(i) * k, k, xq + size_t(i) * k, dx + size_t(i) * nb);
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
#else
  for (int i = 0; i < n; ++i) {
    quantize_act_scalar(x + size_t(i) * k, k, xq, dx);
    for (int j = 0; j < m; ++j)
      y[size_t(i) * m + j] = dot_row1_scalar(w + size_t(j) * row_bytes, xq, dx, nb) + (bias ? bias[j] : 0.f);
  }
#endif
}

}  // namespace attnlens::kernels
