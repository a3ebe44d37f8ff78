// The hot loops of AttnLens: every operation the transformer layers need, vectorized with xsimd
// (SSE4.1 natively or AVX2/AVX-512 with -march=native; WebAssembly SIMD128 in the wasm build), each
// with a plain scalar twin in namespace `ref` that the tests compare against.
//
// Conventions
//   * Raw pointers and sizes, row-major, no exceptions (noexcept): callers (src/nn) check shapes
//     once, so these loops stay leaf functions. No allocation per call: matmul and the q8_0
//     kernels pack into per-thread scratch buffers that grow on first use (kernels/scratch.h) and
//     are freed by release_scratch().
//   * Linear layers store weights as checkpoints do: W [out, in], rows contiguous, y = x · Wᵀ (+ b).
//   * Quantized weights (GGML block formats) are decoded inside the dot products, never to a full
//     f32 copy; those kernels quantize the activations per block as well (see matmul_q).
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/tensor.h"

namespace attnlens::kernels {

// ---- linear algebra -------------------------------------------------------------------------
// y[n, m] = x[n, k] · W[m, k]ᵀ + bias[m]   (bias may be null). 2×4 register tiles over packed
// panels of x and W (matmul.cpp); n == 1 → matvec.
void matmul(const float* x, const float* w, const float* bias, float* y, int n, int k, int m) noexcept;
// y[m] = W[m, k] · x[k] + bias[m]: one token of decode; bound by streaming W from memory.
void matvec(const float* x, const float* w, const float* bias, float* y, int k, int m) noexcept;

// ---- weights in GGML block formats and f16 / bf16 ---------------------------------------------
// y[n, m] = x[n, k] · W[m, k]ᵀ + bias[m] for W's rows stored in the block type t (q8_0, q4_0, q4_1,
// q5_0, q5_1, iq4_nl: blocks of 32; q2_K, q3_K, q4_K, q5_K, q6_K, iq4_xs: super-blocks of 256;
// k a whole number of blocks, the caller checks). The weights are decoded inside the dot products,
// never to an f32 copy. Like llama.cpp's CPU backend these quantize x too, per block, in the format
// llama.cpp pairs with t (q8_0, q8_1 or q8_K: kernels/quant_scalar.h defines them), so that the
// block sums are exact integer arithmetic and the results can match llama.cpp's: ref::matmul_q is
// the scalar model of that arithmetic. Accuracy against f32 math on the dequantized weights: the
// error of quantizing x (8 bits per block) — for Gaussian x and W about 0.5% RMS of |y|, the same
// size as the error of q8_0 weights. n == 1 is decode; n > 1 (prefill) reuses each block of W for
// all rows of x while it is in cache. Any row range of W is a valid W (a view of whole rows).
void matmul_q(DType t, const float* x, const uint8_t* w, const float* bias, float* y, int n, int k, int m) noexcept;
// matmul_q split over row blocks of W (nn::linear's tasks): its first step, quantizing the n rows of
// x (n == 1 in decode), done once (quantize_rows into quantized_rows_bytes(t, n, k) bytes, 16-byte
// aligned; rows i.. start i · quantized_rows_bytes(t, 1, k) bytes in) and shared by every block,
// instead of once per block. quantized_rows_bytes is 0 when there is nothing to share (t is not a
// block type, or a build without SIMD); then matmul_q_rows is matmul_q on x. matmul_q_rows(t, x, xq,
// W rows, …) gives matmul_q's bits for those rows.
size_t quantized_rows_bytes(DType t, int n, int k) noexcept;
void quantize_rows(DType t, const float* x, int n, int k, void* buf) noexcept;
void matmul_q_rows(DType t, const float* x, const void* xq, const uint8_t* w, const float* bias, float* y, int n, int k,
                   int m) noexcept;
// Row of k elements of any type (f32, f16, bf16 or a block type) as f32 (embedding lookups).
void dequantize_row(DType t, const uint8_t* w, float* y, int k) noexcept;
// Quantizes k floats (k a whole number of blocks) into t ∈ {Q8_0, Q4_0, Q5_0, Q4_K} exactly as ggml's
// reference quantizers (quantize_row_*_ref in llama.cpp's ggml-quants.c) do. x must be finite.
bool can_quantize(DType t) noexcept;
// Index of the first NaN or infinity among `count` elements of type t at p, or -1 (block formats:
// their f16 scales and mins are checked; the index is then the block's first element). For the
// loader: quantizers must not see non-finite values, and f16 weights are widened by bit tricks that
// turn infinities into finite numbers (half.h).
int64_t first_non_finite(DType t, const uint8_t* p, size_t count) noexcept;
void quantize_row(DType t, const float* x, uint8_t* out, int k) noexcept;
// dst[cols, rows] = src[rows, cols]ᵀ for elements of `bytes` bytes (2 or 4: f16/bf16 or f32 bits,
// moved unchanged), in square tiles so that both sides stay in cache (the loader: GPT-2's Conv1D
// weights are stored [in, out]).
void transpose(const uint8_t* src, uint8_t* dst, int64_t rows, int64_t cols, size_t bytes) noexcept;
// f16 / bf16 weights W[m, k] with f32 activations (x is not rounded): each weight is widened to f32
// inside the dot product; prefill widens a panel of W once for all rows of x.
void matmul_f16(const float* x, const uint16_t* w, const float* bias, float* y, int n, int k, int m) noexcept;
void matmul_bf16(const float* x, const uint16_t* w, const float* bias, float* y, int n, int k, int m) noexcept;

// q8_0 under its older names.
inline void matmul_q8_0(const float* x, const uint8_t* w, const float* bias, float* y, int n, int k, int m) noexcept {
  matmul_q(DType::Q8_0, x, w, bias, y, n, k, m);
}
inline void matvec_q8_0(const float* x, const uint8_t* w, const float* bias, float* y, int k, int m) noexcept {
  matmul_q(DType::Q8_0, x, w, bias, y, 1, k, m);
}
inline void dequantize_row_q8_0(const uint8_t* w, float* y, int k) noexcept { dequantize_row(DType::Q8_0, w, y, k); }
inline void quantize_row_q8_0(const float* x, uint8_t* out, int k) noexcept { quantize_row(DType::Q8_0, x, out, k); }

float dot(const float* a, const float* b, int n) noexcept;

// ---- elementwise and row operations ----------------------------------------------------------
void softmax(float* x, int n) noexcept;                                // in place, max-subtracted
void layernorm(const float* x, const float* gamma, const float* beta, float* y, int n, float eps) noexcept;
void rmsnorm(const float* x, const float* gamma, float* y, int n, float eps) noexcept;
void gelu_tanh(float* x, int n) noexcept;  // 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))
// llama.cpp's f32 GELU (ggml-cpu's GGML_GELU_FP16 lookup table): x rounded to f16, the tanh form
// computed in float on that value and rounded to f16; x ≤ −10 gives 0, x ≥ 10 gives x. Not a model's
// activation: it reproduces llama.cpp for parity checks (BuildOptions::llamacpp_gelu). Scalar only.
void gelu_tanh_f16(float* x, int n) noexcept;
void gelu_erf(float* x, int n) noexcept;   // 0.5·x·(1 + erf(x/√2))
void silu(float* x, int n) noexcept;       // x·σ(x)
void relu(float* x, int n) noexcept;
void swiglu(float* gate, const float* up, int n) noexcept;  // gate = silu(gate) · up
void mul(float* y, const float* x, int n) noexcept;         // y *= x   (gated FFNs: act(gate) · up)
void add(float* y, const float* x, int n) noexcept;         // y += x   (residual)
void axpy(float a, const float* x, float* y, int n) noexcept;  // y += a·x  (attention's weighted sum)
void scale(float* x, float s, int n) noexcept;              // x *= s
void softcap(float* x, int n, float cap) noexcept;          // x = cap·tanh(x/cap)   (Gemma 2 logit soft-capping)
size_t first_nonfinite(const float* x, size_t n) noexcept;  // index of the first NaN or ±inf, n if none (weights at load)

// ---- attention rows (nn/attention.cpp calls these per head and query) -----------------------
// scores[j] = scale · (q · k_j) for j < count; key j is head_dim floats at k + j·stride.
void attention_scores(const float* q, const float* k, size_t stride, int head_dim, int count, float scale,
                      float* scores) noexcept;
// out[d] = Σ_j p[j] · v_j[d] for d < head_dim, j < count; value j at v + j·stride. Keys with
// p[j] == 0 are skipped: their values are never read (masked keys may be uninitialised).
void attention_values(const float* p, const float* v, size_t stride, int head_dim, int count, float* out) noexcept;

// ---- attention over a q8_0 KV cache (nn/kv_cache.h; the arithmetic: kernels/attention_q8.cpp) ----
// Rows of head_dim int8 values, row j at q + j·head_dim, in blocks of 32 with f16 scales: the scale
// of block b of row j at d[b·d_stride + j] (a run of rows' scales is contiguous per block).
struct Q8Rows {
  const int8_t* q;
  const uint16_t* d;
  size_t d_stride;
};
constexpr int kMaxQ8HeadDim = 512;  // head_dim: a multiple of 32, at most this
// x[head_dim] → one q8_0 row: q[head_dim], scales d[b·d_stride] (ggml's quantize_row_q8_0_ref).
void quantize_kv_q8_0(const float* x, int head_dim, int8_t* q, uint16_t* d, size_t d_stride) noexcept;
// attention_scores / attention_values with the keys / values of a q8_0 cache.
void attention_scores_q8(const float* q, const Q8Rows& k, int head_dim, int count, float scale, float* scores) noexcept;
void attention_values_q8(const float* p, const Q8Rows& v, int head_dim, int count, float* out) noexcept;

// ---- rotary position embedding --------------------------------------------------------------
// Rotates the first rot_dims dimensions of each head of x[n_heads, head_dim] by the angles whose
// cos/sin are given per pair (cos[rot_dims/2], sin[rot_dims/2], one position); dimensions
// rot_dims … head_dim−1 are left as they are (partial rotary: GPT-NeoX rotary_pct, Phi). rot_dims
// is even and ≤ head_dim. Two conventions for which dims form a pair:
//   adjacent (llama2.c, GGUF/llama.cpp "norm" rope, the RoFormer paper): (x[2i], x[2i+1])
//   half     (Hugging Face, GPT-NeoX "rotate_half", llama.cpp "neox" rope): (x[i], x[i + rot_dims/2])
void rope_adjacent(float* x, const float* cos, const float* sin, int n_heads, int head_dim, int rot_dims) noexcept;
void rope_half(float* x, const float* cos, const float* sin, int n_heads, int head_dim, int rot_dims) noexcept;

// Which instruction set the vector code was compiled for ("sse4.1" in wasm: mapped to SIMD128).
const char* simd_arch_name() noexcept;
int simd_width() noexcept;  // floats per vector register

// The per-thread scratch buffers (packed panels, quantized activations) of every thread: their
// total size, and giving them back (they regrow on the next call). Call release_scratch() only when
// no kernel runs on any thread — between passes, as the bindings do when a model is freed.
size_t scratch_bytes() noexcept;
void release_scratch() noexcept;
// One of those buffers for a caller outside the kernels (nn::linear's decode: the rows quantize_rows
// writes, read by every task): the calling thread's, at least `bytes` long, 64-byte aligned, valid
// until this thread asks for it again or release_scratch() runs; nullptr if it cannot be allocated.
void* shared_scratch(size_t bytes) noexcept;

// ---- scalar references: the same contracts, written as plainly as possible ------------------
namespace ref {
void matmul(const float* x, const float* w, const float* bias, float* y, int n, int k, int m) noexcept;
void matvec(const float* x, const float* w, const float* bias, float* y, int k, int m) noexcept;
// The integer arithmetic of matmul_q (x quantized per block as llama.cpp does, exact block sums,
// accumulated in double).
void matmul_q(DType t, const float* x, const uint8_t* w, const float* bias, float* y, int n, int k, int m) noexcept;
// Prefill (n > 1) split over row blocks of W: matmul_q's first step, quantizing the n rows of x, done
// once (quantize_rows into quantized_rows_bytes(t, n, k) bytes, 16-byte aligned; rows i.. start
// i · quantized_rows_bytes(t, 1, k) bytes in) and shared by every block, instead of once per block.
// quantized_rows_bytes is 0 when there is nothing to share (then matmul_q_rows is matmul_q on x).
// matmul_q_rows(t, x, xq, W rows, …) gives matmul_q's bits for those rows.
size_t quantized_rows_bytes(DType t, int n, int k) noexcept;
void quantize_rows(DType t, const float* x, int n, int k, void* buf) noexcept;
void matmul_q_rows(DType t, const float* x, const void* xq, const uint8_t* w, const float* bias, float* y, int n, int k,
                   int m) noexcept;
// f32 math (double accumulation) on the dequantized weights: what the stored weights mean.
void matmul_dequantized(DType t, const float* x, const uint8_t* w, const float* bias, float* y, int n, int k,
                        int m) noexcept;
// In ggml's order of float operations (equal to llama.cpp's dequantize_row_* bit for bit).
void dequantize_row(DType t, const uint8_t* w, float* y, int k) noexcept;
void matmul_f16(const float* x, const uint16_t* w, const float* bias, float* y, int n, int k, int m) noexcept;
void matmul_bf16(const float* x, const uint16_t* w, const float* bias, float* y, int n, int k, int m) noexcept;
float dot(const float* a, const float* b, int n) noexcept;
void softmax(float* x, int n) noexcept;
void layernorm(const float* x, const float* gamma, const float* beta, float* y, int n, float eps) noexcept;
void rmsnorm(const float* x, const float* gamma, float* y, int n, float eps) noexcept;
void gelu_tanh(float* x, int n) noexcept;
void gelu_erf(float* x, int n) noexcept;
void silu(float* x, int n) noexcept;
void relu(float* x, int n) noexcept;
void swiglu(float* gate, const float* up, int n) noexcept;
void mul(float* y, const float* x, int n) noexcept;
void add(float* y, const float* x, int n) noexcept;
void axpy(float a, const float* x, float* y, int n) noexcept;
void scale(float* x, float s, int n) noexcept;
void softcap(float* x, int n, float cap) noexcept;
void attention_scores(const float* q, const float* k, size_t stride, int head_dim, int count, float scale,
                      float* scores) noexcept;
void attention_values(const float* p, const float* v, size_t stride, int head_dim, int count, float* out) noexcept;
void attention_scores_q8(const float* q, const Q8Rows& k, int head_dim, int count, float scale, float* scores) noexcept;
void attention_values_q8(const float* p, const Q8Rows& v, int head_dim, int count, float* out) noexcept;
void rope_adjacent(float* x, const float* cos, const float* sin, int n_heads, int head_dim, int rot_dims) noexcept;
void rope_half(float* x, const float* cos, const float* sin, int n_heads, int head_dim, int rot_dims) noexcept;
size_t first_nonfinite(const float* x, size_t n) noexcept;
}  // namespace ref

}  // namespace attnlens::kernels
