// Private to src/kernels: per-thread, 64-byte aligned scratch buffers that grow on demand and are
// reused across calls (packed matmul panels of W and x, quantized activations). No exceptions: returns nullptr
// when the allocation fails, and the caller falls back to its scalar reference.
#pragma once
#include <cstddef>
#include <cstdlib>

namespace attnlens::kernels::scratch {

enum Slot { kPanel = 0, kPackedX = 1, kActivations = 2, kWidened = 3, kSlots = 4 };

inline void* get(Slot slot, size_t bytes) noexcept {
  struct Buf {
    void* p = nullptr;
    size_t n = 0;
    ~Buf() { std::free(p); }
  };
  thread_local Buf bufs[kSlots];
  Buf& b = bufs[slot];
  if (b.n < bytes) {
    std::free(b.p);
    const size_t rounded = (bytes + 63) / 64 * 64;
    b.p = std::aligned_alloc(64, rounded);
    b.n = b.p ? rounded : 0;
  }
  return b.p;
}

}  // namespace attnlens::kernels::scratch
