// GPT-2 byte-level BPE, following OpenAI's gpt-2 encoder.py and HF tokenizers' ByteLevel + BPE:
// split the text with the GPT-2 pattern, map each word's UTF-8 bytes to the printable characters of
// bytes_to_unicode(), then merge pairs by the rank of the merges list.
#include "tokenizers/byte_level_bpe.h"

#include "core/error.h"
#include "tokenizers/bpe_merge.h"
#include "tokenizers/unicode.h"

namespace attnlens {
namespace tok {

namespace {

// --- the GPT-2 pre-tokenizer, hand-written (no std::regex) ---------------------------------------

enum class CharClass : uint8_t { Letter, Number, Space, Other };

struct Unit {  // one character (or one ill-formed byte sequence) of the text
  size_t pos;
  uint32_t len;
  char32_t cp;
  CharClass cls;
};

std::vector<Unit> split_units(std::string_view text) {
  std::vector<Unit> units;
  units.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    const unicode::Utf8Step c = unicode::decode_utf8(text, pos);
    CharClass cls = CharClass::Other;
    if (c.valid) {
      if (unicode::is_white_space(c.cp)) cls = CharClass::Space;
      else if (unicode::is_letter(c.cp)) cls = CharClass::Letter;
      else if (unicode::is_number(c.cp)) cls = CharClass::Number;
    }
    units.push_back({pos, c.len, c.valid ? c.cp : 0xFFFD, cls});
    pos += c.len;
  }
  return units;
}

// Length (in units) of the contraction 's 't 're 've 'm 'll 'd at i, or 0. Lowercase only, as in the
// pattern ("'S" is not a contraction).
size_t contraction_at(const std::vector<Unit>& u, size_t i) {
  if (u[i].cp != '\'' || i + 1 >= u.size()) return 0;
  const char32_t a = u[i + 1].cp;
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return 2;
  if (i + 2 >= u.size()) return 0;
  const char32_t b = u[i + 2].cp;
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return 3;
  return 0;
}

// End (in units) of the pattern's match starting at i; the alternatives are tried in order.
size_t match_end(const std::vector<Unit>& u, size_t i) {
  const size_t n = u.size();
  if (const size_t c = contraction_at(u, i)) return i + c;
  // " ?\p{L}+", " ?\p{N}+", " ?[^\s\p{L}\p{N}]+": an optional literal space, then a run of one class.
  size_t j = i;
  if (u[i].cp == ' ' && i + 1 < n && u[i + 1].cls != CharClass::Space) j = i + 1;
  if (u[j].cls != CharClass::Space) {
    size_t k = j;
    while (k < n && u[k].cls == u[j].cls) ++k;
    return k;
  }
  // "\s+(?!\S)": the whitespace run, giving back its last character if a non-space follows (that
  // space then starts the next word); "\s+" when the run is a single character before a non-space.
  size_t k = i;
  while (k < n && u[k].cls == CharClass::Space) ++k;
  return (k == n || k - i == 1) ? k : k - 1;
}

// --- GPT-2's bytes_to_unicode() ------------------------------------------------------------------

struct ByteMap {
  std::string encode[256];  // byte -> UTF-8 of its printable stand-in
  int decode_cp[324];       // stand-in code point (< 324) -> byte, -1 if not a stand-in
  ByteMap() {
    std::fill(std::begin(decode_cp), std::end(decode_cp), -1);
    int extra = 0;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      const char32_t cp = printable ? char32_t(b) : char32_t(256 + extra++);
      unicode::append_utf8(encode[b], cp);
      decode_cp[cp] = b;
    }
  }
};

const ByteMap& byte_map() {
  static const ByteMap map;
  return map;
}

// The bytes a byte-level piece stands for; false if it has characters outside the map.
bool piece_to_bytes(std::string_view piece, std::string& out) {
  out.clear();
  for (size_t pos = 0; pos < piece.size();) {
    const unicode::Utf8Step c = unicode::decode_utf8(piece, pos);
    if (!c.valid || c.cp >= 324 || byte_map().decode_cp[c.cp] < 0) return false;
    out.push_back(char(byte_map().decode_cp[c.cp]));
    pos += c.len;
  }
  return true;
}

class ByteLevelBpe final : public VocabTokenizer {
 public:
  ByteLevelBpe(ByteLevelBpeConfig cfg, const std::vector<AddedToken>& added);
  std::string token_bytes(int id) const override;

