#include "nn/norm.h"

#include "core/error.h"
#include "kernels/kernels.h"

namespace attnlens::nn {

void norm(const Norm& p, const float* x, int n, float* y) {
  for (int i = 0; i < n; ++i) {
    const float* xi = x + size_t(i) * p.dim;
    float* yi = y + size_t(i) * p.dim;
    if (p.kind == NormKind::RMSNorm) kernels::rmsnorm(xi, p.gamma, yi, p.dim, p.eps);
    else kernels::layernorm(xi, p.gamma, p.beta, yi, p.dim, p.eps);
  }
}

void check_norm(const Norm& p, int dim, const std::string& what) {
  AL_CHECK(p.gamma != nullptr, what, ": norm weight is missing");
  AL_CHECK(p.dim == dim, what, ": norm has dimension ", p.dim, ", expected ", dim);
  AL_CHECK(p.eps > 0, what, ": norm epsilon must be positive, got ", p.eps);
}

}  // namespace attnlens::nn
