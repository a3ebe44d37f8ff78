// Every decoder-only architecture, from GGUF and from its Hugging Face folder, against two independent
// references (tests/fixtures/archs/make_arch_fixtures.py):
//   * llama.cpp's logits of the same GGUF (teacher-forced, f32 KV cache): within 1e-4 of the logit
//     range — plus, for the GELU architectures (Gemma, GPT-NeoX), the measured effect of llama.cpp's
//     f16 GELU table, which its f32 models use (the fixture's PyTorch run with that table meets
//     llama.cpp to ~1e-5, so the rest of the computation agrees as closely as for the others);
//     top-1 identical wherever llama.cpp's top-2 margin exceeds that tolerance;
//   * a PyTorch forward with Hugging Face's conventions (float64): logits within 1e-4 of the range and
//     every attention weight of every layer and head within 2e-5 — sliding-window rows exactly 0
//     outside their band.
// The HF folder (rotate-half Q/K, split or fused tensors, (1 + w) Gemma norms, per-head NeoX qkv,
// tied embeddings) must give the GGUF's logits. Each model also runs token by token and in two chunks
// through the KV cache. Then bad input: unknown architectures, tensors or keys nobody applies, config
// fields the engine does not implement.
#include <cmath>
#include <cstring>
#include <functional>
#include <set>

#include "test_runtime_parity.h"

using namespace attnlens;
using parity::bytes_file;
using parity::FilePtr;
using parity::Worst;
using runtime::load_model;

