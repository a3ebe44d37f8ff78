#include "tokenizers/unicode.h"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <vector>

#include "tokenizers/unicode_tables.h"

namespace attnlens::unicode {

namespace t = tables;

const char* table_version() { return t::kUnicodeVersion; }

namespace {
Category category_lookup(char32_t cp) {
  // The last range whose first code point is <= cp: among the ranges starting in cp's plane, else
  // the last one of an earlier plane (the first range starts at 0).
  const uint32_t plane = uint32_t(cp) >> 16;
  if (plane > 16) return Category::Cn;
  const uint16_t* begin = t::kCategoryFirst + t::kCategoryPlaneStart[plane];
  const uint16_t* end = t::kCategoryFirst + t::kCategoryPlaneStart[plane + 1];
  const uint16_t* it = std::upper_bound(begin, end, uint16_t(cp & 0xFFFF));
  return Category(t::kCategoryIndex[size_t(it - t::kCategoryFirst) - 1]);
}

struct Latin1Categories {  // the first 256 code points, looked up often
  Category cat[256];
  Latin1Categories() {
    for (char32_t c = 0; c < 256; ++c) cat[c] = category_lookup(c);
  }
};
}  // namespace

Category category(char32_t cp) {
  if (cp < 256) {
    static const Latin1Categories latin1;
    return latin1.cat[cp];
  }
  if (cp >= 0x110000) return Category::Cn;
  return category_lookup(cp);
}

bool is_letter(char32_t cp) { return category(cp) <= Category::Lo; }

bool is_number(char32_t cp) {
  Category c = category(cp);
  return c >= Category::Nd && c <= Category::No;
}

bool is_punctuation(char32_t cp) {
  Category c = category(cp);
  return c >= Category::Pc && c <= Category::Po;
}

bool is_mark(char32_t cp) {
  Category c = category(cp);
  return c >= Category::Mn && c <= Category::Me;
}

bool is_other(char32_t cp) { return category(cp) >= Category::Cc; }

bool is_white_space(char32_t cp) {
  // The White_Space property (PropList.txt; unchanged since Unicode 6.3). Python's unicodedata
  // does not expose it, so it is listed here rather than generated.
  switch (cp) {
    case 0x09: case 0x0A: case 0x0B: case 0x0C: case 0x0D: case 0x20: case 0x85: case 0xA0:
    case 0x1680: case 0x2028: case 0x2029: case 0x202F: case 0x205F: case 0x3000:
      return true;
    default:
      return cp >= 0x2000 && cp <= 0x200A;
  }
}

bool is_bert_punctuation(char32_t cp) {
  // BERT's _is_punctuation: the ASCII non-letter/number symbols count too, e.g. "$", "^", "`".
  if ((cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) || (cp >= 123 && cp <= 126))
    return true;
  return is_punctuation(cp);
}

bool is_cjk_ideograph(char32_t cp) {
  // HF tokenizers' is_chinese_char (BERT's _is_chinese_char): the CJK Unified Ideographs blocks, not
  // Hiragana, Katakana or Hangul. HF starts its fifth range at 0x2B920 where BERT has 0x2B820; the
  // tokenizer.json path follows HF.
  return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
         (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F) ||
         (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B920 && cp <= 0x2CEAF) ||
         (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

void append_lowercase(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(char(cp >= 'A' && cp <= 'Z' ? cp + 32 : cp));
    return;
  }
  if (cp == 0x130) {  // the one unconditional multi-code-point lowercase: I WITH DOT ABOVE
    append_utf8(out, 'i');
    append_utf8(out, 0x307);
    return;
  }
  // Last run starting at or before cp.
  auto it = std::upper_bound(std::begin(t::kLowerRuns), std::end(t::kLowerRuns), uint32_t(cp),
                             [](uint32_t c, const t::LowerRun& r) { return c < r.first; });
  if (it != std::begin(t::kLowerRuns)) {
    const t::LowerRun& r = *(it - 1);
    if (cp <= r.last && (cp - r.first) % r.stride == 0) cp = char32_t(int64_t(cp) + r.delta);
  }
  append_utf8(out, cp);
}

namespace {
// What Python's str methods see in cp: 0 case-ignorable, 1 cased (and not case-ignorable), 2 a digit
// (str.isdigit), 3 none of these. The categories decide, except in the ranges of kPythonExtras.
int python_kind(char32_t cp) {
  for (const uint32_t e : t::kPythonExtras)
    if (cp >= (e >> 9) && cp <= (e >> 9) + ((e >> 2) & 127)) return int(e & 3);
  const Category c = category(cp);
  if (c == Category::Mn || c == Category::Me || c == Category::Cf || c == Category::Lm || c == Category::Sk) return 0;
  return c <= Category::Lt ? 1 : c == Category::Nd ? 2 : 3;
}
}  // namespace

bool is_python_space(char32_t cp) { return is_white_space(cp) || (cp >= 0x1C && cp <= 0x1F); }

bool is_python_digit(char32_t cp) { return python_kind(cp) == 2; }

// Case mapping runs rarely (a normalizer's lowercase): optimized for size in a build compiled for
// speed (clang only; GCC has no such attribute).
#ifdef __clang__
#define AL_MINSIZE __attribute__((minsize))
#else
#define AL_MINSIZE
#endif

namespace {
// Whether the first code point that is not case-ignorable, going back from text[0, at) or on from
// text[at, ...), is cased (false at the text's end).
AL_MINSIZE bool cased_next(std::string_view text, size_t at, bool back) {
  while (back ? at > 0 : at < text.size()) {
    size_t start = at;
    if (back)
      for (--start; start > 0 && (uint8_t(text[start]) & 0xC0) == 0x80;) --start;
    const Utf8Step c = decode_utf8(text, start);
    if (const int kind = python_kind(c.cp)) return kind == 1;
    at = back ? start : start + c.len;
  }
  return false;
}
}  // namespace

AL_MINSIZE std::string python_lower(std::string_view text) {
  std::string out;
  for (size_t pos = 0; pos < text.size();) {
    const Utf8Step c = decode_utf8(text, pos);
    const bool final_sigma = c.cp == 0x3A3 && cased_next(text, pos, true) && !cased_next(text, pos + c.len, false);
    append_lowercase(out, final_sigma ? 0x3C2 : c.cp);
    pos += c.len;
  }
  return out;
}

// --- decomposition, composition, normalization forms ---------------------------------------------

namespace {

constexpr char32_t kHangulBase = 0xAC00, kHangulCount = 11172, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr char32_t kLCount = 19, kVCount = 21, kTCount = 28;

bool is_hangul_syllable(char32_t cp) { return cp >= kHangulBase && cp < kHangulBase + kHangulCount; }

// The single-level decomposition of cp (UnicodeData.txt field 5) as a view into the tables: either
// UTF-16 units in kDecompPool, or one code point from a run. compat: it is a compatibility mapping.
struct Mapping {
  const uint16_t* units = nullptr;
  uint32_t count = 0;  // UTF-16 units
  char32_t single = 0;
  bool compat = false, found = false;
};

// Entry i of kDecompKeys: its flags and its mapping in kDecompPool.
uint32_t entry_flags(size_t i) { return (t::kDecompFlags[i / 4] >> (2 * (i % 4))) & 3u; }  // bit 0 primary, 1 compat
Mapping entry_mapping(size_t i) {
  Mapping m;
  size_t offset = t::kDecompAnchors[i / 64];
  for (size_t k = i / 64 * 64; k < i; ++k) offset += t::kDecompLengths[k];
  m.units = t::kDecompPool + offset;
  m.count = t::kDecompLengths[i];
  m.compat = (entry_flags(i) >> 1) & 1;
  m.found = true;
  return m;
}

Mapping lookup_decomposition(char32_t cp) {
  Mapping m;
  const uint32_t plane = uint32_t(cp >> 16);
  if (plane < 4) {
    const uint16_t* first = t::kDecompKeys + t::kDecompPlaneStart[plane];
    const uint16_t* last = t::kDecompKeys + t::kDecompPlaneStart[plane + 1];
    const uint16_t* it = std::lower_bound(first, last, uint16_t(cp & 0xFFFF));
    if (it != last && *it == uint16_t(cp & 0xFFFF)) return entry_mapping(size_t(it - t::kDecompKeys));
  }
  // Runs: pairs (first << 1 | compat, length << 20 | delta), sorted by first.
  const size_t runs = std::size(t::kDecompRuns) / 2;
  size_t lo = 0, hi = runs;
  while (lo < hi) {  // first run whose first code point is > cp
    const size_t mid = (lo + hi) / 2;
    if ((t::kDecompRuns[2 * mid] >> 1) <= cp) lo = mid + 1; else hi = mid;
  }
  if (lo == 0) return m;
  const uint32_t head = t::kDecompRuns[2 * (lo - 1)], body = t::kDecompRuns[2 * (lo - 1) + 1];
  const char32_t first = head >> 1;
  if (cp >= first + (body >> 20)) return m;
  int32_t delta = int32_t(body & 0xFFFFF);
  if (delta & 0x80000) delta -= 0x100000;
  m.single = char32_t(int32_t(cp) + delta);
  m.compat = head & 1;
  m.found = true;
  return m;
}

// Calls f(code point) for each code point of a mapping.
template <class F>
void for_each_mapped(const Mapping& m, F&& f) {
  if (!m.units) return f(m.single);
  for (uint32_t i = 0; i < m.count; ++i) {
    char32_t c = m.units[i];
    if (c >= 0xD800 && c < 0xDC00 && i + 1 < m.count) c = 0x10000 + ((c - 0xD800) << 10) + (m.units[++i] - 0xDC00);
    f(c);
  }
}

struct Mark {
  char32_t cp;
  uint8_t ccc;
};

// Appends the full (recursive) decomposition of cp.
void decompose(char32_t cp, bool compat, std::vector<Mark>& out) {
  if (cp < 0xA0) return out.push_back({cp, 0});
  if (is_hangul_syllable(cp)) {
    const char32_t s = cp - kHangulBase;
    out.push_back({kLBase + s / (kVCount * kTCount), 0});
    out.push_back({kVBase + (s % (kVCount * kTCount)) / kTCount, 0});
    if (s % kTCount) out.push_back({kTBase + s % kTCount, 0});
    return;
  }
  const Mapping m = lookup_decomposition(cp);
  if (!m.found || (m.compat && !compat)) return out.push_back({cp, combining_class(cp)});
  for_each_mapped(m, [&](char32_t c) { decompose(c, compat, out); });
}

// Primary composites (canonical pairs that recompose), from the kDecompKeys entries flagged so.
struct Composition {
  std::vector<uint64_t> pairs;    // sorted: first << 42 | second << 21 | composite
  std::vector<uint64_t> seconds;  // sorted: code points that can be the second of a pair (64-bit:
                                  // the one sort instantiation serves both vectors)
  Composition() {
    for (uint32_t plane = 0; plane < 4; ++plane) {
      for (size_t i = t::kDecompPlaneStart[plane]; i < t::kDecompPlaneStart[plane + 1]; ++i) {
        if (!(entry_flags(i) & 1)) continue;
        const Mapping m = entry_mapping(i);
        char32_t cps[2] = {0, 0};
        int k = 0;
        for_each_mapped(m, [&](char32_t c) { if (k < 2) cps[k++] = c; });
        pairs.push_back((uint64_t(cps[0]) << 42) | (uint64_t(cps[1]) << 21) | ((plane << 16) | t::kDecompKeys[i]));
        seconds.push_back(cps[1]);
      }
    }
    for (char32_t c = kVBase; c < kVBase + kVCount; ++c) seconds.push_back(c);
    for (char32_t c = kTBase + 1; c < kTBase + kTCount; ++c) seconds.push_back(c);
    std::sort(pairs.begin(), pairs.end());
    std::sort(seconds.begin(), seconds.end());
    seconds.erase(std::unique(seconds.begin(), seconds.end()), seconds.end());
  }
  bool is_second(char32_t c) const { return std::binary_search(seconds.begin(), seconds.end(), uint64_t(c)); }
  char32_t compose(char32_t a, char32_t b) const {  // 0 if the pair does not compose
    if (a >= kLBase && a < kLBase + kLCount && b >= kVBase && b < kVBase + kVCount)
      return kHangulBase + ((a - kLBase) * kVCount + (b - kVBase)) * kTCount;
    if (is_hangul_syllable(a) && (a - kHangulBase) % kTCount == 0 && b > kTBase && b < kTBase + kTCount)
      return a + (b - kTBase);
    const uint64_t key = (uint64_t(a) << 42) | (uint64_t(b) << 21);
    auto it = std::lower_bound(pairs.begin(), pairs.end(), key);
    return it != pairs.end() && (*it >> 21) == (key >> 21) ? char32_t(*it & 0x1FFFFF) : 0;
  }
};

const Composition& composition() {
  static const Composition c;
  return c;
}

// Whether nothing before cp can interact with it under normalization (it starts a new segment):
// a starter that no pair composes onto, whose decomposition also begins with such a starter.
bool is_boundary(char32_t cp, bool compat) {
  if (cp < 0x300) return true;
  const Composition& comp = composition();
  char32_t first = cp;
  for (;;) {
    if (combining_class(first) != 0 || comp.is_second(first)) return false;
    if (is_hangul_syllable(first)) return true;
    const Mapping m = lookup_decomposition(first);
    if (!m.found || (m.compat && !compat)) return true;
    char32_t next = 0;
    bool got = false;
    for_each_mapped(m, [&](char32_t c) { if (!got) next = c, got = true; });
    first = next;
  }
}

// A stable sort by combining class: insertion sort for the usual short runs, a counting sort (classes
// are below 256) for long ones, so that no input makes it quadratic.
void sort_by_class(Mark* m, size_t n) {
  if (n <= 32) {
    for (size_t i = 1; i < n; ++i) {
      const Mark x = m[i];
      size_t k = i;
      for (; k > 0 && m[k - 1].ccc > x.ccc; --k) m[k] = m[k - 1];
      m[k] = x;
    }
    return;
  }
  std::vector<size_t> start(257, 0);
  for (size_t i = 0; i < n; ++i) ++start[size_t(m[i].ccc) + 1];
  for (size_t c = 1; c < start.size(); ++c) start[c] += start[c - 1];
  std::vector<Mark> sorted(n);
  for (size_t i = 0; i < n; ++i) sorted[start[m[i].ccc]++] = m[i];
  std::copy(sorted.begin(), sorted.end(), m);
}

// Canonical ordering, then (compose) canonical composition of one segment, appended as UTF-8.
void flush_segment(std::vector<Mark>& seg, bool compose, std::string& out) {
  if (seg.size() == 1 && seg[0].cp < 0x80) {
    out.push_back(char(seg[0].cp));
    seg.clear();
    return;
  }
  for (size_t i = 0; i < seg.size();) {  // stable-sort each run of non-starters by combining class
    if (seg[i].ccc == 0) { ++i; continue; }
    size_t j = i;
    while (j < seg.size() && seg[j].ccc != 0) ++j;
    sort_by_class(seg.data() + i, j - i);
    i = j;
  }
  if (compose && seg.size() > 1) {
    const Composition& comp = composition();
    size_t starter = seg[0].ccc == 0 ? 0 : SIZE_MAX, kept = 1;
    int last_ccc = -1;  // class of the last code point kept after the starter; -1: none
    for (size_t i = 1; i < seg.size(); ++i) {
      const Mark m = seg[i];
      const bool blocked = last_ccc != -1 && (last_ccc == 0 || last_ccc >= m.ccc);
      if (starter != SIZE_MAX && !blocked) {
        if (const char32_t c = comp.compose(seg[starter].cp, m.cp)) {
          seg[starter].cp = c;
          continue;
        }
      }
      if (m.ccc == 0) {
        starter = kept;
        last_ccc = -1;
      } else {
        last_ccc = m.ccc;
      }
      seg[kept++] = m;
    }
    seg.resize(kept);
  }
  for (const Mark& m : seg) append_utf8(out, m.cp);
  seg.clear();
}

}  // namespace

uint8_t combining_class(char32_t cp) {
  if (cp < 0x300 || cp >= 0x110000) return 0;
  const uint32_t key = (uint32_t(cp) << 8) | 0xFFu;
  const uint32_t* it = std::upper_bound(std::begin(t::kCombiningClass), std::end(t::kCombiningClass), key);
  return uint8_t(*(it - 1) & 0xFFu);
}

std::string normalize(std::string_view text, NormalForm form) {
  const bool compat = form == NormalForm::NFKC || form == NormalForm::NFKD;
  const bool compose = form == NormalForm::NFC || form == NormalForm::NFKC;
  std::string out;
  out.reserve(text.size());
  std::vector<Mark> seg;
  for (size_t pos = 0; pos < text.size();) {
    if (uint8_t(text[pos]) < 0x80) {  // an ASCII run: only its last character can combine with what follows
      if (!seg.empty()) flush_segment(seg, compose, out);
      size_t end = pos;
      while (end < text.size() && uint8_t(text[end]) < 0x80) ++end;
      out.append(text.data() + pos, end - pos - 1);
      seg.push_back({char32_t(uint8_t(text[end - 1])), 0});
      pos = end;
      continue;
    }
    const Utf8Step c = decode_utf8(text, pos);
    pos += c.len;
    if (!seg.empty() && is_boundary(c.cp, compat)) flush_segment(seg, compose, out);
    decompose(c.cp, compat, seg);
  }
  if (!seg.empty()) flush_segment(seg, compose, out);
  return out;
}

void append_without_accents(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(char(cp));
    return;
  }
  std::vector<Mark> d;
  decompose(cp, false, d);
  for (const Mark& m : d)
    if (category(m.cp) != Category::Mn) append_utf8(out, m.cp);
}

// --- UTF-8 --------------------------------------------------------------------------------------

Utf8Step decode_utf8(std::string_view s, size_t pos) {
  const auto byte = [&](size_t i) { return i < s.size() ? uint8_t(s[i]) : uint8_t(0); };
  const uint8_t b0 = byte(pos);
  if (b0 < 0x80) return {b0, 1, true};
  // Well-formed sequences (Unicode Table 3-7): length and the allowed range of the second byte.
  uint32_t len;
  uint8_t lo = 0x80, hi = 0xBF;
  char32_t cp;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2, cp = b0 & 0x1F;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3, cp = b0 & 0x0F;
    if (b0 == 0xE0) lo = 0xA0;
    if (b0 == 0xED) hi = 0x9F;
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4, cp = b0 & 0x07;
    if (b0 == 0xF0) lo = 0x90;
    if (b0 == 0xF4) hi = 0x8F;
  } else {
    return {0xFFFD, 1, false};
  }
  for (uint32_t k = 1; k < len; ++k) {
    const uint8_t b = byte(pos + k);
    const bool ok = pos + k < s.size() && (k == 1 ? (b >= lo && b <= hi) : (b >= 0x80 && b <= 0xBF));
    if (!ok) return {0xFFFD, k, false};  // maximal subpart: the lead and the good continuations
    cp = (cp << 6) | (b & 0x3F);
  }
  return {cp, len, true};
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(char(cp));
  } else if (cp < 0x800) {
    out.push_back(char(0xC0 | (cp >> 6)));
    out.push_back(char(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(char(0xE0 | (cp >> 12)));
    out.push_back(char(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(char(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(char(0xF0 | (cp >> 18)));
    out.push_back(char(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(char(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(char(0x80 | (cp & 0x3F)));
  }
}

std::string sanitize_utf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t pos = 0; pos < s.size();) {
    const Utf8Step c = decode_utf8(s, pos);
    if (c.valid)
      out.append(s.data() + pos, c.len);
    else
      append_utf8(out, 0xFFFD);
    pos += c.len;
  }
  return out;
}

namespace {
void append_escaped(std::string& out, char32_t cp) {
  char buf[16];
  switch (cp) {
    case '\n': out += "\\n"; return;
    case '\t': out += "\\t"; return;
    case '\r': out += "\\r"; return;
    default: break;
  }
  if (cp < 0x100)
    std::snprintf(buf, sizeof buf, "\\x%02x", unsigned(cp));
  else
    std::snprintf(buf, sizeof buf, "\\u%04x", unsigned(cp));
  out += buf;
}
}  // namespace

std::string display_bytes(std::string_view bytes) {
  std::string out;
  for (size_t pos = 0; pos < bytes.size();) {
    const Utf8Step c = decode_utf8(bytes, pos);
    if (!c.valid) {
      for (uint32_t k = 0; k < c.len; ++k) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "<0x%02X>", unsigned(uint8_t(bytes[pos + k])));
        out += buf;
      }
    } else {
      const Category cat = category(c.cp);
      if (cat == Category::Cc || cat == Category::Zl || cat == Category::Zp)
        append_escaped(out, c.cp);
      else
        out.append(bytes.data() + pos, c.len);
    }
    pos += c.len;
  }
  return out;
}

}  // namespace attnlens::unicode
