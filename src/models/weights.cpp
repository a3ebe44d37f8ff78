#include "models/weights.h"

#include <cmath>
#include <cstring>

#include "core/error.h"
#include "kernels/kernels.h"

namespace attnlens::models {

float* Weights::own(size_t floats) {
  storage_.f32.push_back(alloc_floats(floats));
  storage_.bytes += floats * sizeof(float);
  return storage_.f32.back().get();
}

// Every weight the model reads as f32 (in place or converted) is checked once, at load: a NaN or an
// infinity in a file is an error naming the tensor, never a model that computes NaN later.
const float* Weights::as_f32(const TensorView& t) {
  const float* f = to_f32(t);
  const size_t n = size_t(t.numel());
  const size_t bad = kernels::first_nonfinite(f, n);
  if (bad != n)
    fail(tensors_.context, tensors_.context.empty() ? "" : ": ", "tensor ", t.name, " holds ",
         std::isnan(f[bad]) ? "NaN" : "an infinity", " at element ", bad, " of ", n, " (a weight must be a finite number)");
  return f;
}

const float* Weights::to_f32(const TensorView& t) {
  const size_t n = size_t(t.numel());
  if (t.dtype == DType::F32 && reinterpret_cast<uintptr_t>(t.data) % alignof(float) == 0)
    return reinterpret_cast<const float*>(t.data);
  float* out = own(n);
  switch (t.dtype) {
    case DType::F32: std::memcpy(out, t.data, n * sizeof(float)); break;
    case DType::F16:
    case DType::BF16:
      for (size_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, t.data + 2 * i, 2);
        out[i] = t.dtype == DType::F16 ? f16_to_f32(h) : bf16_to_f32(h);
      }
      break;
    case DType::Q8_0: {
      const int64_t cols = t.dim(-1);
      for (int64_t r = 0; r < int64_t(n) / cols; ++r)
        kernels::dequantize_row_q8_0(t.data + size_t(r) * dtype_bytes(DType::Q8_0, cols), out + r * cols, int(cols));
      break;
    }
  }
  return out;
}

const float* Weights::vector(const std::string& name, int64_t n) {
  const TensorView& t = tensors_.get(name);
  used_.insert(name);
  AL_CHECK(t.numel() == n && (t.shape.size() == 1 || (t.shape.size() == 2 && t.shape[0] == 1)), tensors_.context,
           tensors_.context.empty() ? "" : ": ", "tensor ", name, " has shape ", t.shape_str(), ", expected [", n, "]");
  count(n, size_t(n) * sizeof(float));
  return as_f32(t);
}

nn::Matrix Weights::quantized_or_f32(const std::string& name, const float* f, int64_t rows, int64_t cols) {
  if (format_ != WeightFormat::Q8_0 || cols % kQ8BlockSize != 0) return nn::Matrix{DType::F32, int(rows), int(cols), f};
  auto it = quantized_.find(name);
  if (it != quantized_.end()) return it->second;
  const size_t row_bytes = dtype_bytes(DType::Q8_0, size_t(cols));
  storage_.q8.emplace_back(row_bytes * size_t(rows));
  uint8_t* q = storage_.q8.back().data();
  for (int64_t r = 0; r < rows; ++r) kernels::quantize_row_q8_0(f + r * cols, q + r * row_bytes, int(cols));
  storage_.bytes += storage_.q8.back().size();
  return quantized_[name] = nn::Matrix{DType::Q8_0, int(rows), int(cols), q};
}

nn::Matrix Weights::matrix(const std::string& name, int64_t rows, int64_t cols, bool tied) {
  const TensorView& t = tensors_.get(name, {rows, cols});
  used_.insert(name);
  nn::Matrix m = t.dtype == DType::Q8_0 ? nn::Matrix{DType::Q8_0, int(rows), int(cols), t.data}
                                        : quantized_or_f32(name, as_f32(t), rows, cols);
  count(tied ? 0 : rows * cols, m.bytes());
  count_matrix(m.dtype);
  return m;
}

nn::Matrix Weights::matrix_transposed(const std::string& name, int64_t rows, int64_t cols) {
  const TensorView& t = tensors_.get(name, {cols, rows});
  used_.insert(name);
  AL_CHECK(t.dtype != DType::Q8_0, tensors_.context, ": tensor ", name, " is q8_0 but stored transposed [in, out]; ",
           "q8_0 blocks must run along the input dimension");
  const float* src = as_f32(t);  // [cols, rows]
  float* dst = own(size_t(rows) * cols);
  for (int64_t i = 0; i < cols; ++i)
    for (int64_t j = 0; j < rows; ++j) dst[j * cols + i] = src[i * rows + j];
  nn::Matrix m = quantized_or_f32(name + ".T", dst, rows, cols);
  count(rows * cols, m.bytes());
  count_matrix(m.dtype);
  return m;
}

