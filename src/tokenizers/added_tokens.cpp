#include "tokenizers/added_tokens.h"

#include <algorithm>

#include "core/error.h"
#include "tokenizers/unicode.h"

namespace attnlens::tok {

AddedTokenMatcher::AddedTokenMatcher(std::vector<AddedToken> tokens) : tokens_(std::move(tokens)) {
  by_first_byte_.resize(256);
  for (size_t i = 0; i < tokens_.size(); ++i) {
    AL_CHECK(!tokens_[i].content.empty(), "added token ", tokens_[i].id, " has empty content");
    by_first_byte_[uint8_t(tokens_[i].content[0])].push_back(int(i));
  }
  for (auto& list : by_first_byte_)  // longest first; equal lengths in file order (a stable order)
    std::sort(list.begin(), list.end(), [&](int a, int b) {
      const size_t la = tokens_[size_t(a)].content.size(), lb = tokens_[size_t(b)].content.size();
      return la > lb || (la == lb && a < b);
    });
}

namespace {
// The code point ending just before pos (pos > 0).
char32_t code_point_before(std::string_view s, size_t pos) {
  size_t start = pos - 1;
  while (start > 0 && pos - start < 4 && (uint8_t(s[start]) & 0xC0) == 0x80) --start;
  const unicode::Utf8Step c = unicode::decode_utf8(s, start);
  return start + c.len == pos ? c.cp : 0xFFFD;
}

bool is_word_char(char32_t cp) {  // \w
  if (cp == '_') return true;
  const unicode::Category c = unicode::category(cp);
  return unicode::is_letter(cp) || unicode::is_mark(cp) || c == unicode::Category::Nd || c == unicode::Category::Pc;
}

// End of the whitespace run starting at pos (python: Python's str.isspace, else White_Space).
size_t white_space_end(std::string_view s, size_t pos, bool python) {
  while (pos < s.size()) {
    const unicode::Utf8Step c = unicode::decode_utf8(s, pos);
    if (!c.valid || !(python ? unicode::is_python_space(c.cp) : unicode::is_white_space(c.cp))) break;
    pos += c.len;
  }
  return pos;
}

// Start of the whitespace run that ends at end, searching no further back than begin.
size_t white_space_start(std::string_view s, size_t begin, size_t end, bool python) {
  size_t run_start = end;
  for (size_t pos = begin; pos < end;) {
    const unicode::Utf8Step c = unicode::decode_utf8(s, pos);
    const bool ws = c.valid && (python ? unicode::is_python_space(c.cp) : unicode::is_white_space(c.cp));
    if (!ws) run_start = end;
    else if (run_start == end) run_start = pos;
    pos += c.len;
  }
  return run_start;
}
}  // namespace

const AddedToken* AddedTokenMatcher::longest_at(std::string_view text, size_t pos) const {
  for (int i : by_first_byte_[uint8_t(text[pos])]) {
    const AddedToken& t = tokens_[size_t(i)];
    if (text.compare(pos, t.content.size(), t.content) == 0) return &t;
  }
  return nullptr;
}

std::vector<Segment> AddedTokenMatcher::split(std::string_view text) const {
  std::vector<Segment> out;
  size_t seg_start = 0;
  for (size_t pos = 0; pos < text.size() && !tokens_.empty();) {
    const AddedToken* t = by_first_byte_[uint8_t(text[pos])].empty() ? nullptr : longest_at(text, pos);
    if (!t) {
      ++pos;
      continue;
    }
    size_t start = pos, stop = pos + t->content.size();
    pos = stop;
    if (t->single_word && ((start > 0 && is_word_char(code_point_before(text, start))) ||
                           (stop < text.size() && is_word_char(unicode::decode_utf8(text, stop).cp))))
      continue;
    if (t->lstrip) start = white_space_start(text, seg_start, start, t->python_space);
    if (t->rstrip) stop = white_space_end(text, stop, t->python_space);
    if (start > seg_start) out.push_back({text.substr(seg_start, start - seg_start), seg_start, -1});
    out.push_back({text.substr(start, stop - start), start, t->id});
    seg_start = pos = stop;
  }
  if (seg_start < text.size()) out.push_back({text.substr(seg_start), seg_start, -1});
  return out;
}

}  // namespace attnlens::tok
