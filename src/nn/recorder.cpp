#include "nn/recorder.h"

#include <algorithm>

#include "core/error.h"
#include "core/limits.h"

namespace attnlens::nn {

const char* attention_kind_name(AttentionKind k) {
  switch (k) {
    case AttentionKind::Self: return "self";
    case AttentionKind::Cross: return "cross";
    case AttentionKind::Encoder: return "encoder";
  }
  return "?";
}

void AttentionRecorder::select(std::vector<int> layers, std::vector<int> heads) {
  layers_ = std::move(layers);
  heads_ = std::move(heads);
  mask_.clear();
}

bool AttentionRecorder::wants_layer(int layer) const {
  return layers_.empty() || std::find(layers_.begin(), layers_.end(), layer) != layers_.end();
}

bool AttentionRecorder::wants_head(int head) const {
  return heads_.empty() || std::find(heads_.begin(), heads_.end(), head) != heads_.end();
}

const unsigned char* AttentionRecorder::head_mask(int n_heads) {
  if (heads_.empty()) return nullptr;
  mask_.assign(n_heads, 0);
  for (int h : heads_)
    if (h >= 0 && h < n_heads) mask_[h] = 1;
  return mask_.data();
}

float* AttentionRecorder::slot(AttentionKind kind, int layer, int n_heads, int n_queries, int n_keys, int q_pos0,
                               int batch) {
  if (!wants_layer(layer)) return nullptr;
  // Checked in 64 bits before anything changes: a pass too large to record is an error, not a wrap.
  const size_t bytes = limits::checked_bytes("the attention weights of one layer",
                                             {uint64_t(batch), uint64_t(n_heads), uint64_t(n_queries), uint64_t(n_keys), sizeof(float)});
  AttentionRecord* rec = nullptr;
  for (auto& r : records_)
    if (r.kind == kind && r.layer == layer) rec = &r;
  if (!rec) {
    records_.emplace_back();
    rec = &records_.back();
    rec->kind = kind;
    rec->layer = layer;
  }
  rec->weights.assign(bytes / sizeof(float), 0.f);
  rec->n_heads = n_heads;
  rec->n_queries = n_queries;
  rec->n_keys = n_keys;
  rec->q_pos0 = q_pos0;
  rec->batch = batch;
  return rec->weights.data();
}

void AttentionRecorder::put(const AttentionRecord& r) {
  for (auto& mine : records_)
    if (mine.kind == r.kind && mine.layer == r.layer) {
      mine = r;
      return;
    }
  records_.push_back(r);
}

const AttentionRecord* AttentionRecorder::find(AttentionKind kind, int layer) const {
  for (const auto& r : records_)
    if (r.kind == kind && r.layer == layer) return &r;
  return nullptr;
}

}  // namespace attnlens::nn
