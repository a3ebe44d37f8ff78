#include "models/pooling.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace attnlens::models {

const char* pooling_name(Pooling p) {
  switch (p) {
    case Pooling::Mean: return "mean";
    case Pooling::Cls: return "cls";
    case Pooling::Max: return "max";
  }
  return "?";
}

Pooling parse_pooling(const std::string& name) {
  if (name == "mean") return Pooling::Mean;
  if (name == "cls") return Pooling::Cls;
  if (name == "max") return Pooling::Max;
  fail("unsupported pooling \"", name, "\" (supported: mean, cls, max)");
}

void pool(Pooling p, const float* hidden, int real, int d, bool normalize, float* out) {
  AL_CHECK(real > 0, "pooling: no tokens");
  switch (p) {
    case Pooling::Cls: std::copy(hidden, hidden + d, out); break;
    case Pooling::Mean:
    case Pooling::Max:
      for (int c = 0; c < d; ++c) {
        double acc = p == Pooling::Mean ? 0.0 : -INFINITY;
        for (int t = 0; t < real; ++t) {
          const double v = hidden[size_t(t) * d + c];
          acc = p == Pooling::Mean ? acc + v : std::max(acc, v);
        }
        out[c] = float(p == Pooling::Mean ? acc / real : acc);
      }
      break;
  }
  if (normalize) {
    double n = 0;
    for (int c = 0; c < d; ++c) n += double(out[c]) * out[c];
    // sentence-transformers' Normalize divides by max(‖x‖, 1e-12)
    const double s = 1.0 / std::max(std::sqrt(n), 1e-12);
    for (int c = 0; c < d; ++c) out[c] = float(out[c] * s);
  }
}

}  // namespace attnlens::models
