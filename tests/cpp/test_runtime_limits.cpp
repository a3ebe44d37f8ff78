// What a file may ask of the engine: sizes checked in 64 bits before allocating (a context of 2^24
// positions, a huge head dimension), the limits on contexts, vocabularies and layers, JSON nesting
// refused at parse time, and errors that name the file and the key instead of the JSON library's
// own words. The files are built here in memory (a tiny Hugging Face Llama), so the cases are exact.
#include <chrono>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "core/json.h"
#include "core/limits.h"
#include "kernels/kernels.h"
#include "runtime/loader.h"
#include "test_util.h"

using namespace attnlens;
using namespace attnlens::runtime;
using Catch::Contains;
using json = nlohmann::json;

namespace {

FilePtr file(const std::string& name, const std::string& content) {
  auto f = std::make_shared<File>();
  f->name = name;
  f->bytes.assign(content.begin(), content.end());
  return f;
}

struct Shape {
  int dim = 16, heads = 2, kv_heads = 2, layers = 2, hidden = 32, vocab = 32, context = 64;
};

// A safetensors file holding f32 tensors {name, shape} filled with small deterministic values.
std::string safetensors(const std::vector<std::pair<std::string, std::vector<int64_t>>>& tensors) {
  json header = json::object();
  std::string data;
  uint32_t state = 12345;
  for (const auto& [name, shape] : tensors) {
    int64_t n = 1;
    for (int64_t d : shape) n *= d;
    const size_t begin = data.size();
    for (int64_t i = 0; i < n; ++i) {
      state = state * 1664525u + 1013904223u;
      const float v = (float(state >> 8) / float(1 << 24) - 0.5f) * 0.1f;
      data.append(reinterpret_cast<const char*>(&v), 4);
    }
    header[name] = {{"dtype", "F32"}, {"shape", shape}, {"data_offsets", {begin, data.size()}}};
  }
  std::string h = header.dump();
  while (h.size() % 8) h += ' ';
  std::string out(8, '\0');
  const uint64_t n = h.size();
  std::memcpy(out.data(), &n, 8);
  return out + h + data;
}

json llama_config(const Shape& s) {
  return {{"architectures", {"LlamaForCausalLM"}}, {"hidden_size", s.dim},         {"intermediate_size", s.hidden},
          {"num_hidden_layers", s.layers},         {"num_attention_heads", s.heads}, {"num_key_value_heads", s.kv_heads},
          {"max_position_embeddings", s.context},  {"vocab_size", s.vocab},         {"tie_word_embeddings", true}};
}

std::string llama_weights(const Shape& s) {
  const int64_t d = s.dim, kv = int64_t(s.kv_heads) * (s.dim / s.heads), h = s.hidden;
  std::vector<std::pair<std::string, std::vector<int64_t>>> t = {{"model.embed_tokens.weight", {s.vocab, d}},
                                                                 {"model.norm.weight", {d}}};
  for (int i = 0; i < s.layers; ++i) {
    const std::string p = "model.layers." + std::to_string(i) + ".";
    t.push_back({p + "input_layernorm.weight", {d}});
    t.push_back({p + "post_attention_layernorm.weight", {d}});
    t.push_back({p + "self_attn.q_proj.weight", {d, d}});
    t.push_back({p + "self_attn.k_proj.weight", {kv, d}});
    t.push_back({p + "self_attn.v_proj.weight", {kv, d}});
    t.push_back({p + "self_attn.o_proj.weight", {d, d}});
    t.push_back({p + "mlp.gate_proj.weight", {h, d}});
    t.push_back({p + "mlp.up_proj.weight", {h, d}});
    t.push_back({p + "mlp.down_proj.weight", {d, h}});
  }
  return safetensors(t);
}

std::unique_ptr<LoadedModel> load(const json& config, const std::string& weights, std::vector<FilePtr> more = {}) {
  more.push_back(file("config.json", config.dump()));
  more.push_back(file("model.safetensors", weights));
  return load_model(more);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

std::string nested(int depth, const std::string& inner = "1") {
  return std::string(size_t(depth), '[') + inner + std::string(size_t(depth), ']');
}

}  // namespace

TEST_CASE("limits: a context of 2^24 positions is refused naming the key; 2^20 loads and allocates no KV cache", "[runtime][limits]") {
  Shape s;
  s.layers = 16;
  s.context = 1 << 24;
  const std::string e = error_of([&] { load(llama_config(s), llama_weights(s)); });
  CHECK_THAT(e, Contains("config.json") && Contains("max_position_embeddings") && Contains("16777216") && Contains("1048576"));

  // head_dim 512 and a context of 2^20: 2 × 2 layers × 2^20 × 512 × 4 bytes = 8 GiB at full context,
  // which a 32-bit size_t cannot even express. It loads (the RoPE table is bounded, the KV cache empty)
  // and runs.
  Shape big;
  big.dim = 512;
  big.heads = 1;
  big.kv_heads = 1;
  big.context = 1 << 20;
  auto m = load(llama_config(big), llama_weights(big));
  auto session = m->model().new_session();
  CHECK(session->cache.capacity() == (1 << 20));
  CHECK(session->cache.bytes() == 0);
  CHECK(session->cache.capacity_bytes() == uint64_t(2) * 2 * (1 << 20) * 512 * 4);
  CHECK(m->model().info().owned_bytes <= (size_t(4) << 20));  // the RoPE table's bound
  const int ids[3] = {1, 2, 3};
  const float* logits = m->model().decode(*session, ids, 3, true);
  for (int i = 0; i < 3 * big.vocab; ++i) REQUIRE(std::isfinite(logits[i]));
  CHECK(session->cache.bytes() == size_t(2) * 2 * 64 * 512 * 4);  // the first growth: 64 positions
  // A pass whose scratch would not fit one buffer is refused before anything is computed.
  std::vector<int> many(size_t(1) << 19, 1);
  CHECK_THAT(error_of([&] { m->model().decode(*session, many.data(), int(many.size())); }), Contains("scratch"));
  CHECK(session->position() == 3);  // nothing was lost
}

TEST_CASE("limits: layers, vocabulary and heads past the engine's limits name the key", "[runtime][limits]") {
  Shape s;
  json c = llama_config(s);
  c["num_hidden_layers"] = 5000;
  CHECK_THAT(error_of([&] { load(c, llama_weights(s)); }), Contains("config.json") && Contains("num_hidden_layers"));
  c = llama_config(s);
  c["vocab_size"] = (1 << 20) + 1;
  CHECK_THAT(error_of([&] { load(c, llama_weights(s)); }), Contains("config.json") && Contains("vocab_size"));
  c = llama_config(s);
  c["num_attention_heads"] = 8192;
  CHECK_THAT(error_of([&] { load(c, llama_weights(s)); }), Contains("config.json") && Contains("num_attention_heads"));
}

TEST_CASE("JSON: wrong types name the file and the key, never the JSON library's words", "[runtime][json]") {
  Shape s;
  const std::string w = llama_weights(s);
  for (const auto& [key, value] : std::vector<std::pair<std::string, json>>{{"max_position_embeddings", "64"},
                                                                          {"hidden_size", json::array({16})},
                                                                          {"rms_norm_eps", "tiny"},
                                                                          {"tie_word_embeddings", 1},
                                                                          {"hidden_act", 7},
                                                                          {"model_type", json::object()}}) {
    json c = llama_config(s);
    c[key] = value;
    const std::string e = error_of([&] { load(c, w); });
    INFO(key << ": " << e);
    CHECK_THAT(e, Contains("config.json") && Contains(key));
    CHECK_THAT(e, !Contains("[json.exception"));
  }
  // generation_config.json with ids of the wrong type: ignored ids are not an error, a bad type is not a crash
  json gc = {{"eos_token_id", "two"}, {"bos_token_id", json::array({json::object()})}};
  CHECK_NOTHROW(load(llama_config(s), w, {file("generation_config.json", gc.dump())}));
}

TEST_CASE("JSON: nesting deeper than a real file needs is refused at parse time, naming the file", "[runtime][json]") {
  Shape s;
  const std::string w = llama_weights(s);
  const std::string deep = nested(100000);
  // config.json
  CHECK_THAT(error_of([&] { load_model({file("config.json", "{\"a\": " + deep + "}"), file("model.safetensors", w)}); }),
             Contains("config.json") && Contains("nested more than 32"));
  // tokenizer.json
  CHECK_THAT(error_of([&] { load(llama_config(s), w, {file("tokenizer.json", "{\"model\": " + deep + "}")}); }),
             Contains("tokenizer.json") && Contains("nested"));
  // a safetensors header
  std::string header = "{\"__metadata__\": " + nested(5000, "{}") + "}";
  while (header.size() % 8) header += ' ';
  std::string st(8, '\0');
  const uint64_t n = header.size();
  std::memcpy(st.data(), &n, 8);
  CHECK_THAT(error_of([&] { load_model({file("config.json", llama_config(s).dump()), file("model.safetensors", st + header)}); }),
             Contains("model.safetensors") && Contains("header") && Contains("nested"));
  // an index
  const std::string index = "{\"weight_map\": {\"a\": \"x.safetensors\"}, \"metadata\": " + nested(5000) + "}";
  CHECK_THAT(error_of([&] {
               load_model({file("config.json", llama_config(s).dump()), file("model.safetensors.index.json", index),
                           file("x.safetensors", w)});
             }),
             Contains("model.safetensors.index.json") && Contains("nested"));
  // Brackets inside strings do not count; 32 levels are fine.
  CHECK(json_depth_exceeds(deep.data(), deep.data() + deep.size(), 32) == 33);
  const std::string in_string = "{\"a\": \"" + std::string(1000, '[') + "\"}";
  CHECK(json_depth_exceeds(in_string.data(), in_string.data() + in_string.size(), 32) == 0);
  const std::string escaped = R"({"a": "\"[[[[", "b": 1})";
  CHECK(json_depth_exceeds(escaped.data(), escaped.data() + escaped.size(), 1) == 0);
  const std::string ok = nested(31);
  CHECK_NOTHROW(parse_json(ok.data(), ok.data() + ok.size(), "x.json"));
}

