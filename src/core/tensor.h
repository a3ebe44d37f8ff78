// Named, typed views into model bytes. File readers (src/formats) produce them without copying;
// model builders (src/models) look tensors up by name and check their shapes.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace attnlens {

// Element types found in checkpoints. Q8_0 is GGML's block format: blocks of 32 weights stored as
// { f16 scale d; int8 q[32] } (34 bytes), weight = d * q, along the innermost (last) dimension.
enum class DType : uint8_t { F32, F16, BF16, Q8_0 };

constexpr int kQ8BlockSize = 32;       // weights per q8_0 block
constexpr int kQ8BlockBytes = 2 + 32;  // f16 scale + 32 int8

const char* dtype_name(DType t);
// Bytes taken by `count` elements (count must be a multiple of 32 for Q8_0).
size_t dtype_bytes(DType t, size_t count);

// A tensor inside some buffer. shape is outermost-first as PyTorch prints it: a linear layer's weight
// is [out, in], row-major, rows contiguous. Views do not own their bytes: whoever holds the file keeps them alive.
struct TensorView {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  const uint8_t* data = nullptr;
  size_t nbytes = 0;

  int64_t numel() const;
  int64_t dim(int i) const;                 // shape[i], negative i counts from the end
  std::string shape_str() const;            // "[512, 64]"
};

// Name → tensor. get() throws attnlens::Error naming the tensor and the expected/actual shape.
class TensorMap {
 public:
  void add(TensorView t);  // throws on duplicate names
  bool has(const std::string& name) const;
  const TensorView& get(const std::string& name) const;
  // Also checks the shape; -1 in `shape` matches any size.
  const TensorView& get(const std::string& name, const std::vector<int64_t>& shape) const;
  const TensorView* find(const std::string& name) const;  // nullptr when absent
  size_t size() const { return tensors_.size(); }
  const std::map<std::string, TensorView>& all() const { return tensors_; }
  std::string context;  // prefix for error messages, e.g. the file name

 private:
  std::map<std::string, TensorView> tensors_;
};

// Owned, 64-byte aligned float storage (weights converted at load, scratch, caches).
struct AlignedFree {
  void operator()(float* p) const;
};
using FloatBuffer = std::unique_ptr<float[], AlignedFree>;
FloatBuffer alloc_floats(size_t count);  // zero-initialised; throws attnlens::Error if it cannot

// IEEE half and bfloat16 conversions (scalar; the kernels have vector versions where it matters).
float f16_to_f32(uint16_t h);
uint16_t f32_to_f16(float f);
float bf16_to_f32(uint16_t h);

}  // namespace attnlens
