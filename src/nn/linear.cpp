#include "nn/linear.h"

#include <cmath>

#include "core/error.h"
#include "kernels/kernels.h"

namespace attnlens::nn {

void linear(const Linear& l, const float* x, int n, float* y) {
  const int in = l.w.cols, out = l.w.rows;
  if (l.w.dtype == DType::Q8_0) {
    const auto* w = static_cast<const uint8_t*>(l.w.data);
    if (n == 1) kernels::matvec_q8_0(x, w, l.b, y, in, out);
    else kernels::matmul_q8_0(x, w, l.b, y, n, in, out);
  } else {
    const auto* w = static_cast<const float*>(l.w.data);
    if (n == 1) kernels::matvec(x, w, l.b, y, in, out);
    else kernels::matmul(x, w, l.b, y, n, in, out);
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
  if (table.dtype == DType::Q8_0) {
    const size_t row_bytes = dtype_bytes(DType::Q8_0, table.cols);
    kernels::dequantize_row_q8_0(static_cast<const uint8_t*>(table.data) + row_bytes * index, out, table.cols);
  } else {
    const float* row = static_cast<const float*>(table.data) + size_t(index) * table.cols;
    for (int i = 0; i < table.cols; ++i) out[i] = row[i];
  }
}

void check_linear(const Linear& l, int in, int out, const std::string& what) {
  AL_CHECK(!l.empty(), what, ": weight is missing");
  AL_CHECK(l.w.cols == in && l.w.rows == out, what, ": weight is [", l.w.rows, ", ", l.w.cols, "], expected [", out,
           ", ", in, "]");
  AL_CHECK(l.w.dtype == DType::F32 || l.w.dtype == DType::Q8_0, what, ": weight type ", dtype_name(l.w.dtype),
           " is not supported by the kernels (f32, q8_0)");
  AL_CHECK(l.w.dtype != DType::Q8_0 || in % kQ8BlockSize == 0, what, ": q8_0 weight needs an input size divisible by 32, got ", in);
}

void check_finite(const float* x, size_t n, const std::string& what) {
  for (size_t i = 0; i < n; ++i)
    if (!std::isfinite(x[i])) fail(what, " contains ", std::isnan(x[i]) ? "NaN" : "infinity", " at index ", i);
}

}  // namespace attnlens::nn