TEST_CASE("JSON: messages describe values briefly (no dump of what the file holds)", "[runtime][json]") {
  CHECK(json_brief(json(7)) == "7");
  CHECK(json_brief(json("abc")) == "\"abc\"");
  CHECK(json_brief(json(std::string(5000, 'x'))) == "\"" + std::string(40, 'x') + "…\" (5000 bytes)");
  CHECK(json_brief(json::array({1, 2})) == "an array of 2 values");
  CHECK(json_brief(json::object({{"a", 1}})) == "an object with 1 key");
  CHECK(json_brief(json(nullptr)) == "null");
  // A huge value in the config: the message stays short.
  Shape s;
  json c = llama_config(s);
  c["max_position_embeddings"] = std::string(1 << 20, 'z');
  const std::string e = error_of([&] { load(c, llama_weights(s)); });
  CHECK(e.size() < 300);
}

TEST_CASE("limits: a tokenizer.json with a huge id is refused before its vocabulary is built", "[runtime][limits]") {
  Shape s;
  const std::string w = llama_weights(s);
  auto tokenizer = [](int64_t id) {
    json t = {{"model", {{"type", "BPE"}, {"vocab", {{"a", 0}, {"b", 1}, {"far", id}}}, {"merges", json::array()}}},
              {"pre_tokenizer", {{"type", "ByteLevel"}}}};
    return t.dump();
  };
  // near 2^24: past the engine's limit
  CHECK_THAT(error_of([&] { load(llama_config(s), w, {file("tokenizer.json", tokenizer((1 << 24) - 1))}); }),
             Contains("tokenizer.json") && Contains("model.vocab"));
  // within the engine's limit but past this model's 32 tokens: refused by a scan, before 2^20 pieces
  // would be built (timed as a benchmark would, only to show the order of magnitude in the output)
  const auto t0 = std::chrono::steady_clock::now();
  const std::string e = error_of([&] { load(llama_config(s), w, {file("tokenizer.json", tokenizer((1 << 20) - 1))}); });
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  WARN("refusing a tokenizer.json id of 2^20 - 1 for a 32-token model took " << ms << " ms");
  CHECK_THAT(e, Contains("tokenizer.json") && Contains("1048575") && Contains("only 32 tokens"));
}

