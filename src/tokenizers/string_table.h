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

class StringTable {
 public:
  StringTable() : begin_(1, 0) {}
  void reserve(size_t count, size_t bytes) {
    chars_.reserve(bytes);
    begin_.reserve(count + 1);
    if (!fits(count)) rehash(count);
  }
  size_t size() const { return begin_.size() - 1; }
  std::string_view at(size_t i) const { return std::string_view(chars_.data() + begin_[i], begin_[i + 1] - begin_[i]); }

  // Index of s, or -1.
  int find(std::string_view s) const {
    if (slots_.empty()) return -1;
    const Key key(s);
    for (size_t k = key.home & mask_;; k = (k + 1) & mask_) {
      const Slot& slot = slots_[k];
      if (slot.index < 0) return -1;
      if (matches(slot, key, s)) return slot.index;
    }
  }
  // Index of s, adding it at the end if it is new.
  int insert(std::string_view s) {
    if (!fits(size() + 1)) rehash(size() + 1);
    const Key key(s);
    size_t k = key.home & mask_;
    for (;; k = (k + 1) & mask_) {
      const Slot& slot = slots_[k];
      if (slot.index < 0) break;
      if (matches(slot, key, s)) return slot.index;
    }
    const int index = int(size());
    slots_[k] = {key.head, key.tag, index};
    chars_.append(s.data(), s.size());
    begin_.push_back(uint32_t(chars_.size()));
    return index;
  }

 private:
  // A slot holds a string's first 8 bytes, so that a lookup of a string of at most 8 bytes (most
  // pieces of a vocabulary) reads one slot and no characters: one cache miss, not two.
  struct Slot {
    uint64_t head;   // the first 8 bytes, zero-padded
    uint32_t tag;    // 24 bits of the hash, then the length (255: 255 or more)
    int32_t index;   // -1: empty
  };
  // A string's hash (8 bytes at a time, multiply-xorshift mixing with splitmix64's constants), its
  // first 8 bytes and its tag, in one pass (always inlined: the size-optimized wasm build would
  // otherwise make a call per lookup, and one more to memcpy for a head of variable length).
  struct Key {
    uint64_t head = 0;
    uint32_t tag;
    size_t home;  // the first slot probed (before the mask)
    __attribute__((always_inline)) explicit Key(std::string_view s) {
      const size_t n = s.size();
      uint64_t h = 0x9E3779B97F4A7C15ull ^ (uint64_t(n) * 0xBF58476D1CE4E5B9ull);
      size_t i = 0;
      for (; i + 8 <= n; i += 8) {
        uint64_t v;
        std::memcpy(&v, s.data() + i, 8);
        if (i == 0) head = v;
        h = (h ^ v) * 0xBF58476D1CE4E5B9ull;
        h ^= h >> 31;
      }
      uint64_t tail = 0;  // the last n % 8 bytes, little-endian (as memcpy would load them)
      for (size_t k = i; k < n; ++k) tail |= uint64_t(uint8_t(s[k])) << (8 * (k - i));
      if (n < 8) head = tail;
      h = (h ^ tail) * 0x94D049BB133111EBull;
      h ^= h >> 29;
      tag = (uint32_t(h >> 40) << 8) | uint32_t(n < 255 ? n : 255);
      home = size_t(h);
    }
  };
  __attribute__((always_inline)) bool matches(const Slot& slot, const Key& key, std::string_view s) const {
    if (slot.head != key.head || slot.tag != key.tag) return false;
    if (s.size() <= 8) return true;  // same length (< 255), same bytes
    const size_t b = begin_[size_t(slot.index)];
    if (begin_[size_t(slot.index) + 1] - b != s.size()) return false;
    const char* a = chars_.data() + b;
    for (size_t i = 8; i < s.size(); ++i)  // short strings: a loop beats a call to memcmp in wasm
      if (a[i] != s[i]) return false;
    return true;
  }
  bool fits(size_t count) const { return 4 * count <= 3 * slots_.size(); }  // load factor <= 0.75
  void rehash(size_t count) {
    size_t n = 16;
    while (3 * n < 4 * count) n *= 2;
    slots_.assign(n, Slot{0, 0, -1});
    mask_ = n - 1;
    for (uint32_t i = 0; i < size(); ++i) {
      const Key key(at(i));
      size_t k = key.home & mask_;
      while (slots_[k].index >= 0) k = (k + 1) & mask_;
      slots_[k] = {key.head, key.tag, int32_t(i)};
    }
  }
  std::string chars_;
  std::vector<uint32_t> begin_;  // string i is chars_[begin_[i], begin_[i + 1])
  std::vector<Slot> slots_;
  size_t mask_ = 0;
};

}  // namespace attnlens::tok
