// The seeds' worked examples recomputed exactly, properties of attention, the KV cache, bad input.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "core/error.h"
#include "nn/attention.h"
#include "nn/feed_forward.h"
#include "nn/linear.h"
#include "nn/norm.h"
#include "nn/kv_cache.h"
#include "nn/layers.h"
#include "nn/positions.h"
#include "nn/recorder.h"
#include "kernels/kernels.h"
#include "test_util.h"
#include "nn_capture.h"

using namespace attnlens;
using namespace attnlens::nn;
using testutil::into;
using testutil::max_abs_diff;
using testutil::randn;

namespace {

Linear make_linear(std::vector<std::vector<float>>& store, int out, int in, uint32_t seed, bool bias = true) {
  store.push_back(randn(size_t(out) * in, seed, 1.f / std::sqrt(float(in))));
  Linear l{Matrix{DType::F32, out, in, store.back().data()}, nullptr};
  if (bias) {
    store.push_back(randn(out, seed + 1000, 0.1f));
    l.b = store.back().data();
  }
  return l;
}

// A random multi-head attention block with d_model split over n_heads (n_kv_heads for K/V).
MultiHeadAttention random_mha(std::vector<std::vector<float>>& store, int d, int heads, int kv_heads, uint32_t seed) {
  MultiHeadAttention a;
  a.d_model = d;
  a.shape = split_heads(d, heads, kv_heads);
  a.q = make_linear(store, a.q_dim(), d, seed);
  a.k = make_linear(store, a.kv_dim(), d, seed + 1);
  a.v = make_linear(store, a.kv_dim(), d, seed + 2);
  a.o = make_linear(store, d, a.q_dim(), seed + 3);
  return a;
}

}  // namespace

// ---- worked examples (hand-computed values of the reference notes; the math is re-derived below) ----
TEST_CASE("worked example: The cat sat", "[nn][seeds]") {
  const float Q[] = {1, 0, 1, 0, /**/ 0, 1, 0, 1, /**/ 1, 1, 0, 0};
  const float K[] = {1, 0, 0, 1, /**/ 0, 1, 1, 0, /**/ 1, 0, 1, 0};
  const float V[] = {0.1f, 0.2f, 0.3f, 0.4f, /**/ 0.5f, 0.6f, 0.7f, 0.8f, /**/ 0.9f, 1.0f, 1.1f, 1.2f};

  // Step 1: scores = Q·Kᵀ. The notes print row 1 as [1, 2, 0]; the arithmetic gives [1, 1, 0]
  // (Q[1] = [0,1,0,1] · K[1] = [0,1,1,0] = 1), so that is what is checked.
  // The engine's score kernel (what attention runs per head and query), unscaled here.
  const float expected_scores[3][3] = {{1, 1, 2}, {1, 1, 0}, {1, 1, 1}};
  for (int i = 0; i < 3; ++i) {
    float scores[3];
    attnlens::kernels::attention_scores(Q + i * 4, K, 4, 4, 3, 1.f, scores);
    for (int j = 0; j < 3; ++j) CHECK(scores[j] == expected_scores[i][j]);
    attnlens::kernels::attention_scores(Q + i * 4, K, 4, 4, 3, 0.5f, scores);  // and scaled by 1/√d_k
    for (int j = 0; j < 3; ++j) CHECK(scores[j] == 0.5f * expected_scores[i][j]);
  }

  float out[12], weights[9];
  attention({Q, 4, K, V, 4, 3, 3}, AttentionMask{}, out, weights);

  // Steps 2–3: softmax(scores / √4), computed exactly.
  const double e = std::exp(0.5);  // e^(1/2 − 1/2·…) ratios: row 0 = [e^.5, e^.5, e^1]
  const double r0[3] = {e / (2 * e + e * e), e / (2 * e + e * e), e * e / (2 * e + e * e)};
  const double r1[3] = {e / (2 * e + 1), e / (2 * e + 1), 1 / (2 * e + 1)};
  const double exact[3][3] = {{r0[0], r0[1], r0[2]}, {r1[0], r1[1], r1[2]}, {1 / 3., 1 / 3., 1 / 3.}};
  const double quoted[3][3] = {{0.2741, 0.2741, 0.4519}, {0.3837, 0.3837, 0.2327}, {1 / 3., 1 / 3., 1 / 3.}};
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 3; ++j) {
      INFO("weight[" << i << "][" << j << "]");
      CHECK(weights[i * 3 + j] == Approx(exact[i][j]).margin(1e-6));
      CHECK(weights[i * 3 + j] == Approx(quoted[i][j]).margin(5e-5));
    }
  // Step 4: output = weights · V. Exact rows (the notes' 0.567… for row 0 comes from rounded weights).
  const double expected_out[3][4] = {{0.5711, 0.6711, 0.7711, 0.8711},
                                     {0.4396, 0.5396, 0.6396, 0.7396},
                                     {0.5, 0.6, 0.7, 0.8}};
  for (int i = 0; i < 3; ++i)
    for (int d = 0; d < 4; ++d) {
      double o = 0;
      for (int j = 0; j < 3; ++j) o += exact[i][j] * V[j * 4 + d];
      INFO("out[" << i << "][" << d << "]");
      CHECK(out[i * 4 + d] == Approx(o).margin(1e-6));
      CHECK(out[i * 4 + d] == Approx(expected_out[i][d]).margin(5e-5));
    }
}

