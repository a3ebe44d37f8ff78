// Internal: the greedy pair-merging loop shared by every BPE kind (SentencePiece BPE from llama2.c,
// GGUF or HF Llama files, and GPT-2 byte-level BPE).
#pragma once
#include <cstdint>
#include <queue>
#include <unordered_map>
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

// Merge ranks keyed by the pair of token ids (HF tokenizers' merges map). A later duplicate of a
// pair replaces the earlier one, as when HF and GPT-2's encoder build their maps.
class PairRanks {
 public:
  void add(int left, int right, int rank, int merged) { map_[key(left, right)] = {rank, merged}; }
  bool operator()(int left, int right, MergeCandidate& out) const {
    auto it = map_.find(key(left, right));
    if (it == map_.end()) return false;
    out = it->second;
    return true;
  }
  size_t size() const { return map_.size(); }

 private:
  static uint64_t key(int left, int right) { return (uint64_t(uint32_t(left)) << 32) | uint32_t(right); }
  std::unordered_map<uint64_t, MergeCandidate> map_;
};

}  // namespace attnlens::tok
