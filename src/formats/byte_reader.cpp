#include "formats/byte_reader.h"

namespace attnlens {

std::string ByteReader::read_string(const char* what) {
  size_t at = pos_;
  uint64_t len = read<uint64_t>(what);
  if (len > remaining()) {
    ::attnlens::fail(name_, ": ", what, section_.empty() ? "" : " in ", section_, " at byte ", at, " claims ", len,
                     " bytes, but only ", remaining(), " remain");
  }
  const uint8_t* p = take(len, what);
  return std::string(reinterpret_cast<const char*>(p), static_cast<size_t>(len));
}

void ByteReader::seek(uint64_t pos, const char* what) {
  if (pos > size_) fail(what, " at byte ", pos, " is past the end of the ", size_, "-byte file");
  pos_ = static_cast<size_t>(pos);
}

void ByteReader::fail_truncated(uint64_t n, const char* what) const {
  ::attnlens::fail(name_, ": truncated at byte ", pos_, section_.empty() ? "" : " in ", section_, ": ", what, " needs ", n,
                   " bytes, ", remaining(), " remain");
}

}  // namespace attnlens