TEST_CASE("worked example: sinusoidal table at d_model = 4", "[nn][seeds]") {
  float pe0[4], pe1[4];
  sinusoidal_encoding(0, 4, pe0);
  sinusoidal_encoding(1, 4, pe1);
  const float want0[4] = {0, 1, 0, 1};
  for (int i = 0; i < 4; ++i) CHECK(pe0[i] == want0[i]);
  // PE(1) = [sin 1, cos 1, sin 0.01, cos 0.01] ≈ [0.841, 0.540, 0.010, 1.000]
  CHECK(pe1[0] == Approx(std::sin(1.0)).margin(1e-7));
  CHECK(pe1[1] == Approx(std::cos(1.0)).margin(1e-7));
  CHECK(pe1[2] == Approx(std::sin(0.01)).margin(1e-7));
  CHECK(pe1[3] == Approx(std::cos(0.01)).margin(1e-7));
  const float quoted[4] = {0.841f, 0.540f, 0.010f, 1.000f};
  for (int i = 0; i < 4; ++i) CHECK(pe1[i] == Approx(quoted[i]).margin(5e-4));
}

TEST_CASE("worked example: RoPE of [1, 0, 0.5, 0] at position 1", "[nn][seeds]") {
  float x[4] = {1.f, 0.f, 0.5f, 0.f};
  Rope(RopeStyle::Adjacent, 4).apply(x, 1, 1);
  // Pair 0 rotates by 1 rad, pair 1 by 0.01 rad.
  CHECK(x[0] == Approx(0.5403).margin(5e-5));
  CHECK(x[1] == Approx(0.8415).margin(5e-5));
  CHECK(x[2] == Approx(0.49998).margin(5e-6));
  CHECK(x[3] == Approx(0.0050).margin(5e-5));
  CHECK(x[2] == Approx(0.5 * std::cos(0.01)).margin(1e-7));
  CHECK(x[3] == Approx(0.5 * std::sin(0.01)).margin(1e-7));
  // The rotate-half convention pairs dims (0, 2) and (1, 3) instead.
  float y[4] = {1.f, 0.f, 0.5f, 0.f};
  Rope(RopeStyle::Half, 4).apply(y, 1, 1);
  CHECK(y[0] == Approx(std::cos(1.0) - 0.5 * std::sin(1.0)).margin(1e-6));
  CHECK(y[2] == Approx(std::sin(1.0) + 0.5 * std::cos(1.0)).margin(1e-6));
}

// ---- properties -------------------------------------------------------------------------------------
TEST_CASE("causal attention: rows sum to 1, zeros above the diagonal", "[nn]") {
  const int n = 9, heads = 3, hd = 5;
  auto q = randn(n * heads * hd, 1), k = randn(n * heads * hd, 2), v = randn(n * heads * hd, 3);
  std::vector<float> out(n * heads * hd), w(heads * n * n, -1.f);
  AttentionMask mask;
  mask.causal = true;
  scaled_dot_product_attention({q.data(), heads * hd, k.data(), v.data(), heads * hd, n, n}, {heads, heads, hd}, mask,
                               {out.data(), heads * hd, w.data()});
  for (int h = 0; h < heads; ++h)
    for (int i = 0; i < n; ++i) {
      double s = 0;
      for (int j = 0; j < n; ++j) {
        float x = w[(h * n + i) * n + j];
        if (j > i) CHECK(x == 0.f);
        else CHECK(x > 0.f);
        s += x;
      }
      CHECK(s == Approx(1.0).epsilon(1e-6));
    }
  // Query 0 sees only key 0: its output is v_0 exactly.
  for (int h = 0; h < heads; ++h)
    for (int d = 0; d < hd; ++d) CHECK(out[h * hd + d] == Approx(v[h * hd + d]).margin(1e-6));
}

TEST_CASE("key padding: padded keys get zero weight; all-padded rows give zeros", "[nn]") {
  const int n = 2, m = 5, d = 4;
  auto q = randn(n * d, 4), k = randn(m * d, 5), v = randn(m * d, 6);
  uint8_t pad[m] = {0, 1, 0, 0, 1};
  std::vector<float> out(n * d), w(n * m);
  AttentionMask mask;
  mask.key_padding = pad;
  scaled_dot_product_attention({q.data(), d, k.data(), v.data(), d, n, m}, {1, 1, d}, mask, {out.data(), d, w.data()});
  for (int i = 0; i < n; ++i) {
    CHECK(w[i * m + 1] == 0.f);
    CHECK(w[i * m + 4] == 0.f);
    CHECK(w[i * m + 0] + w[i * m + 2] + w[i * m + 3] == Approx(1.0).epsilon(1e-6));
  }
  uint8_t all[m] = {1, 1, 1, 1, 1};
  mask.key_padding = all;
  scaled_dot_product_attention({q.data(), d, k.data(), v.data(), d, n, m}, {1, 1, d}, mask, {out.data(), d, w.data()});
  for (float x : out) CHECK(x == 0.f);
  for (float x : w) CHECK(x == 0.f);
}

TEST_CASE("additive bias shifts the softmax as exp(bias)", "[nn]") {
  // With equal scores, weights are softmax(bias).
  const int m = 4, d = 2;
  float q[d] = {0, 0}, k[m * d] = {}, v[m * d] = {1, 0, 0, 1, 2, 2, 3, -1};
  float bias[m] = {0.f, std::log(2.f), std::log(3.f), -INFINITY};
  float out[d], w[m];
  AttentionMask mask;
  mask.bias = bias;
  attention({q, d, k, v, d, 1, m}, mask, out, w);
  CHECK(w[0] == Approx(1 / 6.));
  CHECK(w[1] == Approx(2 / 6.));
  CHECK(w[2] == Approx(3 / 6.));
  CHECK(w[3] == 0.f);
}

TEST_CASE("RoPE: q·k depends only on the position difference", "[nn]") {
  for (RopeStyle style : {RopeStyle::Adjacent, RopeStyle::Half}) {
    Rope rope(style, 16);
    auto q = randn(16, 7), k = randn(16, 8);
    auto score = [&](int pq, int pk) {
      std::vector<float> a = q, b = k;
      rope.apply(a.data(), 1, pq);
      rope.apply(b.data(), 1, pk);
      return std::inner_product(a.begin(), a.end(), b.begin(), 0.0);
    };
    for (int delta : {0, 1, 3, 10}) {
      const double s0 = score(delta, 0);
      for (int p : {1, 5, 17, 100}) {
        INFO("style " << int(style) << " delta " << delta << " p " << p);
        CHECK(score(p + delta, p) == Approx(s0).margin(2e-4));
      }
    }
    // and it does depend on the difference
    CHECK(std::fabs(score(3, 0) - score(0, 0)) > 1e-3);
  }
}

