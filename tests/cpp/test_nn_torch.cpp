// Multi-head attention, encoder and decoder layers (post-LN and pre-LN, ReLU and GELU), grouped-query
// attention, both RoPE conventions, ALiBi slopes and T5 buckets against PyTorch.
// Fixtures: tests/fixtures/make_nn_fixtures.py (run with /usr/bin/python3; outputs committed).
#include <cmath>
#include <vector>

#include "fixture_json.h"
#include "nn_capture.h"
#include "nn/layers.h"
#include "nn/positions.h"

using namespace attnlens;
using namespace attnlens::nn;
using testutil::into;
using testutil::JsonFixture;
using testutil::max_abs_diff;

namespace {

constexpr double kTol = 1e-4;      // outputs
constexpr double kWeightTol = 1e-5;  // attention weights

// Keeps fixture arrays alive while layers point into them.
struct Store {
  std::vector<std::vector<float>> arrays;
  const float* keep(std::vector<float> v) {
    arrays.push_back(std::move(v));
    return arrays.back().data();
  }
};

Linear linear_from(Store& s, const JsonFixture& f, const std::string& w, const std::string& b) {
  auto shape = f.shape(w);
  return Linear{Matrix{DType::F32, int(shape[0]), int(shape[1]), s.keep(f.get(w))}, b.empty() ? nullptr : s.keep(f.get(b))};
}

// PyTorch's MultiheadAttention: in_proj_weight [3d, d] = [W^Q; W^K; W^V], out_proj.
MultiHeadAttention mha_from(Store& s, const JsonFixture& f, const std::string& prefix, int d, int heads, bool fused) {
  MultiHeadAttention a;
  a.d_model = d;
  a.shape = split_heads(d, heads, heads);
  if (fused) {
    a.qkv = linear_from(s, f, prefix + "in_proj_weight", prefix + "in_proj_bias");
  } else {  // the same weights as three separate projections
    const float* w = s.keep(f.get(prefix + "in_proj_weight"));
    const float* b = s.keep(f.get(prefix + "in_proj_bias"));
    a.q = Linear{Matrix{DType::F32, d, d, w}, b};
    a.k = Linear{Matrix{DType::F32, d, d, w + d * d}, b + d};
    a.v = Linear{Matrix{DType::F32, d, d, w + 2 * d * d}, b + 2 * d};
  }
  a.o = linear_from(s, f, prefix + "out_proj_weight", prefix + "out_proj_bias");
  check_attention(a, prefix + "attention");
  return a;
}

FeedForward ffn_from(Store& s, const JsonFixture& f, const std::string& act) {
  FeedForward ffn;
  ffn.up = linear_from(s, f, "linear1_weight", "linear1_bias");
  ffn.down = linear_from(s, f, "linear2_weight", "linear2_bias");
  ffn.act = parse_activation(act);  // PyTorch's "gelu" is the exact erf form
  return ffn;
}

Norm norm_from(Store& s, const JsonFixture& f, const std::string& name, int d, float eps) {
  return Norm{NormKind::LayerNorm, d, s.keep(f.get(name + "_weight")), s.keep(f.get(name + "_bias")), eps};
}

std::vector<uint8_t> mask_from(const std::vector<float>& v) {
  std::vector<uint8_t> m(v.size());
  for (size_t i = 0; i < v.size(); ++i) m[i] = v[i] != 0.f;
  return m;
}

}  // namespace

TEST_CASE("multi-head attention equals torch.nn.MultiheadAttention", "[nn][torch]") {
  JsonFixture f(testutil::fixture_path("nn/mha.json"));
  const int d = f.config()["d_model"], h = f.config()["n_heads"], n = f.config()["n"], m = f.config()["m"];
  for (bool fused : {true, false}) {
    Store s;
    MultiHeadAttention a = mha_from(s, f, "", d, h, fused);
    Arena arena;
    auto x = f.get("x");
    std::vector<float> y(n * d), w(h * n * n);
    INFO((fused ? "fused" : "separate") << " QKV projections");

    self_attention(a, x.data(), Pass{n}, {}, into(w.data()), y.data(), arena);
    CHECK(max_abs_diff(y, f.get("self_out")) <= kTol);
    CHECK(max_abs_diff(w, f.get("self_weights")) <= kWeightTol);

    SelfAttentionOptions causal;
    causal.causal = true;
    self_attention(a, x.data(), Pass{n}, causal, into(w.data()), y.data(), arena);
    CHECK(max_abs_diff(y, f.get("causal_out")) <= kTol);
    CHECK(max_abs_diff(w, f.get("causal_weights")) <= kWeightTol);

    auto bias = f.get("bias");
    SelfAttentionOptions biased;
    biased.bias = bias.data();
    biased.bias_heads = h;
    self_attention(a, x.data(), Pass{n}, biased, into(w.data()), y.data(), arena);
    CHECK(max_abs_diff(y, f.get("bias_out")) <= kTol);
    CHECK(max_abs_diff(w, f.get("bias_weights")) <= kWeightTol);

    CrossMemory mem;
    auto memory = f.get("memory");
    project_memory(a, memory.data(), m, mem);
    auto pad = mask_from(f.get("memory_padding"));
    std::vector<float> wc(h * n * m);
    CrossAttentionOptions copt;
    copt.memory_padding = pad.data();
    cross_attention(a, x.data(), n, mem, copt, into(wc.data()), y.data(), arena);
    CHECK(max_abs_diff(y, f.get("cross_out")) <= kTol);
    CHECK(max_abs_diff(wc, f.get("cross_weights")) <= kWeightTol);
  }
}