namespace {
// Writes `value` into element `element` of f32 tensor `tensor` of a safetensors file.
void poison(std::string& st, const std::string& tensor, size_t element, float value) {
  uint64_t n;
  std::memcpy(&n, st.data(), 8);
  const json header = json::parse(st.substr(8, n));
  const size_t at = 8 + n + header.at(tensor).at("data_offsets")[0].get<size_t>() + 4 * element;
  std::memcpy(&st[at], &value, 4);
}
}  // namespace

TEST_CASE("finite weights whose quantized block scale overflows f16 are refused, naming the tensor", "[runtime][limits]") {
  // kernels' quantizers are undefined-behaviour free on extreme blocks (subnormal values, tiny ranges:
  // checked with UBSan by tests/fuzz), but a block scale past f16's 65504 is stored as infinity and the
  // block dequantizes to inf/NaN: q8_0 from |w| > 65504·127, q4_0 from > 65504·8, q4_K from a
  // sub-block scale > 65504·63. Such a load is refused like a non-finite weight.
  Shape s;
  s.dim = 256;
  s.hidden = 256;
  const json c = llama_config(s);
  const char* tensor = "model.layers.1.mlp.up_proj.weight";
  struct Case {
    models::WeightFormat format;
    const char* type;
    float too_large, fine;
  };
  for (const Case& k : {Case{models::WeightFormat::Q8_0, "q8_0", 1e7f, 1e6f}, Case{models::WeightFormat::Q4_0, "q4_0", 6e5f, 5e5f},
                        Case{models::WeightFormat::Q4_K, "q4_K", 1e30f, 1e7f}}) {
    LoadOptions o;
    o.format = k.format;
    std::string w = llama_weights(s);
    poison(w, tensor, 300, k.too_large);
    const std::string e = error_of([&] { load_model({file("config.json", c.dump()), file("model.safetensors", w)}, o); });
    INFO(k.type << ": " << e);
    CHECK_THAT(e, Contains("model.safetensors") && Contains(tensor) && Contains(std::string("cannot be quantized to ") + k.type) &&
                      Contains("the block at element " + std::to_string(k.format == models::WeightFormat::Q4_K ? 256 : 288)) &&
                      Contains("too large for the block's f16 scale"));
    w = llama_weights(s);
    poison(w, tensor, 300, k.fine);
    CHECK_NOTHROW(load_model({file("config.json", c.dump()), file("model.safetensors", w)}, o));
  }
}

