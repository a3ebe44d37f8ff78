// Shared by test_runtime_parity.cpp and test_runtime_parity_gguf.cpp: whole models loaded through
// runtime::load_model against the PyTorch references in tests/fixtures/models_torch (written by
// tests/fixtures/make_model_fixtures.py; see its docstring for how each reference is computed).
//
// Every decoder is checked three ways against the same reference, logits of every position and
// every post-softmax attention weight of every layer and head:
//   prefill      all tokens in one decode(..., all_logits = true)
//   step         one token at a time through the KV cache
//   chunked      the first half as a prefill, then the second half as a second prefill
#pragma once
#include <algorithm>
#include <cmath>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "fixture_json.h"
#include "runtime/loader.h"
#include "test_util.h"

namespace parity {

using attnlens::runtime::File;
using attnlens::runtime::FilePtr;

inline std::string path(const std::string& rel) { return testutil::fixture_path("models_torch/" + rel); }

// A fixture file, named as on disk (the last path component) unless `name` says otherwise.
inline FilePtr file(const std::string& rel, const std::string& name = "") {
  auto f = std::make_shared<File>();
  f->name = name.empty() ? rel.substr(rel.find_last_of('/') + 1) : name;
  f->bytes = testutil::read_bytes(path(rel));
  return f;
}

inline FilePtr bytes_file(const std::string& name, std::vector<uint8_t> bytes) {
  auto f = std::make_shared<File>();
  f->name = name;
  f->bytes = std::move(bytes);
  return f;
}

inline FilePtr text_file(const std::string& name, const std::string& text) {
  return bytes_file(name, std::vector<uint8_t>(text.begin(), text.end()));
}

// One reference: token ids, the expected model card, and the arrays.
struct Reference {
  explicit Reference(const std::string& rel) : fx(path(rel)) {
    tokens = fx.config().at("tokens").get<std::vector<int>>();
    if (fx.has("logits")) {
      logits = fx.get("logits");
      auto s = fx.shape("logits");
      REQUIRE(s.size() == 2);
      REQUIRE(s[0] == int64_t(tokens.size()));
      vocab = int(s[1]);
    }
    if (fx.has("attention")) {
      attention = fx.get("attention");
      auto s = fx.shape("attention");  // [L, H, T, T]
      REQUIRE(s.size() == 4);
      REQUIRE(s[2] == int64_t(tokens.size()));
      REQUIRE(s[3] == int64_t(tokens.size()));
      layers = int(s[0]);
      heads = int(s[1]);
    }
  }
  int T() const { return int(tokens.size()); }
  const nlohmann::json& card() const { return fx.config().at("card"); }
  // Reference attention weight of (layer, head, query t, key j).
  float attn(const std::vector<float>& a, int l, int h, int t, int j) const {
    return a[((size_t(l) * heads + h) * T() + t) * T() + j];
  }

