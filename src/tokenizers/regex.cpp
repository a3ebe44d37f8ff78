// The tokenizer regex engine (see regex.h): a recursive-descent parser builds a small syntax tree,
// which is compiled to a program for a backtracking machine in the style of Thompson's / Pike's
// instruction sets (char, class, split, jump, match) plus a counted repeat of a single-character
// matcher (so \p{L}+ runs as a tight loop), lookahead and atomic sub-programs.
#include "tokenizers/regex.h"

#include <algorithm>

#include "core/error.h"
#include "tokenizers/unicode.h"

namespace attnlens::tok {

using unicode::Category;

namespace {

constexpr uint32_t kInf = UINT32_MAX;
constexpr uint32_t kMaxRepeat = 1000;      // {n,m} bounds
constexpr size_t kMaxProgram = 100000;     // instructions, after expanding counted repeats
constexpr int kMaxNesting = 200;           // parentheses and nested classes

uint32_t cat_bit(Category c) { return 1u << unsigned(c); }
constexpr uint32_t kLetters = 0x1F, kMarks = 0xE0, kNumbers = 0x700, kPunct = 0x3F800, kSymbols = 0x3C0000,
                   kSeparators = 0x1C00000, kOthers = 0x3E000000;

// A set of code points: categories, White_Space (or its complement), ranges, nested sets; negated.
struct CharClass {
  uint32_t cats = 0;
  bool space = false, not_space = false, negate = false;
  std::vector<std::pair<char32_t, char32_t>> ranges;  // sorted and merged by finish()
  std::vector<CharClass> subs;                        // unions with nested classes
  uint64_t ascii[2] = {0, 0};                         // the answer for code points < 128

  bool slow_match(char32_t cp, uint8_t info) const {
    bool r = ((cats >> (info & 0x1F)) & 1) != 0;
    if (!r && (space || not_space)) r = (info & Subject::kWhiteSpace) ? space : not_space;
    if (!r && !ranges.empty()) {
      auto it = std::upper_bound(ranges.begin(), ranges.end(), cp,
                                 [](char32_t c, const std::pair<char32_t, char32_t>& rg) { return c < rg.first; });
      r = it != ranges.begin() && cp <= (it - 1)->second;
    }
    for (size_t i = 0; !r && i < subs.size(); ++i) r = subs[i].match(cp, info);
    return r != negate;
  }
  bool match(char32_t cp, uint8_t info) const {
    if (cp < 128) return (ascii[cp >> 6] >> (cp & 63)) & 1;
    return slow_match(cp, info);
  }
  void finish() {
    std::sort(ranges.begin(), ranges.end());
    std::vector<std::pair<char32_t, char32_t>> merged;
    for (const auto& r : ranges) {
      if (!merged.empty() && r.first <= merged.back().second + 1)
        merged.back().second = std::max(merged.back().second, r.second);
      else
        merged.push_back(r);
    }
    ranges = std::move(merged);
    for (auto& s : subs) s.finish();
    ascii[0] = ascii[1] = 0;
    for (char32_t c = 0; c < 128; ++c)
      if (slow_match(c, info_of(c))) ascii[c >> 6] |= uint64_t(1) << (c & 63);
  }
  static uint8_t info_of(char32_t cp) {
    return uint8_t(unsigned(unicode::category(cp)) | (unicode::is_white_space(cp) ? Subject::kWhiteSpace : 0));
  }
};

bool is_word(char32_t cp, uint8_t info) {
  (void)cp;
  const Category c = Category(info & 0x1F);
  return (cat_bit(c) & (kLetters | kMarks)) || c == Category::Nd || c == Category::Pc;
}

// --- syntax tree ----------------------------------------------------------------------------------

enum class NodeKind : uint8_t { Empty, Char, Class, Any, Concat, Alt, Repeat, Look, Atomic, Assert };
enum class AssertKind : uint8_t { LineStart, LineEnd, TextStart, TextEnd, TextEndNewline, WordBoundary, NotWordBoundary };

struct Node {
  NodeKind kind = NodeKind::Empty;
  char32_t c = 0;
  int cls = -1;  // index into the class table
  std::vector<Node> kids;
  uint32_t min = 0, max = 0;
  bool greedy = true, possessive = false, negate = false;
  AssertKind assert_kind = AssertKind::LineStart;
};

bool single_char(const Node& n) { return n.kind == NodeKind::Char || n.kind == NodeKind::Class || n.kind == NodeKind::Any; }

bool nullable(const Node& n) {
  switch (n.kind) {
    case NodeKind::Char: case NodeKind::Class: case NodeKind::Any: return false;
    case NodeKind::Concat:
      return std::all_of(n.kids.begin(), n.kids.end(), nullable);
    case NodeKind::Alt:
      return std::any_of(n.kids.begin(), n.kids.end(), nullable);
    case NodeKind::Repeat: return n.min == 0 || nullable(n.kids[0]);
    case NodeKind::Atomic: return nullable(n.kids[0]);
    default: return true;  // Empty, Look, Assert
  }
}

// The parser and the compiler run once per pattern: optimized for size even where this file is
// compiled for speed (the wasm build compiles it -O2 for the matcher's loops; CMakeLists.txt).
#ifdef __clang__
#pragma clang attribute push(__attribute__((minsize)), apply_to = function)
#endif

// --- parser ---------------------------------------------------------------------------------------

class Parser {
 public:
  Parser(std::string_view pattern, std::vector<CharClass>& classes) : pattern_(pattern), classes_(classes) {
    for (size_t pos = 0; pos < pattern.size();) {
      const unicode::Utf8Step s = unicode::decode_utf8(pattern, pos);
      if (!s.valid) fail_at("ill-formed UTF-8", pos);
      cps_.push_back(s.cp);
      offsets_.push_back(pos);
      pos += s.len;
    }
    offsets_.push_back(pattern.size());
  }

