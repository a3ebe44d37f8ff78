#include "nn/kv_cache.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "core/limits.h"
#include "kernels/kernels.h"

namespace attnlens::nn {

namespace {
constexpr int kFirstPositions = 64;  // the first reserve() allocates at least this many positions
}

const char* kv_type_name(KVType t) { return t == KVType::Q8_0 ? "q8_0" : "f32"; }

KVType parse_kv_type(const std::string& name, const char* option) {
  if (name == "f32") return KVType::F32;
  if (name == "q8_0") return KVType::Q8_0;
  fail(option, " must be \"f32\" or \"q8_0\", got \"", name, "\"");
}

KVCache::KVCache(int n_layers, int n_kv_heads, int head_dim, int capacity, KVType type, const std::string& model)
    : n_layers_(n_layers), n_kv_heads_(n_kv_heads), head_dim_(head_dim), kv_dim_(0), capacity_(capacity), type_(type) {
  AL_CHECK(n_layers > 0 && n_kv_heads > 0 && head_dim > 0 && capacity > 0, "KV cache: bad shape (layers ", n_layers,
           ", kv heads ", n_kv_heads, ", head dim ", head_dim, ", capacity ", capacity, ")");
  AL_CHECK(type == KVType::F32 || (head_dim % 32 == 0 && head_dim <= kernels::kMaxQ8HeadDim), "a q8_0 KV cache stores ",
           "blocks of 32 values of each head: ", model, " has head_dim ", head_dim, " (needs a multiple of 32, at most ",
           kernels::kMaxQ8HeadDim, "); use the f32 cache");
  AL_CHECK(n_layers <= limits::kMaxLayers && capacity <= limits::kMaxContext, "KV cache: ", n_layers, " layers × ",
           capacity, " positions exceed the engine's limits (", limits::kMaxLayers, " layers, ", limits::kMaxContext,
           " positions)");
  // One layer's row width, and one position of every layer, must be addressable.
  kv_dim_ = int(limits::checked_bytes("a KV cache row", {uint64_t(n_kv_heads), uint64_t(head_dim), sizeof(float)}) /
                sizeof(float));
  limits::checked_bytes("one position of the KV cache", {2, uint64_t(n_layers), uint64_t(kv_dim_), sizeof(float)});
  k_.resize(size_t(n_layers));
  v_.resize(size_t(n_layers));
}

void KVCache::check_room(int n) const {
  AL_CHECK(n >= 0, "KV cache: cannot add ", n, " positions");
  AL_CHECK(int64_t(length_) + n <= capacity_, "context overflow: ", length_, " positions are cached and ", n,
           " more do not fit in the context length of ", capacity_);
}

void KVCache::reserve(int n) {
  check_room(n);
  const int need = length_ + n;
  if (need <= allocated_) return;
  const int grown = int(std::min<int64_t>(capacity_, std::max<int64_t>({need, 2 * int64_t(allocated_), kFirstPositions})));
  // Every size in 64 bits first: one layer's buffer, then the whole cache.
  const size_t layer_bytes = limits::checked_bytes("the KV cache of one layer", {uint64_t(grown), uint64_t(row_bytes())});
  limits::checked_bytes("the KV cache", {2, uint64_t(n_layers_), layer_bytes});
  const size_t floats = (layer_bytes + sizeof(float) - 1) / sizeof(float);
  std::vector<FloatBuffer> k(static_cast<size_t>(n_layers_)), v(static_cast<size_t>(n_layers_));
  for (int l = 0; l < n_layers_; ++l) {  // allocate everything before touching the cache: a failure leaves it as it was
    k[size_t(l)] = alloc_floats(floats);
    v[size_t(l)] = alloc_floats(floats);
  }
  // Each head's filled rows move to the start of its block in the bigger buffers.
  const int old_alloc = allocated_;
  allocated_ = grown;
  for (int l = 0; l < n_layers_ && length_; ++l) {
    copy_rows(k_[size_t(l)], old_alloc, k[size_t(l)], length_);
    copy_rows(v_[size_t(l)], old_alloc, v[size_t(l)], length_);
  }
  k_ = std::move(k);
  v_ = std::move(v);
}

void KVCache::copy_rows(const FloatBuffer& from, int from_alloc, FloatBuffer& to, int rows) const {
  const size_t es = type_ == KVType::F32 ? sizeof(float) : 1;  // bytes per value
  const auto* src = reinterpret_cast<const uint8_t*>(from.get());
  auto* dst = reinterpret_cast<uint8_t*>(to.get());
  const size_t hd = size_t(head_dim_), old_stride = size_t(from_alloc) * hd * es, new_stride = head_stride() * es;
  for (int h = 0; h < n_kv_heads_; ++h) std::memcpy(dst + h * new_stride, src + h * old_stride, size_t(rows) * hd * es);
  if (type_ == KVType::F32) return;
  // The scales: one run of positions per (head, block).
  const auto* s_src = reinterpret_cast<const uint16_t*>(src + size_t(n_kv_heads_) * old_stride);
  uint16_t* s_dst = scales(to);
  for (int hb = 0; hb < n_kv_heads_ * (head_dim_ / 32); ++hb)
    std::memcpy(s_dst + size_t(hb) * allocated_, s_src + size_t(hb) * from_alloc, size_t(rows) * sizeof(uint16_t));
}

void KVCache::store(int layer, int pos0, int n, const float* k, const float* v) {
  for (int i = 0; i < n; ++i)
    for (int h = 0; h < n_kv_heads_; ++h) {
      const size_t from = size_t(i) * kv_dim_ + size_t(h) * head_dim_;
      if (type_ == KVType::Q8_0) {
        const size_t at = offset(h, pos0 + i), s_at = h * scale_head_stride() + size_t(pos0 + i);
        auto* kq = reinterpret_cast<int8_t*>(k_[size_t(layer)].get());
        auto* vq = reinterpret_cast<int8_t*>(v_[size_t(layer)].get());
        kernels::quantize_kv_q8_0(k + from, head_dim_, kq + at, scales(k_[size_t(layer)]) + s_at, allocated_);
        kernels::quantize_kv_q8_0(v + from, head_dim_, vq + at, scales(v_[size_t(layer)]) + s_at, allocated_);
        continue;
      }
      std::memcpy(key(layer, h, pos0 + i), k + from, head_dim_ * sizeof(float));
      std::memcpy(value(layer, h, pos0 + i), v + from, head_dim_ * sizeof(float));
    }
}

void KVCache::advance(int n) {
  check_room(n);
  AL_CHECK(length_ + n <= allocated_, "KV cache: ", n, " positions were advanced without reserve()");
  length_ += n;
}

void KVCache::copy_from(const KVCache& other) {
  if (&other == this) return;
  AL_CHECK(other.n_layers_ == n_layers_ && other.kv_dim_ == kv_dim_ && other.head_dim_ == head_dim_ &&
               other.type_ == type_ && other.length_ <= capacity_,
           "KV cache: cannot copy a cache of ", other.n_layers_, " layers × ", other.kv_dim_, " values × ",
           other.length_, " positions (", kv_type_name(other.type_), ") into one of ", n_layers_, " × ", kv_dim_,
           " × ", capacity_, " (", kv_type_name(type_), ")");
  length_ = 0;
  reserve(other.length_);
  for (int l = 0; l < n_layers_ && other.length_; ++l) {
    copy_rows(other.k_[size_t(l)], other.allocated_, k_[size_t(l)], other.length_);
    copy_rows(other.v_[size_t(l)], other.allocated_, v_[size_t(l)], other.length_);
  }
  length_ = other.length_;
}

void KVCache::truncate(int length) {
  AL_CHECK(length >= 0 && length <= length_, "KV cache: cannot truncate ", length_, " positions to ", length);
  length_ = length;
}

}  // namespace attnlens::nn
