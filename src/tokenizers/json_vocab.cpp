#include "tokenizers/json_vocab.h"

#include <algorithm>
#include <cstdlib>

#include "core/error.h"
#include "core/json.h"
#include "core/limits.h"
#include "tokenizers/unicode.h"

namespace attnlens::tok {

namespace {

constexpr int64_t kMaxVocab = limits::kMaxVocab;
constexpr int kMaxDepth = limits::kMaxJsonDepth;  // nesting, counted as core/json.h counts it
constexpr size_t kMaxTokenBytes = size_t(limits::kMaxTokenBytes);

class Scanner {
 public:
  explicit Scanner(std::string_view s, std::string_view what = {}) : s_(s), what_(what) {}

  template <class... Parts>
  [[noreturn]] void error(const Parts&... parts) const {
    fail(what_, "not valid JSON at byte ", i_, ": ", parts...);
  }
  __attribute__((always_inline)) void ws() {
    if (i_ < s_.size() && uint8_t(s_[i_]) > ' ') return;  // the common case: no whitespace
    skip_ws();
  }
  void skip_ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\r' || s_[i_] == '\t')) ++i_;
  }
  char peek() {
    ws();
    return i_ < s_.size() ? s_[i_] : '\0';
  }
  bool at_end() {
    ws();
    return i_ >= s_.size();
  }
  void expect(char c) {
    if (peek() != c) error("expected '", c, "'");
    ++i_;
  }
  bool eat(char c) {
    if (peek() != c) return false;
    ++i_;
    return true;
  }
  size_t pos() const { return i_; }
  std::string a, b;           // scratch for the callers (kept here so that their loops own nothing to destroy)
  std::vector<uint8_t> seen;  // ids given so far

  // A string, unescaped, checked to be well-formed UTF-8 (lone surrogate escapes are errors too).
  void string(std::string& out) {
    const std::string_view v = string_view(scratch_);
    out.assign(v.data(), v.size());
  }

  // The same string as a view: into the document when it has no escapes (most pieces of a vocabulary:
  // no copy), else into scratch, which holds it unescaped (valid until scratch changes).
  std::string_view string_view(std::string& scratch) {
    expect('"');
    const size_t start = i_;
    plain_run();
    if (i_ < s_.size() && s_[i_] == '"') return std::string_view(s_.data() + start, i_++ - start);
    scratch.assign(s_.data() + start, i_ - start);
    for (;;) {
      if (i_ >= s_.size()) error("unterminated string");
      const char c = s_[i_];
      if (c == '"') {
        ++i_;
        return scratch;
      }
      if (uint8_t(c) < 0x20) error("control character in a string");
      ++i_;  // a backslash
      unescape(scratch);
      const size_t run = i_;
      plain_run();
      scratch.append(s_.data() + run, i_ - run);
    }
  }

  // A JSON number's text (validated against the grammar).
  std::string_view number() {
    ws();
    const size_t start = i_;
    if (i_ < s_.size() && s_[i_] == '-') ++i_;
    if (i_ >= s_.size() || !digit(s_[i_])) error("expected a number");
    if (s_[i_] == '0') ++i_;
    else while (i_ < s_.size() && digit(s_[i_])) ++i_;
    if (i_ < s_.size() && s_[i_] == '.') {
      ++i_;
      if (i_ >= s_.size() || !digit(s_[i_])) error("bad number");
      while (i_ < s_.size() && digit(s_[i_])) ++i_;
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      ++i_;
      if (i_ < s_.size() && (s_[i_] == '+' || s_[i_] == '-')) ++i_;
      if (i_ >= s_.size() || !digit(s_[i_])) error("bad number");
      while (i_ < s_.size() && digit(s_[i_])) ++i_;
    }
    return s_.substr(start, i_ - start);
  }

