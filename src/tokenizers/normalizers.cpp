// Normalizers following HF tokenizers' normalizers/ (unicode.rs, utils.rs, strip.rs, replace.rs,
// prepend.rs, bert.rs); the precompiled charsmap is in precompiled.cpp.
#include "tokenizers/normalizers.h"

#include "core/error.h"

namespace attnlens::tok {

std::string UnicodeNormalizer::normalize(std::string_view text) const { return unicode::normalize(text, form_); }

std::string LowercaseNormalizer::normalize(std::string_view text) const {
  std::string out;
  out.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    const unicode::Utf8Step c = unicode::decode_utf8(text, pos);
    if (c.valid)
      unicode::append_lowercase(out, c.cp);
    else
      out.append(text.data() + pos, c.len);  // kept as it is; the model sees the same bytes
    pos += c.len;
  }
  return out;
}

std::string StripNormalizer::normalize(std::string_view text) const {
  size_t begin = 0, end = text.size();
  if (left_) {
    while (begin < end) {
      const unicode::Utf8Step c = unicode::decode_utf8(text, begin);
      if (!c.valid || !unicode::is_white_space(c.cp)) break;
      begin += c.len;
    }
  }
  if (right_) {
    size_t last_non_space = begin;  // end of the last non-whitespace character
    for (size_t pos = begin; pos < end;) {
      const unicode::Utf8Step c = unicode::decode_utf8(text, pos);
      pos += c.len;
      if (!c.valid || !unicode::is_white_space(c.cp)) last_non_space = pos;
    }
    end = last_non_space;
  }
  return std::string(text.substr(begin, end - begin));
}

std::string StripAccentsNormalizer::normalize(std::string_view text) const {
  std::string out;
  out.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    const unicode::Utf8Step c = unicode::decode_utf8(text, pos);
    if (!c.valid || !unicode::is_mark(c.cp)) out.append(text.data() + pos, c.len);
    pos += c.len;
  }
  return out;
}

Pattern Pattern::literal(std::string s) {
  Pattern p;
  p.literal_ = std::move(s);
  return p;
}

Pattern Pattern::regex(std::string_view pattern) {
  Pattern p;
  p.regex_ = std::make_shared<const Regex>(pattern);
  return p;
}

std::vector<std::pair<size_t, size_t>> Pattern::find_all(std::string_view text) const {
  if (regex_) return regex_->find_all(Subject(text));
  std::vector<std::pair<size_t, size_t>> out;
  if (literal_.empty()) return out;
  for (size_t at = text.find(literal_); at != std::string_view::npos; at = text.find(literal_, at + literal_.size()))
    out.push_back({at, at + literal_.size()});
  return out;
}

std::string replace_all(std::string_view text, const Pattern& pattern, std::string_view content) {
  std::string out;
  out.reserve(text.size());
  size_t prev = 0;
  for (const auto& [b, e] : pattern.find_all(text)) {
    out.append(text.data() + prev, b - prev);
    out.append(content);
    prev = e;
  }
  out.append(text.data() + prev, text.size() - prev);
  return out;
}

std::string PrependNormalizer::normalize(std::string_view text) const {
  if (text.empty()) return {};
  std::string out = prefix_;
  out.append(text);
  return out;
}

std::string BertNormalizer::normalize(std::string_view text) const {
  std::string out;
  out.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    const unicode::Utf8Step c = unicode::decode_utf8(text, pos);
    pos += c.len;
    char32_t cp = c.cp;  // U+FFFD for ill-formed bytes
    const bool tab_or_newline = cp == '\t' || cp == '\n' || cp == '\r';
    if (o_.clean_text) {
      if (cp == 0 || cp == 0xFFFD || (unicode::is_other(cp) && !tab_or_newline)) continue;
      if (tab_or_newline || unicode::is_white_space(cp)) cp = ' ';
    }
    const bool cjk = o_.handle_chinese_chars && unicode::is_cjk_ideograph(cp);
    if (cjk) out.push_back(' ');
    unicode::append_utf8(out, cp);
    if (cjk) out.push_back(' ');
  }
  if (o_.strip_accents) {  // NFD of the whole text, then without its nonspacing marks
    const std::string nfd = unicode::normalize(out, unicode::NormalForm::NFD);
    out.clear();
    for (size_t pos = 0; pos < nfd.size();) {
      const unicode::Utf8Step c = unicode::decode_utf8(nfd, pos);
      if (unicode::category(c.cp) != unicode::Category::Mn) out.append(nfd.data() + pos, c.len);
      pos += c.len;
    }
  }
  if (o_.lowercase) return LowercaseNormalizer().normalize(out);
  return out;
}

std::string SequenceNormalizer::normalize(std::string_view text) const {
  std::string s(text);
  for (const auto& n : parts_) s = n->normalize(s);
  return s;
}

}  // namespace attnlens::tok