TEST_CASE("without positions, multi-head self-attention is permutation-equivariant", "[nn]") {
  std::vector<std::vector<float>> store;
  const int d = 12, n = 6;
  MultiHeadAttention mha = random_mha(store, d, 3, 3, 11);
  Arena arena;
  auto x = randn(n * d, 12);
  const int perm[n] = {3, 0, 5, 1, 4, 2};
  std::vector<float> xp(n * d);
  for (int i = 0; i < n; ++i)
    for (int c = 0; c < d; ++c) xp[i * d + c] = x[perm[i] * d + c];
  std::vector<float> y(n * d), yp(n * d), w(3 * n * n), wp(3 * n * n);
  self_attention(mha, x.data(), Pass{n}, {}, into(w.data()), y.data(), arena);
  self_attention(mha, xp.data(), Pass{n}, {}, into(wp.data()), yp.data(), arena);
  for (int i = 0; i < n; ++i)
    for (int c = 0; c < d; ++c) CHECK(yp[i * d + c] == Approx(y[perm[i] * d + c]).margin(1e-5));
  for (int h = 0; h < 3; ++h)
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j)
        CHECK(wp[(h * n + i) * n + j] == Approx(w[(h * n + perm[i]) * n + perm[j]]).margin(1e-6));
}

TEST_CASE("KV cache: prefill equals token-by-token decode, outputs and weights", "[nn]") {
  std::vector<std::vector<float>> store;
  const int d = 16, n = 7, heads = 4, kv_heads = 2;
  EncoderLayer layer;
  layer.self_attn = random_mha(store, d, heads, kv_heads, 21);
  layer.ffn.up = make_linear(store, 24, d, 31);
  layer.ffn.gate = make_linear(store, 24, d, 32);
  layer.ffn.down = make_linear(store, d, 24, 33);
  store.push_back(randn(d, 41, 0.1f));
  for (auto& g : store.back()) g += 1.f;
  layer.norm1 = layer.norm2 = Norm{NormKind::RMSNorm, d, store.back().data(), nullptr, 1e-5f};
  layer.placement = NormPlacement::Pre;
  check_encoder_layer(layer, "layer");
  Rope rope(RopeStyle::Adjacent, d / heads);
  SelfAttentionOptions opt;
  opt.causal = true;
  opt.rope = &rope;
  Arena arena;

  auto x = randn(n * d, 22);
  std::vector<float> prefill = x;
  KVCache cache_a(1, kv_heads, d / heads, 16);
  std::vector<float> wa(heads * n * n);
  encoder_layer(layer, prefill.data(), Pass{n, 0, &cache_a, 0}, opt, into(wa.data()), arena);
  cache_a.advance(n);

  KVCache cache_b(1, kv_heads, d / heads, 16);
  for (int t = 0; t < n; ++t) {
    std::vector<float> row(x.begin() + t * d, x.begin() + (t + 1) * d);
    std::vector<float> wb(heads * (t + 1));
    encoder_layer(layer, row.data(), Pass{1, t, &cache_b, 0}, opt, into(wb.data()), arena);
    cache_b.advance(1);
    INFO("position " << t);
    CHECK(max_abs_diff(row.data(), prefill.data() + t * d, d) <= 1e-5);
    for (int h = 0; h < heads; ++h)
      CHECK(max_abs_diff(wb.data() + h * (t + 1), wa.data() + (h * n + t) * n, t + 1) <= 1e-6);
  }
  CHECK(cache_b.length() == n);
}

TEST_CASE("attention over the KV cache's per-head rows gives the bits of the same attention over rows", "[nn]") {
  // The cache keeps each kv head's keys and values as contiguous rows (kv_head_stride); the same
  // numbers laid out [pos][kv_dim] must give identical outputs and weights: only the strides differ.
  const int heads = 6, kv_heads = 3, hd = 8, kd = kv_heads * hd, m = 37;
  const auto k = randn(size_t(m) * kd, 51), v = randn(size_t(m) * kd, 52), q = randn(size_t(3) * heads * hd, 53);
  std::vector<float> kh(k.size()), vh(v.size());  // [kv head][pos][hd]
  for (int j = 0; j < m; ++j)
    for (int g = 0; g < kv_heads; ++g)
      for (int d = 0; d < hd; ++d) {
        kh[(size_t(g) * m + j) * hd + d] = k[size_t(j) * kd + g * hd + d];
        vh[(size_t(g) * m + j) * hd + d] = v[size_t(j) * kd + g * hd + d];
      }
  for (int n : {1, 3})
    for (int window : {0, 5}) {
      AttentionMask mask;
      mask.causal = true;
      mask.q_pos0 = m - n;
      mask.window = window;
      const AttentionShape shape{heads, kv_heads, hd};
      std::vector<float> oa(size_t(n) * heads * hd), ob(oa.size()), wa(size_t(heads) * n * m, -1.f), wb(wa);
      scaled_dot_product_attention({q.data(), heads * hd, k.data(), v.data(), kd, n, m}, shape, mask,
                                   {oa.data(), heads * hd, wa.data(), nullptr});
      AttentionInput in{q.data(), heads * hd, kh.data(), vh.data(), hd, n, m};
      in.kv_head_stride = size_t(m) * hd;
      scaled_dot_product_attention(in, shape, mask, {ob.data(), heads * hd, wb.data(), nullptr});
      INFO("n " << n << " window " << window);
      CHECK(std::memcmp(oa.data(), ob.data(), oa.size() * sizeof(float)) == 0);
      CHECK(std::memcmp(wa.data(), wb.data(), wa.size() * sizeof(float)) == 0);
    }
}

