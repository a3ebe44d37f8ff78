#include "tokenizers/vocab_tokenizer.h"

#include <algorithm>

#include "core/error.h"
#include "tokenizers/unicode.h"

namespace attnlens::tok {

// --- the shared base ----------------------------------------------------------------------------

std::string special_label(std::string_view piece) {
  size_t b = 0, e = piece.size();
  while (b < e && (piece[b] == ' ' || piece[b] == '\n' || piece[b] == '\t' || piece[b] == '\r')) ++b;
  while (e > b && (piece[e - 1] == ' ' || piece[e - 1] == '\n' || piece[e - 1] == '\t' || piece[e - 1] == '\r')) --e;
  return unicode::display_bytes(b < e ? piece.substr(b, e - b) : piece);
}

VocabTokenizer::VocabTokenizer(std::string kind, VocabSpec spec)
    : kind_(std::move(kind)), pieces_(std::move(spec.pieces)), ids_(spec.ids),
      prefix_(std::move(spec.prefix)), suffix_(std::move(spec.suffix)) {
  const int n = int(pieces_.size());
  AL_CHECK(n > 0, kind_, " tokenizer: empty vocabulary");
  for (int id : {ids_.bos, ids_.eos, ids_.pad, ids_.unk})
    AL_CHECK(id >= -1 && id < n, kind_, " tokenizer: special token id ", id, " is outside the vocabulary (size ", n, ")");
  special_.assign(size_t(n), 0);
  for (int id : spec.special) {
    AL_CHECK(id >= 0 && id < n, kind_, " tokenizer: special token id ", id, " is outside the vocabulary (size ", n, ")");
    special_[size_t(id)] = 1;
  }
  for (const AddedToken& t : spec.added) {
    AL_CHECK(t.id >= 0 && t.id < n, kind_, " tokenizer: added token \"", t.content, "\" has id ", t.id,
             " outside the vocabulary (size ", n, ")");
    if (t.special) special_[size_t(t.id)] = 1;
  }
  for (int id : prefix_) AL_CHECK(id >= 0 && id < n, kind_, " tokenizer: post-processor id ", id, " is outside the vocabulary (size ", n, ")");
  for (int id : suffix_) AL_CHECK(id >= 0 && id < n, kind_, " tokenizer: post-processor id ", id, " is outside the vocabulary (size ", n, ")");
  added_ = AddedTokenMatcher(std::move(spec.added));
  size_t bytes = 0;
  for (const std::string& p : pieces_) bytes += p.size();
  index_.reserve(size_t(n), bytes);
  for (int id = 0; id < n; ++id)  // first id wins
    if (size_t(index_.insert(pieces_[size_t(id)])) == index_ids_.size()) index_ids_.push_back(id);
  for (int id = 0; id < n; ++id)
    if (special_[size_t(id)] && size_t(special_labels_.insert(special_label(pieces_[size_t(id)]))) == label_ids_.size())
      label_ids_.push_back(id);
}

std::vector<int> VocabTokenizer::encode(std::string_view text, bool add_special) const {
  std::vector<int> out;
  if (add_special) out = prefix_;
  for (const Segment& s : added_.split(text)) {
    if (s.added_id >= 0)
      out.push_back(s.added_id);
    else
      encode_text(s.text, s.offset == 0, out);
  }
  if (add_special) out.insert(out.end(), suffix_.begin(), suffix_.end());
  return out;
}

std::string VocabTokenizer::decode(const std::vector<int>& ids) const {
  std::string bytes;
  for (int id : ids) {
    check_id(id, "decode");
    if (!special_unchecked(id)) bytes += token_bytes(id);
  }
  return unicode::sanitize_utf8(bytes);
}

std::string VocabTokenizer::piece(int id) const {
  check_id(id, "piece");
  return special_unchecked(id) ? special_label(pieces_[size_t(id)]) : display(id);
}

bool VocabTokenizer::is_special(int id) const {
  check_id(id, "is_special");
  return special_unchecked(id);
}

int VocabTokenizer::token_id(std::string_view piece) const {
  const int id = find(piece);
  if (id >= 0) return id;
  const int i = special_labels_.find(piece);
  return i < 0 ? -1 : label_ids_[size_t(i)];
}

void VocabTokenizer::check_id(int id, const char* what) const {
  if (id < 0 || id >= int(pieces_.size()))
    fail(kind_, " tokenizer ", what, ": token id ", id, " is out of range (vocabulary size ", pieces_.size(), ")");
}

int VocabTokenizer::find(std::string_view piece) const {
  const int i = index_.find(piece);
  return i < 0 ? -1 : index_ids_[size_t(i)];
}

}  // namespace attnlens::tok
