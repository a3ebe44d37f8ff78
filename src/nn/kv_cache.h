// Keys and values of every past position, per layer, so that decoding one token costs one row of
// attention instead of recomputing the prefix (the causal mask of Vaswani et al. 2017, §3.2.3, is what
// makes the keys and values of past positions reusable).
//
// The cache grows with use: memory for positions is allocated when reserve() asks for them (doubling,
// up to the capacity), not for the whole context up front, so a model with a long context costs
// only what its sequences use. Sizes are checked in 64-bit arithmetic before anything is allocated.
//
// Storage types: f32, or q8_0 (ggml's block format, as llama.cpp's --cache-type-k/v q8_0): blocks of
// 32 along head_dim, int8 values and one f16 scale per block, 34 bytes per 32 values instead of 128.
// Attention then reads it by integer dot products (kernels/attention_q8.cpp). A long context streams
// the whole cache once per token (110M at 2048 positions: 151 MB in f32, 40 MB in q8_0).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace attnlens::nn {

enum class KVType { F32, Q8_0 };
const char* kv_type_name(KVType t);  // "f32", "q8_0"
// "f32" or "q8_0"; anything else is an attnlens::Error naming `option`.
KVType parse_kv_type(const std::string& name, const char* option = "kvCache");

class KVCache {
 public:
  // q8_0 needs head_dim a multiple of 32 (and ≤ kernels::kMaxQ8HeadDim): else an error naming `model`.
  KVCache(int n_layers, int n_kv_heads, int head_dim, int capacity, KVType type = KVType::F32,
          const std::string& model = "this model");

  // Layout, per layer: [kv head][allocated][head_dim], so that the keys (values) of one head are
  // contiguous rows of head_dim floats. Decoding one query reads every cached key of each head; with
  // the heads side by side in rows of kv_dim floats ([pos][kv_dim]) each head's scan touched a
  // head_dim slice of every row, kv_dim·4 bytes apart (bench/attention.mjs --only context: decode
  // at long positions, 1 and 2 threads). Pointers are valid until the next reserve() that grows.
  //
  // f32 caches: head_dim floats, the key (value) of kv head `head` at position `pos` of `layer`.
  float* key(int layer, int head, int pos) { return k_[size_t(layer)].get() + offset(head, pos); }
  float* value(int layer, int head, int pos) { return v_[size_t(layer)].get() + offset(head, pos); }
  const float* key(int layer, int head, int pos) const { return k_[size_t(layer)].get() + offset(head, pos); }
  const float* value(int layer, int head, int pos) const { return v_[size_t(layer)].get() + offset(head, pos); }
  // Elements (floats, or int8 values of a q8_0 cache) from one kv head's rows to the next head's (the
  // AttentionInput::kv_head_stride of the cache).
  size_t head_stride() const { return size_t(allocated_) * size_t(head_dim_); }
  // q8_0 caches, per layer: int8 values [kv head][allocated][head_dim] (the f32 layout), then the f16
  // scales [kv head][block][allocated]: block b of position p of head h at
  // scales + h·scale_head_stride() + b·allocated() + p, so one block's scales of a run of positions
  // are contiguous (kernels::Q8Rows).
  const int8_t* key_q8(int layer) const { return reinterpret_cast<const int8_t*>(k_[size_t(layer)].get()); }
  const int8_t* value_q8(int layer) const { return reinterpret_cast<const int8_t*>(v_[size_t(layer)].get()); }
  const uint16_t* key_scales(int layer) const { return scales(k_[size_t(layer)]); }
  const uint16_t* value_scales(int layer) const { return scales(v_[size_t(layer)]); }
  size_t scale_head_stride() const { return size_t(allocated_) * size_t(head_dim_ / 32); }
  KVType type() const { return type_; }
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
  // Bytes of the keys (or the values) of one position of one layer: kv_dim × 4 (f32), kv_dim / 32 × 34 (q8_0).
  size_t row_bytes() const { return type_ == KVType::F32 ? size_t(kv_dim_) * sizeof(float) : size_t(kv_dim_ / 32) * 34; }
  // Bytes allocated now: 2 × layers × allocated × row_bytes().
  size_t bytes() const { return 2 * size_t(n_layers_) * size_t(allocated_) * row_bytes(); }
  // Bytes at full capacity (what a full context costs): 2 × layers × capacity × row_bytes().
  uint64_t capacity_bytes() const { return 2 * uint64_t(n_layers_) * uint64_t(capacity_) * uint64_t(row_bytes()); }

 private:
  size_t offset(int head, int pos) const { return size_t(head) * head_stride() + size_t(pos) * size_t(head_dim_); }
  uint16_t* scales(const FloatBuffer& b) const {  // q8_0: after the int8 values of every head
    return reinterpret_cast<uint16_t*>(reinterpret_cast<int8_t*>(b.get()) + size_t(n_kv_heads_) * head_stride());
  }
  // Copies `rows` filled positions of every head of one layer's buffer `from` (laid out for
  // `from_alloc` positions) into `to` (laid out for allocated_).
  void copy_rows(const FloatBuffer& from, int from_alloc, FloatBuffer& to, int rows) const;
  int n_layers_, n_kv_heads_, head_dim_, kv_dim_, capacity_, allocated_ = 0, length_ = 0;
  KVType type_;
  std::vector<FloatBuffer> k_, v_;  // per layer: [n_kv_heads][allocated][head_dim] (q8_0: then the scales)
};

}  // namespace attnlens::nn
