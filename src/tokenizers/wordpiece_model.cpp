// The WordPiece model following HF tokenizers' models/wordpiece: greedy longest-match-first with
// continuation pieces, the whole word as unk when it cannot be covered or is too long.
#include "core/error.h"
#include "tokenizers/models.h"
#include "tokenizers/unicode.h"

namespace attnlens::tok {

WordPieceModel::WordPieceModel(WordPieceConfig c)
    : vocab_(std::move(c.pieces)), prefix_(std::move(c.continuing_subword_prefix)),
      max_chars_(c.max_input_chars_per_word) {
  unk_ = vocab_.find(c.unk_token);
  AL_CHECK(unk_ >= 0, "WordPiece: unk_token \"", c.unk_token, "\" is not in the vocabulary");
  AL_CHECK(max_chars_ > 0, "WordPiece: max_input_chars_per_word must be positive");
}

void WordPieceModel::encode_word(std::string_view word, std::vector<int>& out) const {
  // Character boundaries (ill-formed bytes count as one character each).
  std::vector<size_t> bounds;
  for (size_t pos = 0; pos < word.size(); pos += unicode::decode_utf8(word, pos).len) bounds.push_back(pos);
  bounds.push_back(word.size());
  if (int(bounds.size()) - 1 > max_chars_) {
    out.push_back(unk_);
    return;
  }
  const size_t first = out.size();
  std::string candidate;
  for (size_t start = 0; start + 1 < bounds.size();) {
    int found = -1;
    size_t end = bounds.size() - 1;
    for (; end > start; --end) {
      candidate.clear();
      if (start > 0) candidate = prefix_;
      candidate.append(word.substr(bounds[start], bounds[end] - bounds[start]));
      found = vocab_.find(candidate);
      if (found >= 0) break;
    }
    if (found < 0) {  // the whole word is unknown
      out.resize(first);
      out.push_back(unk_);
      return;
    }
    out.push_back(found);
    start = end;
  }
}

}  // namespace attnlens::tok