namespace {

std::string arch_path(const std::string& rel) { return testutil::fixture_path("archs/" + rel); }

FilePtr arch_file(const std::string& rel) {
  auto f = std::make_shared<runtime::File>();
  f->name = rel.substr(rel.find_last_of('/') + 1);
  f->bytes = testutil::read_bytes(arch_path(rel));
  return f;
}

std::vector<FilePtr> hf_files(const std::string& name, const std::string& config_text = "") {
  return {config_text.empty() ? arch_file(name + "/config.json") : parity::text_file("config.json", config_text),
          arch_file(name + "/model.safetensors")};
}

// The references of one architecture.
struct ArchRef {
  explicit ArchRef(const std::string& name) : name(name) {
    j = nlohmann::json::parse(testutil::read_text(arch_path(name + ".ref.json")));
    ids = j.at("ids").get<std::vector<int>>();
    T = j.at("T");
    V = j.at("vocab");
    L = j.at("layers");
    H = j.at("heads");
    const auto torch = testutil::read_f32(arch_path(name + ".torch.f32"));
    const size_t nl = size_t(T) * V, na = size_t(L) * H * T * T;
    REQUIRE(torch.size() == (j.at("torch").contains("short_rope") ? 2 : 1) * (nl + na));
    torch_logits.assign(torch.begin(), torch.begin() + long(nl));
    torch_attention.assign(torch.begin() + long(nl), torch.begin() + long(nl + na));
    if (j.at("torch").contains("short_rope")) {
      short_logits.assign(torch.begin() + long(nl + na), torch.begin() + long(2 * nl + na));
      short_attention.assign(torch.begin() + long(2 * nl + na), torch.end());
    }
    const auto g = testutil::read_f32(arch_path(name + ".torch_gguf.f32"));
    REQUIRE(g.size() == 2 * nl);
    gguf_logits.assign(g.begin(), g.begin() + long(nl));
    gguf_ggml_gelu_logits.assign(g.begin() + long(nl), g.end());
    llamacpp = testutil::read_f32(arch_path(name + ".llamacpp.f32"));
    REQUIRE(llamacpp.size() == nl);
    range = j.at("logit_range");
    tolerance = j.at("tolerance");
  }
  std::string name;
  nlohmann::json j;
  std::vector<int> ids;
  int T, V, L, H;
  std::vector<float> torch_logits, torch_attention, short_logits, short_attention, gguf_logits,
      gguf_ggml_gelu_logits, llamacpp;
  double range, tolerance;
};

// One model's logits [T][V] and attention [L][H][T][T] from a prefill of every id.
struct Run {
  std::vector<float> logits, attention;
};

Run prefill(const models::Model& m, const ArchRef& r, int capacity) {
  auto s = m.new_session(capacity);
  nn::AttentionRecorder rec;
  s->recorder = &rec;
  const float* lg = m.decode(*s, r.ids.data(), r.T, /*all_logits=*/true);
  Run out;
  out.logits.assign(lg, lg + size_t(r.T) * r.V);
  out.attention.assign(size_t(r.L) * r.H * r.T * r.T, 0.f);
  for (int l = 0; l < r.L; ++l) {
    const nn::AttentionRecord* a = rec.find(nn::AttentionKind::Self, l);
    REQUIRE(a);
    REQUIRE((a->n_heads == r.H && a->n_queries == r.T && a->n_keys == r.T && a->q_pos0 == 0));
    std::copy(a->weights.begin(), a->weights.end(), out.attention.begin() + long(size_t(l) * r.H * r.T * r.T));
  }
  return out;
}

// The same tokens one at a time, then in two chunks: logits and attention rows equal the prefill's.
void check_incremental(const models::Model& m, const ArchRef& r, const Run& full, int capacity) {
  Worst wl, wa;
  auto s = m.new_session(capacity);
  nn::AttentionRecorder rec;
  s->recorder = &rec;
  for (int t = 0; t < r.T; ++t) {
    const float* lg = m.decode(*s, &r.ids[size_t(t)], 1);
    for (int v = 0; v < r.V; ++v) wl.add(lg[v], full.logits[size_t(t) * r.V + v], 1e-5 * r.range);
    for (int l = 0; l < r.L; ++l) {
      const nn::AttentionRecord* a = rec.find(nn::AttentionKind::Self, l);
      for (int h = 0; h < r.H; ++h)
        for (int j = 0; j <= t; ++j)
          wa.add(a->row(h, 0)[j], full.attention[((size_t(l) * r.H + h) * r.T + t) * r.T + j], 1e-6);
    }
  }
  auto c = m.new_session(capacity);
  const int k = r.T / 2;
  m.decode(*c, r.ids.data(), k, true);
  const float* lg = m.decode(*c, r.ids.data() + k, r.T - k, true);
  for (size_t i = 0; i < size_t(r.T - k) * r.V; ++i) wl.add(lg[i], full.logits[size_t(k) * r.V + i], 1e-5 * r.range);
  INFO(r.name << " token by token and chunked vs prefill: logits " << wl.str() << "; attention " << wa.str());
  CHECK(wl.failures == 0);
  CHECK(wa.failures == 0);
}

Worst compare(const std::vector<float>& got, const std::vector<float>& want, double tol, size_t n = 0) {
  Worst w;
  REQUIRE(got.size() >= (n ? n : want.size()));
  for (size_t i = 0; i < (n ? n : want.size()); ++i) w.add(got[i], want[i], tol);
  return w;
}

// Attention rows of a sliding-window layer: exactly 0 outside the band (and above the diagonal).
void check_band(const Run& run, const ArchRef& r, int layer, int window) {
  size_t bad = 0;
  for (int h = 0; h < r.H; ++h)
    for (int t = 0; t < r.T; ++t)
      for (int j = 0; j < r.T; ++j) {
        const float x = run.attention[((size_t(layer) * r.H + h) * r.T + t) * r.T + j];
        const bool seen = j <= t && (window == 0 || j > t - window);
        if (seen ? !(x > 0.f) : x != 0.f) ++bad;
      }
  INFO(r.name << " layer " << layer << " window " << window);
  CHECK(bad == 0);
}

// Top-1 of every row equal to llama.cpp's wherever its top-2 margin exceeds the tolerance.
void check_top1(const std::vector<float>& got, const ArchRef& r) {
  int compared = 0, differ = 0;
  for (int t = 0; t < r.T; ++t) {
    const float* w = r.llamacpp.data() + size_t(t) * r.V;
    const float* g = got.data() + size_t(t) * r.V;
    int a = 0, b = -1, ga = 0;
    for (int v = 1; v < r.V; ++v) {
      if (w[v] > w[a]) {
        b = a;
        a = v;
      } else if (b < 0 || w[v] > w[b]) {
        b = v;
      }
      if (g[v] > g[ga]) ga = v;
    }
    if (w[a] - w[b] <= r.tolerance) continue;
    ++compared;
    if (ga != a) ++differ;
  }
  INFO(r.name << ": top-1 compared on " << compared << " of " << r.T << " rows");
  CHECK(compared > r.T / 2);
  CHECK(differ == 0);
}

struct ArchCase {
  const char* name;
  const char* architecture;       // model.info().architecture from the GGUF
  const char* hf_architecture;    // … and from the HF folder
  bool gguf_matches_hf_semantics;  // else the HF folder differs (Mistral's window, NeoX's exact GELU)
  std::vector<std::pair<int, int>> windows;  // (layer, window) of sliding-window layers (HF form)
};

const ArchCase kCases[] = {
    {"llama3", "llama", "llama", true, {}},
    {"mistral", "llama", "mistral", false, {{0, 8}, {1, 8}}},
    {"qwen2", "qwen2", "qwen2", true, {}},
    {"qwen3", "qwen3", "qwen3", true, {}},
    {"gemma", "gemma", "gemma", true, {}},
    {"gemma2", "gemma2", "gemma2", true, {{0, 8}, {1, 0}}},
    {"gemma3", "gemma3", "gemma3", true, {{0, 8}, {1, 8}, {2, 0}, {3, 8}}},
    {"phi3", "phi3", "phi3", true, {}},
    {"gptneox", "gptneox", "gptneox", false, {}},
};

constexpr int kLlamaCppContext = 1024;  // llamacpp_logits.mjs's context: Phi-3 takes its long RoPE factors

}  // namespace

