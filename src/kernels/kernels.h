// The hot loops of AttnLens: every operation the transformer layers need, vectorized with xsimd
// (SSE4.1 natively or AVX2/AVX-512 with -march=native; WebAssembly SIMD128 in the wasm build), each
// with a plain scalar twin in namespace `ref` that the tests compare against.
//
// Conventions
//   * Raw pointers and sizes, row-major, no exceptions (noexcept): callers (src/nn) check shapes
//     once, so these loops stay leaf functions. No allocation per call: matmul and the q8_0
//     kernels pack into per-thread scratch buffers that grow on first use (kernels/scratch.h).
//   * Linear layers store weights as checkpoints do: W [out, in], rows contiguous, y = x · Wᵀ (+ b).
//   * Quantized weights (q8_0) are dequantized inside the dot products, never to a full f32 copy;
//     the q8_0 kernels quantize the activations per block as well (see matmul_q8_0).
#pragma once
#include <cstddef>
#include <cstdint>

namespace attnlens::kernels {

// ---- linear algebra -------------------------------------------------------------------------
// y[n, m] = x[n, k] · W[m, k]ᵀ + bias[m]   (bias may be null). 2×4 register tiles over packed
// panels of x and W (matmul.cpp); n == 1 → matvec.
void matmul(const float* x, const float* w, const float* bias, float* y, int n, int k, int m) noexcept;
// y[m] = W[m, k] · x[k] + bias[m]: one token of decode; bound by streaming W from memory.
void matvec(const float* x, const float* w, const float* bias, float* y, int k, int m) noexcept;
// The same with W in q8_0 blocks (k % 32 == 0): m rows of k/32 blocks of 34 bytes.
// Like llama.cpp, these quantize x too: each 32-block of each row of x becomes int8 with its own
// scale (dx = max|x|/127, xq = round(x/dx)), and the block dot products are exact integer sums
// scaled by d·dx (ref::matvec_q8_0_qx is the scalar model). Accuracy: against f32 math on the
// dequantized weights the error is at most Σ_blocks |d|·dx/2·Σ|q| per output (all roundings
// aligned); typically it is as large as the error of quantizing W itself: for Gaussian x and W,
// RMS error 0.54% of RMS |y| from W's q8_0, another 0.54% from x's, 0.77% together (k = 288..2048;
// the worst-case bound is ~20× that at k = 288). ref::matvec_q8_0 keeps x in f32.
void matmul_q8_0(const float* x, const uint8_t* w, const float* bias, float* y, int n, int k, int m) noexcept;
void matvec_q8_0(const float* x, const uint8_t* w, const float* bias, float* y, int k, int m) noexcept;
// Dequantize one q8_0 row of k weights (k % 32 == 0) into y[k] (used for embedding lookups).
void dequantize_row_q8_0(const uint8_t* w, float* y, int k) noexcept;
// Quantize k floats (k % 32 == 0) into q8_0 blocks exactly as ggml does (d = amax/127, q = round(x/d)).
void quantize_row_q8_0(const float* x, uint8_t* out, int k) noexcept;

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

// ---- scalar references: the same contracts, written as plainly as possible ------------------
namespace ref {
void matmul(const float* x, const float* w, const float* bias, float* y, int n, int k, int m) noexcept;
void matvec(const float* x, const float* w, const float* bias, float* y, int k, int m) noexcept;
void matmul_q8_0(const float* x, const uint8_t* w, const float* bias, float* y, int n, int k, int m) noexcept;
void matvec_q8_0(const float* x, const uint8_t* w, const float* bias, float* y, int k, int m) noexcept;
// The arithmetic of the vector matvec_q8_0: x quantized per 32-block to int8, integer block sums.
void matvec_q8_0_qx(const float* x, const uint8_t* w, const float* bias, float* y, int k, int m) noexcept;
void dequantize_row_q8_0(const uint8_t* w, float* y, int k) noexcept;
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
void rope_adjacent(float* x, const float* cos, const float* sin, int n_heads, int head_dim, int rot_dims) noexcept;
void rope_half(float* x, const float* cos, const float* sin, int n_heads, int head_dim, int rot_dims) noexcept;
size_t first_nonfinite(const float* x, size_t n) noexcept;
}  // namespace ref

}  // namespace attnlens::kernels