  // Skips (and validates) any value inside `depth` levels of brackets; returns its text.
  std::string_view skip_value(int depth) {
    const char c = peek();
    const size_t start = i_;
    if (c == '"') {
      string_view(scratch_);
    } else if (c == '{' || c == '[') {
      if (depth + 1 > kMaxDepth) error("nested more than ", kMaxDepth, " levels deep");
      ++i_;
      const char close = c == '{' ? '}' : ']';
      if (!eat(close)) {
        do {
          if (c == '{') {
            string_view(scratch_);
            expect(':');
          }
          skip_value(depth + 1);
        } while (eat(','));
        expect(close);
      }
    } else if (c == 't' || c == 'f' || c == 'n') {
      const std::string_view word = c == 't' ? "true" : c == 'f' ? "false" : "null";
      if (s_.compare(i_, word.size(), word) != 0) error("unexpected character");
      i_ += word.size();
    } else {
      number();
    }
    return s_.substr(start, i_ - start);
  }

 private:
  static bool digit(char c) { return c >= '0' && c <= '9'; }
  // Moves past characters that stand for themselves (no quote, backslash or control character),
  // checking multi-byte UTF-8 sequences as it goes.
  void plain_run() {
    while (i_ < s_.size()) {
      const uint8_t c = uint8_t(s_[i_]);
      if (c < 0x80) {
        if (c == '"' || c == '\\' || c < 0x20) return;
        ++i_;
        continue;
      }
      if (c >= 0xC2 && c < 0xE0 && i_ + 1 < s_.size() && (uint8_t(s_[i_ + 1]) & 0xC0) == 0x80) {
        i_ += 2;  // a two-byte character (byte-level vocabularies' "Ġ", "Ċ"): checked here, no call
        continue;
      }
      const unicode::Utf8Step u = unicode::decode_utf8(s_, i_);
      if (!u.valid) error("ill-formed UTF-8 in a string");
      i_ += u.len;
    }
  }
  // The escape after a backslash (at i_), appended to out unescaped.
  void unescape(std::string& out) {
    if (i_ >= s_.size()) error("unterminated string");
    const char e = s_[i_++];
    switch (e) {
      case '"': out.push_back('"'); break;
      case '\\': out.push_back('\\'); break;
      case '/': out.push_back('/'); break;
      case 'b': out.push_back('\b'); break;
      case 'f': out.push_back('\f'); break;
      case 'n': out.push_back('\n'); break;
      case 'r': out.push_back('\r'); break;
      case 't': out.push_back('\t'); break;
      case 'u': {
        char32_t cp = hex4();
        if (cp >= 0xD800 && cp < 0xDC00) {
          if (i_ + 1 >= s_.size() || s_[i_] != '\\' || s_[i_ + 1] != 'u') error("lone surrogate escape");
          i_ += 2;
          const char32_t lo = hex4();
          if (lo < 0xDC00 || lo > 0xDFFF) error("lone surrogate escape");
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
          error("lone surrogate escape");
        }
        unicode::append_utf8(out, cp);
        break;
      }
      default: error("bad escape in a string");
    }
  }
  char32_t hex4() {
    char32_t v = 0;
    for (int k = 0; k < 4; ++k) {
      if (i_ >= s_.size()) error("bad \\u escape");
      const char c = s_[i_++];
      const int d = digit(c) ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : (c >= 'A' && c <= 'F') ? c - 'A' + 10 : -1;
      if (d < 0) error("bad \\u escape");
      v = v * 16 + char32_t(d);
    }
    return v;
  }

