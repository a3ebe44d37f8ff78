// One exception type for every engine failure: bad input, bad files, bad shapes.
// The bindings turn it into a JavaScript Error carrying what() unchanged, so messages must
// say precisely what was wrong and where (file, tensor, argument, expected vs. got).
#pragma once
#include <cstdio>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>

namespace attnlens {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

// A computation stopped because its caller asked it to (Session::should_stop): not a failure of the
// input. Generation turns it into finish_reason "aborted".
class Cancelled : public Error {
 public:
  Cancelled() : Error("cancelled") {}
};

namespace detail {
// Message pieces are appended with to_string / %g rather than through an ostringstream: iostreams
// would add ~170 KB to the WebAssembly module.
inline void append(std::string& s, const std::string& v) { s += v; }
inline void append(std::string& s, std::string_view v) { s.append(v.data(), v.size()); }
inline void append(std::string& s, const char* v) { s += v ? v : "(null)"; }
inline void append(std::string& s, char v) { s += v; }
inline void append(std::string& s, bool v) { s += v ? "true" : "false"; }
template <class T>
std::enable_if_t<std::is_integral_v<T>> append(std::string& s, T v) {
  s += std::to_string(v);
}
template <class T>
std::enable_if_t<std::is_floating_point_v<T>> append(std::string& s, T v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", double(v));
  s += buf;
}
}  // namespace detail

// Concatenates the parts into a string: str("tensor ", name, " has ", n, " rows").
template <class... Parts>
std::string str(const Parts&... parts) {
  std::string s;
  (detail::append(s, parts), ...);
  return s;
}

// Throws attnlens::Error built from the parts: fail("tensor ", name, ": expected ", n, " rows").
template <class... Parts>
[[noreturn]] void fail(const Parts&... parts) {
  throw Error(str(parts...));
}

}  // namespace attnlens

// AL_CHECK(cond, parts...): throws attnlens::Error built from parts when cond is false.
#define AL_CHECK(cond, ...)                 \
  do {                                      \
    if (!(cond)) ::attnlens::fail(__VA_ARGS__); \
  } while (0)
