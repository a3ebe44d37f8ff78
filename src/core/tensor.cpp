#include "core/tensor.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

#include "core/error.h"

namespace attnlens {

namespace {

struct DTypeInfo {
  const char* name;
  int block_elems, block_bytes;
};

// Indexed by DType. Block sizes from ggml-common.h (llama.cpp); static_asserts in kernels/quant_blocks.h.
constexpr DTypeInfo kDTypes[kNumDTypes] = {
    {"f32", 1, 4},     {"f16", 1, 2},      {"bf16", 1, 2},     {"q8_0", 32, 34},  {"q4_0", 32, 18},
    {"q4_1", 32, 20},  {"q5_0", 32, 22},   {"q5_1", 32, 24},   {"q2_K", 256, 84}, {"q3_K", 256, 110},
    {"q4_K", 256, 144}, {"q5_K", 256, 176}, {"q6_K", 256, 210}, {"iq4_nl", 32, 18}, {"iq4_xs", 256, 136},
};

const DTypeInfo& info(DType t) {
  const int i = int(t);
  AL_CHECK(i >= 0 && i < kNumDTypes, "unknown element type ", i);
  return kDTypes[i];
}

}  // namespace

const char* dtype_name(DType t) { return int(t) < kNumDTypes ? kDTypes[int(t)].name : "?"; }
int dtype_block_elems(DType t) { return info(t).block_elems; }
int dtype_block_bytes(DType t) { return info(t).block_bytes; }
bool dtype_is_block(DType t) { return info(t).block_elems > 1; }

size_t dtype_bytes(DType t, size_t count) {
  const DTypeInfo& i = info(t);
  AL_CHECK(count % size_t(i.block_elems) == 0, i.name, " tensor of ", count, " elements is not a whole number of ",
           i.block_elems, "-element blocks");
  const size_t blocks = count / size_t(i.block_elems);
  AL_CHECK(blocks <= SIZE_MAX / size_t(i.block_bytes), i.name, " tensor of ", count, " elements is too large");
  return blocks * size_t(i.block_bytes);
}

int64_t TensorView::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

int64_t TensorView::dim(int i) const {
  int r = static_cast<int>(shape.size());
  int k = i < 0 ? r + i : i;
  AL_CHECK(k >= 0 && k < r, "tensor ", name, " ", shape_str(), " has no dimension ", i);
  return shape[k];
}

std::string TensorView::shape_str() const {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

static std::string where(const std::string& context) { return context.empty() ? "" : context + ": "; }

void TensorMap::add(TensorView t) {
  AL_CHECK(!tensors_.count(t.name), where(context), "tensor ", t.name, " appears twice");
  std::string key = t.name;
  tensors_.emplace(std::move(key), std::move(t));
}

bool TensorMap::has(const std::string& name) const { return tensors_.count(name) != 0; }

const TensorView* TensorMap::find(const std::string& name) const {
  auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

const TensorView& TensorMap::get(const std::string& name) const {
  const TensorView* t = find(name);
  if (!t) fail(where(context), "missing tensor ", name);
  return *t;
}

const TensorView& TensorMap::get(const std::string& name, const std::vector<int64_t>& shape) const {
  const TensorView& t = get(name);
  bool ok = t.shape.size() == shape.size();
  for (size_t i = 0; ok && i < shape.size(); ++i) ok = shape[i] < 0 || shape[i] == t.shape[i];
  if (!ok) {
    TensorView want;
    want.shape = shape;
    fail(where(context), "tensor ", name, " has shape ", t.shape_str(), ", expected ", want.shape_str());
  }
  return t;
}

void AlignedFree::operator()(float* p) const { std::free(p); }

FloatBuffer alloc_floats(size_t count) {
  size_t bytes = (count * sizeof(float) + 63) / 64 * 64;
  if (bytes == 0) bytes = 64;
  AL_CHECK(count < SIZE_MAX / 8, "cannot allocate ", count, " floats");
  void* p = std::aligned_alloc(64, bytes);
  if (!p) fail("out of memory allocating ", bytes, " bytes");
  std::memset(p, 0, bytes);
  return FloatBuffer(static_cast<float*>(p));
}

float f16_to_f32(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f;
  uint32_t mant = h & 0x3ff;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: renormalise
      exp = 127 - 15 + 1;
      while (!(mant & 0x400)) {
        mant <<= 1;
        --exp;
      }
      mant &= 0x3ff;
      bits = sign | (exp << 23) | (mant << 13);
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else {
    bits = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t f32_to_f16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000;
  int32_t exp = int32_t((x >> 23) & 0xff) - 127 + 15;
  uint32_t mant = x & 0x7fffff;
  if (((x >> 23) & 0xff) == 0xff) return uint16_t(sign | 0x7c00 | (mant ? 0x200 : 0));  // inf/nan
  if (exp >= 31) return uint16_t(sign | 0x7c00);                                      // overflow → inf
  if (exp <= 0) {                                                                      // subnormal / zero
    if (exp < -10) return uint16_t(sign);
    mant |= 0x800000;
    uint32_t shift = uint32_t(14 - exp);
    uint32_t half = mant >> shift;
    uint32_t rem = mant & ((1u << shift) - 1);
    uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1))) ++half;
    return uint16_t(sign | half);
  }
  uint32_t half = sign | (uint32_t(exp) << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (half & 1))) ++half;  // round to nearest even (may carry into exp)
  return uint16_t(half);
}

float bf16_to_f32(uint16_t h) {
  uint32_t bits = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

}  // namespace attnlens
