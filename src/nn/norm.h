// Normalisation of each row of x [n, dim]:
//   LayerNorm: y = (x − mean) / √(var + eps) · γ + β       (original Transformer, GPT-2, BERT)
//   RMSNorm:   y = x / √(mean(x²) + eps) · γ               (Llama)
#pragma once
#include <string>

namespace attnlens::nn {

enum class NormKind { LayerNorm, RMSNorm };

struct Norm {
  NormKind kind = NormKind::LayerNorm;
  int dim = 0;
  const float* gamma = nullptr;  // [dim]
  const float* beta = nullptr;   // [dim], LayerNorm only; null = no bias
  float eps = 1e-5f;
};

void norm(const Norm& p, const float* x, int n, float* y);
void check_norm(const Norm& p, int dim, const std::string& what);

}  // namespace attnlens::nn