TEST_CASE("encoder layer equals torch.nn.TransformerEncoderLayer", "[nn][torch]") {
  for (const char* name : {"encoder_post_relu", "encoder_post_gelu", "encoder_pre_relu", "encoder_pre_gelu"}) {
    JsonFixture f(testutil::fixture_path(std::string("nn/") + name + ".json"));
    const auto& c = f.config();
    const int d = c["d_model"], h = c["n_heads"], n = c["n"];
    const float eps = c["eps"];
    Store s;
    EncoderLayer layer;
    layer.self_attn = mha_from(s, f, "self_attn.", d, h, true);
    layer.ffn = ffn_from(s, f, c["activation"]);
    layer.norm1 = norm_from(s, f, "norm1", d, eps);
    layer.norm2 = norm_from(s, f, "norm2", d, eps);
    layer.placement = c["norm_first"].get<bool>() ? NormPlacement::Pre : NormPlacement::Post;
    check_encoder_layer(layer, name);
    auto pad = mask_from(f.get("padding"));
    SelfAttentionOptions opt;
    opt.key_padding = pad.data();
    auto x = f.get("x");
    std::vector<float> w(h * n * n);
    Arena arena;
    encoder_layer(layer, x.data(), Pass{n}, opt, into(w.data()), arena);
    INFO(name);
    CHECK(max_abs_diff(x, f.get("y")) <= kTol);
    CHECK(max_abs_diff(w, f.get("weights")) <= kWeightTol);
  }
}

TEST_CASE("decoder layer equals torch.nn.TransformerDecoderLayer", "[nn][torch]") {
  for (const char* name : {"decoder_post_relu", "decoder_post_gelu", "decoder_pre_relu", "decoder_pre_gelu"}) {
    JsonFixture f(testutil::fixture_path(std::string("nn/") + name + ".json"));
    const auto& c = f.config();
    const int d = c["d_model"], h = c["n_heads"], n = c["n"], m = c["m"];
    const float eps = c["eps"];
    Store s;
    DecoderLayer layer;
    layer.self_attn = mha_from(s, f, "self_attn.", d, h, false);
    layer.cross_attn = mha_from(s, f, "cross_attn.", d, h, true);
    layer.ffn = ffn_from(s, f, c["activation"]);
    layer.norm1 = norm_from(s, f, "norm1", d, eps);
    layer.norm2 = norm_from(s, f, "norm2", d, eps);
    layer.norm3 = norm_from(s, f, "norm3", d, eps);
    layer.placement = c["norm_first"].get<bool>() ? NormPlacement::Pre : NormPlacement::Post;
    check_decoder_layer(layer, name);
    Arena arena;
    CrossMemory mem;
    auto memory = f.get("memory");
    project_memory(layer.cross_attn, memory.data(), m, mem);
    INFO(name);

    // All target tokens at once (prefill) …
    auto x = f.get("x");
    KVCache cache(1, h, d / h, n);
    std::vector<float> ws(h * n * n), wc(h * n * m);
    decoder_layer(layer, x.data(), Pass{n, 0, &cache, 0}, mem, {}, {into(ws.data()), into(wc.data())}, arena);
    cache.advance(n);
    CHECK(max_abs_diff(x, f.get("y")) <= kTol);
    CHECK(max_abs_diff(ws, f.get("self_weights")) <= kWeightTol);
    CHECK(max_abs_diff(wc, f.get("cross_weights")) <= kWeightTol);

    // … and one at a time through the KV cache give PyTorch's result too.
    auto x0 = f.get("x"), y = f.get("y"), wc_ref = f.get("cross_weights");
    KVCache step_cache(1, h, d / h, n);
    for (int t = 0; t < n; ++t) {
      std::vector<float> wc1(h * m);
      decoder_layer(layer, x0.data() + t * d, Pass{1, t, &step_cache, 0}, mem, {}, {{}, into(wc1.data())}, arena);
      step_cache.advance(1);
      CHECK(max_abs_diff(x0.data() + t * d, y.data() + t * d, d) <= kTol);
      for (int hh = 0; hh < h; ++hh)
        CHECK(max_abs_diff(wc1.data() + hh * m, wc_ref.data() + (hh * n + t) * m, m) <= kWeightTol);
    }
  }
}