  Node parse() {
    Node n = alternation(false, 0);
    if (i_ < cps_.size()) fail_here("unbalanced ')'");
    return n;
  }

 private:
  [[noreturn]] void fail_at(const std::string& what, size_t byte_offset) const {
    fail("regex \"", std::string(pattern_), "\": ", what, " at offset ", byte_offset);
  }
  [[noreturn]] void fail_here(const std::string& what) const { fail_at(what, offsets_[std::min(i_, cps_.size())]); }
  bool more() const { return i_ < cps_.size(); }
  char32_t peek(size_t k = 0) const { return i_ + k < cps_.size() ? cps_[i_ + k] : 0; }
  bool eat(char32_t c) {
    if (more() && cps_[i_] == c) {
      ++i_;
      return true;
    }
    return false;
  }

  Node alternation(bool icase, int depth) {
    if (depth > kMaxNesting) fail_here("groups nested too deeply");
    Node alt;
    alt.kind = NodeKind::Alt;
    for (;;) {
      alt.kids.push_back(concatenation(icase, depth));
      if (!eat('|')) break;
    }
    return alt.kids.size() == 1 ? std::move(alt.kids[0]) : alt;
  }

  Node concatenation(bool& icase_in, int depth) {
    bool icase = icase_in;
    Node seq;
    seq.kind = NodeKind::Concat;
    while (more() && peek() != '|' && peek() != ')') {
      const size_t at = i_;
      if (peek() == '(' && peek(1) == '?' && (peek(2) == 'i' || peek(2) == '-')) {
        // inline flags "(?i)" / "(?-i)" change the rest of the enclosing group
        size_t k = 2;
        const bool on = peek(2) == 'i';
        if (!on && peek(3) != 'i') fail_here("unsupported inline flag");
        k += on ? 1 : 2;
        if (peek(k) == ')') {
          i_ += k + 1;
          icase = on;
          continue;
        }
      }
      Node atom_node = atom(icase, depth);
      if (atom_node.kind == NodeKind::Empty && at == i_) fail_here("unexpected character");
      seq.kids.push_back(quantified(std::move(atom_node), at));
    }
    icase_in = icase;  // "(?i)" at top level stays on through later alternatives, as in Oniguruma
    if (seq.kids.size() == 1) return std::move(seq.kids[0]);
    if (seq.kids.empty()) return Node{};
    return seq;
  }

  Node quantified(Node n, size_t at) {
    for (;;) {
      uint32_t lo, hi;
      const size_t q = i_;
      if (eat('?')) lo = 0, hi = 1;
      else if (eat('*')) lo = 0, hi = kInf;
      else if (eat('+')) lo = 1, hi = kInf;
      else if (peek() == '{' && counted(lo, hi)) {}
      else return n;
      if (n.kind == NodeKind::Empty || n.kind == NodeKind::Assert || n.kind == NodeKind::Look)
        fail_at("quantifier without something to repeat", offsets_[q]);
      Node r;
      r.kind = NodeKind::Repeat;
      r.min = lo;
      r.max = hi;
      if (eat('?')) r.greedy = false;
      else if (eat('+')) r.possessive = true;
      if (hi == kInf && nullable(n))
        fail_at("a repeated sub-pattern that can match the empty string", offsets_[at]);
      r.kids.push_back(std::move(n));
      n = std::move(r);
    }
  }

  // "{n}", "{n,}", "{n,m}" (a "{" that starts none of these is a literal, as in Oniguruma).
  bool counted(uint32_t& lo, uint32_t& hi) {
    size_t k = i_ + 1;
    const auto number = [&](uint32_t& v) {
      const size_t start = k;
      uint64_t x = 0;
      while (k < cps_.size() && cps_[k] >= '0' && cps_[k] <= '9') {
        x = x * 10 + (cps_[k] - '0');
        if (x > kMaxRepeat) fail_at("repeat count above 1000", offsets_[start]);
        ++k;
      }
      v = uint32_t(x);
      return k > start;
    };
    if (!number(lo)) return false;
    hi = lo;
    if (k < cps_.size() && cps_[k] == ',') {
      ++k;
      if (!number(hi)) hi = kInf;
    }
    if (k >= cps_.size() || cps_[k] != '}') return false;
    if (hi < lo) fail_here("repeat {n,m} with m < n");
    i_ = k + 1;
    return true;
  }

  Node make_class(CharClass c) {
    Node n;
    n.kind = NodeKind::Class;
    c.finish();
    classes_.push_back(std::move(c));
    n.cls = int(classes_.size() - 1);
    return n;
  }

