// Interventions applied inside a forward pass through the layers' hooks (nn/hooks.h):
//
//   ablation   a head's output (before W^O) replaced by 0, or by its mean over positions — the mean
//              over the rows of the first pass of the sequence (the prompt, or the whole input of a
//              forward()), computed in the same run and kept for the later decoding steps (a prompt
//              prefilled in chunks: the first chunk's; web/src prefills in one pass when it mean-ablates)
//   patching   an activation replaced by the same activation of another run (activation patching,
//              Vig et al. 2020; Meng et al. 2022): one head's output, a layer's attention or MLP output
//              or its residual stream, at every position or at one
//   capture    an activation copied out (every position of the sequence, accumulated over passes)
// applied in that order at each hook point. The attention recorder sees the modified run.
#pragma once
#include <map>
#include <tuple>
#include <vector>

#include "nn/hooks.h"

namespace attnlens::interp {

enum class AblationMode { Zero, Mean };

struct Ablation {
  nn::AttentionKind stack = nn::AttentionKind::Self;  // Self, Encoder or Cross heads
  int layer = 0;
  int head = 0;
  AblationMode mode = AblationMode::Zero;
};

// One activation: a hook point of one layer, optionally one head (HeadOutputs) and one position.
struct Site {
  nn::HookPoint point = nn::HookPoint::ResidualPost;
  nn::AttentionKind stack = nn::AttentionKind::Self;
  int layer = 0;
  int head = -1;      // HeadOutputs: the head patched (−1 = every head)
  int position = -1;  // the position patched (−1 = every position)
};

class Interventions : public nn::ForwardHooks {
 public:
  explicit Interventions(int head_dim) : head_dim_(head_dim) {}

  std::vector<Ablation> ablations;

  // Copy out every row of this point of this layer (of every pass from position 0 on).
  void capture(nn::AttentionKind stack, int layer, nn::HookPoint point);
  // The rows captured so far, [positions][width]; null if that point was not captured.
  const std::vector<float>* captured(nn::AttentionKind stack, int layer, nn::HookPoint point) const;
  int captured_width(nn::AttentionKind stack, int layer, nn::HookPoint point) const;

  // Replace `site` by the rows of `source` ([positions][width] of that point, as captured from
  // another run; it must outlive the pass). One patch at a time.
  void set_patch(const Site& site, const std::vector<float>* source);
  void clear_patch() { patch_source_ = nullptr; }

  void clear();  // no ablation, capture or patch

  void at(const nn::HookSite& site, float* x) override;

 private:
  using Key = std::tuple<int, int, int>;  // stack, layer, point
  struct Capture {
    std::vector<float> rows;
    int width = 0;
  };
  void ablate(const nn::HookSite& site, float* x);
  int head_dim_;
  std::map<Key, Capture> captures_;
  std::map<std::pair<int, int>, std::vector<float>> means_;  // (stack, layer) → [n_heads·head_dim]
  Site patch_;
  const std::vector<float>* patch_source_ = nullptr;
};

}  // namespace attnlens::interp