  testutil::JsonFixture fx;
  std::vector<int> tokens;
  std::vector<float> logits, attention;
  int vocab = 0, layers = 0, heads = 0;
};

// How far a value may be from its reference: `abs`, plus bound[i] when a per-value bound is given
// (the q8_0 case).
struct Tolerance {
  double abs = 0;
  const std::vector<float>* bound = nullptr;
  double at(size_t i) const { return abs + (bound ? double((*bound)[i]) : 0.0); }
};

// Worst comparison of a set of values: the largest difference, and the largest difference over
// what was allowed (> 0 means some value is out of tolerance).
struct Worst {
  double diff = 0, excess = -INFINITY, rms_sum = 0;
  size_t n = 0, failures = 0;
  void add(double got, double want, double tol) {
    const double d = std::isnan(got) ? INFINITY : std::fabs(got - want);
    diff = std::max(diff, d);
    excess = std::max(excess, d - tol);
    rms_sum += d * d;
    ++n;
    if (!(d <= tol)) ++failures;
  }
  double rms() const { return n ? std::sqrt(rms_sum / double(n)) : 0.0; }
  std::string str() const {
    std::ostringstream os;
    os << "max |diff| " << diff << ", rms " << rms() << ", " << failures << " of " << n << " values out of tolerance";
    return os.str();
  }
};

inline void check_card(const attnlens::runtime::LoadedModel& m, const nlohmann::json& want, const std::string& format) {
  const attnlens::models::ModelInfo& i = m.model().info();
  CHECK(m.format() == format);
  CHECK(i.architecture == want.at("architecture").get<std::string>());
  CHECK(i.n_layers == want.at("layers").get<int>());
  CHECK(i.n_heads == want.at("heads").get<int>());
  CHECK(i.n_kv_heads == want.at("kv_heads").get<int>());
  CHECK(i.d_model == want.at("d_model").get<int>());
  CHECK(i.vocab_size == want.at("vocab_size").get<int>());
  CHECK(i.context_length == want.at("context_length").get<int>());
  CHECK(i.n_params == want.at("params").get<int64_t>());
}

// Compares one decode() call's recorded attention (queries q0.., keys 0..keys) with the reference.
inline void compare_attention(const attnlens::nn::AttentionRecorder& rec, const Reference& ref,
                              const std::vector<float>& want, int q0, int nq, Tolerance tol, Worst& w) {
  for (int l = 0; l < ref.layers; ++l) {
    const attnlens::nn::AttentionRecord* r = rec.find(attnlens::nn::AttentionKind::Self, l);
    REQUIRE(r);
    REQUIRE(r->n_heads == ref.heads);
    REQUIRE(r->n_queries == nq);
    REQUIRE(r->n_keys == q0 + nq);
    REQUIRE(r->q_pos0 == q0);
    for (int h = 0; h < ref.heads; ++h)
      for (int i = 0; i < nq; ++i) {
        const int t = q0 + i;
        for (int j = 0; j < r->n_keys; ++j) {
          const size_t idx = ((size_t(l) * ref.heads + h) * ref.T() + t) * ref.T() + j;
          w.add(r->row(h, i)[j], want[idx], tol.at(idx));
        }
      }
  }
}

struct DecoderResult {
  Worst logits, attention;
};

// prefill, step and chunked runs of `model` on ref.tokens against `want_logits` / `want_attention`
// (default: the reference's own). Returns the worst comparisons of each run (0 prefill, 1 step,
// 2 chunked); the caller checks them against its tolerances.
inline std::vector<DecoderResult> run_decoder(const attnlens::models::Model& model, const Reference& ref,
                                              Tolerance tl, Tolerance ta, const std::vector<float>* want_logits = nullptr,
                                              const std::vector<float>* want_attention = nullptr) {
  const std::vector<float>& wl = want_logits ? *want_logits : ref.logits;
  const std::vector<float>& wa = want_attention ? *want_attention : ref.attention;
  const int T = ref.T(), V = ref.vocab;
  REQUIRE(model.info().vocab_size == V);
  std::vector<DecoderResult> out(3);
  {  // prefill
    auto s = model.new_session();
    attnlens::nn::AttentionRecorder rec;
    s->recorder = &rec;
    const float* lg = model.decode(*s, ref.tokens.data(), T, /*all_logits=*/true);
    for (size_t i = 0; i < size_t(T) * V; ++i) out[0].logits.add(lg[i], wl[i], tl.at(i));
    compare_attention(rec, ref, wa, 0, T, ta, out[0].attention);
    CHECK(s->position() == T);
  }
  {  // one token at a time
    auto s = model.new_session();
    attnlens::nn::AttentionRecorder rec;
    s->recorder = &rec;
    for (int t = 0; t < T; ++t) {
      const float* lg = model.decode(*s, &ref.tokens[size_t(t)], 1);
      for (int v = 0; v < V; ++v) out[1].logits.add(lg[v], wl[size_t(t) * V + v], tl.at(size_t(t) * V + v));
      compare_attention(rec, ref, wa, t, 1, ta, out[1].attention);
    }
  }
  {  // two chunks
    const int k = T / 2;
    auto s = model.new_session();
    attnlens::nn::AttentionRecorder rec;
    s->recorder = &rec;
    const float* lg = model.decode(*s, ref.tokens.data(), k, true);
    for (size_t i = 0; i < size_t(k) * V; ++i) out[2].logits.add(lg[i], wl[i], tl.at(i));
    compare_attention(rec, ref, wa, 0, k, ta, out[2].attention);
    lg = model.decode(*s, ref.tokens.data() + k, T - k, true);
    for (size_t i = 0; i < size_t(T - k) * V; ++i) {
      const size_t idx = size_t(k) * V + i;
      out[2].logits.add(lg[i], wl[idx], tl.at(idx));
    }
    compare_attention(rec, ref, wa, k, T - k, ta, out[2].attention);
  }
  return out;
}

// The usual check: every run within 1e-4 on logits and 1e-5 on attention weights.
inline void check_decoder(const attnlens::models::Model& model, const Reference& ref, const std::string& label,
                          double logit_tol = 1e-4, double attn_tol = 1e-5) {
  const char* runs[] = {"prefill", "step", "chunked"};
  auto res = run_decoder(model, ref, {logit_tol}, {attn_tol});
  for (int r = 0; r < 3; ++r) {
    INFO(label << " " << runs[r] << ": logits " << res[size_t(r)].logits.str() << "; attention "
               << res[size_t(r)].attention.str());
    CHECK(res[size_t(r)].logits.failures == 0);
    CHECK(res[size_t(r)].attention.failures == 0);
    CHECK(res[size_t(r)].logits.n == size_t(ref.T()) * ref.vocab);
  }
}

// Bytes of a file with `from` replaced by `to` (same length) at its first occurrence after `after`.
inline std::vector<uint8_t> patched(std::vector<uint8_t> bytes, const std::string& from, const std::string& to,
                                    size_t after = 0) {
  REQUIRE(from.size() == to.size());
  auto it = std::search(bytes.begin() + long(after), bytes.end(), from.begin(), from.end());
  REQUIRE(it != bytes.end());
  std::copy(to.begin(), to.end(), it);
  return bytes;
}

// The message of the attnlens::Error `f` throws; anything else (another exception type, none) is
// returned as a message that no expectation contains.
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const attnlens::Error& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("<not an attnlens::Error: ") + e.what() + ">";
  }
  return "<no exception>";
}
// CHECK that `expr` throws an attnlens::Error whose message contains `text`.
#define CHECK_ERROR(expr, text) CHECK_THAT(parity::error_of([&] { (void)(expr); }), Catch::Contains(text))

inline size_t find_bytes(const std::vector<uint8_t>& bytes, const std::string& s) {
  auto it = std::search(bytes.begin(), bytes.end(), s.begin(), s.end());
  REQUIRE(it != bytes.end());
  return size_t(it - bytes.begin());
}

}  // namespace parity