  Node literal(char32_t c, bool icase) {
    if (icase) {
      CharClass cc;
      cc.ranges.push_back({c, c});
      fold_case(cc, offsets_[i_ - 1]);
      if (cc.ranges.size() > 1) return make_class(std::move(cc));
    }
    Node n;
    n.kind = NodeKind::Char;
    n.c = c;
    return n;
  }

  // Adds the other case of ASCII letters (and ſ / K, which Unicode case folding maps onto s / k).
  void fold_case(CharClass& cc, size_t at) {
    std::vector<std::pair<char32_t, char32_t>> extra;
    for (const auto& [a, b] : cc.ranges) {
      for (const char32_t lo : {char32_t('a'), char32_t('A')}) {
        const char32_t x = std::max(a, lo), y = std::min<char32_t>(b, lo + 25);
        if (x > y) continue;
        extra.push_back({x ^ 0x20, y ^ 0x20});
        const char32_t s = lo == 'a' ? 's' : 'S', k = lo == 'a' ? 'k' : 'K';
        if (x <= s && s <= y) extra.push_back({0x17F, 0x17F});
        if (x <= k && k <= y) extra.push_back({0x212A, 0x212A});
      }
      // Any other cased letter would need full Unicode case folding.
      const char32_t hi = std::min<char32_t>(b, 0x1FFFF);
      for (char32_t c = std::max<char32_t>(a, 0x80); c <= hi; ++c) {
        const Category cat = unicode::category(c);
        if (cat == Category::Lu || cat == Category::Ll || cat == Category::Lt)
          fail_at("case-insensitive matching of a non-ASCII letter (only ASCII letters fold)", at);
      }
    }
    cc.ranges.insert(cc.ranges.end(), extra.begin(), extra.end());
    const uint32_t cased = cat_bit(Category::Lu) | cat_bit(Category::Ll) | cat_bit(Category::Lt);
    if ((cc.cats & cased) != 0 && (cc.cats & cased) != cased) fail_at("case-insensitive \\p{Lu} / \\p{Ll} / \\p{Lt}", at);
    for (auto& sub : cc.subs) fold_case(sub, at);
  }

  Node atom(bool icase, int depth) {
    const char32_t c = peek();
    const size_t at = offsets_[i_];
    if (c == '(') return group(icase, depth);
    if (c == '[') {
      ++i_;
      CharClass cc = bracket(icase, depth + 1);
      return make_class(std::move(cc));
    }
    ++i_;
    switch (c) {
      case '.': {
        Node n;
        n.kind = NodeKind::Any;
        return n;
      }
      case '^': return assertion(AssertKind::LineStart);
      case '$': return assertion(AssertKind::LineEnd);
      case '\\': return escape(icase);
      case '*': case '+': case '?': fail_at("quantifier without something to repeat", at);
      case ')': fail_at("unbalanced ')'", at);
      default: return literal(c, icase);
    }
  }

  Node assertion(AssertKind k) {
    Node n;
    n.kind = NodeKind::Assert;
    n.assert_kind = k;
    return n;
  }

  Node group(bool icase, int depth) {
    const size_t at = offsets_[i_];
    ++i_;  // '('
    Node n;
    if (eat('?')) {
      const char32_t k = peek();
      if (k == ':') {
        ++i_;
        n = alternation(icase, depth + 1);
      } else if (k == 'i' || k == '-') {
        const bool on = k == 'i';
        i_ += on ? 1 : 2;
        if (!on && cps_[i_ - 1] != 'i') fail_at("unsupported inline flag", at);
        if (!eat(':')) fail_at("unsupported inline flag group", at);
        n = alternation(on, depth + 1);
      } else if (k == '=' || k == '!') {
        ++i_;
        n.kind = NodeKind::Look;
        n.negate = k == '!';
        n.kids.push_back(alternation(icase, depth + 1));
      } else if (k == '>') {
        ++i_;
        n.kind = NodeKind::Atomic;
        n.kids.push_back(alternation(icase, depth + 1));
      } else if (k == '<' && (peek(1) == '=' || peek(1) == '!')) {
        fail_at("unsupported lookbehind (?<=...) / (?<!...)", at);
      } else if (k == '<' || k == 'P' || k == '\'') {  // named group: the name does not matter
        const char32_t close = k == '\'' ? '\'' : '>';
        if (k == 'P' && !(eat('P') && peek() == '<')) fail_at("unsupported group syntax", at);
        ++i_;
        while (more() && peek() != close) ++i_;
        if (!eat(close)) fail_at("unterminated group name", at);
        n = alternation(icase, depth + 1);
      } else {
        fail_at("unsupported group syntax \"(?" + std::string(1, char(k < 128 ? k : '?')) + "\"", at);
      }
    } else {
      n = alternation(icase, depth + 1);
    }
    if (!eat(')')) fail_at("unterminated group", at);
    return n;
  }

  // After a backslash outside a class.
  Node escape(bool icase) {
    CharClass cc;
    char32_t c;
    const size_t at = offsets_[i_ - 1];
    switch (escape_into(cc, c, icase, false)) {
      case EscapeKind::Literal: return literal(c, icase);
      case EscapeKind::Set:
        if (icase) fold_case(cc, at);
        return make_class(std::move(cc));
      case EscapeKind::Assert: return assertion(AssertKind(c));
    }
    return Node{};
  }

  enum class EscapeKind { Literal, Set, Assert };

