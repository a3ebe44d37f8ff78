#include "nn/linear.h"

#include <cmath>

#include "core/error.h"
#include "kernels/kernels.h"

namespace attnlens::nn {

void linear(const Linear& l, const float* x, int n, float* y) {
  const int in = l.w.cols, out = l.w.rows;
  switch (l.w.dtype) {
    case DType::F32: {
      const auto* w = static_cast<const float*>(l.w.data);
      if (n == 1) kernels::matvec(x, w, l.b, y, in, out);
      else kernels::matmul(x, w, l.b, y, n, in, out);
      return;
    }
    case DType::F16: kernels::matmul_f16(x, static_cast<const uint16_t*>(l.w.data), l.b, y, n, in, out); return;
    case DType::BF16: kernels::matmul_bf16(x, static_cast<const uint16_t*>(l.w.data), l.b, y, n, in, out); return;
    default: kernels::matmul_q(l.w.dtype, x, static_cast<const uint8_t*>(l.w.data), l.b, y, n, in, out); return;
  }
}

Matrix row_block(const Matrix& m, int first, int count) {
  AL_CHECK(first >= 0 && count >= 0 && first + count <= m.rows, "rows ", first, "..", first + count, " of a matrix with ",
           m.rows, " rows");
  const size_t row_bytes = dtype_bytes(m.dtype, size_t(m.cols));
  return Matrix{m.dtype, count, m.cols, static_cast<const uint8_t*>(m.data) + row_bytes * first};
}

void embedding_row(const Matrix& table, int index, float* out) {
  AL_CHECK(index >= 0 && index < table.rows, "token id ", index, " is out of range [0, ", table.rows, ")");
  const size_t row_bytes = dtype_bytes(table.dtype, size_t(table.cols));
  kernels::dequantize_row(table.dtype, static_cast<const uint8_t*>(table.data) + row_bytes * size_t(index), out,
                          table.cols);
}

void check_linear(const Linear& l, int in, int out, const std::string& what) {
  AL_CHECK(!l.empty(), what, ": weight is missing");
  AL_CHECK(l.w.cols == in && l.w.rows == out, what, ": weight is [", l.w.rows, ", ", l.w.cols, "], expected [", out,
           ", ", in, "]");
  const int block = dtype_block_elems(l.w.dtype);
  AL_CHECK(in % block == 0, what, ": a ", dtype_name(l.w.dtype), " weight needs an input size divisible by ", block,
           ", got ", in);
}

void check_finite(const float* x, size_t n, const std::string& what) {
  for (size_t i = 0; i < n; ++i)
    if (!std::isfinite(x[i])) fail(what, " contains ", std::isnan(x[i]) ? "NaN" : "infinity", " at index ", i);
}

}  // namespace attnlens::nn
