// Unicode support for the tokenizers: UTF-8 decoding/encoding, general categories, White_Space,
// lowercase, accent stripping and the normalization forms NFC, NFD, NFKC, NFKD. Tables come from tools/gen_unicode_tables.py (see unicode_tables.h
// for the Unicode version); no ICU, no std::regex.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace attnlens::unicode {

// General categories, in the generator's index order.
enum class Category : uint8_t {
  Lu, Ll, Lt, Lm, Lo, Mn, Mc, Me, Nd, Nl, No, Pc, Pd, Ps, Pe, Pi, Pf, Po,
  Sm, Sc, Sk, So, Zs, Zl, Zp, Cc, Cf, Cs, Co, Cn
};

const char* table_version();            // Unicode version the tables were generated from
Category category(char32_t cp);         // Cn for anything past U+10FFFF
bool is_letter(char32_t cp);            // \p{L}
bool is_number(char32_t cp);            // \p{N}
bool is_punctuation(char32_t cp);       // \p{P}
bool is_mark(char32_t cp);              // \p{M}: Mn Mc Me
bool is_other(char32_t cp);             // \p{C}: Cc Cf Cs Co Cn (Rust's char::is_other)
bool is_white_space(char32_t cp);       // the White_Space property (Rust char::is_whitespace, \s)
bool is_bert_punctuation(char32_t cp);  // ASCII 33-47, 58-64, 91-96, 123-126, or \p{P} (BERT)
bool is_cjk_ideograph(char32_t cp);     // BERT's _is_chinese_char ranges

// Appends the full lowercase mapping of cp (Rust char::to_lowercase) as UTF-8.
void append_lowercase(std::string& out, char32_t cp);
// Appends NFD(cp) without its nonspacing marks (Mn), as UTF-8: HF BertNormalizer's strip_accents
// for one code point. Canonical reordering is not applied: it can only change the result for runs
// of two or more spacing marks with a nonzero combining class (25 code points, e.g. musical symbols).
void append_without_accents(std::string& out, char32_t cp);

// Python's str methods (CPython's unicodeobject.c and unicodectype.c; /usr/bin/python3's unicodedata
// is the tables' Unicode version), for the rules transformers' slow tokenizers apply in Python.
bool is_python_space(char32_t cp);  // str.isspace(): White_Space and U+001C..U+001F
bool is_python_digit(char32_t cp);  // str.isdigit(): Nd, and digits of other categories (² ① ⑴ 𐹠)
// str.lower() of UTF-8 text: each code point's full lowercase (append_lowercase), except that Σ
// (U+03A3) becomes final ς in the Final_Sigma context (after a cased letter and not before one,
// case-ignorable code points skipped, as CPython's handle_capital_sigma reads it).
std::string python_lower(std::string_view text);

// The canonical combining class (UnicodeData.txt field 3).
uint8_t combining_class(char32_t cp);

// Unicode normalization (UAX #15): canonical (NFD) or compatibility (NFKD) decomposition, canonical
// ordering, and for NFC / NFKC canonical composition. Ill-formed UTF-8 becomes U+FFFD. Text that is
// already normalized (in particular ASCII) is copied with little work.
enum class NormalForm : uint8_t { NFC, NFD, NFKC, NFKD };
std::string normalize(std::string_view text, NormalForm form);

// --- UTF-8 --------------------------------------------------------------------------------------
// One decoding step at s[pos]: a well-formed character (len 1-4, valid) or an ill-formed sequence
// (cp U+FFFD, valid false, len = its maximal subpart as WHATWG TextDecoder counts it, at least 1).
struct Utf8Step {
  char32_t cp;
  uint32_t len;
  bool valid;
};
Utf8Step decode_utf8(std::string_view s, size_t pos);
void append_utf8(std::string& out, char32_t cp);
// s with every ill-formed sequence replaced by U+FFFD (the same replacements TextDecoder makes).
std::string sanitize_utf8(std::string_view s);
// A display label for raw bytes: valid characters as themselves except controls, which are escaped
// visibly ("\n", "\t", "\r", "\x1b", "\u0085"), and bytes that are not part of a well-formed
// character as "<0xNN>". Always valid UTF-8.
std::string display_bytes(std::string_view bytes);

// The byte a byte-fallback piece "<0xXX>" stands for, or -1. sentencepiece writes and reads only
// upper-case hex digits; Hugging Face's ByteFallback decoder also reads lower case (lowercase_hex).
inline int byte_piece_value(std::string_view piece, bool lowercase_hex = false) {
  if (piece.size() != 6 || piece.compare(0, 3, "<0x") != 0 || piece[5] != '>') return -1;
  int v = 0;
  for (size_t i = 3; i < 5; ++i) {
    const char c = piece[i];
    const int d = c >= '0' && c <= '9'                   ? c - '0'
                  : c >= 'A' && c <= 'F'                 ? c - 'A' + 10
                  : lowercase_hex && c >= 'a' && c <= 'f' ? c - 'a' + 10
                                                          : -1;
    if (d < 0) return -1;
    v = v * 16 + d;
  }
  return v;
}

}  // namespace attnlens::unicode
