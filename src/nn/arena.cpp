#include "nn/arena.h"

namespace attnlens::nn {

static constexpr size_t kMinBlockFloats = size_t(1) << 18;  // 1 MiB

float* Arena::alloc(size_t count) {
  count = (count + 15) / 16 * 16;  // keep every allocation 64-byte aligned
  while (current_ < blocks_.size()) {
    Block& b = blocks_[current_];
    if (b.capacity - b.used >= count) {
      float* p = b.data.get() + b.used;
      b.used += count;
      return p;
    }
    if (current_ + 1 == blocks_.size()) break;
    blocks_[++current_].used = 0;
  }
  Block b;
  b.capacity = count > kMinBlockFloats ? count : kMinBlockFloats;
  b.data = alloc_floats(b.capacity);
  b.used = count;
  blocks_.push_back(std::move(b));
  current_ = blocks_.size() - 1;
  return blocks_.back().data.get();
}

size_t Arena::bytes_reserved() const {
  size_t n = 0;
  for (const Block& b : blocks_) n += b.capacity * sizeof(float);
  return n;
}

ArenaScope::ArenaScope(Arena& a) : arena_(a), block_(a.current_), used_(a.blocks_.empty() ? 0 : a.blocks_[a.current_].used) {}

ArenaScope::~ArenaScope() {
  if (arena_.blocks_.empty()) return;
  arena_.current_ = block_;
  arena_.blocks_[block_].used = used_;
}

}  // namespace attnlens::nn
