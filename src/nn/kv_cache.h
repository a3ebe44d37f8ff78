// Keys and values of every past position, per layer, so that decoding one token costs one row of
// attention instead of recomputing the prefix (seed 001 §"Training vs Inference").
#pragma once
#include <cstddef>

#include "core/tensor.h"

namespace attnlens::nn {

class KVCache {
 public:
  KVCache(int n_layers, int n_kv_heads, int head_dim, int capacity);

  // Rows of kv_dim = n_kv_heads·head_dim floats: K and V of position `pos` in `layer`.
  float* key(int layer, int pos) { return k_.get() + offset(layer, pos); }
  float* value(int layer, int pos) { return v_.get() + offset(layer, pos); }
  const float* key(int layer, int pos) const { return k_.get() + offset(layer, pos); }
  const float* value(int layer, int pos) const { return v_.get() + offset(layer, pos); }

  int length() const { return length_; }      // positions filled so far
  int capacity() const { return capacity_; }  // positions preallocated
  int kv_dim() const { return kv_dim_; }
  int n_layers() const { return n_layers_; }
  // Throws attnlens::Error unless n more positions fit: call before computing them.
  void check_room(int n) const;
  void advance(int n);  // marks n more positions filled (after every layer wrote them)
  void reset() { length_ = 0; }
  void truncate(int length);  // forget positions ≥ length (e.g. to re-run from a prefix)
  // 2 × layers × kv_heads × capacity × head_dim × 4 bytes.
  size_t bytes() const { return 2 * size_t(n_layers_) * capacity_ * kv_dim_ * sizeof(float); }

 private:
  size_t offset(int layer, int pos) const { return (size_t(layer) * capacity_ + pos) * kv_dim_; }
  int n_layers_, kv_dim_, capacity_, length_ = 0;
  FloatBuffer k_, v_;  // [layers][capacity][kv_dim]
};

}  // namespace attnlens::nn
