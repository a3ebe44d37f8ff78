// The BPE model following HF tokenizers' models/bpe (model.rs merge_word, word.rs merge_all): one
// symbol per character (with the continuing-subword prefix / end-of-word suffix), byte fallback or
// unk for characters without a piece, then merges by rank (bpe_merge.h).
#include "core/error.h"
#include "tokenizers/models.h"
#include "tokenizers/unicode.h"

namespace attnlens::tok {

namespace {
// Resolves each merge to ids (in a function with nothing to destroy: no exception landing pad, so in
// the wasm build the 280k lookups are plain calls). Returns the index of the first merge that uses a
// piece missing from the vocabulary, or merges.size(). The merged pieces: real merge lists come in
// the order of the merged piece's id (each merge makes the previous merge's piece again or the next
// id: Llama 3, Qwen, Gemma, GPT-4o, DeepSeek), so when ids and pieces are one-to-one those two
// candidates are compared first (reading the vocabulary in order) and only a miss is looked up.
__attribute__((noinline)) size_t resolve_merges(const MergeList& merges, const Vocab& vocab, const std::string& prefix,
                                                std::string& buf, std::vector<PairRanks::Merge>& out) {
  const std::vector<std::string>& pieces = vocab.pieces();
  const size_t n_pieces = pieces.size();
  size_t guess = vocab.one_to_one() ? 0 : n_pieces;  // the previous merged id (n_pieces: no guessing)
  for (size_t i = 0; i < merges.size(); ++i) {
    const std::string_view a = merges.first(i), b = merges.second(i);
    // HF: the merged piece is a + b without b's continuing-subword prefix.
    std::string_view merged = merges.both(i);
    if (!prefix.empty() && b.compare(0, prefix.size(), prefix) == 0) {
      buf.assign(a.data(), a.size());
      buf.append(b.data() + prefix.size(), b.size() - prefix.size());
      merged = buf;
    }
    const int ia = vocab.find(a), ib = vocab.find(b);
    int im;
    if (guess < n_pieces && pieces[guess] == merged) im = int(guess);
    else if (guess + 1 < n_pieces && pieces[guess + 1] == merged) im = int(guess + 1);
    else im = vocab.find(merged);
    if (ia < 0 || ib < 0 || im < 0) return i;
    if (vocab.one_to_one()) guess = size_t(im);
    out.push_back({ia, ib, int(i), im});
  }
  return merges.size();
}
}  // namespace

BpeModel::BpeModel(BpeConfig c)
    : vocab_(std::move(c.pieces)), bytes_(vocab_), prefix_(std::move(c.continuing_subword_prefix)),
      suffix_(std::move(c.end_of_word_suffix)), byte_fallback_(c.byte_fallback), fuse_unk_(c.fuse_unk),
      ignore_merges_(c.ignore_merges) {
  if (!c.unk_token.empty()) {
    unk_ = vocab_.find(c.unk_token);
    AL_CHECK(unk_ >= 0, "BPE: unk_token \"", c.unk_token, "\" is not in the vocabulary");
  }
  std::string buf;
  std::vector<PairRanks::Merge> resolved;
  resolved.reserve(c.merges.size());
  const size_t bad = resolve_merges(c.merges, vocab_, prefix_, buf, resolved);
  if (bad < c.merges.size()) {
    const std::string_view a = c.merges.first(bad), b = c.merges.second(bad);
    const std::string_view missing = vocab_.find(a) < 0 ? a : vocab_.find(b) < 0 ? b : std::string_view(c.merges.both(bad));
    fail("BPE: merge ", bad, " (\"", a, "\" \"", b, "\") uses a token missing from the vocabulary (\"", missing, "\")");
  }
  ranks_.build(std::move(resolved), vocab_.size());
  small_char_.assign(0x800, -1);
  std::string ch;
  for (char32_t cp = 0; cp < 0x800; ++cp) {
    ch.clear();
    unicode::append_utf8(ch, cp);
    small_char_[cp] = vocab_.find(ch);
  }
}

int BpeModel::char_id(std::string_view ch) const {
  const uint8_t b0 = uint8_t(ch[0]);
  if (b0 < 0x80) return small_char_[b0];
  if (ch.size() == 2 && b0 >= 0xC2 && b0 < 0xE0) return small_char_[((b0 & 0x1F) << 6) | (uint8_t(ch[1]) & 0x3F)];
  return vocab_.find(ch);
}

void BpeModel::encode_word(std::string_view word, std::vector<int>& out) const {
  if (ignore_merges_) {
    if (const int id = vocab_.find(word); id >= 0) {
      out.push_back(id);
      return;
    }
  }
  std::vector<int> ids;
  ids.reserve(word.size());
  bool pending_unk = false;  // an unk token not yet emitted (fuse_unk extends it)
  const auto flush_unk = [&] {
    if (pending_unk) ids.push_back(unk_);
    pending_unk = false;
  };
  std::string decorated;
  for (size_t pos = 0; pos < word.size();) {
    const uint32_t len = uint8_t(word[pos]) < 0x80 ? 1 : unicode::decode_utf8(word, pos).len;
    std::string_view ch = word.substr(pos, len);
    const bool first = pos == 0, last = pos + len == word.size();
    pos += len;
    int id;
    if ((first || prefix_.empty()) && (!last || suffix_.empty())) {
      id = char_id(ch);
    } else {
      decorated.clear();
      if (!first) decorated += prefix_;
      decorated.append(ch);
      if (last) decorated += suffix_;
      ch = decorated;
      id = vocab_.find(ch);
    }
    if (id >= 0) {
      flush_unk();
      ids.push_back(id);
      continue;
    }
    if (byte_fallback_ && bytes_.all_present(ch)) {
      flush_unk();
      for (char b : ch) ids.push_back(bytes_.id[uint8_t(b)]);
      continue;
    }
    if (unk_ < 0) continue;  // no unk token: the character is dropped, as in HF
    if (pending_unk && fuse_unk_) continue;
    flush_unk();
    pending_unk = true;
  }
  flush_unk();
  bpe_merge(ids, ranks_);
  out.insert(out.end(), ids.begin(), ids.end());
}

}  // namespace attnlens::tok
