#include "core/json.h"

#include "core/error.h"
#include "core/limits.h"

namespace attnlens {

int json_depth_exceeds(const char* p, const char* end, int limit) {
  int depth = 0;
  bool in_string = false;
  for (; p < end; ++p) {
    const char c = *p;
    if (in_string) {
      if (c == '\\') ++p;  // skip the escaped character (a quote or a backslash)
      else if (c == '"') in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > limit) return depth;
    } else if (c == ']' || c == '}') {
      --depth;
    }
  }
  return 0;
}

bool parse_json_dom(const char* begin, const char* end, nlohmann::json& result, bool allow_exceptions) {
  // json::parse(begin, end) without what it also instantiates: the callback-filtering parser (used
  // only with a callback) and, through json::sax_parse, the binary formats' readers — 15 KB and 35 KB
  // of wasm. The same JSON parser and DOM builder: same grammar, same values, same errors.
  auto parser = nlohmann::detail::parser<nlohmann::json, decltype(nlohmann::detail::input_adapter(begin, end))>(
      nlohmann::detail::input_adapter(begin, end), nullptr, allow_exceptions, /*skip_comments=*/false);
  nlohmann::detail::json_sax_dom_parser<nlohmann::json> sax(result, allow_exceptions);
  return parser.sax_parse(&sax, /*strict=*/true);
}

nlohmann::json parse_json(const char* begin, const char* end, const std::string& what) {
  if (json_depth_exceeds(begin, end, limits::kMaxJsonDepth))
    fail(what, ": JSON nested more than ", limits::kMaxJsonDepth, " levels deep (no real file needs that many)");
  try {
    nlohmann::json result;
    parse_json_dom(begin, end, result, /*allow_exceptions=*/true);
    return result;
  } catch (const nlohmann::json::exception& e) {
    // e.what() is "[json.exception.parse_error.101] parse error at line 1, column 7: …": the
    // library's own words, kept for the position; its excerpt of the text is short.
    fail(what, " is not valid JSON: ", e.what());
  }
}

namespace {
// s cut to at most n bytes, not inside a UTF-8 character.
std::string cut(const std::string& s, size_t n) {
  if (s.size() <= n) return s;
  while (n > 0 && (static_cast<unsigned char>(s[n]) & 0xC0) == 0x80) --n;
  return s.substr(0, n) + "…";
}
}  // namespace

std::string brief_name(const std::string& s) { return cut(s, 60); }

std::string json_brief(const nlohmann::json& v) {
  constexpr size_t kMax = 40;
  switch (v.type()) {
    case nlohmann::json::value_t::null: return "null";
    case nlohmann::json::value_t::boolean: return v.get<bool>() ? "true" : "false";
    case nlohmann::json::value_t::number_integer: return std::to_string(v.get<int64_t>());
    case nlohmann::json::value_t::number_unsigned: return std::to_string(v.get<uint64_t>());
    case nlohmann::json::value_t::number_float: return v.dump();  // a scalar: no recursion, JSON's spelling
    case nlohmann::json::value_t::string: {
      const std::string& s = v.get_ref<const std::string&>();
      if (s.size() <= kMax) return "\"" + s + "\"";
      return "\"" + cut(s, kMax) + "\" (" + std::to_string(s.size()) + " bytes)";
    }
    case nlohmann::json::value_t::object: return str("an object with ", v.size(), v.size() == 1 ? " key" : " keys");
    case nlohmann::json::value_t::array: return str("an array of ", v.size(), v.size() == 1 ? " value" : " values");
    case nlohmann::json::value_t::binary: return "binary data";
    case nlohmann::json::value_t::discarded: return "nothing";
  }
  return "?";
}

}  // namespace attnlens