TEST_CASE("architectures from GGUF match llama.cpp and PyTorch", "[runtime][archs][gguf]") {
  for (const ArchCase& c : kCases) {
    ArchRef r(c.name);
    INFO(c.name);
    auto m = load_model({arch_file(std::string(c.name) + ".gguf")});
    const models::ModelInfo& info = m->model().info();
    CHECK(m->format() == "gguf");
    CHECK(info.architecture == c.architecture);
    CHECK((info.n_layers == r.L && info.n_heads == r.H && info.vocab_size == r.V));
    const Run run = prefill(m->model(), r, kLlamaCppContext);
    const Worst vs_llamacpp = compare(run.logits, r.llamacpp, r.tolerance);
    const Worst vs_torch = compare(run.logits, r.gguf_logits, 1e-4 * r.range);
    INFO("vs llama.cpp: " << vs_llamacpp.str() << " (tolerance " << r.tolerance << " = 1e-4 × range " << r.range
                          << " + f16 GELU effect " << r.j.at("ggml_gelu_effect").get<double>() << "); vs PyTorch: "
                          << vs_torch.str());
    CHECK(vs_llamacpp.failures == 0);
    CHECK(vs_torch.failures == 0);
    check_top1(run.logits, r);
    if (c.gguf_matches_hf_semantics) {
      const Worst att = compare(run.attention, r.torch_attention, 2e-5);
      INFO("attention vs PyTorch: " << att.str());
      CHECK(att.failures == 0);
    }
    check_incremental(m->model(), r, run, kLlamaCppContext);
  }
}

TEST_CASE("GELU architectures with llama.cpp's own f16-table GELU meet llama.cpp within 1e-4 of the range",
          "[runtime][archs][gguf]") {
  // The only difference left on Gemma / GPT-NeoX is llama.cpp's GELU: with it (llamacpp_gelu, a parity
  // option), the engine meets llama.cpp as closely as on the other architectures.
  for (const char* name : {"gemma", "gemma2", "gemma3", "gptneox"}) {
    ArchRef r(name);
    INFO(name);
    runtime::LoadOptions opt;
    opt.llamacpp_gelu = true;
    auto m = load_model({arch_file(std::string(name) + ".gguf")}, opt);
    const Run run = prefill(m->model(), r, kLlamaCppContext);
    const Worst vs_llamacpp = compare(run.logits, r.llamacpp, 1e-4 * r.range);
    const Worst vs_torch = compare(run.logits, r.gguf_ggml_gelu_logits, 1e-4 * r.range);
    INFO("vs llama.cpp: " << vs_llamacpp.str() << "; vs PyTorch with the same GELU: " << vs_torch.str());
    CHECK(vs_llamacpp.failures == 0);
    CHECK(vs_torch.failures == 0);
  }
}