TEST_CASE("self-attention through the KV cache gives the bits of the same prefill without a cache", "[nn]") {
  std::vector<std::vector<float>> store;
  const int d = 32, n = 19, heads = 4, kv_heads = 2;
  const MultiHeadAttention a = random_mha(store, d, heads, kv_heads, 61);
  Rope rope(RopeStyle::Adjacent, d / heads);
  SelfAttentionOptions opt;
  opt.causal = true;
  opt.rope = &rope;
  Arena arena;
  const auto x = randn(size_t(n) * d, 62);
  std::vector<float> ya(size_t(n) * d), yb(ya.size()), wa(size_t(heads) * n * n), wb(wa.size());
  self_attention(a, x.data(), Pass{n, 0, nullptr, 0}, opt, into(wa.data()), ya.data(), arena);
  KVCache cache(1, kv_heads, d / heads, 64);
  self_attention(a, x.data(), Pass{n, 0, &cache, 0}, opt, into(wb.data()), yb.data(), arena);
  CHECK(std::memcmp(ya.data(), yb.data(), ya.size() * sizeof(float)) == 0);
  CHECK(std::memcmp(wa.data(), wb.data(), wa.size() * sizeof(float)) == 0);
}

TEST_CASE("batched self-attention equals each padded sequence alone; padded keys get exactly 0", "[nn]") {
  std::vector<std::vector<float>> store;
  const int d = 12, heads = 3, len = 5, batch = 3;
  MultiHeadAttention mha = random_mha(store, d, heads, heads, 61);
  Arena arena;
  auto x = randn(size_t(batch) * len * d, 62);
  const int lengths[batch] = {5, 2, 4};  // real tokens of each sequence; the rest is padding
  std::vector<uint8_t> padding(size_t(batch) * len);
  for (int b = 0; b < batch; ++b)
    for (int i = 0; i < len; ++i) padding[size_t(b) * len + i] = i >= lengths[b];
  SelfAttentionOptions opt;
  opt.batch = batch;
  opt.key_padding = padding.data();
  std::vector<float> y(x.size()), w(size_t(batch) * heads * len * len, -1.f);
  self_attention(mha, x.data(), Pass{batch * len}, opt, into(w.data()), y.data(), arena);
  for (int b = 0; b < batch; ++b) {
    SelfAttentionOptions one;
    one.key_padding = padding.data() + size_t(b) * len;
    std::vector<float> yb(size_t(len) * d), wb(size_t(heads) * len * len);
    self_attention(mha, x.data() + size_t(b) * len * d, Pass{len}, one, into(wb.data()), yb.data(), arena);
    INFO("sequence " << b);
    CHECK(max_abs_diff(yb.data(), y.data() + size_t(b) * len * d, yb.size()) <= 1e-6);
    const float* wbat = w.data() + size_t(b) * heads * len * len;
    CHECK(max_abs_diff(wb.data(), wbat, wb.size()) == 0.0);
    for (int h = 0; h < heads; ++h)
      for (int i = 0; i < len; ++i)
        for (int j = lengths[b]; j < len; ++j) CHECK(wbat[(size_t(h) * len + i) * len + j] == 0.f);
  }
  // And without padding, each sequence equals its own unpadded run: batching mixes nothing.
  SelfAttentionOptions two;
  two.batch = 2;
  std::vector<float> y2(size_t(2) * len * d);
  self_attention(mha, x.data(), Pass{2 * len}, two, {}, y2.data(), arena);
  std::vector<float> y1(size_t(len) * d);
  self_attention(mha, x.data() + size_t(len) * d, Pass{len}, {}, {}, y1.data(), arena);
  CHECK(max_abs_diff(y1.data(), y2.data() + size_t(len) * d, y1.size()) <= 1e-6);
}

TEST_CASE("attention scale: 1 gives unscaled scores (T5); 0 the usual 1/sqrt(d_k)", "[nn]") {
  const int d = 4, n = 2, m = 3;
  auto q = randn(n * d, 71), k = randn(m * d, 72), v = randn(m * d, 73);
  std::vector<float> out(n * d), w(n * m);
  AttentionShape unscaled{1, 1, d, 1.f};
  scaled_dot_product_attention({q.data(), d, k.data(), v.data(), d, n, m}, unscaled, {}, {out.data(), d, w.data()});
  for (int i = 0; i < n; ++i) {
    double s[m], mx = -1e30, z = 0;
    for (int j = 0; j < m; ++j) {
      s[j] = 0;
      for (int c = 0; c < d; ++c) s[j] += double(q[i * d + c]) * k[j * d + c];
      mx = std::max(mx, s[j]);
    }
    for (int j = 0; j < m; ++j) z += std::exp(s[j] - mx);
    for (int j = 0; j < m; ++j) CHECK(w[i * m + j] == Approx(std::exp(s[j] - mx) / z).margin(1e-6));
  }
  CHECK(AttentionShape{1, 1, 16}.score_scale() == 0.25f);
}

TEST_CASE("gated FFN: GeGLU applies its activation to the gate (T5 v1.1 gated-gelu)", "[nn]") {
  std::vector<std::vector<float>> store;
  const int d = 8, hidden = 12, n = 3;
  FeedForward f;
  f.up = make_linear(store, hidden, d, 81, false);
  f.gate = make_linear(store, hidden, d, 82, false);
  f.down = make_linear(store, d, hidden, 83, false);
  f.act = Activation::GeluTanh;
  check_feed_forward(f, d, "ffn");
  Arena arena;
  auto x = randn(n * d, 84);
  std::vector<float> y(n * d);
  feed_forward(f, x.data(), n, y.data(), arena);
  for (int i = 0; i < n; ++i) {
    std::vector<double> h(hidden);
    for (int r = 0; r < hidden; ++r) {
      double g = 0, u = 0;
      for (int c = 0; c < d; ++c) {
        g += double(static_cast<const float*>(f.gate.w.data)[r * d + c]) * x[i * d + c];
        u += double(static_cast<const float*>(f.up.w.data)[r * d + c]) * x[i * d + c];
      }
      const double gelu = 0.5 * g * (1 + std::tanh(std::sqrt(2 / M_PI) * (g + 0.044715 * g * g * g)));
      h[r] = gelu * u;
    }
    for (int o = 0; o < d; ++o) {
      double want = 0;
      for (int r = 0; r < hidden; ++r) want += double(static_cast<const float*>(f.down.w.data)[o * hidden + r]) * h[r];
      CHECK(y[i * d + o] == Approx(want).margin(1e-5));
    }
  }
}

