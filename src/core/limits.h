// Limits on what a file may ask of the engine, checked before anything is allocated, and the checked
// arithmetic that computes sizes from a file's numbers. Real checkpoints stay far below every limit
// (the largest real vocabularies have ~1M tokens, contexts ~1M positions, models ~128 layers); a
// file that claims more is refused with a message naming the file and the key instead of making
// the engine allocate gigabytes or wrap a 32-bit size (size_t is 32 bits in wasm32).
#pragma once
#include <cstddef>
#include <cstdint>
#include <initializer_list>

#include "core/error.h"

namespace attnlens::limits {

constexpr int kMaxContext = 1 << 20;      // positions of a model or a session
constexpr int kMaxLayers = 1024;          // layers of a stack (encoder or decoder)
constexpr int kMaxHeads = 4096;           // attention heads
constexpr int kMaxVocab = 1 << 20;        // token ids (XLM-V, the largest real vocabulary: 901,629)
constexpr int kMaxTokenBytes = 1 << 16;   // bytes of one token's text (real: < 1 KB)
constexpr int kMaxMerges = 1 << 21;       // BPE merge rules (real: < 1M)
constexpr int kMaxJsonDepth = 32;         // nesting of a JSON file (real config/tokenizer files: < 10)
// One buffer the engine allocates (KV cache of a layer, scratch of a pass, attention record): the
// largest a wasm32 module can hand out in one piece with room for the rest of the heap.
constexpr uint64_t kMaxBufferBytes = uint64_t(1) << 31;

// The product of `factors` (element counts and an element size) in 64-bit arithmetic, as size_t;
// throws attnlens::Error naming `what` when it overflows or exceeds kMaxBufferBytes, so that no
// 32-bit product can wrap and no allocation can be asked for more than the module can address.
inline size_t checked_bytes(const char* what, std::initializer_list<uint64_t> factors) {
  uint64_t total = 1;
  bool overflow = false;
  for (uint64_t f : factors) overflow |= __builtin_mul_overflow(total, f, &total);
  if (overflow || total > kMaxBufferBytes) {
    std::string dims;
    for (uint64_t f : factors) dims += (dims.empty() ? "" : " × ") + std::to_string(f);
    fail(what, " would need ", dims, overflow ? " bytes (more than 2^64)" : str(" = ", total, " bytes"),
         ", more than the ", kMaxBufferBytes, " bytes one buffer of the engine may take");
  }
  return size_t(total);
}

}  // namespace attnlens::limits
