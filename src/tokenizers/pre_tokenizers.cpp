// Pre-tokenizers following HF tokenizers' pre_tokenizers/ and the split behaviours of
// tokenizer/normalizer.rs (NormalizedString::split).
#include "tokenizers/pre_tokenizers.h"

#include <algorithm>
#include <cstring>

#include "core/error.h"
#include "tokenizers/unicode.h"

namespace attnlens::tok {

namespace {

using Range = std::pair<size_t, size_t>;

// Appends to kept the pieces of a word [base, base + n) that survive the behaviour, given its
// matches (byte ranges within the word): HF's Pattern::find_matches lists gaps (false) and matches
// (true), invert swaps them, then NormalizedString::split groups them. Written as one pass over the
// pieces with a pending piece, without temporary vectors.
void apply_behavior(uint32_t base, size_t n, const std::vector<Range>& matches, SplitBehavior behavior, bool invert,
                    std::vector<std::pair<uint32_t, uint32_t>>& kept) {
  bool have = false, pending_remove = false, previous_match = false;
  Range pending{0, 0};
  const auto flush = [&] {
    if (have && !pending_remove && pending.second > pending.first)
      kept.push_back({base + uint32_t(pending.first), base + uint32_t(pending.second)});
    have = false;
  };
  const auto piece = [&](Range r, bool is_match) {
    if (invert) is_match = !is_match;
    switch (behavior) {
      case SplitBehavior::Isolated:
        flush();
        pending = r, pending_remove = false, have = true;
        break;
      case SplitBehavior::Removed:
        flush();
        pending = r, pending_remove = is_match, have = true;
        break;
      case SplitBehavior::Contiguous:
        if (is_match == previous_match && have) pending.second = r.second;
        else flush(), pending = r, pending_remove = false, have = true;
        break;
      case SplitBehavior::MergedWithPrevious:
        if (is_match && !previous_match && have) pending.second = r.second;
        else flush(), pending = r, pending_remove = false, have = true;
        break;
      case SplitBehavior::MergedWithNext:  // handled by the caller, from the end
        break;
    }
    previous_match = is_match;
  };
  if (behavior == SplitBehavior::MergedWithNext) {
    // HF folds from the end: a match merges with the piece after it (unless that one is a match).
    std::vector<std::pair<Range, bool>> pieces;
    size_t prev = 0;
    for (const Range& m : matches) {
      if (m.first > prev) pieces.push_back({{prev, m.first}, invert});
      pieces.push_back({m, !invert});
      prev = m.second;
    }
    if (prev < n) pieces.push_back({{prev, n}, invert});
    std::vector<Range> out;
    for (size_t k = pieces.size(); k-- > 0;) {
      const auto& [r, is_match] = pieces[k];
      if (is_match && !previous_match && !out.empty()) out.back().first = r.first;
      else out.push_back(r);
      previous_match = is_match;
    }
    for (size_t k = out.size(); k-- > 0;)
      if (out[k].second > out[k].first) kept.push_back({base + uint32_t(out[k].first), base + uint32_t(out[k].second)});
    return;
  }
  size_t prev = 0;
  for (const Range& m : matches) {
    if (m.first > prev) piece({prev, m.first}, false);
    piece(m, true);
    prev = m.second;
  }
  if (prev < n) piece({prev, n}, false);
  flush();
}

// Splits every word of w: find(word) gives the matches within it (byte ranges, in order).
template <class Find>
void split_words(Words& w, SplitBehavior behavior, bool invert, const Find& find) {
  std::vector<std::pair<uint32_t, uint32_t>> spans;
  spans.reserve(w.spans.size() + w.text.size() / 4);
  for (size_t i = 0; i < w.spans.size(); ++i) {
    const std::string_view word = w.word(i);
    apply_behavior(w.spans[i].first, word.size(), find(word), behavior, invert, spans);
  }
  w.spans = std::move(spans);
}

// The matches of a per-code-point predicate: each character for which it holds.
template <class Pred>
std::vector<Range> char_matches(std::string_view word, const Pred& pred) {
  std::vector<Range> out;
  for (size_t pos = 0; pos < word.size();) {
    const unicode::Utf8Step c = unicode::decode_utf8(word, pos);
    if (c.valid && pred(c.cp)) out.push_back({pos, pos + c.len});
    pos += c.len;
  }
  return out;
}

template <class Pred>
void split_chars(Words& w, SplitBehavior behavior, const Pred& pred) {
  split_words(w, behavior, false, [&](std::string_view word) { return char_matches(word, pred); });
}

// Rewrites every word of w: f(word, i, out) writes its new text at out (at most max_growth × its
// size + extra bytes) and returns the end. Raw writes into a buffer sized once: no call per byte
// (in the wasm build a call from a function with objects to destroy costs a JS round trip).
template <class F>
void rewrite_words(Words& w, size_t max_growth, size_t extra, const F& f) {
  std::string text;
  text.resize(w.text.size() * max_growth + w.spans.size() * extra);
  char* const base = text.data();
  char* out = base;
  for (size_t i = 0; i < w.spans.size(); ++i) {
    const std::string_view word = w.word(i);
    const uint32_t start = uint32_t(out - base);
    out = f(word, i, out);
    w.spans[i] = {start, uint32_t(out - base)};
  }
  text.resize(size_t(out - base));
  w.text = std::move(text);
}

struct ByteAlphabet {
  std::string spelling[256];
  int byte_of[324];  // code points below 324 only
  ByteAlphabet() {
    std::fill(std::begin(byte_of), std::end(byte_of), -1);
    int extra = 0;
    for (int b = 0; b < 256; ++b) {  // GPT-2's bytes_to_unicode()
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      const char32_t cp = printable ? char32_t(b) : char32_t(256 + extra++);
      unicode::append_utf8(spelling[b], cp);
      byte_of[cp] = b;
    }
  }
};

const ByteAlphabet& alphabet() {
  static const ByteAlphabet a;
  return a;
}

}  // namespace

const char* const kGpt2Pattern = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

const std::string& byte_level_char(uint8_t b) { return alphabet().spelling[b]; }
int byte_level_byte(char32_t cp) { return cp < 324 ? alphabet().byte_of[cp] : -1; }

void SplitPreTokenizer::pre_tokenize(Words& w) const {
  split_words(w, behavior_, invert_, [&](std::string_view word) { return pattern_.find_all(word); });
}

ByteLevelPreTokenizer::ByteLevelPreTokenizer(bool add_prefix_space, bool use_regex)
    : add_prefix_space_(add_prefix_space), use_regex_(use_regex) {
  if (use_regex_)
    split_ = std::make_unique<SplitPreTokenizer>(Pattern::regex(kGpt2Pattern), SplitBehavior::Isolated, false);
}

void ByteLevelPreTokenizer::pre_tokenize(Words& w) const {
  if (add_prefix_space_) {
    rewrite_words(w, 1, 1, [](std::string_view word, size_t, char* out) {
      if (word.empty() || word[0] != ' ') *out++ = ' ';
      std::memcpy(out, word.data(), word.size());
      return out + word.size();
    });
  }
  if (split_) split_->pre_tokenize(w);
  const ByteAlphabet& a = alphabet();
  rewrite_words(w, 2, 0, [&](std::string_view word, size_t, char* out) {  // stand-ins are 1 or 2 bytes
    for (char ch : word) {
      const std::string& sp = a.spelling[uint8_t(ch)];
      *out++ = sp[0];
      if (sp.size() > 1) *out++ = sp[1];
    }
    return out;
  });
}

void MetaspacePreTokenizer::pre_tokenize(Words& w) const {
  const std::string& rep = o_.replacement;
  const bool at_start = w.at_start;
  rewrite_words(w, rep.size(), rep.size(), [&](std::string_view word, size_t i, char* out) {
    const bool prepend = o_.prepend_scheme == PrependScheme::Always ||
                         (o_.prepend_scheme == PrependScheme::First && at_start && w.spans[i].first == 0);
    const bool starts_with_rep = (!word.empty() && word[0] == ' ') || word.compare(0, rep.size(), rep) == 0;
    if (prepend && !starts_with_rep) out = std::copy(rep.begin(), rep.end(), out);
    for (char ch : word) {
      if (ch == ' ') out = std::copy(rep.begin(), rep.end(), out);
      else *out++ = ch;
    }
    return out;
  });
  if (o_.split) {
    const Pattern p = Pattern::literal(rep);
    split_words(w, SplitBehavior::MergedWithNext, false, [&](std::string_view word) { return p.find_all(word); });
  }
}

void WhitespacePreTokenizer::pre_tokenize(Words& w) const {
  static const Regex words("\\w+|[^\\w\\s]+");  // HF pre_tokenizers/whitespace.rs
  split_words(w, SplitBehavior::Removed, true, [&](std::string_view word) { return words.find_all(Subject(word)); });
}

void WhitespaceSplitPreTokenizer::pre_tokenize(Words& w) const {
  split_chars(w, SplitBehavior::Removed, unicode::is_white_space);
}

void PunctuationPreTokenizer::pre_tokenize(Words& w) const {
  split_chars(w, behavior_, unicode::is_bert_punctuation);  // ASCII punctuation or \p{P}
}

void DigitsPreTokenizer::pre_tokenize(Words& w) const {
  split_chars(w, individual_ ? SplitBehavior::Isolated : SplitBehavior::Contiguous, unicode::is_number);
}

void BertPreTokenizer::pre_tokenize(Words& w) const {
  split_chars(w, SplitBehavior::Removed, unicode::is_white_space);
  split_chars(w, SplitBehavior::Isolated, unicode::is_bert_punctuation);
}

void CharDelimiterSplitPreTokenizer::pre_tokenize(Words& w) const {
  split_chars(w, SplitBehavior::Removed, [&](char32_t c) { return c == delimiter_; });
}

}  // namespace attnlens::tok
