// Scratch memory for forward passes: a stack of float buffers. Functions take what they need and
// give it back when their ArenaScope ends, so nested calls (layer → attention) never collide and a
// steady-state forward pass allocates nothing. Pointers stay valid until their scope ends.
#pragma once
#include <cstddef>
#include <vector>

#include "core/tensor.h"

namespace attnlens::nn {

class Arena {
 public:
  float* alloc(size_t count);  // 64-byte aligned, uninitialised
  size_t bytes_reserved() const;

 private:
  friend class ArenaScope;
  struct Block {
    FloatBuffer data;
    size_t capacity = 0;
    size_t used = 0;
  };
  std::vector<Block> blocks_;
  size_t current_ = 0;  // index of the block being filled
};

// Everything allocated from the arena during this scope's lifetime is released when it ends.
class ArenaScope {
 public:
  explicit ArenaScope(Arena& a);
  ~ArenaScope();
  ArenaScope(const ArenaScope&) = delete;
  ArenaScope& operator=(const ArenaScope&) = delete;

 private:
  Arena& arena_;
  size_t block_;
  size_t used_;
};

}  // namespace attnlens::nn
