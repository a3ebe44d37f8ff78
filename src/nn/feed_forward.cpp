#include "nn/feed_forward.h"

#include "core/error.h"
#include "kernels/kernels.h"

namespace attnlens::nn {

const char* activation_name(Activation a) {
  switch (a) {
    case Activation::ReLU: return "relu";
    case Activation::GeluTanh: return "gelu_tanh";
    case Activation::GeluTanhF16: return "gelu_tanh_f16";
    case Activation::GeluErf: return "gelu";
    case Activation::SiLU: return "silu";
  }
  return "?";
}

Activation parse_activation(const std::string& name) {
  if (name == "relu") return Activation::ReLU;
  if (name == "gelu") return Activation::GeluErf;
  if (name == "gelu_new" || name == "gelu_pytorch_tanh" || name == "gelu_tanh" || name == "gelu_fast")
    return Activation::GeluTanh;
  if (name == "silu" || name == "swish") return Activation::SiLU;
  fail("unsupported activation function \"", name, "\" (supported: relu, gelu, gelu_new, gelu_pytorch_tanh, silu)");
}

void activate(Activation a, float* x, int n) {
  switch (a) {
    case Activation::ReLU: kernels::relu(x, n); break;
    case Activation::GeluTanh: kernels::gelu_tanh(x, n); break;
    case Activation::GeluTanhF16: kernels::gelu_tanh_f16(x, n); break;
    case Activation::GeluErf: kernels::gelu_erf(x, n); break;
    case Activation::SiLU: kernels::silu(x, n); break;
  }
}

void feed_forward(const FeedForward& f, const float* x, int n, float* out, Arena& arena) {
  ArenaScope scope(arena);
  const int hidden = f.up.out();
  float* h = arena.alloc(size_t(n) * hidden);  // [n, hidden]
  if (f.gated()) {
    float* g = arena.alloc(size_t(n) * hidden);
    linears({{&f.up, h}, {&f.gate, g}}, x, n);
    if (f.act == Activation::SiLU) {
      kernels::swiglu(g, h, n * hidden);  // g = silu(g) ⊙ h
    } else {
      activate(f.act, g, n * hidden);
      kernels::mul(g, h, n * hidden);  // g = act(g) ⊙ h
    }
    h = g;
  } else {
    linear(f.up, x, n, h);
    activate(f.act, h, n * hidden);
  }
  linear(f.down, h, n, out);
}

void check_feed_forward(const FeedForward& f, int d_model, const std::string& what) {
  AL_CHECK(!f.up.empty(), what, ": up projection is missing");
  const int hidden = f.up.out();
  check_linear(f.up, d_model, hidden, what + ".up");
  if (f.gated()) check_linear(f.gate, d_model, hidden, what + ".gate");
  check_linear(f.down, hidden, d_model, what + ".down");
}

}  // namespace attnlens::nn
