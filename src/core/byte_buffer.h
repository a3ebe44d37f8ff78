// Owned bytes of any size the address space allows. std::vector<uint8_t> stops at 2^31 − 1 bytes in
// wasm32 (its max_size() is bounded by the 32-bit difference_type: "vector" length_error), and a
// model file can be larger than that while still fitting the 4 GB heap. The interface is the part of
// std::vector the loader and the tests use.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

namespace attnlens {

class ByteBuffer {
 public:
  ByteBuffer() = default;
  ByteBuffer(const std::vector<uint8_t>& v) { assign(v.begin(), v.end()); }  // NOLINT: as a vector converts
  ByteBuffer(const ByteBuffer& o) { assign(o.begin(), o.end()); }
  ByteBuffer(ByteBuffer&&) noexcept = default;
  ByteBuffer& operator=(const ByteBuffer& o) {
    if (this != &o) assign(o.begin(), o.end());
    return *this;
  }
  ByteBuffer& operator=(ByteBuffer&&) noexcept = default;
  ByteBuffer& operator=(const std::vector<uint8_t>& v) {
    assign(v.begin(), v.end());
    return *this;
  }

  // n bytes, contents unspecified (the caller fills them: a file being read). Throws std::bad_alloc.
  void allocate(size_t n) {
    p_.reset(n ? new uint8_t[n] : nullptr);
    n_ = n;
  }
  // As std::vector::resize: keeps the first min(size, n) bytes, zeroes the new ones.
  void resize(size_t n) {
    if (n == n_) return;
    std::unique_ptr<uint8_t[]> q(n ? new uint8_t[n] : nullptr);
    const size_t keep = n < n_ ? n : n_;
    if (keep) std::memcpy(q.get(), p_.get(), keep);
    if (n > keep) std::memset(q.get() + keep, 0, n - keep);
    p_ = std::move(q);
    n_ = n;
  }
  template <class It>
  void assign(It first, It last) {
    allocate(size_t(last - first));
    uint8_t* d = p_.get();
    for (; first != last; ++first) *d++ = uint8_t(*first);
  }

  uint8_t* data() { return p_.get(); }
  const uint8_t* data() const { return p_.get(); }
  size_t size() const { return n_; }
  bool empty() const { return n_ == 0; }
  uint8_t* begin() { return p_.get(); }
  uint8_t* end() { return p_.get() + n_; }
  const uint8_t* begin() const { return p_.get(); }
  const uint8_t* end() const { return p_.get() + n_; }
  // A copy as a vector (what tests that patch a file's bytes work on).
  operator std::vector<uint8_t>() const { return std::vector<uint8_t>(begin(), end()); }  // NOLINT
  uint8_t& operator[](size_t i) { return p_[i]; }
  const uint8_t& operator[](size_t i) const { return p_[i]; }

 private:
  std::unique_ptr<uint8_t[]> p_;
  size_t n_ = 0;
};

}  // namespace attnlens