  std::string_view s_, what_;  // what_: "NAME: " to put before a message, or ""
  size_t i_ = 0;
  std::string scratch_;
};

// A member's text, already checked by skip_value (syntax, nesting): nlohmann builds its value
// (through core's parse_json_dom: json::parse would instantiate a second parser, ~10 kB of wasm).
nlohmann::json parse_span(std::string_view span) {
  nlohmann::json value;
  parse_json_dom(span.data(), span.data() + span.size(), value, /*allow_exceptions=*/true);
  return value;
}

void check_piece(std::string_view piece, const char* where, size_t i) {
  if (piece.size() > kMaxTokenBytes)
    fail(where, "[", i, "] has a ", piece.size(), "-byte token (at most ", kMaxTokenBytes, ")");
}

// One "piece": id member of model.vocab, into pieces[id] (seen[id] set; both grown by doubling).
void read_vocab_entry(Scanner& sc, std::vector<std::string>& pieces, std::vector<uint8_t>& seen, int64_t max_vocab) {
  const std::string_view piece = sc.string_view(sc.a);
  sc.expect(':');
  const char first = sc.peek();
  if (first != '-' && (first < '0' || first > '9'))
    fail("model.vocab[\"", brief_name(std::string(piece)), "\"] must be a token id (a non-negative integer below ", kMaxVocab, ")");
  const std::string_view num = sc.number();
  int64_t id = 0;
  bool ok = !num.empty() && num[0] != '-' && num.size() <= 9;  // at most 9 digits: no overflow
  for (size_t i = 0; ok && i < num.size(); ++i) {
    if (num[i] < '0' || num[i] > '9') ok = false;
    else id = id * 10 + (num[i] - '0');
  }
  if (!ok || id >= kMaxVocab)
    fail("model.vocab[\"", brief_name(std::string(piece)), "\"] is ", num.substr(0, 24), ": it must be a token id (a non-negative integer below ",
         kMaxVocab, ")");
  if (id >= max_vocab) fail("model.vocab[\"", brief_name(std::string(piece)), "\"] is id ", id, ", but the model has only ", max_vocab, " tokens");
  if (piece.size() > kMaxTokenBytes) fail("model.vocab has a ", piece.size(), "-byte token (at most ", kMaxTokenBytes, ")");
  if (size_t(id) >= pieces.size()) {
    pieces.resize(std::max(size_t(id) + 1, pieces.size() * 2));
    seen.resize(pieces.size(), 0);
  }
  if (seen[size_t(id)])
    fail("model.vocab gives id ", id, " to both \"", brief_name(pieces[size_t(id)]), "\" and \"", brief_name(std::string(piece)), "\"");
  seen[size_t(id)] = 1;
  pieces[size_t(id)].assign(piece.data(), piece.size());
}

void read_vocab(Scanner& sc, VocabLists& lists, int64_t max_vocab) {
  lists.has_vocab = true;
  const char c = sc.peek();
  if (c == '{') {
    lists.vocab_is_object = true;
    sc.expect('{');
    std::vector<std::string>& pieces = lists.pieces;
    std::vector<uint8_t>& seen = sc.seen;  // scratch owned by the scanner: this loop owns nothing to destroy
    if (!sc.eat('}')) {
      do {
        read_vocab_entry(sc, pieces, seen, max_vocab);
      } while (sc.eat(','));
      sc.expect('}');
    }
    size_t n = pieces.size();  // drop the unused tail of the last doubling
    while (n > 0 && !seen[n - 1]) --n;
    pieces.resize(n);
    return;
  }
  if (c == '[') {
    sc.expect('[');
    size_t i = 0;
    if (!sc.eat(']')) {
      do {
        if (sc.peek() != '[') fail("model.vocab[", i, "] must be [\"piece\", score]");
        sc.expect('[');
        if (sc.peek() != '"') fail("model.vocab[", i, "] must be [\"piece\", score]");
        if (int64_t(i) >= max_vocab)
          fail("model.vocab has more than ", max_vocab, " entries", max_vocab < kMaxVocab ? " (the model's vocabulary)" : "");
        std::string& piece = sc.a;
        sc.string(piece);
        check_piece(piece, "model.vocab", i);
        sc.expect(',');
        const std::string num(sc.number());
        sc.expect(']');
        lists.scored.emplace_back(std::move(piece), std::strtod(num.c_str(), nullptr));
        ++i;
      } while (sc.eat(','));
      sc.expect(']');
    }
    return;
  }
  if (c == 'n') {  // null: as if absent
    sc.skip_value(2);
    lists.has_vocab = false;
    return;
  }
  fail("model.vocab must be an object or an array");
}

// merges[i], "a b" or ["a", "b"].
void read_merge(Scanner& sc, MergeList& merges, size_t i) {
  const char c = sc.peek();
  if (c == '"') {
    const std::string_view a = sc.string_view(sc.a);
    check_piece(a, "model.merges", i);
    size_t sp = 0, spaces = 0;  // the one space (a loop: string_view::find is a call to memchr per merge)
    for (size_t k = 0; k < a.size(); ++k)
      if (a[k] == ' ' && !spaces++) sp = k;
    if (spaces != 1 || sp == 0 || sp + 1 == a.size())
      fail("model.merges[", i, "] \"", brief_name(std::string(a)), "\" is not two tokens separated by one space");
    merges.add(a.substr(0, sp), a.substr(sp + 1));
  } else if (c == '[') {
    sc.expect('[');
    if (sc.peek() != '"') fail("model.merges[", i, "] must be \"a b\" or [\"a\", \"b\"]");
    const std::string_view a = sc.string_view(sc.a);
    sc.expect(',');
    if (sc.peek() != '"') fail("model.merges[", i, "] must be \"a b\" or [\"a\", \"b\"]");
    const std::string_view b = sc.string_view(sc.b);
    check_piece(a, "model.merges", i);
    check_piece(b, "model.merges", i);
    if (sc.peek() != ']') fail("model.merges[", i, "] must be \"a b\" or [\"a\", \"b\"]");
    sc.expect(']');
    merges.add(a, b);
  } else {
    fail("model.merges[", i, "] must be \"a b\" or [\"a\", \"b\"]");
  }
}

void read_merges(Scanner& sc, VocabLists& lists) {
  if (sc.peek() == 'n') {
    sc.skip_value(2);
    return;
  }
  lists.has_merges = true;
  if (sc.peek() != '[') fail("model.merges must be an array");
  sc.expect('[');
  if (sc.eat(']')) return;
  size_t i = 0;
  do {
    if (i >= size_t(limits::kMaxMerges)) fail("model.merges has more than ", limits::kMaxMerges, " rules");
    read_merge(sc, lists.merges, i);
    ++i;
  } while (sc.eat(','));
  sc.expect(']');
}

}  // namespace

