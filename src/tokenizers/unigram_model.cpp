// The Unigram model following HF tokenizers' models/unigram (model.rs encode_optimized, tokenize):
// the best-scoring segmentation by dynamic programming over a byte trie of the pieces.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "core/error.h"
#include "tokenizers/models.h"
#include "tokenizers/unicode.h"

namespace attnlens::tok {

namespace {
constexpr double kUnkPenalty = 10.0;
}

std::vector<std::string> UnigramModel::pieces_of(const UnigramConfig& c) {
  std::vector<std::string> p;
  p.reserve(c.vocab.size());
  for (const auto& v : c.vocab) p.push_back(v.first);
  return p;
}

UnigramModel::UnigramModel(UnigramConfig c)
    : vocab_(pieces_of(c)), bytes_(vocab_), unk_(c.unk_id), byte_fallback_(c.byte_fallback), fuse_unk_(c.fuse_unk),
      float32_(c.float32_scores) {
  const size_t n = c.vocab.size();
  AL_CHECK(n > 0, "Unigram: empty vocabulary");
  AL_CHECK(unk_ >= -1 && unk_ < int(n), "Unigram: unk_id ", unk_, " is outside the vocabulary (size ", n, ")");
  scores_.reserve(n);
  double min_score = std::numeric_limits<double>::infinity();
  for (size_t id = 0; id < n; ++id) {
    const double s = c.vocab[id].second;
    AL_CHECK(std::isfinite(s), "Unigram: piece ", id, " (\"", c.vocab[id].first, "\") has a score that is not a finite number");
    AL_CHECK(!c.vocab[id].first.empty(), "Unigram: piece ", id, " is empty");
    scores_.push_back(c.float32_scores ? double(float(s)) : s);
    min_score = std::min(min_score, s);
  }
  if (!c.kinds.empty()) {
    AL_CHECK(c.kinds.size() == n, "Unigram: ", c.kinds.size(), " piece kinds for ", n, " pieces");
    matchable_.assign(n, 1);
    for (size_t id = 0; id < n; ++id) {
      const SpmPiece k = c.kinds[id];
      if (k == SpmPiece::Reserved || k == SpmPiece::Unused) matchable_[id] = 0;
      // float length × float max_score, then a double - 0.1, as sentencepiece computes it
      if (k == SpmPiece::UserDefined) scores_[id] = double(float(c.vocab[id].first.size()) * float(c.max_score)) - 0.1;
    }
  }
  if (!std::isnan(c.min_score)) min_score = c.min_score;
  unk_score_ = float32_ ? double(float(min_score) - float(kUnkPenalty)) : min_score - kUnkPenalty;

  // The trie, built breadth-first over the pieces sorted bytewise so that each node's children are
  // contiguous: a node covers a range of sorted pieces sharing its prefix.
  const std::vector<std::string>& pieces = vocab_.pieces();
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return pieces[a] < pieces[b] || (pieces[a] == pieces[b] && a < b); });
  struct Work {
    uint32_t node, lo, hi, depth;
  };
  std::vector<Work> queue{{0, 0, uint32_t(n), 0}};
  nodes_.push_back({});
  for (size_t q = 0; q < queue.size(); ++q) {
    const Work w = queue[q];
    uint32_t lo = w.lo;
    while (lo < w.hi && pieces[order[lo]].size() == w.depth) {  // pieces ending here (first id wins)
      if (nodes_[w.node].piece < 0 && (matchable_.empty() || matchable_[order[lo]])) nodes_[w.node].piece = int(order[lo]);
      ++lo;
    }
    nodes_[w.node].first_child = uint32_t(edges_.size());
    for (uint32_t i = lo; i < w.hi;) {
      const uint8_t b = uint8_t(pieces[order[i]][w.depth]);
      uint32_t j = i;
      while (j < w.hi && uint8_t(pieces[order[j]][w.depth]) == b) ++j;
      const uint32_t child = uint32_t(nodes_.size());
      nodes_.push_back({});
      edges_.push_back({b, child});
      queue.push_back({child, i, j, w.depth + 1});
      i = j;
    }
    nodes_[w.node].child_count = uint32_t(edges_.size()) - nodes_[w.node].first_child;
  }
}

void UnigramModel::encode_word(std::string_view word, std::vector<int>& out) const {
  const size_t n = word.size();
  struct Best {
    double score = 0;
    int id = -1;
    size_t start = SIZE_MAX;  // SIZE_MAX: not reached yet
  };
  std::vector<Best> best(n + 1);
  best[0].start = 0;
  for (size_t start = 0; start < n;) {
    const double here = best[start].score;
    const size_t mblen = unicode::decode_utf8(word, start).len;
    bool single = false;
    uint32_t node = 0;
    for (size_t pos = start; pos < n; ++pos) {  // every piece that is a prefix of word[start...]
      const TrieNode& tn = nodes_[node];
      const TrieEdge* e = edges_.data() + tn.first_child;
      const TrieEdge* end = e + tn.child_count;
      const uint8_t b = uint8_t(word[pos]);
      e = std::lower_bound(e, end, b, [](const TrieEdge& x, uint8_t v) { return x.byte < v; });
      if (e == end || e->byte != b) break;
      node = e->node;
      const int id = nodes_[node].piece;
      if (id < 0) continue;
      Best& target = best[pos + 1];
      // sentencepiece: a float path score plus the piece's score as a double, compared in double with
      // the stored float, then stored as a float.
      const double candidate = here + scores_[size_t(id)];
      if (target.start == SIZE_MAX || candidate > target.score)
        target = {float32_ ? double(float(candidate)) : candidate, id, start};
      if (pos + 1 - start == mblen) single = true;
    }
    if (!single) {
      AL_CHECK(unk_ >= 0, "Unigram: the text has a character no piece covers and the model has no unk token");
      Best& target = best[start + mblen];
      const double candidate = float32_ ? double(float(here) + float(unk_score_)) : here + unk_score_;  // float + float
      if (target.start == SIZE_MAX || candidate > target.score) target = {candidate, unk_, start};
    }
    start += mblen;
  }
  // Back from the end; consecutive unk stretches are fused into one string (fuse_unk).
  std::vector<std::pair<size_t, size_t>> tokens;  // byte ranges
  std::vector<bool> is_unk;
  for (size_t end = n; end > 0;) {
    const Best& b = best[end];
    const bool unk = b.id == unk_;
    if (unk && fuse_unk_ && !tokens.empty() && is_unk.back())
      tokens.back().first = b.start;
    else {
      tokens.push_back({b.start, end});
      is_unk.push_back(unk);
    }
    end = b.start;
  }
  for (size_t k = tokens.size(); k-- > 0;) {
    const std::string_view piece = word.substr(tokens[k].first, tokens[k].second - tokens[k].first);
    const int id = vocab_.find(piece);
    if (id >= 0 && (matchable_.empty() || matchable_[size_t(id)])) {
      out.push_back(id);
    } else if (byte_fallback_ && bytes_.all_present(piece)) {
      for (char c : piece) out.push_back(bytes_.id[uint8_t(c)]);
    } else {
      out.push_back(unk_);
    }
  }
}

}  // namespace attnlens::tok
