#include "nn/kv_cache.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "core/limits.h"

namespace attnlens::nn {

namespace {
constexpr int kFirstPositions = 64;  // the first reserve() allocates at least this many positions
}

KVCache::KVCache(int n_layers, int n_kv_heads, int head_dim, int capacity)
    : n_layers_(n_layers), n_kv_heads_(n_kv_heads), head_dim_(head_dim), kv_dim_(0), capacity_(capacity) {
  AL_CHECK(n_layers > 0 && n_kv_heads > 0 && head_dim > 0 && capacity > 0, "KV cache: bad shape (layers ", n_layers,
           ", kv heads ", n_kv_heads, ", head dim ", head_dim, ", capacity ", capacity, ")");
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
  const size_t layer_bytes = limits::checked_bytes("the KV cache of one layer", {uint64_t(grown), uint64_t(kv_dim_), sizeof(float)});
  limits::checked_bytes("the KV cache", {2, uint64_t(n_layers_), layer_bytes});
  std::vector<FloatBuffer> k(static_cast<size_t>(n_layers_)), v(static_cast<size_t>(n_layers_));
  for (int l = 0; l < n_layers_; ++l) {  // allocate everything before touching the cache: a failure leaves it as it was
    k[size_t(l)] = alloc_floats(layer_bytes / sizeof(float));
    v[size_t(l)] = alloc_floats(layer_bytes / sizeof(float));
  }
  // Each head's filled rows move to the start of its block in the bigger buffers.
  const size_t filled = size_t(length_) * size_t(head_dim_), old_stride = head_stride(),
               new_stride = size_t(grown) * size_t(head_dim_);
  for (int l = 0; l < n_layers_ && filled; ++l)
    for (int h = 0; h < n_kv_heads_; ++h) {
      std::memcpy(k[size_t(l)].get() + h * new_stride, k_[size_t(l)].get() + h * old_stride, filled * sizeof(float));
      std::memcpy(v[size_t(l)].get() + h * new_stride, v_[size_t(l)].get() + h * old_stride, filled * sizeof(float));
    }
  k_ = std::move(k);
  v_ = std::move(v);
  allocated_ = grown;
}

void KVCache::store(int layer, int pos0, int n, const float* k, const float* v) {
  for (int i = 0; i < n; ++i)
    for (int h = 0; h < n_kv_heads_; ++h) {
      const size_t from = size_t(i) * kv_dim_ + size_t(h) * head_dim_;
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
  AL_CHECK(other.n_layers_ == n_layers_ && other.kv_dim_ == kv_dim_ && other.length_ <= capacity_,
           "KV cache: cannot copy a cache of ", other.n_layers_, " layers × ", other.kv_dim_, " values × ",
           other.length_, " positions into one of ", n_layers_, " × ", kv_dim_, " × ", capacity_);
  length_ = 0;
  reserve(other.length_);
  const size_t rows = size_t(other.length_) * head_dim_ * sizeof(float);  // one head's filled rows
  for (int l = 0; l < n_layers_ && rows; ++l)
    for (int h = 0; h < n_kv_heads_; ++h) {
      std::memcpy(key(l, h, 0), other.key(l, h, 0), rows);
      std::memcpy(value(l, h, 0), other.value(l, h, 0), rows);
    }
  length_ = other.length_;
}

void KVCache::truncate(int length) {
  AL_CHECK(length >= 0 && length <= length_, "KV cache: cannot truncate ", length_, " positions to ", length);
  length_ = length;
}

}  // namespace attnlens::nn