nlohmann::json parse_tokenizer_json(std::string_view text, VocabLists& lists, int64_t max_vocab) {
  Scanner sc(text);
  if (sc.peek() != '{') return parse_json(text.data(), text.data() + text.size(), "the document");  // reports or returns it
  sc.expect('{');
  nlohmann::json root = nlohmann::json::object();
  std::string key, member;
  if (!sc.eat('}')) {
    do {
      sc.string(key);
      sc.expect(':');
      if (key == "model" && sc.peek() == '{') {
        sc.expect('{');
        nlohmann::json model = nlohmann::json::object();
        if (!sc.eat('}')) {
          do {
            sc.string(member);
            sc.expect(':');
            if (member == "vocab") read_vocab(sc, lists, max_vocab);
            else if (member == "merges") read_merges(sc, lists);
            else model[member] = parse_span(sc.skip_value(2));
          } while (sc.eat(','));
          sc.expect('}');
        }
        root[key] = std::move(model);
      } else {
        root[key] = parse_span(sc.skip_value(1));
      }
    } while (sc.eat(','));
    sc.expect('}');
  }
  if (!sc.at_end()) sc.error("unexpected data after the top-level object");
  return root;
}

namespace {
// In a function that owns nothing to destroy: no exception landing pads around its calls (smaller wasm).
void read_member_names(Scanner& sc, std::string& names, std::string_view stop_at) {
  if (sc.peek() != '{') {
    sc.skip_value(0);
  } else {
    sc.expect('{');
    if (!sc.eat('}')) {
      do {
        const std::string_view name = sc.string_view(sc.a);
        sc.expect(':');
        names += '\n';
        names += name;
        names += '\n';
        names += sc.peek();
        if (!stop_at.empty() && name == stop_at && sc.peek() == '{') return;
        sc.skip_value(1);
      } while (sc.eat(','));
      sc.expect('}');
    }
  }
  if (!sc.at_end()) sc.error("unexpected data after the top-level value");
}
}  // namespace

std::string json_member_names(std::string_view text, std::string_view what, std::string_view stop_at) {
  Scanner sc(text, what);
  std::string names;
  read_member_names(sc, names, stop_at);
  return names;
}

}  // namespace attnlens::tok
