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
// One piece of a message: text, or a number formatted the way to_string / %g would. A call to
// str() / fail() builds an array of these (trivially destructible, so no exception cleanup code) and
// hands it to one out-of-line function: each distinct argument list costs a few bytes of wasm instead
// of a whole string-building function (the engine has hundreds of such messages).
// (Pieces are appended with to_string / %g rather than through an ostringstream: iostreams would add
// ~170 KB to the WebAssembly module.)
struct Part {
  enum class Kind : unsigned char { Text, Signed, Unsigned, Float, Char, Bool } kind;
  std::string_view text;
  long long i = 0;
  unsigned long long u = 0;
  double f = 0;
  Part(const std::string& v) : kind(Kind::Text), text(v) {}
  Part(std::string_view v) : kind(Kind::Text), text(v) {}
  Part(const char* v) : kind(Kind::Text), text(v ? v : "(null)") {}
  Part(char v) : kind(Kind::Char), i(v) {}
  Part(bool v) : kind(Kind::Bool), i(v) {}
  template <class T, std::enable_if_t<std::is_integral_v<T> && std::is_signed_v<T> && !std::is_same_v<T, char> &&
                                          !std::is_same_v<T, bool>, int> = 0>
  Part(T v) : kind(Kind::Signed), i(v) {}
  template <class T, std::enable_if_t<std::is_integral_v<T> && std::is_unsigned_v<T> && !std::is_same_v<T, char> &&
                                          !std::is_same_v<T, bool>, int> = 0>
  Part(T v) : kind(Kind::Unsigned), u(v) {}
  template <class T, std::enable_if_t<std::is_floating_point_v<T>, int> = 0>
  Part(T v) : kind(Kind::Float), f(double(v)) {}
};
std::string join(const Part* parts, size_t n);
[[noreturn]] void fail_joined(const Part* parts, size_t n);
}  // namespace detail

// Concatenates the parts into a string: str("tensor ", name, " has ", n, " rows").
template <class... Parts>
std::string str(const Parts&... parts) {
  const detail::Part list[] = {detail::Part(parts)..., detail::Part("")};
  return detail::join(list, sizeof...(Parts));
}

// Throws attnlens::Error built from the parts: fail("tensor ", name, ": expected ", n, " rows").
template <class... Parts>
[[noreturn]] void fail(const Parts&... parts) {
  const detail::Part list[] = {detail::Part(parts)..., detail::Part("")};
  detail::fail_joined(list, sizeof...(Parts));
}

}  // namespace attnlens

// AL_CHECK(cond, parts...): throws attnlens::Error built from parts when cond is false.
#define AL_CHECK(cond, ...)                 \
  do {                                      \
    if (!(cond)) ::attnlens::fail(__VA_ARGS__); \
  } while (0)