TEST_CASE("sinusoidal encodings: Marian's halves layout holds the same values as the interleaved one", "[nn]") {
  const int d = 10;
  float a[d], b[d];
  for (int pos : {0, 1, 7, 511}) {
    sinusoidal_encoding(pos, d, a);
    sinusoidal_encoding_halves(pos, d, b);
    for (int i = 0; i < d / 2; ++i) {
      CHECK(b[i] == a[2 * i]);              // sin
      CHECK(b[d / 2 + i] == a[2 * i + 1]);  // cos
    }
  }
}

TEST_CASE("KV cache reports its size and refuses to overflow", "[nn]") {
  KVCache cache(6, 6, 48, 256);
  CHECK(cache.bytes() == 0);  // nothing allocated before use
  CHECK(cache.capacity_bytes() == uint64_t(2) * 6 * 6 * 256 * 48 * 4);
  CHECK_THROWS_WITH(cache.advance(1), Catch::Contains("without reserve"));
  cache.reserve(250);
  CHECK(cache.bytes() == size_t(2) * 6 * 6 * 250 * 48 * 4);
  cache.advance(250);
  CHECK_THROWS_WITH(cache.advance(10),
                    Catch::Contains("context overflow") && Catch::Contains("250") && Catch::Contains("256"));
  CHECK_THROWS_WITH(cache.reserve(10), Catch::Contains("context overflow"));
  CHECK(cache.length() == 250);  // nothing lost
  cache.reserve(6);
  cache.advance(6);
  CHECK(cache.bytes() == size_t(2) * 6 * 6 * 256 * 48 * 4);
  CHECK_THROWS_AS(cache.check_room(1), Error);
  CHECK_THROWS_AS(KVCache(0, 1, 1, 1), Error);
}

TEST_CASE("KV cache grows with use and keeps the rows it holds", "[nn]") {
  KVCache cache(3, 2, 4, 1000);
  const int kv = cache.kv_dim();
  REQUIRE(kv == 8);
  auto fill = [&](int pos) {  // through store(): rows [1][kv_dim], heads side by side
    for (int l = 0; l < 3; ++l) {
      float k[8], v[8];
      for (int i = 0; i < kv; ++i) {
        k[i] = float(l * 100000 + pos * 10 + i);
        v[i] = -float(l * 100000 + pos * 10 + i);
      }
      cache.store(l, pos, 1, k, v);
    }
  };
  int grows = 0, last = 0;
  for (int pos = 0; pos < 1000; ++pos) {
    cache.reserve(1);
    if (cache.allocated() != last) ++grows;
    last = cache.allocated();
    CHECK(cache.allocated() >= pos + 1);
    fill(pos);
    cache.advance(1);
  }
  CHECK(cache.allocated() == 1000);  // capped at the capacity
  CHECK(grows <= 6);                  // 64, 128, 256, 512, 1000: doubling, not one position at a time
  for (int l = 0; l < 3; ++l)
    for (int pos = 0; pos < 1000; ++pos)
      for (int i = 0; i < kv; ++i) {  // head i / 4, element i % 4; one head's positions are contiguous rows
        REQUIRE(cache.key(l, i / 4, pos)[i % 4] == float(l * 100000 + pos * 10 + i));
        REQUIRE(cache.value(l, i / 4, pos)[i % 4] == -float(l * 100000 + pos * 10 + i));
        REQUIRE(cache.key(l, i / 4, 0) + size_t(pos) * 4 == cache.key(l, i / 4, pos));
      }
  CHECK(cache.key(0, 1, 0) == cache.key(0, 0, 0) + cache.head_stride());
  KVCache copy(3, 2, 4, 1000);  // copy_from keeps every head's rows
  copy.copy_from(cache);
  REQUIRE(copy.length() == 1000);
  for (int l = 0; l < 3; ++l)
    for (int h = 0; h < 2; ++h)
      for (int pos = 0; pos < 1000; pos += 37)
        for (int d = 0; d < 4; ++d) REQUIRE(copy.value(l, h, pos)[d] == cache.value(l, h, pos)[d]);
}

TEST_CASE("KV cache sizes are checked in 64 bits: a long context costs nothing until used", "[nn]") {
  // 16 layers × 2^20 positions × 8 heads × 512 dims: 64 GiB at full capacity, which neither wasm32
  // nor a 32-bit size_t can hold. Creating it allocates nothing; growing past what one buffer may
  // take is an error naming the KV cache, not a wrapped size.
  KVCache big(16, 8, 512, 1 << 20);
  CHECK(big.bytes() == 0);
  CHECK(big.capacity_bytes() == uint64_t(2) * 16 * (1 << 20) * 8 * 512 * 4);
  big.reserve(10);
  CHECK(big.bytes() == size_t(2) * 16 * 64 * 8 * 512 * 4);
  CHECK_THROWS_WITH(big.reserve(1 << 19), Catch::Contains("KV cache") && Catch::Contains("bytes"));
  CHECK(big.allocated() == 64);  // unchanged by the failed reserve
  CHECK_THROWS_WITH(KVCache(4, 1 << 16, 1 << 16, 8), Catch::Contains("KV cache row"));
  CHECK_THROWS_WITH(KVCache(4, 1, 64, (1 << 20) + 1), Catch::Contains("limits"));
}

