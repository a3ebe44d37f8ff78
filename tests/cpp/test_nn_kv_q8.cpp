// The q8_0 KV cache (nn/kv_cache.h, kernels/attention_q8.cpp): the bytes it stores against ggml's
// q8_0 as tests/fixtures/make_kv_q8_fixtures.py computes it, attention over it against float64
// attention on the dequantized cache (the same fixtures), the vector kernels against their scalar
// twins, prefill against step-by-step decode, threads, growth / truncate / copy. A whole model with a
// q8_0 cache: tests/cpp/test_runtime_kv_q8.cpp.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "core/error.h"
#include "core/parallel.h"
#include "core/tensor.h"
#include "fixture_json.h"
#include "kernels/kernels.h"
#include "nn/attention.h"
#include "nn/kv_cache.h"

using namespace attnlens;
using namespace attnlens::nn;
using testutil::JsonFixture;

namespace {

constexpr double kTol = 1e-4;        // outputs (the tolerances of tests/cpp/test_nn_torch.cpp)
constexpr double kWeightTol = 1e-5;  // attention weights

std::vector<float> randn(size_t n, uint32_t seed, float scale = 1.f) {
  std::mt19937 g(seed);
  std::normal_distribution<float> d(0.f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(g);
  return v;
}

// A one-layer q8_0 cache holding m positions of k, v [m][kv_heads·head_dim].
KVCache filled_cache(int kv_heads, int hd, int m, const std::vector<float>& k, const std::vector<float>& v) {
  KVCache c(1, kv_heads, hd, m, KVType::Q8_0, "test");
  c.reserve(m);
  c.store(0, 0, m, k.data(), v.data());
  c.advance(m);
  return c;
}

AttentionInput q8_input(const KVCache& c, const float* q, int q_stride, int n, int m) {
  AttentionInput in;
  in.q = q;
  in.q_stride = q_stride;
  in.kv_stride = c.head_dim();
  in.n = n;
  in.m = m;
  in.kv_head_stride = c.head_stride();
  in.k8 = c.key_q8(0);
  in.v8 = c.value_q8(0);
  in.kd = c.key_scales(0);
  in.vd = c.value_scales(0);
  in.scale_head_stride = c.scale_head_stride();
  in.scale_stride = size_t(c.allocated());
  return in;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_CASE("q8_0 KV cache: ggml's q8_0 bytes; attention equals float64 attention on the dequantized cache", "[nn][kvq8]") {
  for (const char* name : {"kv_q8_gqa", "kv_q8_prefill"}) {
    INFO(name);
    JsonFixture f(testutil::fixture_path(std::string("nn/") + name + ".json"));
    const auto& c = f.config();
    const int H = c.at("heads"), G = c.at("kv_heads"), hd = c.at("head_dim"), m = c.at("m"), n = c.at("n");
    const int nb = hd / 32;
    const std::vector<float> q = f.get("q"), k = f.get("k"), v = f.get("v");
    KVCache cache = filled_cache(G, hd, m, k, v);
    CHECK(cache.bytes() == size_t(2) * m * G * nb * 34);
    // The stored bytes: int8 values and f16 scales exactly as the fixture's q8_0.
    const std::vector<float> kq = f.get("k_q"), kd = f.get("k_d"), vq = f.get("v_q"), vd = f.get("v_d");
    size_t bad = 0;
    for (int p = 0; p < m; ++p)
      for (int g = 0; g < G; ++g) {
        for (int i = 0; i < hd; ++i) {
          const size_t at = g * cache.head_stride() + size_t(p) * hd + i, want = size_t(p) * G * hd + g * hd + i;
          bad += cache.key_q8(0)[at] != int8_t(kq[want]);
          bad += cache.value_q8(0)[at] != int8_t(vq[want]);
        }
        for (int b = 0; b < nb; ++b) {
          const size_t at = g * cache.scale_head_stride() + size_t(b) * cache.allocated() + p, want = size_t(p) * G * nb + g * nb + b;
          bad += f16_to_f32(cache.key_scales(0)[at]) != kd[want];
          bad += f16_to_f32(cache.value_scales(0)[at]) != vd[want];
        }
      }
    CHECK(bad == 0);

    AttentionMask mask;
    mask.causal = true;
    mask.q_pos0 = m - n;
    const std::vector<float> want_w = f.get("weights"), want_o = f.get("out");
    for (int threads : {1, 2}) {
      INFO(threads << " threads");
      parallel::reserve(2);
      parallel::Threads use(threads);
      std::vector<float> w(size_t(H) * n * m, -1.f), o(size_t(n) * H * hd);
      scaled_dot_product_attention(q8_input(cache, q.data(), H * hd, n, m), {H, G, hd}, mask, {o.data(), H * hd, w.data()});
      double dw = 0, dout = 0, scale = 0;
      for (size_t i = 0; i < w.size(); ++i) dw = std::max(dw, std::fabs(double(w[i]) - want_w[i]));
      for (size_t i = 0; i < o.size(); ++i) {
        dout = std::max(dout, std::fabs(double(o[i]) - want_o[i]));
        scale = std::max(scale, std::fabs(double(want_o[i])));
      }
      INFO("max |Δweight| " << dw << ", max |Δout| " << dout << " (|out| ≤ " << scale << ")");
      CHECK(dw <= kWeightTol);
      CHECK(dout <= kTol);
    }
  }
}

TEST_CASE("q8_0 attention kernels: the vector code gives the bits of the scalar twins", "[nn][kvq8][kernels]") {
  for (int hd : {32, 64, 128}) {
    for (int count : {1, 2, 3, 4, 5, 7, 8, 31, 64, 255, 256, 257, 300, 600}) {
      INFO("head_dim " << hd << ", " << count << " keys");
      const auto k = randn(size_t(count) * hd, 11 + count, 1.3f), v = randn(size_t(count) * hd, 12 + count, 0.7f);
      KVCache c = filled_cache(1, hd, count, k, v);
      const kernels::Q8Rows kr{c.key_q8(0), c.key_scales(0), size_t(c.allocated())};
      const kernels::Q8Rows vr{c.value_q8(0), c.value_scales(0), size_t(c.allocated())};
      const auto q = randn(size_t(hd), 13 + count, 2.f);
      std::vector<float> s1(static_cast<size_t>(count)), s2(static_cast<size_t>(count));
      kernels::attention_scores_q8(q.data(), kr, hd, count, 0.125f, s1.data());
      kernels::ref::attention_scores_q8(q.data(), kr, hd, count, 0.125f, s2.data());
      CHECK(same_bits(s1, s2));
      kernels::softmax(s1.data(), count);
      for (int j = 0; j < count; j += 5) s1[size_t(j)] = 0.f;  // masked keys
      std::vector<float> o1(static_cast<size_t>(hd)), o2(static_cast<size_t>(hd));
      kernels::attention_values_q8(s1.data(), vr, hd, count, o1.data());
      kernels::ref::attention_values_q8(s1.data(), vr, hd, count, o2.data());
      CHECK(same_bits(o1, o2));
      // and near the weighted sum of the dequantized values in double (f32 rounding only)
      double err = 0, mag = 0;
      for (int d = 0; d < hd; ++d) {
        double e = 0;
        for (int j = 0; j < count; ++j)
          e += double(s1[size_t(j)]) * c.value_q8(0)[size_t(j) * hd + d] *
               f16_to_f32(c.value_scales(0)[size_t(d / 32) * c.allocated() + j]);
        err = std::max(err, std::fabs(e - o1[size_t(d)]));
        mag = std::max(mag, std::fabs(e));
      }
      CHECK(err <= 1e-5 * std::max(mag, 1e-3));
    }
  }
}

TEST_CASE("q8_0 KV cache: every query of a prefill gets the bits of the same query decoded alone", "[nn][kvq8]") {
  const int H = 4, G = 2, hd = 64, m = 70;
  const auto k = randn(size_t(m) * G * hd, 21), v = randn(size_t(m) * G * hd, 22), q = randn(size_t(m) * H * hd, 23);
  KVCache cache = filled_cache(G, hd, m, k, v);
  AttentionMask mask;
  mask.causal = true;
  std::vector<float> w(size_t(H) * m * m), o(size_t(m) * H * hd);
  scaled_dot_product_attention(q8_input(cache, q.data(), H * hd, m, m), {H, G, hd}, mask, {o.data(), H * hd, w.data()});
  size_t differ = 0;
  for (int i = 0; i < m; ++i) {  // query i at position i, against keys 0..i: what decode step i computes
    AttentionMask one;
    one.causal = true;
    one.q_pos0 = i;
    std::vector<float> wi(size_t(H) * (i + 1)), oi(size_t(H) * hd);
    scaled_dot_product_attention(q8_input(cache, q.data() + size_t(i) * H * hd, H * hd, 1, i + 1), {H, G, hd}, one,
                                 {oi.data(), H * hd, wi.data()});
    differ += std::memcmp(oi.data(), o.data() + size_t(i) * H * hd, oi.size() * sizeof(float)) != 0;
    for (int h = 0; h < H; ++h)
      differ += std::memcmp(wi.data() + size_t(h) * (i + 1), w.data() + (size_t(h) * m + i) * m, size_t(i + 1) * sizeof(float)) != 0;
  }
  CHECK(differ == 0);
}

TEST_CASE("q8_0 KV cache: sizes, growth, truncate, copy; head sizes it cannot hold", "[nn][kvq8]") {
  KVCache c(3, 2, 64, 1000, KVType::Q8_0, "test-model");
  CHECK(c.type() == KVType::Q8_0);
  CHECK(c.row_bytes() == 2 * 2 * 34);
  CHECK(c.capacity_bytes() == uint64_t(2) * 3 * 1000 * 2 * 2 * 34);
  CHECK(c.bytes() == 0);
  const int kv = c.kv_dim();
  auto row = [&](int layer, int pos, float sign) {
    std::vector<float> r(static_cast<size_t>(kv));
    for (int i = 0; i < kv; ++i) r[size_t(i)] = sign * std::sin(0.37f * float(layer * 1000 + pos * 7 + i)) * float(1 + pos % 5);
    return r;
  };
  for (int pos = 0; pos < 300; ++pos) {  // grows 64 → 128 → 256 → 512 while filling
    c.reserve(1);
    for (int l = 0; l < 3; ++l) c.store(l, pos, 1, row(l, pos, 1.f).data(), row(l, pos, -1.f).data());
    c.advance(1);
  }
  CHECK(c.allocated() == 512);
  CHECK(c.bytes() == size_t(2) * 3 * 512 * 2 * 2 * 34);
  // Every position still holds its own quantization after the moves.
  auto check_rows = [&](const KVCache& cache, int positions) {
    size_t bad = 0;
    for (int l = 0; l < 3; ++l)
      for (int pos = 0; pos < positions; ++pos) {
        const auto k = row(l, pos, 1.f), v = row(l, pos, -1.f);
        for (int h = 0; h < 2; ++h) {
          int8_t qk[64], qv[64];
          uint16_t dk[2], dv[2];
          kernels::quantize_kv_q8_0(k.data() + h * 64, 64, qk, dk, 1);
          kernels::quantize_kv_q8_0(v.data() + h * 64, 64, qv, dv, 1);
          bad += std::memcmp(cache.key_q8(l) + h * cache.head_stride() + size_t(pos) * 64, qk, 64) != 0;
          bad += std::memcmp(cache.value_q8(l) + h * cache.head_stride() + size_t(pos) * 64, qv, 64) != 0;
          for (int b = 0; b < 2; ++b) {
            const size_t at = h * cache.scale_head_stride() + size_t(b) * cache.allocated() + pos;
            bad += cache.key_scales(l)[at] != dk[b];
            bad += cache.value_scales(l)[at] != dv[b];
          }
        }
      }
    return bad;
  };
  CHECK(check_rows(c, 300) == 0);
  KVCache copy(3, 2, 64, 1000, KVType::Q8_0);  // beam search: a beam continuing another's sequence
  copy.copy_from(c);
  CHECK(copy.length() == 300);
  CHECK(check_rows(copy, 300) == 0);
  c.truncate(100);
  CHECK(c.length() == 100);
  copy.copy_from(c);
  CHECK(copy.length() == 100);
  CHECK(check_rows(copy, 100) == 0);
  KVCache f32(3, 2, 64, 1000);
  CHECK_THROWS_WITH(f32.copy_from(c), Catch::Contains("q8_0") && Catch::Contains("f32"));
  // head_dim must be whole blocks of 32: an error naming the model and its head_dim.
  CHECK_THROWS_WITH(KVCache(2, 6, 48, 64, KVType::Q8_0, "stories15M"),
                    Catch::Contains("stories15M") && Catch::Contains("head_dim 48") && Catch::Contains("multiple of 32"));
  CHECK_NOTHROW(KVCache(2, 6, 48, 64));  // the f32 cache takes any head size
  CHECK(parse_kv_type("q8_0") == KVType::Q8_0);
  CHECK(parse_kv_type("f32") == KVType::F32);
  CHECK_THROWS_WITH(parse_kv_type("q4_0"), Catch::Contains("kvCache") && Catch::Contains("q4_0"));
}