  // Parses the escape after '\': a literal code point (c), a set added to cc, or an assertion
  // (c = its AssertKind).
  EscapeKind escape_into(CharClass& cc, char32_t& c, bool icase, bool in_class) {
    (void)icase;
    const size_t at = offsets_[i_ - 1];
    if (!more()) fail_at("pattern ends with a backslash", at);
    const char32_t e = cps_[i_++];
    switch (e) {
      case 't': c = '\t'; return EscapeKind::Literal;
      case 'n': c = '\n'; return EscapeKind::Literal;
      case 'r': c = '\r'; return EscapeKind::Literal;
      case 'f': c = '\f'; return EscapeKind::Literal;
      case 'v': c = '\v'; return EscapeKind::Literal;
      case 'a': c = 0x07; return EscapeKind::Literal;
      case 'e': c = 0x1B; return EscapeKind::Literal;
      case '0': c = 0; return EscapeKind::Literal;
      case 'x': c = hex_escape(at); return EscapeKind::Literal;
      case 'u': c = fixed_hex(4, at); return EscapeKind::Literal;
      case 's': cc.space = true; return EscapeKind::Set;
      case 'S': cc.not_space = true; return EscapeKind::Set;
      case 'd': cc.cats |= cat_bit(Category::Nd); return EscapeKind::Set;
      case 'D': cc.cats |= ~cat_bit(Category::Nd) & 0x3FFFFFFF; return EscapeKind::Set;
      case 'w': cc.cats |= kLetters | kMarks | cat_bit(Category::Nd) | cat_bit(Category::Pc); return EscapeKind::Set;
      case 'W': cc.cats |= ~(kLetters | kMarks | cat_bit(Category::Nd) | cat_bit(Category::Pc)) & 0x3FFFFFFF; return EscapeKind::Set;
      case 'h':
        cc.ranges.insert(cc.ranges.end(), {{'0', '9'}, {'A', 'F'}, {'a', 'f'}});
        return EscapeKind::Set;
      case 'H': {
        CharClass h;
        h.ranges = {{'0', '9'}, {'A', 'F'}, {'a', 'f'}};
        h.negate = true;
        cc.subs.push_back(std::move(h));
        return EscapeKind::Set;
      }
      case 'p': case 'P': property(cc, e == 'P', at); return EscapeKind::Set;
      default: break;
    }
    if (!in_class) {
      switch (e) {
        case 'A': c = char32_t(AssertKind::TextStart); return EscapeKind::Assert;
        case 'z': c = char32_t(AssertKind::TextEnd); return EscapeKind::Assert;
        case 'Z': c = char32_t(AssertKind::TextEndNewline); return EscapeKind::Assert;
        case 'b': c = char32_t(AssertKind::WordBoundary); return EscapeKind::Assert;
        case 'B': c = char32_t(AssertKind::NotWordBoundary); return EscapeKind::Assert;
        default: break;
      }
    }
    if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z') || (e >= '1' && e <= '9'))
      fail_at(std::string("unsupported escape \\") + char(e), at);
    c = e;  // escaped punctuation (or any other non-alphanumeric character) is itself
    return EscapeKind::Literal;
  }

  char32_t hex_escape(size_t at) {
    if (eat('{')) {
      uint32_t v = 0;
      size_t digits = 0;
      while (more() && peek() != '}') {
        const int d = hex_digit(cps_[i_++]);
        if (d < 0 || ++digits > 6) fail_at("bad \\x{...} escape", at);
        v = v * 16 + uint32_t(d);
      }
      if (!eat('}') || digits == 0 || v > 0x10FFFF) fail_at("bad \\x{...} escape", at);
      return v;
    }
    return fixed_hex(2, at);
  }
  char32_t fixed_hex(int n, size_t at) {
    uint32_t v = 0;
    for (int k = 0; k < n; ++k) {
      const int d = more() ? hex_digit(cps_[i_]) : -1;
      if (d < 0) fail_at("bad hexadecimal escape", at);
      ++i_;
      v = v * 16 + uint32_t(d);
    }
    return v;
  }
  static int hex_digit(char32_t c) {
    if (c >= '0' && c <= '9') return int(c - '0');
    if (c >= 'a' && c <= 'f') return int(c - 'a' + 10);
    if (c >= 'A' && c <= 'F') return int(c - 'A' + 10);
    return -1;
  }

