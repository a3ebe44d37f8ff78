// Turns a file's TensorViews into what the nn layer reads: f32 vectors and matrices of any DType.
// Matrices are used as stored (f32, f16, bf16 and every GGML block format: views into the file,
// decoded inside the kernels), except that an unaligned f32 tensor is copied, a Conv1D weight
// (GPT-2's [in, out]) is transposed once and, on request, f32/f16/bf16 matrices are quantized at
// load: written over the file's own bytes when the load owns them, else into copies the model keeps.
// Vectors (norms, biases) are widened to f32.
// Non-finite weights are errors naming the tensor wherever the engine would otherwise not see them
// as NaN at run time: before quantizing, in f16/bf16 matrices, in the scales of block formats.
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
  AsStored,  // every tensor as the file stores it (f16/bf16/quantized stay so)
  Q8_0,      // quantize f32/f16/bf16 matrices whose input size is a multiple of 32 to q8_0 at load
  Q4_0,      // … to q4_0
  Q4_K,      // … to q4_K when the input size is a multiple of 256, else q5_0 (llama.cpp's fallback)
};

// "none", "q8_0", "q4_0", "q4_k" ↔ WeightFormat; parse throws attnlens::Error listing the choices.
WeightFormat parse_weight_format(const std::string& s);
const char* weight_format_name(WeightFormat f);

// The converted copies a model keeps for its lifetime.
struct WeightStorage {
  std::vector<FloatBuffer> f32;
  std::vector<std::vector<uint8_t>> bytes8;  // quantized or transposed f16/bf16 copies
  size_t bytes = 0;
};

// Per element type of the matrices handed out: how many, their parameters and bytes.
struct DTypeTotals {
  int tensors = 0;
  int64_t params = 0;
  size_t bytes = 0;
};

class Weights {
 public:
  // own_file_bytes: the tensors' bytes belong to this load alone (BuildOptions::own_file_bytes), so a
  // weight stored in another layout (transposed, rows in another order) or quantized at load is
  // written where it is instead of copied.
  Weights(const TensorMap& tensors, WeightFormat format, bool own_file_bytes = false)
      : tensors_(tensors), format_(format), own_file_bytes_(own_file_bytes) {}

  bool has(const std::string& name) const { return tensors_.has(name); }
  // A vector [n] as f32.
  const float* vector(const std::string& name, int64_t n);
  // A matrix [rows, cols] (stored that way) for linear layers, as stored or quantized per
  // WeightFormat. tied: the tensor is also used elsewhere (a tied output projection): its
  // parameters are not counted again.
  nn::Matrix matrix(const std::string& name, int64_t rows, int64_t cols, bool tied = false);
  // A matrix stored transposed, [cols, rows] (HF Conv1D: [in, out]), returned as [rows, cols]: a copy,
  // or with own_file_bytes the file's own bytes transposed (the tensor then reads only this way).
  nn::Matrix matrix_transposed(const std::string& name, int64_t rows, int64_t cols);
  // An embedding table [rows, cols] (rows are looked up one by one), as matrix() treats it.
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
  // A matrix [rows, cols] whose row r is row src_row(r) of the stored [rows, cols] tensor (reordered
  // in the stored type, rows are whole blocks in every type; in the file's own bytes with
  // own_file_bytes, else a copy; HF GPT-NeoX's per-head [q k v] rows put in [Q; K; V] order), and the
  // same for a vector (a copy).
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
  // The element types of the matrices (and tables) handed out: "f32", "q4_K", … when there is one;
  // else the types by bytes, largest first: "mixed (q4_K, q6_K, q8_0, f32)".
  std::string matrix_dtype() const;
  const std::map<DType, DTypeTotals>& matrix_types() const { return types_; }
  // The converted copies; the model keeps them, the Weights object (and its TensorMap) can go.
  WeightStorage release() { return std::move(storage_); }

 private:
  const float* as_f32(const TensorView& t);  // to_f32, checked: every value finite
  const float* to_f32(const TensorView& t);  // a view when f32 and aligned, else a converted copy
  float* own_floats(size_t floats);
  uint8_t* own_bytes(size_t bytes);
  DType target_type(DType stored, int64_t cols) const;  // the type matrix() hands out
  nn::Matrix prepare(const std::string& key, const TensorView& t, const uint8_t* data, DType stored, int64_t rows,
                     int64_t cols);
  // prepare() of a copy made at load (transposed, rows reordered; [rows, cols] in t's type, the last
  // buffer owned): a copy quantized into a buffer of its own is given back.
  void prepare_copy(const std::string& key, const TensorView& t, const uint8_t* copy, int64_t rows, int64_t cols);
  // The matrix `key` [rows, cols] in t's type, `bytes` long, written by fill() (a transposition, rows
  // reordered): into the file's own bytes with own_file_bytes, else into a copy the model keeps.
  void rearrange(const std::string& key, const TensorView& t, int64_t rows, int64_t cols, size_t bytes,
                 const std::function<void(uint8_t*)>& fill);
  void check_finite(const std::string& name, DType t, const uint8_t* data, size_t count) const;
  void count_matrix(const nn::Matrix& m, int64_t params, bool counted_before);
  void count(int64_t params, size_t bytes) {
    params_ += params;
    bytes_read_ += bytes;
  }
  // tensors_.get(name, shape), refusing a tensor whose bytes were rearranged in place (they no longer
  // hold the stored layout).
  const TensorView& stored(const std::string& name, const std::vector<int64_t>& shape) const;
  const TensorMap& tensors_;
  WeightFormat format_;
  bool own_file_bytes_ = false;
  std::set<std::string> rearranged_;
  WeightStorage storage_;
  std::map<std::string, nn::Matrix> prepared_;  // by tensor name: a tied tensor is prepared once
  std::set<std::string> used_;                   // tensors read so far
  std::map<DType, DTypeTotals> types_;
  int64_t params_ = 0;
  size_t bytes_read_ = 0;
};

}  // namespace attnlens::models
