#include "tokenizers/unicode.h"

#include <algorithm>
#include <cstdio>
#include <iterator>

#include "tokenizers/unicode_tables.h"

namespace attnlens::unicode {

namespace t = tables;

const char* table_version() { return t::kUnicodeVersion; }

Category category(char32_t cp) {
  if (cp >= 0x110000) return Category::Cn;
  // Last range whose first code point is <= cp; kCategoryRanges[0] starts at 0.
  const uint32_t key = (uint32_t(cp) << 5) | 31u;
  const uint32_t* it = std::upper_bound(std::begin(t::kCategoryRanges), std::end(t::kCategoryRanges), key);
  return Category(*(it - 1) & 31u);
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

void append_without_accents(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(char(cp));
    return;
  }
  if (cp >= 0xAC00 && cp <= 0xD7A3) {  // Hangul syllable: algorithmic NFD into conjoining jamo (Lo)
    const char32_t s = cp - 0xAC00;
    append_utf8(out, 0x1100 + s / 588);
    append_utf8(out, 0x1161 + (s % 588) / 28);
    if (s % 28) append_utf8(out, 0x11A7 + s % 28);
    return;
  }
  auto it = std::lower_bound(std::begin(t::kStripAccents), std::end(t::kStripAccents), uint32_t(cp),
                             [](const t::StripAccents& e, uint32_t c) { return e.cp < c; });
  if (it != std::end(t::kStripAccents) && it->cp == cp) {
    if (!(it->value & t::kPoolFlag)) {
      append_utf8(out, it->value);
      return;
    }
    const uint32_t offset = (it->value & ~t::kPoolFlag) >> 8, len = it->value & 0xFF;
    for (uint32_t i = 0; i < len; ++i) append_utf8(out, t::kStripAccentsPool[offset + i]);
    return;
  }
  if (category(cp) != Category::Mn) append_utf8(out, cp);
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
