// A bounds-checked little-endian cursor over a file's bytes, shared by every format reader.
// Every read checks the remaining length first and throws attnlens::Error naming the file, the byte
// offset, the field being read and (optionally) the section it belongs to, e.g.
//   "x.gguf: truncated at byte 1234 in tensor info #3 (blk.0.attn_q.weight): the ggml type needs 4 bytes, 2 remain"
// Sizes coming from the file are uint64_t and are compared as such before anything is converted to
// size_t (32 bits in wasm32), so a lying header can never wrap an offset or drive an allocation.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>

#include "core/error.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "the format readers read little-endian files with memcpy and assume a little-endian host (x86, wasm)"
#endif

namespace attnlens {

// a * b, or false when it does not fit in 64 bits.
inline bool checked_mul(uint64_t a, uint64_t b, uint64_t* out) { return !__builtin_mul_overflow(a, b, out); }
inline bool checked_add(uint64_t a, uint64_t b, uint64_t* out) { return !__builtin_add_overflow(a, b, out); }

class ByteReader {
 public:
  ByteReader(const uint8_t* data, size_t size, std::string name) : data_(data), size_(size), name_(std::move(name)) {}

  const std::string& name() const { return name_; }
  size_t pos() const { return pos_; }
  size_t size() const { return size_; }
  size_t remaining() const { return size_ - pos_; }
  const uint8_t* data() const { return data_; }

  // What is being read, appended to truncation messages ("tensor info #3 (blk.0.attn_q.weight)").
  void set_section(std::string section) { section_ = std::move(section); }

  // Reads one little-endian scalar. `what` names the field in messages ("the tensor count").
  template <class T>
  T read(const char* what) {
    static_assert(std::is_arithmetic<T>::value, "ByteReader::read reads scalars");
    need(sizeof(T), what);
    T v;
    std::memcpy(&v, data_ + pos_, sizeof(T));
    pos_ += sizeof(T);
    return v;
  }

  // Returns a pointer to the next n bytes and moves past them.
  const uint8_t* take(uint64_t n, const char* what) {
    need(n, what);
    const uint8_t* p = data_ + pos_;
    pos_ += static_cast<size_t>(n);
    return p;
  }
  void skip(uint64_t n, const char* what) { take(n, what); }

  // GGUF string: u64 byte length, then the bytes (no terminator). The length is checked against the
  // remaining bytes before anything is allocated.
  std::string read_string(const char* what);

  // Moves to an absolute offset (<= size()).
  void seek(uint64_t pos, const char* what);

  // Throws "<name>: <parts...>" (for problems that are not about running out of bytes).
  template <class... Parts>
  [[noreturn]] void fail(const Parts&... parts) const {
    ::attnlens::fail(name_, ": ", parts...);
  }

 private:
  void need(uint64_t n, const char* what) const {
    if (n > remaining()) fail_truncated(n, what);
  }
  [[noreturn]] void fail_truncated(uint64_t n, const char* what) const;

  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
  std::string name_;
  std::string section_;
};

}  // namespace attnlens
