#include "core/error.h"

namespace attnlens::detail {

std::string join(const Part* parts, size_t n) {
  std::string s;
  char buf[32];
  for (size_t k = 0; k < n; ++k) {
    const Part& p = parts[k];
    switch (p.kind) {
      case Part::Kind::Text: s.append(p.text.data(), p.text.size()); break;
      case Part::Kind::Signed: s += std::to_string(p.i); break;
      case Part::Kind::Unsigned: s += std::to_string(p.u); break;
      case Part::Kind::Float:
        std::snprintf(buf, sizeof buf, "%g", p.f);
        s += buf;
        break;
      case Part::Kind::Char: s += char(p.i); break;
      case Part::Kind::Bool: s += p.i ? "true" : "false"; break;
    }
  }
  return s;
}

void fail_joined(const Part* parts, size_t n) { throw Error(join(parts, n)); }

}  // namespace attnlens::detail
