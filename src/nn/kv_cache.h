// Keys and values of every past position, per layer, so that decoding one token costs one row of
// attention instead of recomputing the prefix (the causal mask of Vaswani et al. 2017, §3.2.3, is what
// makes the keys and values of past positions reusable).
//
// The cache grows with use: memory for positions is allocated when reserve() asks for them (doubling,
// up to the capacity), not for the whole context up front, so a model with a long context costs
// only what its sequences use. Sizes are checked in 64-bit arithmetic before anything is allocated.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace attnlens::nn {

class KVCache {
 public:
  KVCache(int n_layers, int n_kv_heads, int head_dim, int capacity);

  // Layout, per layer: [kv head][allocated][head_dim], so that the keys (values) of one head are
  // contiguous rows of head_dim floats. Decoding one query reads every cached key of each head; with
  // the heads side by side in rows of kv_dim floats ([pos][kv_dim]) each head's scan touched a
  // head_dim slice of every row, kv_dim·4 bytes apart (bench/attention.mjs --only context: decode
  // at long positions, 1 and 2 threads). Pointers are valid until the next reserve() that grows.
  //
  // head_dim floats: the key (value) of kv head `head` at position `pos` of `layer`.
  float* key(int layer, int head, int pos) { return k_[size_t(layer)].get() + offset(head, pos); }
  float* value(int layer, int head, int pos) { return v_[size_t(layer)].get() + offset(head, pos); }
  const float* key(int layer, int head, int pos) const { return k_[size_t(layer)].get() + offset(head, pos); }
  const float* value(int layer, int head, int pos) const { return v_[size_t(layer)].get() + offset(head, pos); }
  // Floats from one kv head's rows to the next head's (the AttentionInput::kv_head_stride of the cache).
  size_t head_stride() const { return size_t(allocated_) * size_t(head_dim_); }
  // Copies n rows of keys and values, k and v [n][kv_dim] (every head side by side, as the projections
  // give them), into positions pos0 … pos0+n−1 of `layer`; the caller has reserve()d them (no check here).
  void store(int layer, int pos0, int n, const float* k, const float* v);

  int length() const { return length_; }        // positions filled so far
  int capacity() const { return capacity_; }    // positions it may hold
  int allocated() const { return allocated_; }  // positions with memory now (length ≤ allocated ≤ capacity)
  int kv_dim() const { return kv_dim_; }
  int n_kv_heads() const { return n_kv_heads_; }
  int head_dim() const { return head_dim_; }
  int n_layers() const { return n_layers_; }
  // Throws attnlens::Error unless n more positions fit in the capacity.
  void check_room(int n) const;
  // check_room(n), then makes sure every layer has memory for n more positions (grows the buffers,
  // keeping the rows filled so far). Call before computing them; pointers from key()/value() taken
  // before a reserve() that grows are invalid afterwards.
  void reserve(int n);
  void advance(int n);  // marks n more positions filled (after every layer wrote them)
  void reset() { length_ = 0; }
  void truncate(int length);  // forget positions ≥ length (e.g. to re-run from a prefix)
  // Becomes a copy of `other`'s filled positions (same layers, kv_dim; capacity ≥ its length): a
  // beam that continues another beam's sequence.
  void copy_from(const KVCache& other);
  // Bytes allocated now: 2 × layers × allocated × kv_dim × 4.
  size_t bytes() const { return 2 * size_t(n_layers_) * size_t(allocated_) * size_t(kv_dim_) * sizeof(float); }
  // Bytes at full capacity (what a full context costs): 2 × layers × capacity × kv_dim × 4.
  uint64_t capacity_bytes() const { return 2 * uint64_t(n_layers_) * uint64_t(capacity_) * uint64_t(kv_dim_) * sizeof(float); }

 private:
  size_t offset(int head, int pos) const { return size_t(head) * head_stride() + size_t(pos) * size_t(head_dim_); }
  int n_layers_, n_kv_heads_, head_dim_, kv_dim_, capacity_, allocated_ = 0, length_ = 0;
  std::vector<FloatBuffer> k_, v_;  // per layer: [n_kv_heads][allocated][head_dim]
};

}  // namespace attnlens::nn