TEST_CASE("architectures from Hugging Face folders match PyTorch and the GGUF of the same weights",
          "[runtime][archs][hf]") {
  for (const ArchCase& c : kCases) {
    ArchRef r(c.name);
    INFO(c.name);
    auto m = load_model(hf_files(c.name));
    CHECK(m->format() == "safetensors");
    CHECK(m->model().info().architecture == c.hf_architecture);
    const Run run = prefill(m->model(), r, kLlamaCppContext);
    const Worst logits = compare(run.logits, r.torch_logits, 1e-4 * r.range);
    const Worst att = compare(run.attention, r.torch_attention, 2e-5);
    INFO("vs PyTorch: logits " << logits.str() << "; attention " << att.str());
    CHECK(logits.failures == 0);
    CHECK(att.failures == 0);
    for (auto [layer, window] : c.windows) check_band(run, r, layer, window);
    check_incremental(m->model(), r, run, kLlamaCppContext);
    // The GGUF of the same weights: the same logits (Mistral's window only bites from position 8;
    // GPT-NeoX's HF GELU is the exact one, llama.cpp's the tanh form).
    auto g = load_model({arch_file(std::string(c.name) + ".gguf")});
    const Run grun = prefill(g->model(), r, kLlamaCppContext);
    if (c.gguf_matches_hf_semantics) {
      const Worst same = compare(run.logits, grun.logits, 1e-5 * r.range);
      INFO("HF vs GGUF: " << same.str());
      CHECK(same.failures == 0);
    } else if (std::string(c.name) == "mistral") {
      const Worst same = compare(run.logits, grun.logits, 1e-5 * r.range, size_t(8) * r.V);
      INFO("HF vs GGUF over the first 8 positions: " << same.str());
      CHECK(same.failures == 0);
      CHECK(compare(run.logits, grun.logits, 1e-2).failures > 0);  // and the window does change the rest
    }
  }
}

TEST_CASE("Phi-3 LongRoPE: short factors for sessions within the original context, long ones beyond",
          "[runtime][archs][phi3]") {
  ArchRef r("phi3");
  const int original = r.j.at("original_context");
  for (bool gguf : {false, true}) {
    INFO((gguf ? "GGUF" : "HF folder"));
    auto m = gguf ? load_model({arch_file("phi3.gguf")}) : load_model(hf_files("phi3"));
    const Run short_run = prefill(m->model(), r, original);
    const Run long_run = prefill(m->model(), r, original + 1);
    const Worst s = compare(short_run.logits, r.short_logits, 1e-4 * r.range);
    const Worst sa = compare(short_run.attention, r.short_attention, 2e-5);
    const Worst l = compare(long_run.logits, r.torch_logits, 1e-4 * r.range);
    INFO("short: " << s.str() << "; attention " << sa.str() << "; long: " << l.str());
    CHECK(s.failures == 0);
    CHECK(sa.failures == 0);
    CHECK(l.failures == 0);
    CHECK(compare(short_run.logits, long_run.logits, 1e-2).failures > 0);  // the factors matter here
  }
}

TEST_CASE("Gemma 2/3: query_pre_attn_scalar other than head_dim scales the scores by its inverse root",
          "[runtime][archs][hf]") {
  for (const char* name : {"gemma2", "gemma3"}) {
    INFO(name);
    ArchRef r(name);
    const std::string config = testutil::read_text(arch_path(std::string(name) + "/config.json"));
    auto j = nlohmann::json::parse(config);
    j["query_pre_attn_scalar"] = 24;
    auto m = load_model(hf_files(name, j.dump()));
    const Run run = prefill(m->model(), r, kLlamaCppContext);
    const auto want = testutil::read_f32(arch_path(std::string(name) + ".torch_qpas24.f32"));
    const Worst w = compare(run.logits, want, 1e-4 * r.range);
    INFO("vs PyTorch: " << w.str());
    CHECK(w.failures == 0);
    CHECK(compare(run.logits, r.torch_logits, 1e-2).failures > 0);  // and it does change the logits
  }
}

namespace {

// A safetensors file split in two shards (tensors alternately) with its index: (shard 1, shard 2, index).
struct Shards {
  std::vector<uint8_t> a, b;
  std::string index;
};
Shards split_safetensors(const std::vector<uint8_t>& st) {
  uint64_t n;
  std::memcpy(&n, st.data(), 8);
  const auto header = nlohmann::json::parse(std::string(st.begin() + 8, st.begin() + 8 + long(n)));
  const uint8_t* data = st.data() + 8 + n;
  nlohmann::json ha = nlohmann::json::object(), hb = nlohmann::json::object();
  std::vector<uint8_t> da, db;
  nlohmann::json index = {{"metadata", nlohmann::json::object()}, {"weight_map", nlohmann::json::object()}};
  int i = 0;
  for (const auto& [name, v] : header.items()) {
    if (name == "__metadata__") continue;
    const bool first = i++ % 2 == 0;
    auto& h = first ? ha : hb;
    auto& d = first ? da : db;
    const uint64_t begin = v.at("data_offsets")[0], end = v.at("data_offsets")[1];
    h[name] = {{"dtype", v.at("dtype")}, {"shape", v.at("shape")}, {"data_offsets", {d.size(), d.size() + (end - begin)}}};
    d.insert(d.end(), data + begin, data + end);
    index["weight_map"][name] = first ? "model-00001-of-00002.safetensors" : "model-00002-of-00002.safetensors";
  }
  auto pack = [](const nlohmann::json& h, const std::vector<uint8_t>& d) {
    const std::string text = h.dump();
    std::vector<uint8_t> out(8 + text.size());
    const uint64_t len = text.size();
    std::memcpy(out.data(), &len, 8);
    std::memcpy(out.data() + 8, text.data(), text.size());
    out.insert(out.end(), d.begin(), d.end());
    return out;
  };
  return {pack(ha, da), pack(hb, db), index.dump()};
}

}  // namespace

