// f32 matrix multiply y = x·Wᵀ (+ b) with W [m, k] row-major as stored in checkpoints.
//
// matvec (one token of decode) streams W once: four rows at a time, two accumulators each, so the
// loads of W stay in flight while the adds retire.
//
// matmul (prefill) is register-blocked: W is packed panel by panel into [k][NR] (NR = 4 vectors
// of columns) so that one microkernel step loads NR weights once and reuses them for MR = 4 rows
// of x: MR·NR/W accumulators, 4 vector loads + 4 broadcasts per 16 multiply-adds.
#include <cstdlib>
#include <cstring>
#include <vector>

#include "kernels/kernels.h"
#include "kernels/simd.h"

namespace attnlens::kernels {

using simd::load;
using simd::store;
using simd::Vec;
using simd::W;

// ---- matvec -----------------------------------------------------------------------------------
void matvec(const float* x, const float* w, const float* bias, float* y, int k, int m) noexcept {
  int j = 0;
  for (; j + 4 <= m; j += 4) {
    const float* w0 = w + size_t(j) * k;
    const float* w1 = w0 + k;
    const float* w2 = w1 + k;
    const float* w3 = w2 + k;
    Vec a0(0.f), a1(0.f), a2(0.f), a3(0.f), b0(0.f), b1(0.f), b2(0.f), b3(0.f);
    int i = 0;
    for (; i + 2 * W <= k; i += 2 * W) {
      Vec xa = load(x + i), xb = load(x + i + W);
      a0 += load(w0 + i) * xa;
      a1 += load(w1 + i) * xa;
      a2 += load(w2 + i) * xa;
      a3 += load(w3 + i) * xa;
      b0 += load(w0 + i + W) * xb;
      b1 += load(w1 + i + W) * xb;
      b2 += load(w2 + i + W) * xb;
      b3 += load(w3 + i + W) * xb;
    }
    for (; i + W <= k; i += W) {
      Vec xa = load(x + i);
      a0 += load(w0 + i) * xa;
      a1 += load(w1 + i) * xa;
      a2 += load(w2 + i) * xa;
      a3 += load(w3 + i) * xa;
    }
    float s0 = simd::sum(a0 + b0), s1 = simd::sum(a1 + b1), s2 = simd::sum(a2 + b2), s3 = simd::sum(a3 + b3);
    for (; i < k; ++i) {
      s0 += w0[i] * x[i];
      s1 += w1[i] * x[i];
      s2 += w2[i] * x[i];
      s3 += w3[i] * x[i];
    }
    y[j] = s0 + (bias ? bias[j] : 0.f);
    y[j + 1] = s1 + (bias ? bias[j + 1] : 0.f);
    y[j + 2] = s2 + (bias ? bias[j + 2] : 0.f);
    y[j + 3] = s3 + (bias ? bias[j + 3] : 0.f);
  }
  for (; j < m; ++j) y[j] = dot(x, w + size_t(j) * k, k) + (bias ? bias[j] : 0.f);
}

// ---- matmul -----------------------------------------------------------------------------------
namespace {

constexpr int MR = 4;       // rows of x per microkernel call
constexpr int NV = 4;       // vectors of output columns per microkernel call
constexpr int NR = NV * W;  // output columns per panel

// A growable, 64-byte aligned scratch buffer per thread for the packed panel.
float* panel_buffer(size_t floats) {
  struct Buf {
    float* p = nullptr;
    size_t n = 0;
    ~Buf() { std::free(p); }
  };
  thread_local Buf buf;
  if (buf.n < floats) {
    std::free(buf.p);
    size_t bytes = (floats * sizeof(float) + 63) / 64 * 64;
    buf.p = static_cast<float*>(std::aligned_alloc(64, bytes));
    buf.n = buf.p ? floats : 0;
  }
  return buf.p;
}

// packed[p][c] = W[j0 + c][p] for c < cols, 0 for the padding columns.
void pack_panel(const float* w, int k, int j0, int cols, float* packed) {
  if (cols < NR) std::memset(packed, 0, sizeof(float) * size_t(k) * NR);
  for (int c = 0; c < cols; ++c) {
    const float* row = w + size_t(j0 + c) * k;
    for (int p = 0; p < k; ++p) packed[size_t(p) * NR + c] = row[p];
  }
}

// y[R rows][cols] = x[R rows][k] · packed[k][NR] (+ bias), R ≤ MR.
template <int R>
void microkernel(const float* x, int ldx, const float* packed, int k, const float* bias, float* y, int ldy,
                 int cols) {
  Vec acc[R][NV];
  for (int r = 0; r < R; ++r)
    for (int v = 0; v < NV; ++v) acc[r][v] = Vec(0.f);
  for (int p = 0; p < k; ++p) {
    const float* bp = packed + size_t(p) * NR;
    Vec b[NV];
    for (int v = 0; v < NV; ++v) b[v] = Vec::load_aligned(bp + v * W);
    for (int r = 0; r < R; ++r) {
      Vec a(x[size_t(r) * ldx + p]);
      for (int v = 0; v < NV; ++v) acc[r][v] += a * b[v];
    }
  }
  for (int r = 0; r < R; ++r) {
    float* yr = y + size_t(r) * ldy;
    if (cols == NR) {
      for (int v = 0; v < NV; ++v) {
        Vec out = acc[r][v];
        if (bias) out += load(bias + v * W);
        store(yr + v * W, out);
      }
    } else {
      alignas(64) float t[NR];
      for (int v = 0; v < NV; ++v) acc[r][v].store_aligned(t + v * W);
      for (int c = 0; c < cols; ++c) yr[c] = t[c] + (bias ? bias[c] : 0.f);
    }
  }
}

}  // namespace

void matmul(const float* x, const float* w, const float* bias, float* y, int n, int k, int m) noexcept {
  if (n < MR) {  // too few rows to pay for packing: stream W per row
    for (int i = 0; i < n; ++i) matvec(x + size_t(i) * k, w, bias, y + size_t(i) * m, k, m);
    return;
  }
  float* packed = panel_buffer(size_t(k) * NR);
  if (!packed) return ref::matmul(x, w, bias, y, n, k, m);
  for (int j0 = 0; j0 < m; j0 += NR) {
    const int cols = m - j0 < NR ? m - j0 : NR;
    pack_panel(w, k, j0, cols, packed);
    const float* b = bias ? bias + j0 : nullptr;
    int i = 0;
    for (; i + MR <= n; i += MR) microkernel<MR>(x + size_t(i) * k, k, packed, k, b, y + size_t(i) * m + j0, m, cols);
    switch (n - i) {
      case 3: microkernel<3>(x + size_t(i) * k, k, packed, k, b, y + size_t(i) * m + j0, m, cols); break;
      case 2: microkernel<2>(x + size_t(i) * k, k, packed, k, b, y + size_t(i) * m + j0, m, cols); break;
      case 1: microkernel<1>(x + size_t(i) * k, k, packed, k, b, y + size_t(i) * m + j0, m, cols); break;
      default: break;
    }
  }
}

}  // namespace attnlens::kernels
