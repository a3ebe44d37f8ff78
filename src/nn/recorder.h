// Attention weights as a first-class output: the post-softmax matrix of every head is what the
// explorer shows (the "attention weights" of Vaswani et al. 2017, §3.2.1).
//
// A model given a recorder hands each attention call a slot to write its post-softmax weights into;
// without one, attention writes nothing beyond its scratch row. A slot holds one forward call's
// weights for one (kind, layer): [heads][queries][keys], keys = every position attended (0..m-1),
// causal rows zero past their query.
#pragma once
#include <cstddef>
#include <vector>

namespace attnlens::nn {

enum class AttentionKind {
  Self = 0,     // decoder (or decoder-only model) self-attention, causal
  Cross = 1,    // decoder → encoder output
  Encoder = 2,  // encoder self-attention, bidirectional
};
const char* attention_kind_name(AttentionKind k);

struct AttentionRecord {
  AttentionKind kind = AttentionKind::Self;
  int layer = 0;
  int n_heads = 0;
  int n_queries = 0;  // rows: the queries of this forward call
  int n_keys = 0;     // columns
  int q_pos0 = 0;     // position of the first query
  int batch = 1;      // sequences run together (an encoder batch padded to one length)
  std::vector<float> weights;  // [batch][n_heads][n_queries][n_keys]; unselected heads stay 0

  const float* row(int head, int query, int item = 0) const {
    return weights.data() + ((size_t(item) * n_heads + head) * n_queries + query) * n_keys;
  }
};

class AttentionRecorder {
 public:
  // Keep only these layers / heads (empty = all).
  void select(std::vector<int> layers, std::vector<int> heads);
  bool wants_layer(int layer) const;
  bool wants_head(int head) const;
  // Mask of wanted heads (null = all), valid until the next select().
  const unsigned char* head_mask(int n_heads);

  // Called by a model: a zeroed buffer for this call's weights of (kind, layer), or null if the
  // layer is not selected. Replaces what the previous call recorded for that (kind, layer).
  // A batch of sequences gets [batch][n_heads][n_queries][n_keys].
  float* slot(AttentionKind kind, int layer, int n_heads, int n_queries, int n_keys, int q_pos0, int batch = 1);

  const AttentionRecord* find(AttentionKind kind, int layer) const;
  // Stores a record made elsewhere (a beam's step, replayed), replacing that (kind, layer)'s.
  void put(const AttentionRecord& r);
  const std::vector<AttentionRecord>& records() const { return records_; }
  void clear() { records_.clear(); }

 private:
  std::vector<int> layers_, heads_;
  std::vector<unsigned char> mask_;
  std::vector<AttentionRecord> records_;
};

}  // namespace attnlens::nn
