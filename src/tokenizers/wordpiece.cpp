// BERT WordPiece following HF tokenizers: BertNormalizer (normalizers/bert.rs), BertPreTokenizer
// (pre_tokenizers/bert.rs), the WordPiece model (models/wordpiece: greedy longest-match-first with
// "##" continuations, [UNK] for a word that cannot be covered) and the WordPiece decoder.
#include "tokenizers/wordpiece.h"

#include "core/error.h"
#include "tokenizers/unicode.h"

namespace attnlens {
namespace tok {

std::string bert_normalize(std::string_view text, const BertNormalizer& n) {
  std::string out, stripped;
  out.reserve(text.size());
  for (size_t pos = 0; pos < text.size();) {
    const unicode::Utf8Step c = unicode::decode_utf8(text, pos);
    pos += c.len;
    char32_t cp = c.cp;  // U+FFFD for ill-formed bytes
    const bool tab_or_newline = cp == '\t' || cp == '\n' || cp == '\r';
    if (n.clean_text) {  // drop NUL, U+FFFD and \p{C} except \t \n \r; whitespace becomes ' '
      if (cp == 0 || cp == 0xFFFD || (unicode::is_other(cp) && !tab_or_newline)) continue;
      if (tab_or_newline || unicode::is_white_space(cp)) cp = ' ';
    }
    const bool cjk = n.handle_chinese_chars && unicode::is_cjk_ideograph(cp);
    if (cjk) out.push_back(' ');
    stripped.clear();
    if (n.strip_accents)
      unicode::append_without_accents(stripped, cp);  // NFD minus Mn, before lowercasing (as HF does)
    else
      unicode::append_utf8(stripped, cp);
    if (n.lowercase) {
      for (size_t p = 0; p < stripped.size();) {
        const unicode::Utf8Step s = unicode::decode_utf8(stripped, p);
        unicode::append_lowercase(out, s.cp);
        p += s.len;
      }
    } else {
      out += stripped;
    }
    if (cjk) out.push_back(' ');
  }
  return out;
}

namespace {

// Words of normalized text: whitespace separates and is dropped; with the Bert splitter every
// punctuation character is a word of its own.
std::vector<std::string_view> split_words(std::string_view text, WordSplitter splitter) {
  std::vector<std::string_view> words;
  size_t start = 0;
  const auto flush = [&](size_t end) {
    if (end > start) words.push_back(text.substr(start, end - start));
  };
  for (size_t pos = 0; pos < text.size();) {
    const unicode::Utf8Step c = unicode::decode_utf8(text, pos);
    if (c.valid && unicode::is_white_space(c.cp)) {
      flush(pos);
      start = pos + c.len;
    } else if (splitter == WordSplitter::Bert && c.valid && unicode::is_bert_punctuation(c.cp)) {
      flush(pos);
      words.push_back(text.substr(pos, c.len));
      start = pos + c.len;
    }
    pos += c.len;
  }
  flush(text.size());
  return words;
}

// HF decoders::wordpiece::cleanup.
std::string cleanup(std::string s) {
  static const std::pair<const char*, const char*> kRules[] = {
      {" .", "."},   {" ?", "?"},     {" !", "!"},     {" ,", ","},        {" ' ", "'"},   {" n't", "n't"},
      {" 'm", "'m"}, {" do not", " don't"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
  for (const auto& [from, to] : kRules) {
    const std::string f = from, t = to;
    for (size_t at = s.find(f); at != std::string::npos; at = s.find(f, at + t.size())) s.replace(at, f.size(), t);
  }
  return s;
}

class WordPiece final : public VocabTokenizer {
 public:
  explicit WordPiece(WordPieceConfig cfg);
  std::string decode(const std::vector<int>& ids) const override;
  std::string token_bytes(int id) const override;

 protected:
  void encode_text(std::string_view text, bool at_start, std::vector<int>& out) const override;
  std::string display(int id) const override { return unicode::display_bytes(piece_str(id)); }

 private:
  void encode_word(std::string_view word, std::vector<int>& out) const;
  std::string decoded_piece(int id, bool first) const;

  std::string prefix_;
  int max_chars_;
  BertNormalizer normalizer_;
  WordSplitter splitter_;
  bool cleanup_;
};

WordPiece::WordPiece(WordPieceConfig cfg)
    : VocabTokenizer("wordpiece", std::move(cfg.vocab)), prefix_(std::move(cfg.continuing_prefix)),
      max_chars_(cfg.max_input_chars_per_word), normalizer_(cfg.normalizer), splitter_(cfg.splitter),
      cleanup_(cfg.cleanup) {
  AL_CHECK(unk_id() >= 0, "WordPiece: the unk token is missing from the vocabulary");
  AL_CHECK(max_chars_ > 0, "WordPiece: max_input_chars_per_word is ", max_chars_);
}

// Greedy longest-match-first: the longest vocabulary piece at the start of the rest of the word
// (with the continuation prefix after the first), or [UNK] for the whole word if none matches.
void WordPiece::encode_word(std::string_view word, std::vector<int>& out) const {
  std::vector<size_t> bounds;  // character boundaries
  for (size_t pos = 0; pos < word.size(); pos += unicode::decode_utf8(word, pos).len) bounds.push_back(pos);
  bounds.push_back(word.size());
  const size_t n_chars = bounds.size() - 1;
  if (int64_t(n_chars) > max_chars_) {
    out.push_back(unk_id());
    return;
  }
  const size_t first_new = out.size();
  std::string key;
  for (size_t start = 0; start < n_chars;) {
    int found = -1;
    size_t end = n_chars;
    for (; end > start; --end) {
      key.assign(start > 0 ? prefix_ : std::string());
      key.append(word.substr(bounds[start], bounds[end] - bounds[start]));
      if ((found = find(key)) >= 0) break;
    }
    if (found < 0) {
      out.resize(first_new);
      out.push_back(unk_id());
      return;
    }
    out.push_back(found);
    start = end;
  }
}

void WordPiece::encode_text(std::string_view text, bool, std::vector<int>& out) const {
  const std::string normalized = bert_normalize(text, normalizer_);
  for (std::string_view word : split_words(normalized, splitter_)) encode_word(word, out);
}

// The WordPiece decoder's text for one token: continuations lose their prefix, other tokens get a
// space in front, except the first token of the text, which is left as it is.
std::string WordPiece::decoded_piece(int id, bool first) const {
  const std::string& p = piece_str(id);
  std::string s;
  if (first)
    s = p;
  else if (p.compare(0, prefix_.size(), prefix_) == 0)
    s = p.substr(prefix_.size());
  else
    s = " " + p;
  return cleanup_ ? cleanup(std::move(s)) : s;
}

std::string WordPiece::token_bytes(int id) const {
  check_id(id, "token_bytes");
  return special_unchecked(id) ? std::string() : decoded_piece(id, false);
}

std::string WordPiece::decode(const std::vector<int>& ids) const {
  std::string text;
  bool first = true;
  for (int id : ids) {
    check_id(id, "decode");
    if (special_unchecked(id)) continue;  // skip_special_tokens
    text += decoded_piece(id, first);
    first = false;
  }
  return unicode::sanitize_utf8(text);
}

}  // namespace

std::unique_ptr<Tokenizer> make_wordpiece(WordPieceConfig cfg) { return std::make_unique<WordPiece>(std::move(cfg)); }

}  // namespace tok
}  // namespace attnlens
