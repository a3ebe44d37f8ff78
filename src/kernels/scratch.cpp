// Per-thread scratch buffers (scratch.h), registered so that release_scratch() can free those of
// every thread, not only the caller's.
#include "kernels/scratch.h"

#include <cstdlib>
#include <mutex>

#include "kernels/kernels.h"

namespace attnlens::kernels {
namespace {

// One per thread that ever asked for scratch, linked into a list of all of them.
struct Buffers {
  void* p[scratch::kSlots] = {};
  size_t n[scratch::kSlots] = {};
  Buffers* prev = nullptr;
  Buffers* next = nullptr;
  Buffers();
  ~Buffers();
  void free_all() noexcept {
    for (int s = 0; s < scratch::kSlots; ++s) {
      std::free(p[s]);
      p[s] = nullptr;
      n[s] = 0;
    }
  }
};

// Constant-initialized (std::mutex's constructor is constexpr): no allocation, no static-init order.
// (A mutex made by `new` on first use was 32 bytes that a process's first freed model kept for good.)
std::mutex g_mutex;
std::mutex& registry_mutex() { return g_mutex; }
Buffers* g_head = nullptr;  // guarded by registry_mutex()

Buffers::Buffers() {
  std::lock_guard<std::mutex> lock(registry_mutex());
  next = g_head;
  if (g_head) g_head->prev = this;
  g_head = this;
}

Buffers::~Buffers() {
  std::lock_guard<std::mutex> lock(registry_mutex());
  (prev ? prev->next : g_head) = next;
  if (next) next->prev = prev;
  free_all();
}

}  // namespace

void* scratch::get(Slot slot, size_t bytes) noexcept {
  thread_local Buffers b;
  if (b.n[slot] < bytes) {
    std::free(b.p[slot]);
    const size_t rounded = (bytes + 63) / 64 * 64;
    b.p[slot] = std::aligned_alloc(64, rounded);
    b.n[slot] = b.p[slot] ? rounded : 0;
  }
  return b.p[slot];
}

void* shared_scratch(size_t bytes) noexcept { return scratch::get(scratch::kShared, bytes); }

void release_scratch() noexcept {
  std::lock_guard<std::mutex> lock(registry_mutex());
  for (Buffers* b = g_head; b; b = b->next) b->free_all();
}

size_t scratch_bytes() noexcept {
  std::lock_guard<std::mutex> lock(registry_mutex());
  size_t total = 0;
  for (const Buffers* b = g_head; b; b = b->next)
    for (size_t n : b->n) total += n;
  return total;
}

}  // namespace attnlens::kernels