TEST_CASE("attention recorder: selection and slots", "[nn]") {
  AttentionRecorder rec;
  rec.select({1}, {0, 2});
  CHECK(rec.slot(AttentionKind::Self, 0, 4, 2, 3, 0) == nullptr);
  float* s = rec.slot(AttentionKind::Self, 1, 4, 2, 3, 5);
  REQUIRE(s != nullptr);
  const unsigned char* mask = rec.head_mask(4);
  REQUIRE(mask != nullptr);
  CHECK((mask[0] == 1 && mask[1] == 0 && mask[2] == 1 && mask[3] == 0));
  const AttentionRecord* r = rec.find(AttentionKind::Self, 1);
  REQUIRE(r != nullptr);
  CHECK(r->q_pos0 == 5);
  CHECK(r->weights.size() == 4 * 2 * 3);
}

// ---- variants of attention and of the block (Mistral, Gemma, GPT-NeoX, Qwen3, Phi) --------------------
namespace {

// Attention written as plainly as possible, in double: heads of q [n][H·d] against k, v [m][G·d],
// scores = scale·q·k, optionally soft-capped, causal with an optional window; weights [H][n][m].
struct Naive {
  std::vector<double> out, weights;
};
Naive naive_attention(const std::vector<float>& q, const std::vector<float>& k, const std::vector<float>& v, int n,
                      int m, int H, int G, int d, double scale, double cap, int window, int q_pos0) {
  Naive r;
  r.out.assign(size_t(n) * H * d, 0.0);
  r.weights.assign(size_t(H) * n * m, 0.0);
  for (int h = 0; h < H; ++h) {
    const int g = h / (H / G);
    for (int i = 0; i < n; ++i) {
      const int pos = q_pos0 + i;
      std::vector<double> s(m, -INFINITY);
      double mx = -INFINITY;
      for (int j = 0; j < m; ++j) {
        if (j > pos || (window > 0 && j <= pos - window)) continue;
        double dot = 0;
        for (int c = 0; c < d; ++c) dot += double(q[(size_t(i) * H + h) * d + c]) * k[(size_t(j) * G + g) * d + c];
        dot *= scale;
        if (cap > 0) dot = cap * std::tanh(dot / cap);
        s[j] = dot;
        mx = std::max(mx, dot);
      }
      double z = 0;
      for (int j = 0; j < m; ++j) z += std::isinf(s[j]) ? 0.0 : std::exp(s[j] - mx);
      for (int j = 0; j < m; ++j) {
        const double p = std::isinf(s[j]) ? 0.0 : std::exp(s[j] - mx) / z;
        r.weights[(size_t(h) * n + i) * m + j] = p;
        for (int c = 0; c < d; ++c) r.out[(size_t(i) * H + h) * d + c] += p * v[(size_t(j) * G + g) * d + c];
      }
    }
  }
  return r;
}

double max_diff(const std::vector<float>& a, const std::vector<double>& b) {
  REQUIRE(a.size() == b.size());
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(double(a[i]) - b[i]));
  return m;
}

}  // namespace

TEST_CASE("sliding-window, soft-capped and rescaled attention equal a plain computation", "[nn]") {
  const int n = 11, H = 4, G = 2, d = 8;
  auto q = randn(size_t(n) * H * d, 61, 1.5f), k = randn(size_t(n) * G * d, 62, 1.5f), v = randn(size_t(n) * G * d, 63);
  struct Case {
    int window;
    float scale, cap;
  };
  for (Case c : {Case{0, 0.f, 0.f}, Case{3, 0.f, 0.f}, Case{1, 0.f, 0.f}, Case{20, 0.f, 0.f}, Case{0, 0.f, 1.5f},
                 Case{4, 0.0625f, 2.f}, Case{2, 1.f, 0.f}}) {
    std::vector<float> out(size_t(n) * H * d), w(size_t(H) * n * n, -1.f);
    AttentionMask mask;
    mask.causal = true;
    mask.window = c.window;
    scaled_dot_product_attention({q.data(), H * d, k.data(), v.data(), G * d, n, n}, {H, G, d, c.scale, c.cap}, mask,
                                 {out.data(), H * d, w.data()});
    const double scale = c.scale > 0 ? c.scale : 1.0 / std::sqrt(double(d));
    const Naive ref = naive_attention(q, k, v, n, n, H, G, d, scale, c.cap, c.window, 0);
    INFO("window " << c.window << " scale " << c.scale << " cap " << c.cap);
    CHECK(max_diff(out, ref.out) <= 2e-5);
    CHECK(max_diff(w, ref.weights) <= 2e-6);
    // Keys outside the band are exactly 0, keys inside are not.
    for (int h = 0; h < H; ++h)
      for (int i = 0; i < n; ++i)
        for (int j = 0; j < n; ++j) {
          const bool seen = j <= i && (c.window == 0 || j > i - c.window);
          const float x = w[(size_t(h) * n + i) * n + j];
          if (seen) CHECK(x > 0.f);
          else CHECK(x == 0.f);
        }
  }
}

TEST_CASE("sliding window through the KV cache: decode equals prefill, banded rows", "[nn]") {
  std::vector<std::vector<float>> store;
  const int d = 16, n = 9, heads = 4, window = 3;
  MultiHeadAttention a = random_mha(store, d, heads, 2, 71);
  SelfAttentionOptions opt;
  opt.causal = true;
  opt.window = window;
  Rope rope(RopeStyle::Half, d / heads);
  opt.rope = &rope;
  Arena arena;
  auto x = randn(size_t(n) * d, 72);
  KVCache ca(1, 2, d / heads, 16), cb(1, 2, d / heads, 16);
  std::vector<float> ya(size_t(n) * d), wa(size_t(heads) * n * n);
  self_attention(a, x.data(), Pass{n, 0, &ca, 0}, opt, into(wa.data()), ya.data(), arena);
  for (int t = 0; t < n; ++t) {
    std::vector<float> yb(d), wb(size_t(heads) * (t + 1));
    self_attention(a, x.data() + size_t(t) * d, Pass{1, t, &cb, 0}, opt, into(wb.data()), yb.data(), arena);
    cb.advance(1);
    INFO("position " << t);
    CHECK(max_abs_diff(yb.data(), ya.data() + size_t(t) * d, d) <= 1e-5);
    for (int h = 0; h < heads; ++h)
      for (int j = 0; j <= t; ++j) {
        const float x1 = wb[size_t(h) * (t + 1) + j], x2 = wa[(size_t(h) * n + t) * n + j];
        CHECK(x1 == Approx(x2).margin(1e-6));
        if (j <= t - window) CHECK(x1 == 0.f);
      }
  }
}

