// Internal: the greedy pair-merging loop shared by every BPE kind (SentencePiece BPE from llama2.c,
// GGUF or HF Llama files, and GPT-2 byte-level BPE).
#pragma once
#include <cstdint>
#include <queue>
#include <algorithm>
#include <vector>

namespace attnlens::tok {

struct MergeCandidate {
  int rank;  // lower merges first
  int id;    // the merged token
};

// Repeatedly merges the adjacent pair with the lowest rank (the leftmost one among equal ranks) until
// no adjacent pair can merge. That is the result of llama2.c run.c's encode loop (rescan all pairs,
// merge the one with the best score) and of GPT-2's bpe() / HF tokenizers' Word::merge_all (merge
// by lowest rank), but in O(n log n): a heap of candidate pairs over a linked list of symbols, as
// llama.cpp's SPM tokenizer does. A candidate is stale once either of its symbols has changed,
// which shows as a different span length.
//   lookup(left_id, right_id, MergeCandidate& out) -> bool: whether the pair can merge, and how.
template <class Lookup>
void bpe_merge(std::vector<int>& ids, const Lookup& lookup) {
  const int n = int(ids.size());
  if (n < 2) return;
  struct Symbol {
    int id, prev, next;
    int len;  // number of initial symbols it covers; 0 once merged into its left neighbour
  };
  std::vector<Symbol> sym(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) sym[size_t(i)] = {ids[size_t(i)], i - 1, i + 1 < n ? i + 1 : -1, 1};

  struct Candidate {
    int rank, left, right, len, id;
  };
  const auto later = [](const Candidate& a, const Candidate& b) {
    return a.rank != b.rank ? a.rank > b.rank : a.left > b.left;
  };
  std::priority_queue<Candidate, std::vector<Candidate>, decltype(later)> heap(later);
  const auto push = [&](int left, int right) {
    if (left < 0 || right < 0) return;
    MergeCandidate m;
    const Symbol &l = sym[size_t(left)], &r = sym[size_t(right)];
    if (lookup(l.id, r.id, m)) heap.push({m.rank, left, right, l.len + r.len, m.id});
  };
  for (int i = 0; i + 1 < n; ++i) push(i, i + 1);

  while (!heap.empty()) {
    const Candidate c = heap.top();
    heap.pop();
    Symbol &l = sym[size_t(c.left)], &r = sym[size_t(c.right)];
    if (l.len == 0 || r.len == 0 || l.next != c.right || l.len + r.len != c.len) continue;  // stale
    l.id = c.id;
    l.len = c.len;
    l.next = r.next;
    if (r.next >= 0) sym[size_t(r.next)].prev = c.left;
    r.len = 0;
    push(l.prev, c.left);
    push(c.left, l.next);
  }
  ids.clear();
  for (int i = 0; i >= 0; i = sym[size_t(i)].next) ids.push_back(sym[size_t(i)].id);  // symbol 0 never dies
}

// Merge ranks keyed by the pair of token ids (HF tokenizers' merges map), stored by left token: the
// merges of left id l are entries [start[l], start[l + 1]) sorted by right id, found by binary
// search. A later duplicate of a pair replaces the earlier one, as when HF and GPT-2's encoder build
// their maps. Flat arrays: fast to build from 280k merges and cache-friendly to search.
class PairRanks {
 public:
  struct Merge {
    int left, right, rank, merged;
  };
  // merges in rank order; every id below vocab_size.
  void build(std::vector<Merge> merges, int vocab_size) {
    start_.assign(size_t(vocab_size) + 1, 0);
    for (const Merge& m : merges) ++start_[size_t(m.left) + 1];
    for (size_t i = 1; i < start_.size(); ++i) start_[i] += start_[i - 1];
    entries_.assign(merges.size(), Entry{0, {0, 0}});
    std::vector<uint32_t> fill(start_.begin(), start_.end() - 1);
    for (const Merge& m : merges) entries_[fill[size_t(m.left)]++] = {m.right, {m.rank, m.merged}};
    // Sort each left's list by right id; of duplicates keep the last (highest rank index).
    size_t out = 0;
    std::vector<uint32_t> new_start(start_.size(), 0);
    for (size_t l = 0; l + 1 < start_.size(); ++l) {
      Entry* b = entries_.data() + start_[l];
      Entry* e = entries_.data() + start_[l + 1];
      std::sort(b, e, [](const Entry& x, const Entry& y) { return x.right != y.right ? x.right < y.right : x.value.rank < y.value.rank; });
      new_start[l] = uint32_t(out);
      for (Entry* p = b; p < e; ++p) {
        if (p + 1 < e && (p + 1)->right == p->right) continue;  // a later duplicate follows
        entries_[out++] = *p;
      }
    }
    new_start.back() = uint32_t(out);
    entries_.resize(out);
    start_ = std::move(new_start);
  }
  bool operator()(int left, int right, MergeCandidate& out) const {
    if (size_t(left) + 1 >= start_.size()) return false;
    size_t lo = start_[size_t(left)], hi = start_[size_t(left) + 1];
    while (lo < hi) {
      const size_t mid = (lo + hi) / 2;
      if (entries_[mid].right < right) lo = mid + 1;
      else hi = mid;
    }
    if (lo == start_[size_t(left) + 1] || entries_[lo].right != right) return false;
    out = entries_[lo].value;
    return true;
  }
  size_t size() const { return entries_.size(); }

 private:
  struct Entry {
    int right;
    MergeCandidate value;
  };
  std::vector<uint32_t> start_;
  std::vector<Entry> entries_;
};

}  // namespace attnlens::tok