  void property(CharClass& cc, bool negated, size_t at) {
    std::string name;
    if (eat('{')) {
      if (eat('^')) negated = !negated;
      while (more() && peek() != '}') {
        const char32_t c = cps_[i_++];
        if (c >= 128) fail_at("bad \\p{...} name", at);
        if (c != ' ' && c != '_' && c != '-') name.push_back(char(c >= 'A' && c <= 'Z' ? c + 32 : c));
      }
      if (!eat('}')) fail_at("unterminated \\p{...}", at);
    } else if (more() && cps_[i_] < 128) {
      name.push_back(char(cps_[i_++]));
      if (name[0] >= 'A' && name[0] <= 'Z') name[0] = char(name[0] + 32);
    }
    struct Named {
      const char* short_name;
      const char* long_name;
      uint32_t cats;
    };
    static const Named kNames[] = {
        {"l", "letter", kLetters}, {"lu", "uppercaseletter", 1u << 0}, {"ll", "lowercaseletter", 1u << 1},
        {"lt", "titlecaseletter", 1u << 2}, {"lm", "modifierletter", 1u << 3}, {"lo", "otherletter", 1u << 4},
        {"lc", "casedletter", 0x7}, {"l&", "casedletter", 0x7}, {"m", "mark", kMarks},
        {"mn", "nonspacingmark", 1u << 5}, {"mc", "spacingmark", 1u << 6}, {"me", "enclosingmark", 1u << 7},
        {"n", "number", kNumbers}, {"nd", "decimalnumber", 1u << 8}, {"nl", "letternumber", 1u << 9},
        {"no", "othernumber", 1u << 10}, {"p", "punctuation", kPunct}, {"pc", "connectorpunctuation", 1u << 11},
        {"pd", "dashpunctuation", 1u << 12}, {"ps", "openpunctuation", 1u << 13}, {"pe", "closepunctuation", 1u << 14},
        {"pi", "initialpunctuation", 1u << 15}, {"pf", "finalpunctuation", 1u << 16}, {"po", "otherpunctuation", 1u << 17},
        {"s", "symbol", kSymbols}, {"sm", "mathsymbol", 1u << 18}, {"sc", "currencysymbol", 1u << 19},
        {"sk", "modifiersymbol", 1u << 20}, {"so", "othersymbol", 1u << 21}, {"z", "separator", kSeparators},
        {"zs", "spaceseparator", 1u << 22}, {"zl", "lineseparator", 1u << 23}, {"zp", "paragraphseparator", 1u << 24},
        {"c", "other", kOthers}, {"cc", "control", 1u << 25}, {"cf", "format", 1u << 26},
        {"cs", "surrogate", 1u << 27}, {"co", "privateuse", 1u << 28}, {"cn", "unassigned", 1u << 29},
        {"any", "any", 0x3FFFFFFF},
    };
    for (const Named& n : kNames) {
      if (name == n.short_name || name == n.long_name) {
        if (!negated) {
          cc.cats |= n.cats;
        } else {
          CharClass neg;
          neg.cats = n.cats;
          neg.negate = true;
          cc.subs.push_back(std::move(neg));
        }
        return;
      }
    }
    fail_at("unsupported Unicode property \\p{" + name + "} (general categories only)", at);
  }

  // After '[': items up to the matching ']'.
  CharClass bracket(bool icase, int depth) {
    if (depth > kMaxNesting) fail_here("classes nested too deeply");
    const size_t at = offsets_[i_ - 1];
    CharClass cc;
    if (eat('^')) cc.negate = true;
    bool first = true;
    for (;;) {
      if (!more()) fail_at("unterminated character class", at);
      const char32_t c = peek();
      if (c == ']' && !first) {
        ++i_;
        break;
      }
      first = false;
      if (c == '[') {
        if (peek(1) == ':') fail_here("unsupported POSIX bracket expression");
        ++i_;
        cc.subs.push_back(bracket(icase, depth + 1));
        continue;
      }
      if (c == '&' && peek(1) == '&') fail_here("unsupported class intersection &&");
      char32_t lo;
      ++i_;
      if (c == '\\') {
        CharClass set;
        if (escape_into(set, lo, icase, true) == EscapeKind::Set) {
          if (peek() == '-' && peek(1) != ']') fail_here("a range cannot start with a class escape");
          cc.cats |= set.cats;
          cc.space |= set.space;
          cc.not_space |= set.not_space;
          cc.ranges.insert(cc.ranges.end(), set.ranges.begin(), set.ranges.end());
          for (auto& s : set.subs) cc.subs.push_back(std::move(s));
          continue;
        }
      } else {
        lo = c;
      }
      char32_t hi = lo;
      if (peek() == '-' && peek(1) != ']' && more()) {
        ++i_;
        const char32_t h = cps_[i_++];
        if (h == '[') fail_here("a range cannot end with a class");
        if (h == '\\') {
          CharClass set;
          if (escape_into(set, hi, icase, true) == EscapeKind::Set) fail_here("a range cannot end with a class escape");
        } else {
          hi = h;
        }
        if (hi < lo) fail_here("character range out of order");
      }
      cc.ranges.push_back({lo, hi});
    }
    if (icase) fold_case(cc, at);
    return cc;
  }

