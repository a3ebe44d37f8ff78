// sentencepiece's normalizer and BPE model as pipeline components (see sentencepiece_model.h).
#include "tokenizers/sentencepiece_model.h"

#include <algorithm>
#include <functional>

#include "core/error.h"
#include "tokenizers/bpe_merge.h"
#include "tokenizers/unicode.h"

namespace attnlens::tok {

namespace {
constexpr std::string_view kSpaceSymbol = "\xE2\x96\x81";  // U+2581
constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// Bytes of the UTF-8 character at s[pos] as sentencepiece's OneCharLen counts them (from the lead
// byte alone), never past the end.
size_t one_char_len(std::string_view s, size_t pos) {
  static const uint8_t kLen[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return std::min<size_t>(kLen[uint8_t(s[pos]) >> 4], s.size() - pos);
}
}  // namespace

// --- SymbolMatcher ---------------------------------------------------------------------------------
SymbolMatcher::SymbolMatcher(std::vector<std::string> symbols) : symbols_(std::move(symbols)), by_byte_(256) {
  for (size_t i = 0; i < symbols_.size(); ++i)
    if (!symbols_[i].empty()) by_byte_[uint8_t(symbols_[i][0])].push_back(uint32_t(i));
}

size_t SymbolMatcher::match(std::string_view text, size_t pos) const {
  if (symbols_.empty() || pos >= text.size()) return 0;
  size_t longest = 0;
  for (uint32_t i : by_byte_[uint8_t(text[pos])]) {
    const std::string& s = symbols_[i];
    if (s.size() > longest && text.compare(pos, s.size(), s) == 0) longest = s.size();
  }
  return longest;
}

// --- SentencePieceNormalizer -----------------------------------------------------------------------
SentencePieceNormalizer::SentencePieceNormalizer(SentencePieceNormalizerOptions o)
    : charsmap_(o.charsmap), has_charsmap_(!o.charsmap.empty()), user_(std::move(o.user_defined)),
      dummy_prefix_(o.add_dummy_prefix), remove_extra_(o.remove_extra_whitespaces), escape_(o.escape_whitespaces) {}

size_t SentencePieceNormalizer::normalize_prefix(std::string_view text, size_t pos, std::string_view& out) const {
  if (const size_t n = user_.match(text, pos)) {  // user-defined symbols are not normalized
    out = text.substr(pos, n);
    return n;
  }
  if (has_charsmap_) {
    if (const size_t n = charsmap_.longest_match(text, pos, out)) return n;
  }
  const unicode::Utf8Step c = unicode::decode_utf8(text, pos);
  if (!c.valid) {  // one byte of an ill-formed sequence becomes U+FFFD
    out = kReplacement;
    return 1;
  }
  out = text.substr(pos, c.len);
  return c.len;
}

std::string SentencePieceNormalizer::normalize(std::string_view text) const {
  std::string out;
  size_t pos = 0;
  std::string_view sp;
  if (remove_extra_) {  // leading text that normalizes to exactly " " is dropped
    while (pos < text.size()) {
      const size_t n = normalize_prefix(text, pos, sp);
      if (sp != " ") break;
      pos += n;
    }
  }
  if (pos >= text.size()) return out;
  out.reserve((text.size() - pos) * 3 / 2 + 4);
  const std::string_view space = escape_ ? kSpaceSymbol : std::string_view(" ");
  if (dummy_prefix_) out.append(space);
  bool prev_space = remove_extra_;
  while (pos < text.size()) {
    pos += normalize_prefix(text, pos, sp);
    while (prev_space && !sp.empty() && sp[0] == ' ') sp.remove_prefix(1);  // a space after a space
    if (sp.empty()) continue;
    for (char c : sp) {
      if (escape_ && c == ' ') out.append(kSpaceSymbol);
      else out.push_back(c);
    }
    prev_space = sp.back() == ' ';
    if (!remove_extra_) prev_space = false;
  }
  if (remove_extra_) {  // trailing spaces (or "▁", the text's own included) are dropped
    while (out.size() >= space.size() && out.compare(out.size() - space.size(), space.size(), space) == 0)
      out.resize(out.size() - space.size());
  }
  return out;
}

// --- SentencePieceBpeModel -------------------------------------------------------------------------
namespace {
std::vector<std::string> user_pieces(const std::vector<std::string>& pieces, const std::vector<SpmPiece>& kinds) {
  std::vector<std::string> out;
  for (size_t i = 0; i < kinds.size() && i < pieces.size(); ++i)
    if (kinds[i] == SpmPiece::UserDefined) out.push_back(pieces[i]);
  return out;
}
}  // namespace

SentencePieceBpeModel::SentencePieceBpeModel(SentencePieceBpeConfig c)
    : vocab_(c.pieces), bytes_(vocab_), kinds_(std::move(c.kinds)), user_(user_pieces(c.pieces, kinds_)),
      unk_(c.unk_id), byte_fallback_(c.byte_fallback) {
  const size_t n = c.pieces.size();
  AL_CHECK(n > 0 && c.scores.size() == n && kinds_.size() == n, "sentencepiece BPE: ", n, " pieces, ", c.scores.size(),
           " scores and ", kinds_.size(), " kinds");
  AL_CHECK(unk_ >= 0 && unk_ < int(n), "sentencepiece BPE: unk id ", unk_, " is outside the vocabulary (size ", n, ")");
  std::vector<float> distinct;
  for (size_t i = 0; i < n; ++i)
    if (kinds_[i] != SpmPiece::Reserved) distinct.push_back(c.scores[i]);
  std::sort(distinct.begin(), distinct.end(), std::greater<float>());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  rank_.assign(n, -1);
  for (size_t i = 0; i < n; ++i)
    if (kinds_[i] != SpmPiece::Reserved)
      rank_[i] = int(std::lower_bound(distinct.begin(), distinct.end(), c.scores[i], std::greater<float>()) - distinct.begin());
}

int SentencePieceBpeModel::mergeable(std::string_view piece) const {
  const int id = vocab_.find(piece);
  return id >= 0 && kinds_[size_t(id)] != SpmPiece::Reserved ? id : -1;
}

void SentencePieceBpeModel::encode_word(std::string_view word, std::vector<int>& out) const {
  // Symbols are ids: a piece's id, or n + k for the k-th symbol that is not a mergeable piece of its
  // own (an unknown character) or must never merge (a user-defined symbol matched in the text).
  const int n = vocab_.size();
  struct Other {
    std::string_view text;
    bool frozen;
  };
  std::vector<Other> other;
  std::vector<int> ids;
  ids.reserve(word.size());
  for (size_t pos = 0; pos < word.size();) {
    size_t len = user_.match(word, pos);
    const bool frozen = len > 0;
    if (!frozen) len = one_char_len(word, pos);
    const std::string_view sym = word.substr(pos, len);
    pos += len;
    const int id = frozen ? -1 : mergeable(sym);
    if (id >= 0) {
      ids.push_back(id);
    } else {
      ids.push_back(n + int(other.size()));
      other.push_back({sym, frozen});
    }
  }
  const auto text = [&](int id) -> std::string_view {
    return id < n ? std::string_view(vocab_.pieces()[size_t(id)]) : other[size_t(id - n)].text;
  };
  std::string pair;
  bpe_merge(ids, [&](int a, int b, MergeCandidate& m) {
    if ((a >= n && other[size_t(a - n)].frozen) || (b >= n && other[size_t(b - n)].frozen)) return false;
    pair.assign(text(a)).append(text(b));
    const int id = mergeable(pair);
    if (id < 0) return false;
    m = {rank_[size_t(id)], id};
    return true;
  });
  bool prev_unk = false;
  for (int id : ids) {
    if (id < n) {
      out.push_back(id);
      prev_unk = false;
      continue;
    }
    const Other& o = other[size_t(id - n)];
    if (o.frozen) {
      out.push_back(vocab_.find(o.text));
      prev_unk = false;
    } else if (byte_fallback_ && bytes_.all_present(o.text)) {
      for (char b : o.text) out.push_back(bytes_.id[uint8_t(b)]);
      prev_unk = false;
    } else {
      if (!prev_unk) out.push_back(unk_);  // a run of unknown symbols is one unk (sentencepiece's processor)
      prev_unk = true;
    }
  }
}

// --- SentencePieceDecoder -------------------------------------------------------------------------
namespace {
std::string spaces_for_symbols(std::string_view piece) {
  std::string out;
  out.reserve(piece.size());
  for (size_t i = 0; i < piece.size();) {
    if (piece.compare(i, kSpaceSymbol.size(), kSpaceSymbol) == 0) {
      out.push_back(' ');
      i += kSpaceSymbol.size();
    } else {
      out.push_back(piece[i++]);
    }
  }
  return out;
}
}  // namespace

namespace {
// Whitespace removed at both ends of the joined tokens: Python's str.strip() on the text (its
// str.isspace set). Each token is whole characters (a run of byte pieces is one token).
void strip_ends(std::vector<std::string>& out) {
  size_t i = 0;
  for (; i < out.size(); ++i) {
    std::string& s = out[i];
    size_t k = 0;
    for (unicode::Utf8Step c; k < s.size() && unicode::is_python_space((c = unicode::decode_utf8(s, k)).cp);) k += c.len;
    s.erase(0, k);
    if (!s.empty()) break;
  }
  for (size_t j = out.size(); j-- > i;) {
    std::string& s = out[j];
    size_t k = s.size();
    while (k > 0) {
      size_t at = k - 1;
      while (at > 0 && (uint8_t(s[at]) & 0xC0) == 0x80) --at;
      if (!unicode::is_python_space(unicode::decode_utf8(s, at).cp)) break;
      k = at;
    }
    s.resize(k);
    if (k) break;
  }
}
}  // namespace

void SentencePieceDecoder::decode_chain(std::vector<std::string>& tokens, DecodePosition where) const {
  std::vector<std::string> out;
  out.reserve(tokens.size());
  std::string bytes;  // a run of byte pieces
  bool text_empty = true, bos_ws = where == DecodePosition::Text, bos_ws_seen = false;
  const auto flush = [&] {
    if (bytes.empty()) return;
    std::string s;
    for (size_t pos = 0; pos < bytes.size();) {
      const unicode::Utf8Step c = unicode::decode_utf8(bytes, pos);
      if (c.valid) {
        s.append(bytes, pos, c.len);
        pos += c.len;
      } else {
        s.append(kReplacement);
        pos += 1;
      }
    }
    text_empty = false;
    out.push_back(std::move(s));
    bytes.clear();
  };
  for (std::string& t : tokens) {
    const int b = o_.byte_pieces ? unicode::byte_piece_value(t) : -1;
    if (b >= 0) {
      if (where == DecodePosition::Token) out.push_back(std::string(1, char(b)));  // the byte itself
      else bytes.push_back(char(b));
      continue;
    }
    flush();
    if (bos_ws_seen || !text_empty) bos_ws = false;
    bos_ws_seen = false;
    std::string_view piece = t;
    std::string decoded;
    if (!o_.unk_piece.empty() && piece == o_.unk_piece) {
      decoded = o_.unk_surface;
    } else {
      if (bos_ws && o_.strip_first_space && piece.compare(0, kSpaceSymbol.size(), kSpaceSymbol) == 0) {
        piece.remove_prefix(kSpaceSymbol.size());
        bos_ws_seen = !o_.strip_leading_spaces;
      }
      decoded = spaces_for_symbols(piece);
    }
    if (!decoded.empty()) text_empty = false;
    out.push_back(std::move(decoded));
  }
  flush();
  if (o_.strip_ends && where == DecodePosition::Text) strip_ends(out);
  tokens = std::move(out);
}

}  // namespace attnlens::tok