TEST_CASE("partial RoPE rotates the first dimensions only; frequency factors divide the angles", "[nn]") {
  for (RopeStyle style : {RopeStyle::Adjacent, RopeStyle::Half}) {
    RopeParams p;
    p.style = style;
    p.head_dim = 12;
    p.rot_dims = 4;
    p.base = 100.f;
    Rope partial(p, 64);
    Rope whole(style, 4, 100.f, 64);  // the same rotation on a 4-dimensional head
    auto x = randn(2 * 12, 81);
    for (int pos : {0, 1, 5, 63, 200}) {
      std::vector<float> a = x;
      partial.apply(a.data(), 2, pos);
      for (int h = 0; h < 2; ++h) {
        std::vector<float> b(x.begin() + h * 12, x.begin() + h * 12 + 4);
        whole.apply(b.data(), 1, pos);
        INFO("style " << int(style) << " pos " << pos << " head " << h);
        CHECK(max_abs_diff(a.data() + h * 12, b.data(), 4) <= 1e-6);
        CHECK(max_abs_diff(a.data() + h * 12 + 4, x.data() + h * 12 + 4, 8) == 0.0);
      }
    }
  }
  // θ_i / f_i and cos/sin scaled by the attention factor, against the formula.
  RopeParams p;
  p.style = RopeStyle::Adjacent;
  p.head_dim = 4;
  p.base = 10000.f;
  p.freq_factors = {1.f, 8.f};
  p.freq_scale = 0.5f;
  p.attn_factor = 1.25f;
  Rope rope(p, 16);
  for (int pos : {3, 40}) {  // inside and past the table
    float x[4] = {1.f, 0.f, 0.f, 1.f};
    rope.apply(x, 1, pos);
    const double a0 = pos * 0.5 * 1.0, a1 = pos * 0.5 * (1.0 / 100.0) / 8.0;
    CHECK(x[0] == Approx(1.25 * std::cos(a0)).margin(1e-5));
    CHECK(x[1] == Approx(1.25 * std::sin(a0)).margin(1e-5));
    CHECK(x[2] == Approx(-1.25 * std::sin(a1)).margin(1e-6));
    CHECK(x[3] == Approx(1.25 * std::cos(a1)).margin(1e-6));
  }
  p.freq_factors = {1.f};
  CHECK_THROWS_WITH(Rope(p, 4), Catch::Contains("1 values for 2 rotated pairs"));
}

TEST_CASE("q/k norms normalise each head before RoPE", "[nn]") {
  std::vector<std::vector<float>> store;
  const int d = 16, heads = 2, hd = 8, n = 5;
  MultiHeadAttention a = random_mha(store, d, heads, heads, 91);
  store.push_back(randn(hd, 92, 0.3f));
  a.q_norm = Norm{NormKind::RMSNorm, hd, store.back().data(), nullptr, 1e-6f};
  store.push_back(randn(hd, 93, 0.3f));
  a.k_norm = Norm{NormKind::RMSNorm, hd, store.back().data(), nullptr, 1e-6f};
  check_attention(a, "qk");
  Arena arena;
  auto x = randn(size_t(n) * d, 94);
  SelfAttentionOptions opt;
  opt.causal = true;
  std::vector<float> y(size_t(n) * d), w(size_t(heads) * n * n);
  self_attention(a, x.data(), Pass{n}, opt, into(w.data()), y.data(), arena);
  // Plainly: q = x·Wqᵀ + b, each head scaled to unit RMS times γ; the same for k; then attention.
  auto project = [&](const Linear& l, const Norm& nm) {
    std::vector<float> out(size_t(n) * d);
    for (int i = 0; i < n; ++i)
      for (int o = 0; o < d; ++o) {
        double s = l.b[o];
        for (int c = 0; c < d; ++c) s += double(x[size_t(i) * d + c]) * static_cast<const float*>(l.w.data)[size_t(o) * d + c];
        out[size_t(i) * d + o] = float(s);
      }
    for (int i = 0; i < n * heads; ++i) {
      double ss = 0;
      for (int c = 0; c < hd; ++c) ss += double(out[size_t(i) * hd + c]) * out[size_t(i) * hd + c];
      const double inv = 1.0 / std::sqrt(ss / hd + nm.eps);
      for (int c = 0; c < hd; ++c) out[size_t(i) * hd + c] = float(out[size_t(i) * hd + c] * inv * nm.gamma[c]);
    }
    return out;
  };
  const auto q = project(a.q, a.q_norm), k = project(a.k, a.k_norm);
  std::vector<float> v(size_t(n) * d);
  for (int i = 0; i < n; ++i)
    for (int o = 0; o < d; ++o) {
      double s = a.v.b[o];
      for (int c = 0; c < d; ++c) s += double(x[size_t(i) * d + c]) * static_cast<const float*>(a.v.w.data)[size_t(o) * d + c];
      v[size_t(i) * d + o] = float(s);
    }
  const Naive ref = naive_attention(q, k, v, n, n, heads, heads, hd, 1.0 / std::sqrt(double(hd)), 0, 0, 0);
  CHECK(max_diff(w, ref.weights) <= 2e-6);
}