  std::string_view pattern_;
  std::vector<CharClass>& classes_;
  std::vector<char32_t> cps_;
  std::vector<size_t> offsets_;
  size_t i_ = 0;
};

// --- program --------------------------------------------------------------------------------------

enum class Op : uint8_t { Char, Class, Any, Repeat, Split, Jmp, Look, LookChar, Atomic, Assert, Match };

struct Inst {
  Op op;
  Op item = Op::Char;   // Repeat / LookChar: the single-character matcher (Char, Class or Any)
  bool greedy = true, possessive = false, negate = false;
  int32_t x = 0, y = 0;  // Split: targets; Jmp: x; Look / Atomic: sub-program; Assert: kind
  uint32_t min = 0, max = 0;
  char32_t c = 0;        // Char (also as the Repeat / LookChar item)
  int32_t cls = -1;      // Class (also as the Repeat / LookChar item)
};

}  // namespace

struct Regex::Program {
  std::vector<Inst> code;
  std::vector<CharClass> classes;        // shared by every sub-program (stored in the root)
  std::vector<std::unique_ptr<Program>> subs;
  CharClass first;                       // code points a match can start with (when has_first)
  bool has_first = false;
  size_t depth = 0;                      // nesting of lookaround / atomic sub-programs below this one
};

namespace {

// The code points a match of n can start with; false if unknown or n can match the empty string.
bool first_set(const Node& n, const std::vector<CharClass>& classes, CharClass& out) {
  switch (n.kind) {
    case NodeKind::Char: out.ranges.push_back({n.c, n.c}); return true;
    case NodeKind::Class: out.subs.push_back(classes[size_t(n.cls)]); return true;
    case NodeKind::Any: return false;
    case NodeKind::Concat:
      for (const Node& k : n.kids) {
        if (k.kind == NodeKind::Look || k.kind == NodeKind::Assert) return false;
        if (!first_set(k, classes, out)) return false;
        if (!nullable(k)) return true;
      }
      return false;
    case NodeKind::Alt:
      for (const Node& k : n.kids)
        if (!first_set(k, classes, out) || nullable(k)) return false;
      return true;
    case NodeKind::Repeat:
      return n.min > 0 && first_set(n.kids[0], classes, out);
    case NodeKind::Atomic: return first_set(n.kids[0], classes, out) && !nullable(n.kids[0]);
    default: return false;
  }
}

class Compiler {
 public:
  Compiler(Regex::Program& root, const std::string& pattern) : root_(root), pattern_(pattern) {}

  void compile(const Node& n, Regex::Program& p) {
    emit(n, p);
    p.code.push_back({Op::Match});
  }

 private:
  void check_size(const Regex::Program& p) {
    if (p.code.size() > kMaxProgram)
      fail("regex \"", pattern_, "\": too large after expanding counted repeats (over ", kMaxProgram, " instructions)");
  }

  static Inst item_inst(const Node& n) {
    Inst i{n.kind == NodeKind::Char ? Op::Char : n.kind == NodeKind::Class ? Op::Class : Op::Any};
    i.c = n.c;
    i.cls = n.cls;
    return i;
  }

  int sub_program(const Node& n) {
    auto sub = std::make_unique<Regex::Program>();
    ++level_;
    root_.depth = std::max(root_.depth, level_);
    compile(n, *sub);
    --level_;
    root_.subs.push_back(std::move(sub));
    return int(root_.subs.size() - 1);
  }

  void emit(const Node& n, Regex::Program& p) {
    check_size(p);
    switch (n.kind) {
      case NodeKind::Empty: return;
      case NodeKind::Char: case NodeKind::Class: case NodeKind::Any: p.code.push_back(item_inst(n)); return;
      case NodeKind::Concat:
        for (const Node& k : n.kids) emit(k, p);
        return;
      case NodeKind::Alt: {
        std::vector<size_t> jumps;
        for (size_t k = 0; k < n.kids.size(); ++k) {
          if (k + 1 < n.kids.size()) {
            const size_t split = p.code.size();
            p.code.push_back({Op::Split});
            p.code[split].x = int32_t(split + 1);
            p.code[split].cls = guard(n.kids[k]);
            emit(n.kids[k], p);
            jumps.push_back(p.code.size());
            p.code.push_back({Op::Jmp});
            p.code[split].y = int32_t(p.code.size());
          } else {
            emit(n.kids[k], p);
          }
        }
        for (size_t j : jumps) p.code[j].x = int32_t(p.code.size());
        return;
      }
      case NodeKind::Repeat: return emit_repeat(n, p);
      case NodeKind::Look: {
        const Node& body = n.kids[0];
        Inst i{Op::Look};
        i.negate = n.negate;
        if (single_char(body)) {
          const Inst item = item_inst(body);
          i.op = Op::LookChar;
          i.item = item.op;
          i.c = item.c;
          i.cls = item.cls;
        } else {
          i.x = sub_program(body);
        }
        p.code.push_back(i);
        return;
      }
      case NodeKind::Atomic: {
        Inst i{Op::Atomic};
        i.x = sub_program(n.kids[0]);
        p.code.push_back(i);
        return;
      }
      case NodeKind::Assert: {
        Inst i{Op::Assert};
        i.x = int32_t(n.assert_kind);
        p.code.push_back(i);
        return;
      }
    }
  }

  void emit_repeat(const Node& n, Regex::Program& p) {
    const Node& body = n.kids[0];
    if (single_char(body)) {
      const Inst item = item_inst(body);
      Inst i{Op::Repeat};
      i.item = item.op;
      i.c = item.c;
      i.cls = item.cls;
      i.min = n.min;
      i.max = n.max;
      i.greedy = n.greedy;
      i.possessive = n.possessive;
      p.code.push_back(i);
      return;
    }
    if (n.possessive) {  // X*+ is (?>X*)
      Node greedy = n;
      greedy.possessive = false;
      Inst i{Op::Atomic};
      i.x = sub_program(greedy);
      p.code.push_back(i);
      return;
    }
    for (uint32_t k = 0; k < n.min; ++k) emit(body, p);
    if (n.max == kInf) {
      const size_t split = p.code.size();
      p.code.push_back({Op::Split});
      emit(body, p);
      Inst back{Op::Jmp};
      back.x = int32_t(split);
      p.code.push_back(back);
      set_split(p.code[split], split + 1, p.code.size(), n.greedy);
      return;
    }
    std::vector<size_t> splits;
    for (uint32_t k = n.min; k < n.max; ++k) {
      splits.push_back(p.code.size());
      p.code.push_back({Op::Split});
      emit(body, p);
      check_size(p);
    }
    for (size_t s : splits) set_split(p.code[s], s + 1, p.code.size(), n.greedy);
  }

