// Private to src/kernels: per-thread, 64-byte aligned scratch buffers that grow on demand and are
// reused across calls (packed matmul panels of W and x, quantized activations). No exceptions: get()
// returns nullptr when the allocation fails, and the caller falls back to its scalar reference.
// Which pool thread runs which task varies from pass to pass, so every thread's buffers end at the
// largest size any of them needed; kernels::release_scratch() (kernels.h) gives them all back.
#pragma once
#include <cstddef>

namespace attnlens::kernels::scratch {

enum Slot { kPanel = 0, kPackedX = 1, kActivations = 2, kWidened = 3, kShared = 4, kSlots = 5 };  // kShared: shared_scratch()

// This thread's buffer `slot`, at least `bytes` long; valid until this thread asks for a larger one
// or release_scratch() runs.
void* get(Slot slot, size_t bytes) noexcept;

}  // namespace attnlens::kernels::scratch