 protected:
  void encode_text(std::string_view text, bool at_start, std::vector<int>& out) const override;
  std::string display(int id) const override { return unicode::display_bytes(bytes_[size_t(id)]); }

 private:
  void encode_word(std::string_view word, std::vector<int>& out) const;

  bool add_prefix_space_, use_regex_;
  std::vector<std::string> bytes_;  // token id -> raw bytes
  int byte_token_[256];             // byte -> token id, -1 if absent
  PairRanks ranks_;
};

ByteLevelBpe::ByteLevelBpe(ByteLevelBpeConfig cfg, const std::vector<AddedToken>& added)
    : VocabTokenizer("byte-level-bpe", std::move(cfg.vocab)), add_prefix_space_(cfg.add_prefix_space),
      use_regex_(cfg.use_regex) {
  const int n = vocab_size();
  bytes_.resize(size_t(n));
  for (int id = 0; id < n; ++id)
    if (!piece_to_bytes(piece_str(id), bytes_[size_t(id)])) bytes_[size_t(id)] = piece_str(id);
  for (const AddedToken& t : added) bytes_[size_t(t.id)] = t.content;  // added tokens are raw text
  for (int b = 0; b < 256; ++b) byte_token_[b] = find(byte_map().encode[b]);
  for (size_t i = 0; i < cfg.merges.size(); ++i) {
    const auto& [a, b] = cfg.merges[i];
    const int ia = find(a), ib = find(b), im = find(a + b);
    AL_CHECK(ia >= 0 && ib >= 0 && im >= 0, "byte-level BPE: merge ", i, " (\"", a, "\" \"", b,
             "\") uses a token missing from the vocabulary");
    ranks_.add(ia, ib, int(i), im);
  }
}

void ByteLevelBpe::encode_word(std::string_view word, std::vector<int>& out) const {
  std::vector<int> ids;
  ids.reserve(word.size());
  for (char ch : word) {
    const int id = byte_token_[uint8_t(ch)] >= 0 ? byte_token_[uint8_t(ch)] : unk_id();
    if (id >= 0) ids.push_back(id);  // a byte without a token and no unk token is dropped, as in HF
  }
  bpe_merge(ids, ranks_);
  out.insert(out.end(), ids.begin(), ids.end());
}

void ByteLevelBpe::encode_text(std::string_view text, bool, std::vector<int>& out) const {
  std::string buf;
  if (add_prefix_space_ && !text.empty() && text[0] != ' ') {
    buf = " ";
    buf.append(text);
    text = buf;
  }
  if (!use_regex_) {
    if (!text.empty()) encode_word(text, out);
    return;
  }
  for (std::string_view word : gpt2_pretokenize(text)) encode_word(word, out);
}

std::string ByteLevelBpe::token_bytes(int id) const {
  check_id(id, "token_bytes");
  return special_unchecked(id) ? std::string() : bytes_[size_t(id)];
}

}  // namespace

std::vector<std::string_view> gpt2_pretokenize(std::string_view text) {
  const std::vector<Unit> u = split_units(text);
  std::vector<std::string_view> words;
  for (size_t i = 0; i < u.size();) {
    const size_t end = match_end(u, i);
    const size_t from = u[i].pos, to = end < u.size() ? u[end].pos : text.size();
    words.push_back(text.substr(from, to - from));
    i = end;
  }
  return words;
}

std::unique_ptr<Tokenizer> make_byte_level_bpe(ByteLevelBpeConfig cfg) {
  const std::vector<AddedToken> added = cfg.vocab.added;  // the base class takes cfg.vocab
  return std::make_unique<ByteLevelBpe>(std::move(cfg), added);
}

}  // namespace tok
}  // namespace attnlens
