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

// Element types found in checkpoints. Besides f32/f16/bf16, GGML's block formats (ggml-common.h in
// llama.cpp defines them): along the innermost (last) dimension, every `block_elems` weights are
// stored together in `block_bytes` bytes with their own scale(s); a row must be whole blocks.
//   q8_0   32 weights: f16 d, int8 q[32]                          w = d·q
//   q4_0   32: f16 d, 16 bytes of nibbles                          w = d·(q − 8)
//   q4_1   32: f16 d, f16 m, nibbles                               w = d·q + m
//   q5_0   32: f16 d, u32 5th bits, nibbles                        w = d·(q − 16)
//   q5_1   32: f16 d, f16 m, u32 5th bits, nibbles                 w = d·q + m
//   iq4_nl 32: f16 d, nibbles indexing a fixed 16-value table      w = d·table[q]
//   q2_K … q6_K, iq4_xs: super-blocks of 256 with 16 or 8 sub-blocks whose scales (and mins) are
//   themselves quantized to 4–8 bits against f16 super-block scales (see kernels/quant_blocks.h).
// The enum's values are ours; GGUF's ggml type ids are mapped to them in formats/gguf.cpp.
enum class DType : uint8_t { F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS };
constexpr int kNumDTypes = 15;

constexpr int kQ8BlockSize = 32;       // weights per q8_0 block
constexpr int kQ8BlockBytes = 2 + 32;  // f16 scale + 32 int8
constexpr int kSuperBlock = 256;       // weights per K-quant / iq4_xs super-block (ggml's QK_K)

const char* dtype_name(DType t);     // ggml's spelling: "f32", "q8_0", "q4_K", "iq4_nl", …
int dtype_block_elems(DType t);      // 1 for f32/f16/bf16
int dtype_block_bytes(DType t);      // bytes of one block (4 or 2 for the float types)
bool dtype_is_block(DType t);        // a GGML block format (quantized)
// Bytes taken by `count` elements; throws attnlens::Error unless count is a whole number of blocks.
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