  // A class the first code point of any match of n belongs to (Split skips the branch without
  // pushing a thread when the next code point is not in it), or -1.
  int guard(const Node& n) {
    CharClass first;
    if (!first_set(n, root_.classes, first)) return -1;
    first.finish();
    root_.classes.push_back(std::move(first));
    return int(root_.classes.size() - 1);
  }

  static void set_split(Inst& s, size_t body, size_t out, bool greedy) {
    s.x = int32_t(greedy ? body : out);
    s.y = int32_t(greedy ? out : body);
  }

  Regex::Program& root_;
  const std::string& pattern_;
  size_t level_ = 0;
};

// --- matching -------------------------------------------------------------------------------------

// Thrown out of line, so that the matching loop has no exception landing pad (in the wasm build
// every call from a function with one goes through a JS invoke trampoline).
[[noreturn]] __attribute__((noinline)) void budget_exceeded(const std::string& pattern, size_t n) {
  fail("regex \"", pattern, "\": matching exceeded its step budget on a text of ", n, " characters");
}

#ifdef __clang__
#pragma clang attribute pop
#endif

struct Thread {
  int32_t pc;
  uint32_t pos;
  uint32_t count;  // kInf: a plain thread; else a Repeat resuming with this many items
};

class Matcher {
 public:
  // stacks: one per lookaround depth, at least root.depth + 1 of them (owned by the caller, so that
  // the matcher has no destructor and its loops no exception landing pads).
  Matcher(const Regex::Program& root, const Subject& s, const std::string& pattern, std::vector<Thread>* stacks)
      : root_(root), s_(s), pattern_(pattern), stacks_(stacks), budget_(uint64_t(s.size()) * 2000 + 1000000) {}

  bool run(const Regex::Program& p, uint32_t start, uint32_t& end, size_t depth = 0) {
    std::vector<Thread>& stack = stacks_[depth];
    const size_t base = stack.size();
    stack.push_back({0, start, kInf});
    const uint32_t n = uint32_t(s_.size());
    while (stack.size() > base) {
      Thread t = stack.back();
      stack.pop_back();
      int32_t pc = t.pc;
      uint32_t pos = t.pos;
      if (t.count != kInf) {  // resume after a Repeat with t.count items
        const Inst& r = p.code[size_t(pc)];
        if (r.greedy) {
          if (t.count > r.min) stack.push_back({pc, pos - 1, t.count - 1});
        } else if (t.count < r.max && pos < n && item(r, pos)) {
          stack.push_back({pc, pos + 1, t.count + 1});
        }
        ++pc;
      }
      for (;;) {
        if (++steps_ > budget_) budget_exceeded(pattern_, n);
        const Inst& i = p.code[size_t(pc)];
        bool ok = true;
        switch (i.op) {
          case Op::Char: case Op::Class: case Op::Any:
            ok = pos < n && item(i, pos);
            if (ok) ++pos, ++pc;
            break;
          case Op::Repeat: {
            uint32_t k = 0;
            if (i.greedy) {
              while (k < i.max && pos + k < n && item(i, pos + k)) ++k;
              ok = k >= i.min;
              if (ok && !i.possessive && k > i.min) stack.push_back({pc, pos + k - 1, k - 1});
            } else {
              while (k < i.min && pos + k < n && item(i, pos + k)) ++k;
              ok = k >= i.min;
              if (ok && k < i.max && pos + k < n && item(i, pos + k)) stack.push_back({pc, pos + k + 1, k + 1});
            }
            if (ok) pos += k, ++pc;
            break;
          }
          case Op::Split:
            if (i.cls >= 0 && (pos >= n || !root_.classes[size_t(i.cls)].match(s_.cp[pos], s_.info[pos]))) {
              pc = i.y;  // the first branch cannot start here
              break;
            }
            stack.push_back({i.y, pos, kInf});
            pc = i.x;
            break;
          case Op::Jmp: pc = i.x; break;
          case Op::LookChar:
            ok = (pos < n && item(i, pos)) != i.negate;
            if (ok) ++pc;
            break;
          case Op::Look: {
            uint32_t e;
            ok = run(*root_.subs[size_t(i.x)], pos, e, depth + 1) != i.negate;
            if (ok) ++pc;
            break;
          }
          case Op::Atomic: {
            uint32_t e;
            ok = run(*root_.subs[size_t(i.x)], pos, e, depth + 1);
            if (ok) pos = e, ++pc;
            break;
          }
          case Op::Assert:
            ok = assertion(AssertKind(i.x), pos);
            if (ok) ++pc;
            break;
          case Op::Match:
            end = pos;
            stack.resize(base);
            return true;
        }
        if (!ok) break;
      }
    }
    return false;
  }

