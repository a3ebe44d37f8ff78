// Turns a file's TensorViews into what the nn layer reads: f32 vectors and f32 / q8_0 matrices.
// Views are used as they are when possible (f32 and q8_0 tensors, suitably aligned); f16 and bf16
// tensors are widened to f32 once, at load, into buffers this object owns; Conv1D weights (GPT-2's
// [in, out]) are transposed once. On request, f32 matrices are quantized to q8_0 at load.
#pragma once
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "nn/linear.h"
#include "nn/norm.h"

namespace attnlens::models {

enum class WeightFormat {
  AsStored,  // keep f32 / q8_0 as in the file (f16/bf16 → f32)
  Q8_0,      // quantize matrices whose input size is a multiple of 32 to q8_0 at load
};

// The converted copies a model keeps for its lifetime.
struct WeightStorage {
  std::vector<FloatBuffer> f32;
  std::vector<std::vector<uint8_t>> q8;
  size_t bytes = 0;
};

class Weights {
 public:
  Weights(const TensorMap& tensors, WeightFormat format) : tensors_(tensors), format_(format) {}

  bool has(const std::string& name) const { return tensors_.has(name); }
  // A vector [n] as f32.
  const float* vector(const std::string& name, int64_t n);
  // A matrix [rows, cols] (stored that way) for linear layers (f32 or q8_0 per WeightFormat).
  // tied: the tensor is also used elsewhere (a tied output projection): its parameters are not
  // counted again.
  nn::Matrix matrix(const std::string& name, int64_t rows, int64_t cols, bool tied = false);
  // A matrix stored transposed, [cols, rows] (HF Conv1D: [in, out]), returned as [rows, cols].
  nn::Matrix matrix_transposed(const std::string& name, int64_t rows, int64_t cols);
  // An embedding table [rows, cols] (rows are looked up one by one): as stored when f32 or q8_0,
  // quantized like the matrices under WeightFormat::Q8_0.
  nn::Matrix table(const std::string& name, int64_t rows, int64_t cols);
  // A small table [rows, cols] read whole as f32, never quantized (T5's relative attention bias).
  const float* f32_table(const std::string& name, int64_t rows, int64_t cols);
  nn::Linear linear(const std::string& weight, const std::string& bias, int64_t out, int64_t in);
  // LayerNorm from "<prefix>.weight" and "<prefix>.bias"; RMSNorm from one weight.
  nn::Norm layer_norm(const std::string& prefix, int dim, float eps);
  nn::Norm rms_norm(const std::string& weight, int dim, float eps);
  // RMSNorm applied as (offset + w) ⊙ x̂ (Hugging Face Gemma stores w for 1 + w): the sum is made
  // once, at load, into a copy.
  nn::Norm rms_norm(const std::string& weight, int dim, float eps, float offset);
  // A matrix [rows, cols] whose row r is row src_row(r) of the stored [rows, cols] tensor (a
  // reordered f32 copy; HF GPT-NeoX's per-head [q k v] rows put in [Q; K; V] order), and the same
  // for a vector.
  nn::Matrix matrix_rows(const std::string& name, int64_t rows, int64_t cols,
                         const std::function<int64_t(int64_t)>& src_row);
  const float* vector_rows(const std::string& name, int64_t n, const std::function<int64_t(int64_t)>& src);

  // Every tensor of the file must be applied: the names no call above has read (nor mark_used).
  std::vector<std::string> unused() const;
  void mark_used(const std::string& name) { used_.insert(name); }

  const TensorMap& tensors() const { return tensors_; }
  // Throws attnlens::Error naming the first tensor of the file that no call above has read, unless
  // it matches `allowed` (exact names, or prefixes ending in '*'): a builder calls this last, so a
  // file holding parts the engine would not apply is refused instead of silently run without them.
  void check_all_used(const std::vector<std::string>& allowed, const std::string& what) const;
  // Totals over everything handed out so far: parameters, and bytes the kernels will read.
  int64_t params() const { return params_; }
  size_t bytes_read() const { return bytes_read_; }
  // Bytes of the converted copies made so far (they stay with the model).
  size_t owned_bytes() const { return storage_.bytes; }
  // "f32", "q8_0" or "mixed": the types of the matrices handed out for linear layers.
  std::string matrix_dtype() const;
  // The converted copies; the model keeps them, the Weights object (and its TensorMap) can go.
  WeightStorage release() { return std::move(storage_); }

 private:
  const float* as_f32(const TensorView& t);  // to_f32, checked: every value finite
  const float* to_f32(const TensorView& t);  // a view when f32 and aligned, else a converted copy
  float* own(size_t floats);
  nn::Matrix quantized_or_f32(const std::string& name, const float* f, int64_t rows, int64_t cols);
  void count_matrix(DType t) { (t == DType::Q8_0 ? q8_matrices_ : f32_matrices_)++; }
  void count(int64_t params, size_t bytes) {
    params_ += params;
    bytes_read_ += bytes;
  }
  const TensorMap& tensors_;
  WeightFormat format_;
  WeightStorage storage_;
  std::map<std::string, nn::Matrix> quantized_;  // by tensor name: a tied tensor is quantized once
  std::set<std::string> used_;                   // tensors read so far
  int64_t params_ = 0;
  int q8_matrices_ = 0, f32_matrices_ = 0;
  size_t bytes_read_ = 0;
};

}  // namespace attnlens::models