TEST_CASE("non-finite weights are refused at load on every path, naming the file and the tensor", "[runtime][limits]") {
  Shape s;
  const json c = llama_config(s);
  for (const char* tensor : {"model.embed_tokens.weight", "model.layers.1.self_attn.k_proj.weight", "model.norm.weight",
                             "model.layers.0.mlp.down_proj.weight"}) {
    for (float bad : {NAN, INFINITY, -INFINITY}) {
      std::string w = llama_weights(s);
      poison(w, tensor, 3, bad);
      for (auto format : {models::WeightFormat::AsStored, models::WeightFormat::Q8_0}) {
        LoadOptions o;
        o.format = format;
        const std::string e = error_of([&] { load_model({file("config.json", c.dump()), file("model.safetensors", w)}, o); });
        INFO(tensor << " " << bad << ": " << e);
        CHECK_THAT(e, Contains("model.safetensors") && Contains(tensor) && Contains("element 3") &&
                          Contains(std::isnan(bad) ? "NaN" : "infinity"));
      }
    }
  }
  // The kernel that finds them, against its scalar reference, at every position of a few lengths.
  for (size_t n : {1u, 7u, 33u, 4096u, 4097u, 10000u}) {
    std::vector<float> x(n, 0.5f);
    CHECK(kernels::first_nonfinite(x.data(), n) == n);
    for (size_t i : {size_t(0), n / 2, n - 1}) {
      for (float bad : {NAN, INFINITY, -INFINITY}) {
        x[i] = bad;
        CHECK(kernels::first_nonfinite(x.data(), n) == i);
        CHECK(kernels::ref::first_nonfinite(x.data(), n) == i);
        x[i] = 0.5f;
      }
    }
    x[n - 1] = 3.4e38f;  // large but finite
    CHECK(kernels::first_nonfinite(x.data(), n) == n);
  }
}
