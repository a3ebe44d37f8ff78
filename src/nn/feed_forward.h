// The position-wise feed-forward network of every transformer layer (Vaswani et al. 2017, §3.3;
// gated variants: Shazeer 2020, "GLU Variants Improve Transformer"):
//   plain:  FFN(x) = down(act(up·x + b1)) + b2              act = ReLU (original), GELU (GPT-2, BERT)
//   gated:  FFN(x) = down(act(gate·x) ⊙ up·x)               SwiGLU: act = SiLU (Llama: gate = w1, up = w3,
//                                                            down = w2); GeGLU: act = GELU (T5 v1.1 / Flan-T5
//                                                            "gated-gelu": gate = wi_0, up = wi_1, tanh GELU)
#pragma once
#include <string>

#include "nn/arena.h"
#include "nn/linear.h"

namespace attnlens::nn {

// GeluTanhF16: llama.cpp's f32 GELU (an f16 lookup table, kernels::gelu_tanh_f16), for parity checks.
enum class Activation { ReLU, GeluTanh, GeluErf, SiLU, GeluTanhF16 };
const char* activation_name(Activation a);
// Parses Hugging Face / PyTorch names: "relu", "gelu" (exact erf), "gelu_new" / "gelu_pytorch_tanh"
// (tanh), "silu" / "swish". Throws attnlens::Error naming unknown ones.
Activation parse_activation(const std::string& name);
void activate(Activation a, float* x, int n);

struct FeedForward {
  Linear up;    // [hidden, d_model]
  Linear gate;  // [hidden, d_model] for gated FFNs (act applies to it), empty otherwise
  Linear down;  // [d_model, hidden]
  Activation act = Activation::ReLU;
  bool gated() const { return !gate.empty(); }
};

// out[n, d_model] = FFN(x[n, d_model]).
void feed_forward(const FeedForward& f, const float* x, int n, float* out, Arena& arena);
void check_feed_forward(const FeedForward& f, int d_model, const std::string& what);

}  // namespace attnlens::nn