nn::Matrix Weights::table(const std::string& name, int64_t rows, int64_t cols) {
  const TensorView& t = tensors_.get(name, {rows, cols});
  used_.insert(name);
  // Only the looked-up rows are read: count the parameters, not the bytes.
  count(rows * cols, 0);
  if (t.dtype == DType::Q8_0) return nn::Matrix{DType::Q8_0, int(rows), int(cols), t.data};
  return quantized_or_f32(name, as_f32(t), rows, cols);
}

const float* Weights::f32_table(const std::string& name, int64_t rows, int64_t cols) {
  const TensorView& t = tensors_.get(name, {rows, cols});
  used_.insert(name);
  count(rows * cols, size_t(rows * cols) * sizeof(float));
  return as_f32(t);
}

nn::Linear Weights::linear(const std::string& weight, const std::string& bias, int64_t out, int64_t in) {
  nn::Linear l;
  l.w = matrix(weight, out, in);
  if (!bias.empty()) l.b = vector(bias, out);
  return l;
}

nn::Norm Weights::layer_norm(const std::string& prefix, int dim, float eps) {
  return nn::Norm{nn::NormKind::LayerNorm, dim, vector(prefix + ".weight", dim), vector(prefix + ".bias", dim), eps};
}

nn::Norm Weights::rms_norm(const std::string& weight, int dim, float eps) {
  return nn::Norm{nn::NormKind::RMSNorm, dim, vector(weight, dim), nullptr, eps};
}

nn::Norm Weights::rms_norm(const std::string& weight, int dim, float eps, float offset) {
  nn::Norm n = rms_norm(weight, dim, eps);
  if (offset == 0.f) return n;
  float* g = own(size_t(dim));
  for (int i = 0; i < dim; ++i) g[i] = offset + n.gamma[i];
  n.gamma = g;
  return n;
}

nn::Matrix Weights::matrix_rows(const std::string& name, int64_t rows, int64_t cols,
                                const std::function<int64_t(int64_t)>& src_row) {
  const TensorView& t = tensors_.get(name, {rows, cols});
  used_.insert(name);
  AL_CHECK(t.dtype == DType::F32 || t.dtype == DType::F16 || t.dtype == DType::BF16, tensors_.context, ": tensor ",
           name, " has type ", dtype_name(t.dtype), "; its rows must be reordered at load, which needs f32, f16 or bf16");
  const float* src = as_f32(t);
  float* dst = own(size_t(rows) * cols);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t s = src_row(r);
    AL_CHECK(s >= 0 && s < rows, "row map of ", name, " is out of range");
    std::memcpy(dst + r * cols, src + s * cols, sizeof(float) * size_t(cols));
  }
  nn::Matrix m = quantized_or_f32(name + ".reordered", dst, rows, cols);
  count(rows * cols, m.bytes());
  count_matrix(m.dtype);
  return m;
}

const float* Weights::vector_rows(const std::string& name, int64_t n, const std::function<int64_t(int64_t)>& src) {
  const float* v = vector(name, n);
  float* dst = own(size_t(n));
  for (int64_t i = 0; i < n; ++i) {
    const int64_t s = src(i);
    AL_CHECK(s >= 0 && s < n, "element map of ", name, " is out of range");
    dst[i] = v[s];
  }
  return dst;
}

void Weights::check_all_used(const std::vector<std::string>& allowed, const std::string& what) const {
  for (const std::string& name : unused()) {
    bool ok = false;
    for (const std::string& a : allowed)
      ok = ok || (!a.empty() && a.back() == '*' ? name.compare(0, a.size() - 1, a, 0, a.size() - 1) == 0 : name == a);
    AL_CHECK(ok, tensors_.context, tensors_.context.empty() ? "" : ": ", "tensor ", name, " ",
             tensors_.get(name).shape_str(), " is not part of ", what,
             " as AttnLens runs it: refusing to run a model without a part of its file");
  }
}

std::vector<std::string> Weights::unused() const {
  std::vector<std::string> out;
  for (const auto& [name, t] : tensors_.all())
    if (!used_.count(name)) out.push_back(name);
  return out;
}

std::string Weights::matrix_dtype() const {
  if (q8_matrices_ && f32_matrices_) return "mixed";
  return q8_matrices_ ? "q8_0" : "f32";
}

}  // namespace attnlens::models
