#include "nn/kv_cache.h"

#include "core/error.h"

namespace attnlens::nn {

KVCache::KVCache(int n_layers, int n_kv_heads, int head_dim, int capacity)
    : n_layers_(n_layers), kv_dim_(n_kv_heads * head_dim), capacity_(capacity) {
  AL_CHECK(n_layers > 0 && n_kv_heads > 0 && head_dim > 0 && capacity > 0, "KV cache: bad shape (layers ", n_layers,
           ", kv heads ", n_kv_heads, ", head dim ", head_dim, ", capacity ", capacity, ")");
  const size_t floats = size_t(n_layers) * capacity * kv_dim_;
  AL_CHECK(floats < (size_t(1) << 31) / sizeof(float), "KV cache of ", 2 * floats * sizeof(float),
           " bytes is too large: lower the context length");
  k_ = alloc_floats(floats);
  v_ = alloc_floats(floats);
}

void KVCache::check_room(int n) const {
  AL_CHECK(n >= 0, "KV cache: cannot add ", n, " positions");
  AL_CHECK(length_ + n <= capacity_, "context overflow: ", length_, " positions are cached and ", n,
           " more do not fit in the context length of ", capacity_);
}

void KVCache::advance(int n) {
  check_room(n);
  length_ += n;
}

void KVCache::truncate(int length) {
  AL_CHECK(length >= 0 && length <= length_, "KV cache: cannot truncate ", length_, " positions to ", length);
  length_ = length;
}

}  // namespace attnlens::nn
