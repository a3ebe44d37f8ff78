// Internal: the regular expressions of tokenizer.json files (Split pre-tokenizers, Replace
// normalizers and decoders), on our own Unicode tables: no std::regex (no Unicode properties, and
// slow), no ICU or Oniguruma (far past the size budget of the wasm module).
//
// Why our own: the patterns real files use (GPT-2, Llama 3, Qwen2/3, GPT-4o / o200k, DeepSeek V3,
// BLOOM, Gemma, ...) are a small subset of Oniguruma's syntax, matched with Perl semantics
// (leftmost match, alternatives tried in order, greedy quantifiers backtracking). A backtracking
// matcher over a small compiled program implements exactly that in ~700 lines and a few KB of wasm,
// where RE2 or a port of Oniguruma would add hundreds of KB and RE2 has no lookahead.
//
// Supported (everything else is an error naming the construct and its offset in the pattern):
//   literals, escapes \t \n \r \f \v \e \a \0 \xHH \x{H..} \uHHHH, and escaped punctuation;
//   .  \s \S \d \D \w \W  \h \H;  \p{..} \P{..} \p{^..} with the general categories
//   (L Lu Ll Lt Lm Lo LC/L& M Mn Mc Me N Nd Nl No P Pc Pd Ps Pe Pi Pf Po S Sm Sc Sk So Z Zs Zl Zp
//   C Cc Cf Cs Co Cn, also by their long names like Letter or Uppercase_Letter);
//   classes [...] [^...] with ranges, escapes, properties and nested classes;
//   alternation |, groups ( ) (?: ) (?<name> ) (?i: ) (?-i: ) and inline (?i) (?-i);
//   quantifiers ? * + {n} {n,} {n,m}, each greedy, lazy (?) or possessive (+);
//   atomic groups (?> ), lookahead (?= ) (?! );  anchors ^ $ \A \z \Z \b \B.
// Case-insensitive matching folds ASCII letters (plus U+017F ſ ~ s and U+212A K ~ k, as Unicode
// simple case folding does); a non-ASCII letter under (?i) is an error.
// \s is Unicode White_Space, \d is \p{Nd}, \w is [\p{L}\p{M}\p{Nd}\p{Pc}], . is any code point but \n
// (Oniguruma's Unicode definitions). Ill-formed UTF-8 in the subject counts as U+FFFD.
// A repeated sub-pattern that can match the empty string (e.g. (a*)*) is rejected, and every
// search has a step budget proportional to the text, so matching never hangs: past the budget it
// throws.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace attnlens::tok {

// A text decoded once for matching: code points, their byte offsets and property bits.
struct Subject {
  explicit Subject(std::string_view text);
  std::string_view text;
  std::vector<char32_t> cp;
  std::vector<uint32_t> offset;  // byte offset of each code point; offset[size] = text.size()
  std::vector<uint8_t> info;     // general category | kWhiteSpace
  size_t size() const { return cp.size(); }
  static constexpr uint8_t kWhiteSpace = 0x80;

 private:
  static size_t fill(std::string_view t, char32_t* cp, uint32_t* offset, uint8_t* info, const uint8_t* ascii);
};

class Regex {
 public:
  // Throws attnlens::Error naming the pattern, the unsupported construct and its offset.
  explicit Regex(std::string_view pattern);
  ~Regex();
  Regex(Regex&&) noexcept;
  Regex& operator=(Regex&&) noexcept;

  // The leftmost match starting at code point `from` or later: [begin, end) in code points.
  bool search(const Subject& s, size_t from, size_t& begin, size_t& end) const;
  // Every non-overlapping non-empty match, left to right, as byte ranges of s.text.
  std::vector<std::pair<size_t, size_t>> find_all(const Subject& s) const;
  const std::string& pattern() const { return pattern_; }

  struct Program;

 private:
  std::string pattern_;
  std::unique_ptr<Program> prog_;
};

}  // namespace attnlens::tok
