// One exception type for every engine failure: bad input, bad files, bad shapes.
// The bindings turn it into a JavaScript Error carrying what() unchanged, so messages must
// say precisely what was wrong and where (file, tensor, argument, expected vs. got).
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>

namespace attnlens {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

namespace detail {
inline void append(std::ostringstream&) {}
template <class T, class... Rest>
void append(std::ostringstream& os, const T& first, const Rest&... rest) {
  os << first;
  append(os, rest...);
}
}  // namespace detail

// Builds the message from its parts: fail("tensor ", name, ": expected ", n, " rows").
template <class... Parts>
[[noreturn]] void fail(const Parts&... parts) {
  std::ostringstream os;
  detail::append(os, parts...);
  throw Error(os.str());
}

}  // namespace attnlens

// AL_CHECK(cond, parts...): throws attnlens::Error built from parts when cond is false.
#define AL_CHECK(cond, ...)                 \
  do {                                      \
    if (!(cond)) ::attnlens::fail(__VA_ARGS__); \
  } while (0)