TEST_CASE("architectures from sharded Hugging Face checkpoints equal the single-file ones", "[runtime][archs][hf]") {
  for (const char* name : {"gemma3", "phi3", "gptneox"}) {
    INFO(name);
    ArchRef r(name);
    auto files = hf_files(name);
    const Shards s = split_safetensors(files[1]->bytes);
    auto sharded = load_model({files[0], bytes_file("model-00001-of-00002.safetensors", s.a),
                               bytes_file("model-00002-of-00002.safetensors", s.b),
                               parity::text_file("model.safetensors.index.json", s.index)});
    auto single = load_model(files);
    const Run a = prefill(sharded->model(), r, kLlamaCppContext), b = prefill(single->model(), r, kLlamaCppContext);
    CHECK(compare(a.logits, b.logits, 0.0).failures == 0);
    CHECK(compare(a.attention, b.attention, 0.0).failures == 0);
  }
}

// ---- bad input --------------------------------------------------------------------------------------------
namespace {

std::string config_with(const std::string& name, const std::function<void(nlohmann::json&)>& edit) {
  auto j = nlohmann::json::parse(testutil::read_text(arch_path(name + "/config.json")));
  edit(j);
  return j.dump();
}

}  // namespace

TEST_CASE("architectures: unknown ones are named with the supported list", "[runtime][archs][errors]") {
  CHECK_ERROR(load_model(hf_files("qwen2", config_with("qwen2", [](auto& j) {
                j["architectures"] = {"MambaForCausalLM"};
              }))),
              "config.json: unsupported architecture \"MambaForCausalLM\" (supported: LlamaForCausalLM, "
              "MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, GemmaForCausalLM");
  const auto g = arch_file("qwen3.gguf");
  auto bytes = parity::patched(g->bytes, "qwen3", "mamba", parity::find_bytes(g->bytes, "general.architecture"));
  CHECK_ERROR(load_model({bytes_file("qwen3.gguf", bytes)}),
              "qwen3.gguf: unsupported architecture \"mamba\" (supported in GGUF: llama, qwen2, qwen3, gemma, gemma2, "
              "gemma3, phi3, gptneox, gpt2, t5, bert)");
}