 private:
  bool item(const Inst& i, uint32_t pos) const {
    const char32_t c = s_.cp[pos];
    const Op kind = (i.op == Op::Repeat || i.op == Op::LookChar) ? i.item : i.op;
    switch (kind) {
      case Op::Char: return c == i.c;
      case Op::Class: return root_.classes[size_t(i.cls)].match(c, s_.info[pos]);
      default: return c != '\n';  // Any
    }
  }
  bool word_at(uint32_t pos) const { return pos < s_.size() && is_word(s_.cp[pos], s_.info[pos]); }
  bool assertion(AssertKind k, uint32_t pos) const {
    const uint32_t n = uint32_t(s_.size());
    switch (k) {
      case AssertKind::LineStart: return pos == 0 || s_.cp[pos - 1] == '\n';
      case AssertKind::LineEnd: return pos == n || s_.cp[pos] == '\n';
      case AssertKind::TextStart: return pos == 0;
      case AssertKind::TextEnd: return pos == n;
      case AssertKind::TextEndNewline: return pos == n || (pos + 1 == n && s_.cp[pos] == '\n');
      case AssertKind::WordBoundary: return (pos > 0 && word_at(pos - 1)) != word_at(pos);
      case AssertKind::NotWordBoundary: return (pos > 0 && word_at(pos - 1)) == word_at(pos);
    }
    return false;
  }

  const Regex::Program& root_;
  const Subject& s_;
  const std::string& pattern_;
  std::vector<Thread>* stacks_;
  uint64_t steps_ = 0, budget_;
};

}  // namespace

Subject::Subject(std::string_view t) : text(t) {
  static const struct AsciiInfo {  // the info byte of every ASCII code point
    uint8_t v[128];
    AsciiInfo() {
      for (char32_t c = 0; c < 128; ++c) v[c] = CharClass::info_of(c);
    }
  } ascii;
  // Sized once, filled through pointers: no call per character (see budget_exceeded).
  cp.resize(t.size());
  offset.resize(t.size() + 1);
  info.resize(t.size());
  size_t n = fill(t, cp.data(), offset.data(), info.data(), ascii.v);
  cp.resize(n);
  info.resize(n);
  offset.resize(n + 1);
  offset[n] = uint32_t(t.size());
}

size_t Subject::fill(std::string_view t, char32_t* cps, uint32_t* offs, uint8_t* infos, const uint8_t* ascii) {
  size_t n = 0;
  for (size_t pos = 0; pos < t.size(); ++n) {
    const uint8_t b = uint8_t(t[pos]);
    offs[n] = uint32_t(pos);
    if (b < 0x80) {
      cps[n] = b;
      infos[n] = ascii[b];
      ++pos;
      continue;
    }
    const unicode::Utf8Step s = unicode::decode_utf8(t, pos);
    cps[n] = s.cp;
    infos[n] = CharClass::info_of(s.cp);
    pos += s.len;
  }
  return n;
}

Regex::Regex(std::string_view pattern) : pattern_(pattern), prog_(std::make_unique<Program>()) {
  Parser parser(pattern, prog_->classes);
  const Node root = parser.parse();
  Compiler(*prog_, pattern_).compile(root, *prog_);
  CharClass first;
  if (first_set(root, prog_->classes, first)) {
    first.finish();
    prog_->first = std::move(first);
    prog_->has_first = true;
  }
}

Regex::~Regex() = default;
Regex::Regex(Regex&&) noexcept = default;
Regex& Regex::operator=(Regex&&) noexcept = default;

namespace {
// The search loop, in a function without objects to destroy (no landing pad: see budget_exceeded).
// Calls found(begin, end) for each match; with all, every non-overlapping non-empty one.
template <class Found>
__attribute__((noinline)) void search_loop(const Regex::Program& prog, const Subject& s, Matcher& m, size_t from, bool all, Found&& found) {
  for (size_t start = from; start < s.size() || (!all && start == s.size());) {
    uint32_t e;
    const bool candidate = !prog.has_first || (start < s.size() && prog.first.match(s.cp[start], s.info[start]));
    if (candidate && m.run(prog, uint32_t(start), e) && (e > start || !all)) {
      found(start, size_t(e));
      if (!all) return;
      start = e;
    } else {
      ++start;  // no match here, or an empty one: skip a character, as Oniguruma's iterator does
    }
  }
}
}  // namespace

bool Regex::search(const Subject& s, size_t from, size_t& begin, size_t& end) const {
  std::vector<std::vector<Thread>> stacks(prog_->depth + 1);
  Matcher m(*prog_, s, pattern_, stacks.data());
  bool hit = false;
  search_loop(*prog_, s, m, from, false, [&](size_t b, size_t e) {
    begin = b;
    end = e;
    hit = true;
  });
  return hit;
}

std::vector<std::pair<size_t, size_t>> Regex::find_all(const Subject& s) const {
  std::vector<std::pair<size_t, size_t>> out;
  out.reserve(s.size() / 4 + 4);
  std::vector<std::vector<Thread>> stacks(prog_->depth + 1);
  for (auto& st : stacks) st.reserve(64);
  Matcher m(*prog_, s, pattern_, stacks.data());
  search_loop(*prog_, s, m, 0, true, [&](size_t b, size_t e) { out.push_back({s.offset[b], s.offset[e]}); });
  return out;
}

}  // namespace attnlens::tok
