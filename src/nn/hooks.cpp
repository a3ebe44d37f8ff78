#include "nn/hooks.h"

namespace attnlens::nn {

const char* hook_point_name(HookPoint p) {
  switch (p) {
    case HookPoint::HeadOutputs: return "heads";
    case HookPoint::AttentionOut: return "attn";
    case HookPoint::MlpOut: return "mlp";
    case HookPoint::ResidualPost: return "resid";
  }
  return "?";
}

}  // namespace attnlens::nn
