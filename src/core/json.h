// JSON from files (config.json, tokenizer.json, safetensors headers and indexes, GGUF metadata) is
// untrusted: it is parsed with a nesting limit, and error messages describe its values briefly
// without walking them (no dump(): that recursion over a deeply nested value overflowed the stack,
// and a huge value would make a huge message).
#pragma once
#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

namespace attnlens {

// Parses [begin, end) as JSON. Throws attnlens::Error starting with `what` (the file, and the part
// of it: "model.safetensors: the header") when the text nests deeper than limits::kMaxJsonDepth
// (checked by a scan before parsing) or is not valid JSON.
nlohmann::json parse_json(const char* begin, const char* end, const std::string& what);
inline nlohmann::json parse_json(const uint8_t* begin, size_t size, const std::string& what) {
  const char* p = reinterpret_cast<const char*>(begin);
  return parse_json(p, p + size, what);
}

// The JSON parser itself, no depth check and no message: result is the value of [begin, end);
// allow_exceptions: a syntax error throws nlohmann's parse_error, else returns false (result then
// unspecified). Use parse_json for files; this is for callers that only probe (formats/detect.cpp).
bool parse_json_dom(const char* begin, const char* end, nlohmann::json& result, bool allow_exceptions);

// The first nesting depth of [begin, end) beyond `limit` (1 for "[" or "{"), or 0 when it stays
// within: brackets inside strings do not count. Linear, no allocation.
int json_depth_exceeds(const char* begin, const char* end, int limit);

// A short description of a JSON value for an error message: numbers and booleans as written,
// strings quoted and cut after 40 bytes, "an object with 3 keys", "an array of 2 values", "null".
std::string json_brief(const nlohmann::json& v);

// A name or key from a file, for a message: as it is when short, else its first 60 bytes and "…".
std::string brief_name(const std::string& s);

}  // namespace attnlens