TEST_CASE("grouped-query attention with RoPE equals the repeat-kv reference, both conventions", "[nn][torch]") {
  JsonFixture f(testutil::fixture_path("nn/gqa_rope.json"));
  const auto& c = f.config();
  const int d = c["d_model"], h = c["n_heads"], kvh = c["n_kv_heads"], n = c["n"];
  Store s;
  MultiHeadAttention a;
  a.d_model = d;
  a.shape = split_heads(d, h, kvh);
  a.q = linear_from(s, f, "wq", "");
  a.k = linear_from(s, f, "wk", "");
  a.v = linear_from(s, f, "wv", "");
  a.o = linear_from(s, f, "wo", "");
  check_attention(a, "gqa");
  for (auto [style, suffix] : {std::pair{RopeStyle::Half, "half"}, std::pair{RopeStyle::Adjacent, "adjacent"}}) {
    Rope rope(style, d / h);
    SelfAttentionOptions opt;
    opt.causal = true;
    opt.rope = &rope;
    Arena arena;
    auto x = f.get("x");
    std::vector<float> y(n * d), w(h * n * n);
    KVCache cache(1, kvh, d / h, n);
    self_attention(a, x.data(), Pass{n, 0, &cache, 0}, opt, into(w.data()), y.data(), arena);
    INFO(suffix);
    CHECK(max_abs_diff(y, f.get(std::string("out_") + suffix)) <= kTol);
    CHECK(max_abs_diff(w, f.get(std::string("weights_") + suffix)) <= kWeightTol);
  }
  // RoPE alone, at positions 0, 1, 7, 100.
  auto vec = f.get("rope_vec");
  auto positions = c["rope_positions"].get<std::vector<int>>();
  for (auto [style, key] : {std::pair{RopeStyle::Half, "rope_half"}, std::pair{RopeStyle::Adjacent, "rope_adjacent"}}) {
    Rope rope(style, 16);
    auto want = f.get(key);
    for (size_t i = 0; i < positions.size(); ++i) {
      std::vector<float> v = vec;
      rope.apply(v.data(), 1, positions[i]);
      INFO(key << " at position " << positions[i]);
      CHECK(max_abs_diff(v.data(), want.data() + i * 16, 16) <= 2e-5);
    }
  }
}

TEST_CASE("ALiBi slopes and T5 relative buckets equal their reference implementations", "[nn][torch]") {
  JsonFixture f(testutil::fixture_path("nn/position_bias.json"));
  for (int n : {1, 4, 6, 8, 12, 16}) {
    AlibiBias alibi(n);
    auto want = f.get("alibi_" + std::to_string(n));
    INFO("ALiBi with " << n << " heads");
    REQUIRE(alibi.slopes().size() == want.size());
    CHECK(max_abs_diff(alibi.slopes().data(), want.data(), want.size()) <= 1e-7);
  }
  const int rel0 = f.config()["t5_relative_min"];
  for (bool bidir : {true, false})
    for (auto [nb, md] : {std::pair{32, 128}, std::pair{16, 64}}) {
      auto want = f.get(std::string("t5_") + (bidir ? "bi" : "uni") + "_" + std::to_string(nb) + "_" + std::to_string(md));
      for (size_t i = 0; i < want.size(); ++i) {
        const int rel = rel0 + int(i);
        INFO("relative position " << rel << " bidirectional " << bidir << " buckets " << nb);
        REQUIRE(t5_relative_bucket(rel, bidir, nb, md) == int(want[i]));
      }
    }
  // ALiBi adds −slope·distance: with 2 heads the slopes are 2^-4 and 2^-8.
  AlibiBias alibi(2);
  float row[4] = {0, 0, 0, 0};
  alibi.add(0, 3, row, 4);
  CHECK(row[0] == Approx(-3.0 / 16));
  CHECK(row[3] == 0.f);
}
