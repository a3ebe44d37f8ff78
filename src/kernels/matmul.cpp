// f32 matrix multiply y = x·Wᵀ (+ b) with W [m, k] row-major as stored in checkpoints.
//
// matvec (one token of decode) streams W once, four rows per pass (see matvec, kernels/row_walk.h).
//
// matmul (prefill) computes 2×4 tiles of dot products over packed, interleaved panels of x and W
// (see tile()).
#include <algorithm>
#include <cstdlib>

#include "kernels/half.h"
#include "kernels/kernels.h"
#include "kernels/row_walk.h"
#include "kernels/scratch.h"
#include "kernels/simd.h"

namespace attnlens::kernels {

using simd::load;
using simd::store;
using simd::Vec;
using simd::W;

// ---- matvec -----------------------------------------------------------------------------------
namespace {

// out[r] = w_r·x for four rows `stride` floats apart, sharing each load of x: 5 loads per 4
// multiply-adds, one accumulator per row (four independent add chains).
void dot4(const float* w0, size_t stride, const float* x, int k, float* out) {
  const float* w1 = w0 + stride;
  const float* w2 = w1 + stride;
  const float* w3 = w2 + stride;
  Vec a0(0.f), a1(0.f), a2(0.f), a3(0.f);
  int i = 0;
  for (; i + W <= k; i += W) {
    const Vec xv = load(x + i);
    a0 = simd::madd(load(w0 + i), xv, a0);
    a1 = simd::madd(load(w1 + i), xv, a1);
    a2 = simd::madd(load(w2 + i), xv, a2);
    a3 = simd::madd(load(w3 + i), xv, a3);
  }
  float s[4] = {simd::sum(a0), simd::sum(a1), simd::sum(a2), simd::sum(a3)};
  for (; i < k; ++i) {
    s[0] += w0[i] * x[i];
    s[1] += w1[i] * x[i];
    s[2] += w2[i] * x[i];
    s[3] += w3[i] * x[i];
  }
  for (int r = 0; r < 4; ++r) out[r] = s[r];
}

// One row with dot4's arithmetic for each of its rows (one accumulator, the same lanes and tail):
// the rows row_walk.h leaves over get the bits they would get inside a group of four.
float dot1(const float* w, const float* x, int k) {
  Vec a(0.f);
  int i = 0;
  for (; i + W <= k; i += W) a = simd::madd(load(w + i), load(x + i), a);
  float s = simd::sum(a);
  for (; i < k; ++i) s += w[i] * x[i];
  return s;
}

}  // namespace

// Four rows per pass, walked as kernels/row_walk.h says (long sequential streams, several at once).
// f32 decode read as fast with eight streams as with four (rand110M, bench/README.md "Decode: eight
// streams through W"); it takes the same walk as the block formats, whose reads eight streams sped up.
void matvec(const float* x, const float* w, const float* bias, float* y, int k, int m) noexcept {
  const auto out = [&](int j, float v) { y[j] = v + (bias ? bias[j] : 0.f); };
  walk_streams(
      m, 4,
      [&](int first, int part) {
        float t[4];
        dot4(w + size_t(first) * k, size_t(part) * k, x, k, t);
        for (int r = 0; r < 4; ++r) out(first + r * part, t[r]);
      },
      [&](int j) { out(j, dot1(w + size_t(j) * k, x, k)); });
}

// ---- f16 / bf16 matvec ------------------------------------------------------------------------
namespace {

// Four rows `stride` apart as in matvec, widened to f32 a chunk at a time (half.h) into an L1 buffer, then
// accumulated exactly as dot4 accumulates f32 rows: the same lanes, the same order, the same tail,
// so an f16 matrix gives bit-identical results to its f32-widened copy, in decode as in prefill
// (whose packed panels widen it the same way). Per 8 weights of a row one 16-byte load and ~4
// conversion ops, against two 16-byte loads for f32.
void dot4_half(DType t, const uint8_t* w0, size_t stride, const float* x, int k, float* out) {
  constexpr int kChunk = 256;  // a multiple of W and of 8
  alignas(64) float buf[4][kChunk];
  Vec a[4] = {Vec(0.f), Vec(0.f), Vec(0.f), Vec(0.f)};
  const int kv = k / W * W;
  for (int c0 = 0; c0 < kv; c0 += kChunk) {
    const int len = std::min(kChunk, kv - c0);
    for (int r = 0; r < 4; ++r) half::widen_row(t, w0 + r * stride + 2 * size_t(c0), buf[r], len);
    for (int i = 0; i < len; i += W) {
      const Vec xv = load(x + c0 + i);
      for (int r = 0; r < 4; ++r) a[r] = simd::madd(load(buf[r] + i), xv, a[r]);
    }
  }
  float s[4] = {simd::sum(a[0]), simd::sum(a[1]), simd::sum(a[2]), simd::sum(a[3])};
  for (int i = kv; i < k; ++i) {
    float v[4];
    for (int r = 0; r < 4; ++r) half::widen_row(t, w0 + r * stride + 2 * size_t(i), &v[r], 1);
    s[0] += v[0] * x[i];
    s[1] += v[1] * x[i];
    s[2] += v[2] * x[i];
    s[3] += v[3] * x[i];
  }
  for (int r = 0; r < 4; ++r) out[r] = s[r];
}

bool matvec_half(DType t, const float* x, const uint8_t* w, const float* bias, float* y, int k, int m) {
  const size_t row_bytes = size_t(k) * 2;
  float* row = nullptr;  // a row left over by the walk, widened whole first (then dot1, as matvec's)
  bool ok = true;
  const auto out = [&](int j, float v) { y[j] = v + (bias ? bias[j] : 0.f); };
  walk_streams(
      m, 4,
      [&](int first, int part) {
        float r4[4];
        dot4_half(t, w + size_t(first) * row_bytes, size_t(part) * row_bytes, x, k, r4);
        for (int r = 0; r < 4; ++r) out(first + r * part, r4[r]);
      },
      [&](int j) {
        if (!row) row = static_cast<float*>(scratch::get(scratch::kWidened, size_t(k) * sizeof(float)));
        if (!row) return void(ok = false);
        half::widen_row(t, w + size_t(j) * row_bytes, row, k);
        out(j, dot1(row, x, k));
      });
  return ok;
}

}  // namespace

// ---- matmul -----------------------------------------------------------------------------------
namespace {

constexpr int MR = 2;  // rows of x per tile
constexpr int NR = 4;  // rows of W (output columns) per tile

// MR×NR dot products along k over packed, interleaved panels xp[kv][MR][W] and wp[kv][NR][W]:
// acc[r][c] holds W partial sums of x_r·w_c, reduced once at the end. Per step MR + NR aligned
// loads feed MR·NR multiply-adds. 2×4 is what fits V8's register allocator: 8 accumulators +
// 2 + 1 operands + 1 temporary of the 15 usable xmm registers (the previous 4×16 packed kernel
// needed 21 and spilled 14 registers per step; 3×4 spills too). Because both panels are packed,
// every load is base + constant displacement: no address arithmetic in the loop (V8 emits an
// lea per load for base + index·4 addressing of separate rows).
void tile(const float* xp, const float* wp, int kv, float* out) {
  Vec acc[MR][NR];
  for (int r = 0; r < MR; ++r)
    for (int c = 0; c < NR; ++c) acc[r][c] = Vec(0.f);
  for (int s = 0; s < kv; ++s, xp += MR * W, wp += NR * W) {
    Vec xv[MR];
    for (int r = 0; r < MR; ++r) xv[r] = Vec::load_aligned(xp + r * W);
    for (int c = 0; c < NR; ++c) {
      const Vec wv = Vec::load_aligned(wp + c * W);
      for (int r = 0; r < MR; ++r) acc[r][c] = simd::madd(xv[r], wv, acc[r][c]);
    }
  }
  for (int r = 0; r < MR; ++r)
    for (int c = 0; c < NR; ++c) out[r * NR + c] = simd::sum(acc[r][c]);
}

// Rows [0, R) (row_of(r) gives row r as f32) → dst[kv][RP][W]; rows R..RP and columns k..kv·W are zero.
template <class Rows>
void pack(const Rows& row_of, int R, int RP, int k, int kv, float* dst) {
  const int full = k / W;
  for (int r = 0; r < RP; ++r) {
    float* d = dst + size_t(r) * W;
    if (r >= R) {
      for (int s = 0; s < kv; ++s) store(d + size_t(s) * RP * W, Vec(0.f));
      continue;
    }
    const float* row = row_of(r);
    for (int s = 0; s < full; ++s) store(d + size_t(s) * RP * W, load(row + s * W));
    if (full < kv) {
      float* t = d + size_t(full) * RP * W;
      for (int q = 0; q < W; ++q) t[q] = full * W + q < k ? row[full * W + q] : 0.f;
    }
  }
}

// Rows of W as the packer reads them: f32 in place; f16 / bf16 widened into `tmp` first (once per
// panel, so 1/n of the multiply work).
struct WeightRows {
  DType t;
  const uint8_t* base;
  size_t row_bytes;
  int k;
  float* tmp;
  const float* operator()(int j) const {
    const uint8_t* p = base + row_bytes * size_t(j);
    if (t == DType::F32) return reinterpret_cast<const float*>(p);
    half::widen_row(t, p, tmp, k);
    return tmp;
  }
};

// Prefill. x is packed in chunks of rows that stay in L2 (≤ 512 KiB), W one panel of NR rows at
// a time (L1); zero padding turns every edge (k % W, m % NR, n % MR) into full tiles whose extra
// outputs are dropped. The packing copies are vector loads/stores, ~1/n of the multiply work.
// False when scratch memory cannot be had (the caller falls back to the reference).
bool matmul_packed(const float* x, DType wt, const uint8_t* w, const float* bias, float* y, int n, int k, int m) {
  const int kv = (k + W - 1) / W;
  const size_t panel = size_t(kv) * W;  // floats per packed row
  int chunk = int((512 << 10) / (panel * sizeof(float))) / MR * MR;
  chunk = std::max(MR, std::min(chunk, (n + MR - 1) / MR * MR));
  auto* xp = static_cast<float*>(scratch::get(scratch::kPackedX, size_t(chunk) * panel * sizeof(float)));
  auto* wp = static_cast<float*>(scratch::get(scratch::kPanel, size_t(NR) * panel * sizeof(float)));
  float* tmp = nullptr;
  if (wt != DType::F32) tmp = static_cast<float*>(scratch::get(scratch::kWidened, size_t(k) * sizeof(float)));
  if (!xp || !wp || (wt != DType::F32 && !tmp)) return false;
  const WeightRows wrows{wt, w, size_t(k) * (wt == DType::F32 ? 4 : 2), k, tmp};
  float t[MR * NR];
  for (int i0 = 0; i0 < n; i0 += chunk) {
    const int rows = std::min(chunk, n - i0);
    for (int b = 0; b * MR < rows; ++b) {
      const float* xb = x + size_t(i0 + b * MR) * k;
      pack([&](int r) { return xb + size_t(r) * k; }, std::min(MR, rows - b * MR), MR, k, kv,
           xp + size_t(b) * MR * panel);
    }
    for (int j = 0; j < m; j += NR) {
      const int cols = std::min(NR, m - j);
      pack([&](int r) { return wrows(j + r); }, cols, NR, k, kv, wp);
      for (int b = 0; b * MR < rows; ++b) {
        tile(xp + size_t(b) * MR * panel, wp, kv, t);
        for (int r = 0; r < MR && b * MR + r < rows; ++r) {
          float* yr = y + size_t(i0 + b * MR + r) * m + j;
          for (int c = 0; c < cols; ++c) yr[c] = t[r * NR + c] + (bias ? bias[j + c] : 0.f);
        }
      }
    }
  }
  return true;
}

}  // namespace

void matmul(const float* x, const float* w, const float* bias, float* y, int n, int k, int m) noexcept {
  if (n == 1) return matvec(x, w, bias, y, k, m);
  if (!matmul_packed(x, DType::F32, reinterpret_cast<const uint8_t*>(w), bias, y, n, k, m))
    ref::matmul(x, w, bias, y, n, k, m);
}

void matmul_f16(const float* x, const uint16_t* w, const float* bias, float* y, int n, int k, int m) noexcept {
  if (n == 1 && matvec_half(DType::F16, x, reinterpret_cast<const uint8_t*>(w), bias, y, k, m)) return;
  if (n == 1 || !matmul_packed(x, DType::F16, reinterpret_cast<const uint8_t*>(w), bias, y, n, k, m))
    ref::matmul_f16(x, w, bias, y, n, k, m);
}

void matmul_bf16(const float* x, const uint16_t* w, const float* bias, float* y, int n, int k, int m) noexcept {
  if (n == 1 && matvec_half(DType::BF16, x, reinterpret_cast<const uint8_t*>(w), bias, y, k, m)) return;
  if (n == 1 || !matmul_packed(x, DType::BF16, reinterpret_cast<const uint8_t*>(w), bias, y, n, k, m))
    ref::matmul_bf16(x, w, bias, y, n, k, m);
}

}  // namespace attnlens::kernels
