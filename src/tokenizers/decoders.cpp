// Decoders following HF tokenizers' decoders/ (byte_level.rs, metaspace.rs, byte_fallback.rs,
// fuse.rs, strip.rs, replace.rs, wordpiece.rs, bpe.rs, ctc.rs, sequence.rs), on bytes.
#include "tokenizers/decoders.h"

#include <algorithm>

#include "tokenizers/unicode.h"

namespace attnlens::tok {

namespace {
void replace_in_place(std::string& s, std::string_view from, std::string_view to) {
  if (from.empty() || s.find(from) == std::string::npos) return;
  std::string out;
  size_t prev = 0;
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, prev)) {
    out.append(s, prev, at - prev);
    out.append(to);
    prev = at + from.size();
  }
  out.append(s, prev, std::string::npos);
  s = std::move(out);
}
}  // namespace

std::string cleanup_tokenization(std::string s) {
  static const std::pair<const char*, const char*> kRules[] = {
      {" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"}, {" n't", "n't"},
      {" 'm", "'m"}, {" do not", " don't"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}};
  for (const auto& [from, to] : kRules) replace_in_place(s, from, to);
  return s;
}

void ByteLevelDecoder::decode_chain(std::vector<std::string>& tokens, DecodePosition) const {
  // Each token's stand-ins become bytes; a token with a character outside the alphabet (an added
  // token such as "<|im_start|>" is plain text) keeps its own bytes. Then all are one string.
  std::string out;
  std::string bytes;
  for (const std::string& t : tokens) {
    bytes.clear();
    bool ok = true;
    for (size_t pos = 0; pos < t.size() && ok;) {
      const unicode::Utf8Step c = unicode::decode_utf8(t, pos);
      const int b = c.valid ? byte_level_byte(c.cp) : -1;
      if (b < 0) ok = false;
      else bytes.push_back(char(b));
      pos += c.len;
    }
    out += ok ? bytes : t;
  }
  tokens.assign(1, std::move(out));
}

void MetaspaceDecoder::decode_chain(std::vector<std::string>& tokens, DecodePosition where) const {
  for (size_t i = 0; i < tokens.size(); ++i) {
    std::string& t = tokens[i];
    // HF removes every "▁" of the first token; we remove one, as SentencePiece's own decoder does,
    // so that decode(encode("  x")) keeps its spaces.
    if (i == 0 && where == DecodePosition::Text && o_.prepend_scheme != PrependScheme::Never &&
        t.compare(0, o_.replacement.size(), o_.replacement) == 0)
      t.erase(0, o_.replacement.size());
    replace_in_place(t, o_.replacement, " ");
  }
}

void ByteFallbackDecoder::decode_chain(std::vector<std::string>& tokens, DecodePosition) const {
  for (std::string& t : tokens)
    if (const int b = unicode::byte_piece_value(t, /*lowercase_hex=*/true); b >= 0) t.assign(1, char(b));
}

void FuseDecoder::decode_chain(std::vector<std::string>& tokens, DecodePosition) const {
  std::string all;
  for (const std::string& t : tokens) all += t;
  tokens.assign(1, std::move(all));
}

void StripDecoder::decode_chain(std::vector<std::string>& tokens, DecodePosition where) const {
  if (where == DecodePosition::Token || content_.empty()) return;
  for (std::string& t : tokens) {
    size_t begin = 0, end = t.size();
    for (size_t k = 0; k < start_ && t.compare(begin, content_.size(), content_) == 0 && begin < end; ++k)
      begin += content_.size();
    for (size_t k = 0; k < stop_ && end >= begin + content_.size() &&
                       t.compare(end - content_.size(), content_.size(), content_) == 0; ++k)
      end -= content_.size();
    t = t.substr(begin, end - begin);
  }
}

void ReplaceDecoder::decode_chain(std::vector<std::string>& tokens, DecodePosition) const {
  for (std::string& t : tokens) t = replace_all(t, pattern_, content_);
}

void WordPieceDecoder::decode_chain(std::vector<std::string>& tokens, DecodePosition where) const {
  for (size_t i = 0; i < tokens.size(); ++i) {
    std::string& t = tokens[i];
    if (i != 0 || where == DecodePosition::Token) {
      if (!prefix_.empty() && t.compare(0, prefix_.size(), prefix_) == 0) t.erase(0, prefix_.size());
      else t.insert(0, " ");
    }
    if (cleanup_) t = cleanup_tokenization(std::move(t));
  }
}

void BpeDecoder::decode_chain(std::vector<std::string>& tokens, DecodePosition where) const {
  for (size_t i = 0; i < tokens.size(); ++i) {
    const bool last = i + 1 == tokens.size() && where == DecodePosition::Text;
    replace_in_place(tokens[i], suffix_, last ? "" : " ");
  }
}

void CtcDecoder::decode_chain(std::vector<std::string>& tokens, DecodePosition) const {
  std::vector<std::string> out;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (i > 0 && tokens[i] == tokens[i - 1]) continue;  // dedup
    std::string t = tokens[i];
    replace_in_place(t, pad_, "");
    if (cleanup_) {
      t = cleanup_tokenization(std::move(t));
      replace_in_place(t, delimiter_, " ");
    }
    if (!t.empty()) out.push_back(std::move(t));
  }
  tokens = std::move(out);
}

bool SequenceDecoder::labels_are_pieces() const {
  return std::any_of(parts_.begin(), parts_.end(), [](const auto& d) { return d->labels_are_pieces(); });
}

void SequenceDecoder::display(std::string& token) const {
  if (!labels_are_pieces()) Decoder::display(token);  // a WordPiece member keeps the piece as it is
}

}  // namespace attnlens::tok