TEST_CASE("architectures: anything in a file that is not applied is an error", "[runtime][archs][errors]") {
  SECTION("a GGUF tensor no part of the architecture reads") {
    // Llama 3's rope_freqs renamed: it would be skipped, and the RoPE silently wrong.
    const auto g = arch_file("llama3.gguf");
    auto bytes = parity::patched(g->bytes, "rope_freqs.weight", "rope_freqX.weight");
    CHECK_ERROR(load_model({bytes_file("llama3.gguf", bytes)}),
                "llama3.gguf: 1 tensor is in the file but not used by the llama architecture: rope_freqX.weight");
    const auto q = arch_file("qwen3.gguf");
    CHECK_ERROR(load_model({bytes_file("qwen3.gguf", parity::patched(q->bytes, "blk.1.attn_q_norm", "blk.1.attn_x_norm"))}),
                "qwen3.gguf: missing tensor blk.1.attn_q_norm.weight");
  }
  SECTION("a GGUF key no reader consumed") {
    const auto g = arch_file("gemma2.gguf");
    auto bytes = parity::patched(g->bytes, "gemma2.final_logit_softcapping", "gemma2.final_logit_softcappinX");
    CHECK_ERROR(load_model({bytes_file("gemma2.gguf", bytes)}),
                "gemma2.gguf: GGUF key \"gemma2.final_logit_softcappinX\" = 5.0 is not supported by the gemma2 "
                "architecture here (the engine would ignore it)");
    const auto l = arch_file("llama3.gguf");
    CHECK_ERROR(load_model({bytes_file("llama3.gguf", parity::patched(l->bytes, "llama.rope.freq_base", "llama.rope.freq_bass"))}),
                "GGUF key \"llama.rope.freq_bass\"");
  }
  SECTION("a HF tensor no part of the architecture reads") {
    auto files = hf_files("qwen3");
    auto bytes = files[1]->bytes;
    bytes = parity::patched(bytes, "model.layers.1.self_attn.k_norm", "model.layers.1.self_attn.k_norX");
    CHECK_ERROR(load_model({files[0], bytes_file("model.safetensors", bytes)}),
                "missing tensor model.layers.1.self_attn.k_norm.weight");
  }
  SECTION("config fields the engine does not implement") {
    auto rope = [](const char* type) {
      return [type](nlohmann::json& j) { j["rope_scaling"] = {{"rope_type", type}, {"factor", 4.0}}; };
    };
    CHECK_ERROR(load_model(hf_files("qwen2", config_with("qwen2", rope("yarn")))),
                "config.json: rope_scaling.rope_type \"yarn\" is not supported (supported: default, linear, llama3)");
    CHECK_ERROR(load_model(hf_files("qwen2", config_with("qwen2", rope("dynamic")))), "\"dynamic\" is not supported");
    CHECK_ERROR(load_model(hf_files("llama3", config_with("llama3", [](auto& j) {
                  j["rope_scaling"]["beta_fast"] = 32;
                }))),
                "config.json: rope_scaling.beta_fast is not supported for RoPE type \"llama3\"");
    CHECK_ERROR(load_model(hf_files("qwen3", config_with("qwen3", [](auto& j) { j["hidden_act"] = "relu2"; }))),
                "config.json: \"hidden_act\": unsupported activation function \"relu2\"");
    CHECK_ERROR(load_model(hf_files("gemma2", config_with("gemma2", [](auto& j) { j["hidden_activation"] = "silu"; }))),
                "config.json: \"hidden_activation\" = \"silu\" is not supported for this architecture (supported: gelu_tanh)");
    CHECK_ERROR(load_model(hf_files("phi3", config_with("phi3", [](auto& j) { j["attention_bias"] = true; }))),
                "config.json: \"attention_bias\" = true is not supported (Phi-3 has no attention biases)");
    CHECK_ERROR(load_model(hf_files("gemma3", config_with("gemma3", [](auto& j) {
                  j["layer_types"] = std::vector<std::string>(4, "chunked_attention");
                }))),
                "layer_types entry \"chunked_attention\" is not supported");
    CHECK_ERROR(load_model(hf_files("phi3", config_with("phi3", [](auto& j) {
                  j["rope_scaling"]["long_factor"].erase(0);
                }))),
                "config.json: \"rope_scaling.long_factor\" has 1 values, expected 2");
  }
}

TEST_CASE("architectures: an integer buffer the safetensors reader set aside is an error, not skipped",
          "[runtime][archs][errors]") {
  // qwen2's weights as shard 1 of 2; shard 2 holds one I64 buffer no decoder applies.
  auto files = hf_files("qwen2");
  const auto& st = files[1]->bytes;
  uint64_t n;
  std::memcpy(&n, st.data(), 8);
  const auto header = nlohmann::json::parse(std::string(st.begin() + 8, st.begin() + 8 + long(n)));
  nlohmann::json index = {{"metadata", nlohmann::json::object()}, {"weight_map", nlohmann::json::object()}};
  for (const auto& [name, v] : header.items())
    if (name != "__metadata__") index["weight_map"][name] = "model-00001-of-00002.safetensors";
  index["weight_map"]["model.position_ids"] = "model-00002-of-00002.safetensors";
  const std::string h2 = R"({"model.position_ids":{"dtype":"I64","shape":[2],"data_offsets":[0,16]}})";
  std::vector<uint8_t> shard2(8 + h2.size() + 16, 0);
  const uint64_t len = h2.size();
  std::memcpy(shard2.data(), &len, 8);
  std::memcpy(shard2.data() + 8, h2.data(), h2.size());
  CHECK_ERROR(load_model({files[0], bytes_file("model-00001-of-00002.safetensors", st),
                          bytes_file("model-00002-of-00002.safetensors", shard2),
                          parity::text_file("model.safetensors.index.json", index.dump())}),
              "config.json: 1 tensor is in the file but not used by the qwen2 architecture: model.position_ids");
}