TEST_CASE("parallel residual, output norms and GeGLU: the layer composes its parts as stated", "[nn]") {
  std::vector<std::vector<float>> store;
  const int d = 16, n = 6, ff = 24;
  EncoderLayer l;
  l.self_attn = random_mha(store, d, 4, 4, 101);
  l.ffn.gate = make_linear(store, ff, d, 102, false);
  l.ffn.up = make_linear(store, ff, d, 103, false);
  l.ffn.down = make_linear(store, d, ff, 104, false);
  l.ffn.act = Activation::GeluTanh;
  auto gamma = [&](uint32_t seed) {
    store.push_back(randn(d, seed, 0.2f));
    for (float& g : store.back()) g += 1.f;
    return Norm{NormKind::RMSNorm, d, store.back().data(), nullptr, 1e-6f};
  };
  l.norm1 = gamma(105);
  l.norm2 = gamma(106);
  l.placement = NormPlacement::Pre;
  SelfAttentionOptions opt;
  opt.causal = true;
  Arena arena;
  const auto x = randn(size_t(n) * d, 107);
  auto sub = [&](const std::vector<float>& in, const Norm& pre, const Norm* post, bool attention) {
    std::vector<float> h(in.size()), y(in.size()), t(in.size());
    norm(pre, in.data(), n, h.data());
    if (attention) self_attention(l.self_attn, h.data(), Pass{n}, opt, {}, y.data(), arena);
    else feed_forward(l.ffn, h.data(), n, y.data(), arena);
    if (post) {
      norm(*post, y.data(), n, t.data());
      return t;
    }
    return y;
  };
  // GeGLU: down(gelu_tanh(gate·x) ⊙ up·x).
  {
    std::vector<float> y(size_t(n) * d), g(size_t(n) * ff), u(size_t(n) * ff), expect(size_t(n) * d);
    feed_forward(l.ffn, x.data(), n, y.data(), arena);
    linear(l.ffn.gate, x.data(), n, g.data());
    linear(l.ffn.up, x.data(), n, u.data());
    for (size_t i = 0; i < g.size(); ++i) {
      const double z = g[i];
      g[i] = float(0.5 * z * (1 + std::tanh(0.7978845608028654 * (z + 0.044715 * z * z * z))) * u[i]);
    }
    linear(l.ffn.down, g.data(), n, expect.data());
    CHECK(max_abs_diff(y, expect) <= 1e-5);
  }
  for (bool parallel : {false, true})
    for (bool post : {false, true}) {
      l.parallel = parallel;
      l.post_norm1 = post ? gamma(108) : Norm{};
      l.post_norm2 = post ? gamma(109) : Norm{};
      check_encoder_layer(l, "layer");
      std::vector<float> got = x;
      encoder_layer(l, got.data(), Pass{n}, opt, {}, arena);
      std::vector<float> expect = x;
      const Norm* p1 = post ? &l.post_norm1 : nullptr;
      const Norm* p2 = post ? &l.post_norm2 : nullptr;
      if (parallel) {
        const auto a = sub(x, l.norm1, p1, true), f = sub(x, l.norm2, p2, false);
        for (size_t i = 0; i < expect.size(); ++i) expect[i] += a[i] + f[i];
      } else {
        const auto a = sub(expect, l.norm1, p1, true);
        for (size_t i = 0; i < expect.size(); ++i) expect[i] += a[i];
        const auto f = sub(expect, l.norm2, p2, false);
        for (size_t i = 0; i < expect.size(); ++i) expect[i] += f[i];
      }
      INFO("parallel " << parallel << " post norms " << post);
      CHECK(max_abs_diff(got, expect) <= 1e-5);
    }
  l.placement = NormPlacement::Post;
  CHECK_THROWS_WITH(check_encoder_layer(l, "layer 3"), Catch::Contains("layer 3: output norms and the parallel residual need a pre-LN layer"));
}

// ---- bad input --------------------------------------------------------------------------------------
TEST_CASE("bad shapes and values give precise errors", "[nn][errors]") {
  CHECK_THROWS_WITH(split_heads(10, 3, 3), Catch::Contains("d_model 10 is not divisible by the number of heads 3"));
  CHECK_THROWS_WITH(split_heads(12, 4, 3), Catch::Contains("does not divide"));
  std::vector<std::vector<float>> store;
  MultiHeadAttention mha = random_mha(store, 8, 2, 2, 51);
  mha.o = make_linear(store, 8, 6, 52);
  CHECK_THROWS_WITH(check_attention(mha, "layer 0 attention"),
                    Catch::Contains("layer 0 attention.o") && Catch::Contains("[8, 6], expected [8, 8]"));

  float q[4] = {1, NAN, 0, 0}, k[4] = {0, 0, 0, 0}, out[4];
  CHECK_THROWS_WITH(attention({q, 4, k, k, 4, 1, 1}, AttentionMask{}, out), Catch::Contains("NaN at index 1"));

  MultiHeadAttention ok = random_mha(store, 8, 2, 2, 53);
  Arena arena;
  std::vector<float> x(16, 0.f), y(16);
  x[9] = INFINITY;
  CHECK_THROWS_WITH(self_attention(ok, x.data(), Pass{2}, {}, {}, y.data(), arena),
                    Catch::Contains("self-attention input contains infinity at index 9"));

  KVCache cache(1, 2, 4, 3);
  x[9] = 0.f;
  std::vector<float> big(4 * 8, 0.f), big_out(4 * 8);
  CHECK_THROWS_WITH(self_attention(ok, big.data(), Pass{4, 0, &cache, 0}, {}, {}, big_out.data(), arena),
                    Catch::Contains("context overflow"));
  AttentionMask causal;
  causal.causal = true;
  causal.q_pos0 = 3;
  float o[4];
  CHECK_THROWS_WITH(scaled_dot_product_attention({k, 4, k, k, 4, 1, 1}, {1, 1, 4}, causal, {o, 4}),
                    Catch::Contains("need 4 keys, got 1"));
}
