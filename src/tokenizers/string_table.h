// Internal: a set of strings in one buffer with an open-addressing hash index, for the lookups that
// dominate loading (a 128k-piece vocabulary, 280k merges) and encoding (the per-call word cache).
// std::unordered_map<std::string...> costs a heap node per entry and a slower hash; this costs two
// flat arrays, and keeps the wasm module smaller than another unordered_map instantiation would.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace attnlens::tok {

inline uint64_t hash_bytes(std::string_view s) {
  // 8 bytes at a time, multiply-xorshift mixing (constants from splitmix64).
  uint64_t h = 0x9E3779B97F4A7C15ull ^ (uint64_t(s.size()) * 0xBF58476D1CE4E5B9ull);
  size_t i = 0;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t v;
    std::memcpy(&v, s.data() + i, 8);
    h = (h ^ v) * 0xBF58476D1CE4E5B9ull;
    h ^= h >> 31;
  }
  uint64_t tail = 0;
  for (size_t k = i; k < s.size(); ++k) tail = (tail << 8) | uint8_t(s[k]);
  h = (h ^ tail) * 0x94D049BB133111EBull;
  return h ^ (h >> 29);
}

class StringTable {
 public:
  StringTable() : begin_(1, 0) {}
  void reserve(size_t count, size_t bytes) {
    chars_.reserve(bytes);
    begin_.reserve(count + 1);
    if (!fits(count)) rehash(count);
  }
  size_t size() const { return begin_.size() - 1; }
  std::string_view at(size_t i) const { return std::string_view(chars_).substr(begin_[i], begin_[i + 1] - begin_[i]); }

  // Index of s, or -1.
  int find(std::string_view s) const {
    if (slots_.empty()) return -1;
    const uint64_t h = hash_bytes(s);
    for (size_t k = size_t(h) & mask_;; k = (k + 1) & mask_) {
      const Slot& slot = slots_[k];
      if (slot.index < 0) return -1;
      if (matches(slot, h, s)) return slot.index;
    }
  }
  // Index of s, adding it at the end if it is new.
  int insert(std::string_view s) {
    if (!fits(size() + 1)) rehash(size() + 1);
    const uint64_t h = hash_bytes(s);
    size_t k = size_t(h) & mask_;
    for (;; k = (k + 1) & mask_) {
      const Slot& slot = slots_[k];
      if (slot.index < 0) break;
      if (matches(slot, h, s)) return slot.index;
    }
    const int index = int(size());
    slots_[k] = {uint32_t(h >> 32), uint32_t(chars_.size()), uint32_t(s.size()), index};
    chars_.append(s.data(), s.size());
    begin_.push_back(uint32_t(chars_.size()));
    return index;
  }

 private:
  // One probe reads the slot, then (on a tag match) the characters: two cache misses per lookup.
  struct Slot {
    uint32_t tag, begin, len;
    int32_t index;  // -1: empty
  };
  bool matches(const Slot& slot, uint64_t h, std::string_view s) const {
    if (slot.tag != uint32_t(h >> 32) || slot.len != s.size()) return false;
    const char* a = chars_.data() + slot.begin;
    for (size_t i = 0; i < s.size(); ++i)  // short strings: a loop beats a call to memcmp in wasm
      if (a[i] != s[i]) return false;
    return true;
  }
  bool fits(size_t count) const { return 4 * count <= 3 * slots_.size(); }  // load factor <= 0.75
  void rehash(size_t count) {
    size_t n = 16;
    while (3 * n < 4 * count) n *= 2;
    slots_.assign(n, Slot{0, 0, 0, -1});
    mask_ = n - 1;
    for (uint32_t i = 0; i < size(); ++i) {
      const std::string_view s = at(i);
      const uint64_t h = hash_bytes(s);
      size_t k = size_t(h) & mask_;
      while (slots_[k].index >= 0) k = (k + 1) & mask_;
      slots_[k] = {uint32_t(h >> 32), begin_[i], uint32_t(s.size()), int32_t(i)};
    }
  }
  std::string chars_;
  std::vector<uint32_t> begin_;  // string i is chars_[begin_[i], begin_[i + 1])
  std::vector<Slot> slots_;
  size_t mask_ = 0;
};

}  // namespace attnlens::tok
