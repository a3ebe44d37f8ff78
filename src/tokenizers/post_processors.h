// Internal: post-processors (HF tokenizers' processors/*) for a single sequence: the special ids
// put around it when special tokens are added. Pairs of sequences are not encoded by AttnLens.
#pragma once
#include <memory>
#include <vector>

#include "tokenizers/pipeline.h"

namespace attnlens::tok {

// TemplateProcessing's "single" template, BertProcessing ([CLS] $A [SEP]) and RobertaProcessing
// (<s> $A </s>) all reduce to ids before and after the sequence. (ByteLevel adds nothing.)
class WrapProcessor final : public PostProcessor {
 public:
  WrapProcessor(std::vector<int> prefix, std::vector<int> suffix) : prefix_(std::move(prefix)), suffix_(std::move(suffix)) {}
  void process(std::vector<int>& ids) const override {
    ids.insert(ids.begin(), prefix_.begin(), prefix_.end());
    ids.insert(ids.end(), suffix_.begin(), suffix_.end());
  }
  void check_ids(int vocab_size) const override;
  size_t added_count() const override { return prefix_.size() + suffix_.size(); }

 private:
  std::vector<int> prefix_, suffix_;
};

class SequenceProcessor final : public PostProcessor {
 public:
  explicit SequenceProcessor(std::vector<std::unique_ptr<PostProcessor>> parts) : parts_(std::move(parts)) {}
  void process(std::vector<int>& ids) const override {
    for (const auto& p : parts_) p->process(ids);
  }
  void check_ids(int vocab_size) const override {
    for (const auto& p : parts_) p->check_ids(vocab_size);
  }
  size_t added_count() const override {
    size_t n = 0;
    for (const auto& p : parts_) n += p->added_count();
    return n;
  }

 private:
  std::vector<std::unique_ptr<PostProcessor>> parts_;
};

}  // namespace attnlens::tok
