// What the models share: the vocabulary lookup and the byte-fallback tokens.
#include "tokenizers/models.h"

#include <cstdio>

namespace attnlens::tok {

Vocab::Vocab(std::vector<std::string> pieces) : pieces_(std::move(pieces)) {
  size_t bytes = 0;
  for (const std::string& p : pieces_) bytes += p.size();
  index_.reserve(pieces_.size(), bytes);
  ids_.reserve(pieces_.size());
  for (size_t id = 0; id < pieces_.size(); ++id) {
    if (pieces_[id].empty()) continue;
    if (size_t(index_.insert(pieces_[id])) == ids_.size()) ids_.push_back(int(id));  // new: first id wins
  }
  one_to_one_ = ids_.size() == pieces_.size();
}

ByteTokens::ByteTokens(const Vocab& v) {
  char name[8];
  for (int b = 0; b < 256; ++b) {
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    id[b] = v.find(name);
  }
}

bool ByteTokens::all_present(std::string_view bytes) const {
  for (char c : bytes)
    if (id[uint8_t(c)] < 0) return false;
  return true;
}

}  // namespace attnlens::tok
