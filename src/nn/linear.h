// Linear layers and embedding tables over weights in checkpoint layout (W [out, in], row-major),
// in any DType: f32, f16, bf16 or a GGML block format (q8_0, q4_0, q4_K, …; blocks run along the
// input dimension). The weights are views: they live in the loaded file or in a model's own buffers.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>

#include "core/tensor.h"

namespace attnlens::nn {

// A weight matrix [rows, cols] as the kernels read it.
struct Matrix {
  DType dtype = DType::F32;  // any DType; block formats need cols % dtype_block_elems == 0
  int rows = 0, cols = 0;
  const void* data = nullptr;

  bool empty() const { return data == nullptr; }
  size_t bytes() const { return dtype_bytes(dtype, size_t(rows) * cols); }
};

// Rows [first, first + count) of m, as a matrix of its own (a view: rows are whole blocks in every
// DType, so a row block of a quantized matrix is a valid quantized matrix).
Matrix row_block(const Matrix& m, int first, int count);

// y = x·Wᵀ + b with W [out, in].
struct Linear {
  Matrix w;
  const float* b = nullptr;  // [out] or null
  int in() const { return w.cols; }
  int out() const { return w.rows; }
  bool empty() const { return w.empty(); }
};

// y[n, out] = x[n, in] · Wᵀ + b: matmul for prefill, matvec for a single token. Split over the
// calling thread's threads (core/parallel.h) in blocks of rows of W given by row_split(): the result
// is the same, bit for bit, whatever the number of threads.
void linear(const Linear& l, const float* x, int n, float* y);

// Several linear layers of the same input at once (Q, K and V; an FFN's gate and up): y_i = x · W_iᵀ
// + b_i. One parallel region over all their blocks for a single token (decode), so the threads meet
// once instead of once per matrix; the same bits as separate linear() calls.
struct LinearOutput {
  const Linear* layer;
  float* y;
};
void linears(std::initializer_list<LinearOutput> outputs, const float* x, int n);

// How linear() splits a matrix of `rows` rows for n input rows: `tasks` blocks of `rows` rows each
// (the last one shorter). Prefill (n > 1): by the shape only (its chunks of x follow the blocks).
// Decode (n == 1): one block per thread of `threads`, as every row's result is the same in any block.
struct RowSplit {
  int rows = 0;
  int tasks = 0;
};
RowSplit row_split(int rows, int n, int threads);

// Copies row `index` of an embedding table [rows, cols] into out[cols] (widened / dequantized).
void embedding_row(const Matrix& table, int index, float* out);

// Throws attnlens::Error unless l is [out, in]; `what` names the layer in the message.
void check_linear(const Linear& l, int in, int out, const std::string& what);

// Throws attnlens::Error naming `what` and the first bad index if x[0..n) has a NaN or infinity.
void check_finite(const float* x, size_t n, const std::string& what);

}  // namespace attnlens::nn
