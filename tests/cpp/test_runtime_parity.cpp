// Hugging Face folders (config.json + safetensors + tokenizer.json) loaded by runtime::load_model
// equal PyTorch: GPT-2 (F32, F16, BF16, two shards), BERT (BertForMaskedLM, sentence pair), Llama
// (GQA, rope_theta 500000, untied lm_head). Logits within 1e-4, hidden states within 1e-4,
// attention weights within 1e-5, for prefill, token-by-token and chunked decoding. Then bad input.
// Fixtures: tests/fixtures/models_torch (tests/fixtures/make_model_fixtures.py); the GGUF and
// llama2.c paths are in test_runtime_parity_gguf.cpp.
#include <cstring>
#include <map>

#include "generate/generator.h"
#include "test_runtime_parity.h"

using namespace attnlens;
using namespace parity;
using runtime::load_model;

namespace {

std::unique_ptr<runtime::LoadedModel> gpt2(const std::string& weights_dir = "gpt2") {
  return load_model({file("gpt2/config.json"), file(weights_dir + "/model.safetensors"), file("gpt2/tokenizer.json")});
}

// --- a minimal safetensors rewriter for the bad-input cases ---------------------------------------

struct StTensor {
  std::string dtype;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;
};
using StFile = std::map<std::string, StTensor>;

StFile read_st(const std::vector<uint8_t>& b) {
  uint64_t n;
  std::memcpy(&n, b.data(), 8);
  const nlohmann::json h = nlohmann::json::parse(b.begin() + 8, b.begin() + 8 + long(n));
  StFile out;
  for (auto it = h.begin(); it != h.end(); ++it) {
    if (it.key() == "__metadata__") continue;
    const auto off = it.value().at("data_offsets").get<std::vector<size_t>>();
    out[it.key()] = {it.value().at("dtype"), it.value().at("shape").get<std::vector<int64_t>>(),
                     std::vector<uint8_t>(b.begin() + long(8 + n + off[0]), b.begin() + long(8 + n + off[1]))};
  }
  return out;
}

std::vector<uint8_t> write_st(const StFile& f) {
  nlohmann::json h = nlohmann::json::object();
  size_t off = 0;
  for (const auto& [name, t] : f) {
    h[name] = {{"dtype", t.dtype}, {"shape", t.shape}, {"data_offsets", {off, off + t.data.size()}}};
    off += t.data.size();
  }
  h["__metadata__"] = {{"format", "pt"}};
  std::string head = h.dump();
  while (head.size() % 8) head += ' ';
  const uint64_t n = head.size();
  std::vector<uint8_t> out(8 + head.size() + off);
  std::memcpy(out.data(), &n, 8);
  std::memcpy(out.data() + 8, head.data(), head.size());
  size_t at = 8 + head.size();
  for (const auto& [name, t] : f) {
    if (!t.data.empty()) std::memcpy(out.data() + at, t.data.data(), t.data.size());
    at += t.data.size();
  }
  return out;
}

std::string config_with(const std::string& rel, const nlohmann::json& changes) {
  nlohmann::json c = nlohmann::json::parse(testutil::read_text(path(rel)));
  c.merge_patch(changes);
  return c.dump();
}

}  // namespace

TEST_CASE("GPT-2 HF folder: F32 safetensors + tokenizer.json equal PyTorch", "[runtime][parity][gpt2]") {
  Reference ref("gpt2_ref.json");
  auto m = gpt2();
  check_card(*m, ref.card(), "safetensors");
  REQUIRE(m->tokenizer());
  CHECK(m->tokenizer()->kind() == "byte-level-bpe");
  CHECK(m->model().info().positions == "learned");
  CHECK(m->model().info().weight_dtype == "f32");
  // text → ids → logits: the prompt encodes to the reference's ids (GPT-2 adds no special tokens).
  const std::string prompt = ref.fx.config().at("prompt");
  CHECK(generate::encode_prompt(m->require_tokenizer(), m->prompt_format(), prompt) == ref.tokens);
  CHECK(m->require_tokenizer().decode(ref.tokens) == prompt);
  CHECK(m->prompt_format().empty_prompt_token == ref.vocab - 1);  // <|endoftext|>
  check_decoder(m->model(), ref, "gpt2 f32");
}

TEST_CASE("GPT-2 HF folder: F16 and BF16 safetensors equal PyTorch on the rounded weights", "[runtime][parity][gpt2]") {
  for (const char* dt : {"f16", "bf16"}) {
    Reference ref(std::string("gpt2_") + dt + "_ref.json");
    auto m = gpt2(std::string("gpt2_") + dt);
    INFO(dt << ": the 16-bit weights move the logits by up to " << ref.fx.config().at("max_change_from_f32").get<double>()
            << " from the f32 model");
    check_card(*m, ref.card(), "safetensors");
    check_decoder(m->model(), ref, std::string("gpt2 ") + dt);
  }
}

TEST_CASE("GPT-2 HF folder: two shards + model.safetensors.index.json", "[runtime][parity][gpt2]") {
  Reference ref("gpt2_ref.json");
  // Any order, names as HF writes them.
  auto m = load_model({file("gpt2_sharded/model-00002-of-00002.safetensors"), file("gpt2/tokenizer.json"),
                       file("gpt2_sharded/model.safetensors.index.json"), file("gpt2/config.json"),
                       file("gpt2_sharded/model-00001-of-00002.safetensors")});
  check_card(*m, ref.card(), "safetensors");
  check_decoder(m->model(), ref, "gpt2 sharded");
}

TEST_CASE("BERT HF folder (BertForMaskedLM) equals PyTorch: hidden states, MLM logits, attention",
          "[runtime][parity][bert]") {
  Reference ref("bert_ref.json");
  auto m = load_model({file("bert/model.safetensors"), file("bert/tokenizer.json"), file("bert/config.json")});
  check_card(*m, ref.card(), "safetensors");
  const models::Model& model = m->model();
  CHECK(model.kind() == models::ModelKind::EncoderOnly);
  REQUIRE(model.has_mlm_head());
  REQUIRE(m->tokenizer());
  CHECK(m->tokenizer()->kind() == "wordpiece");

  // The sentence pair [CLS] A [SEP] B [SEP] from the tokenizer (the Tokenizer API encodes one
  // sequence: A with its special tokens, then B and the final [SEP]).
  const auto prompt = ref.fx.config().at("prompt").get<std::vector<std::string>>();
  const std::vector<int> types = ref.fx.config().at("token_types").get<std::vector<int>>();
  const Tokenizer& tok = m->require_tokenizer();
  std::vector<int> ids = tok.encode(prompt[0], true);
  for (int id : tok.encode(prompt[1], false)) ids.push_back(id);
  ids.push_back(tok.eos_id());  // [SEP]
  CHECK(ids == ref.tokens);
  CHECK(std::count(types.begin(), types.end(), 1) > 0);

  const int T = ref.T(), d = ref.card().at("d_model"), V = ref.card().at("vocab_size");
  const std::vector<float> hidden = ref.fx.get("hidden"), mlm = ref.fx.get("mlm_logits");
  auto s = model.new_session();
  nn::AttentionRecorder rec;
  s->recorder = &rec;
  const float* h = model.encode(*s, ref.tokens.data(), T, types.data());
  Worst wh, wl, wa;
  for (size_t i = 0; i < size_t(T) * d; ++i) wh.add(h[i], hidden[i], 1e-4);
  const float* lg = model.mlm_logits(*s);
  for (size_t i = 0; i < size_t(T) * V; ++i) wl.add(lg[i], mlm[i], 1e-4);
  for (int l = 0; l < ref.layers; ++l) {
    const nn::AttentionRecord* r = rec.find(nn::AttentionKind::Encoder, l);
    REQUIRE(r);
    REQUIRE(r->n_heads == ref.heads);
    REQUIRE(r->n_queries == T);
    REQUIRE(r->n_keys == T);
    for (int hh = 0; hh < ref.heads; ++hh)
      for (int t = 0; t < T; ++t)
        for (int j = 0; j < T; ++j) wa.add(r->row(hh, t)[j], ref.attn(ref.attention, l, hh, t, j), 1e-5);
  }
  CHECK(rec.find(nn::AttentionKind::Self, 0) == nullptr);
  INFO("hidden: " << wh.str() << "; mlm logits: " << wl.str() << "; attention: " << wa.str());
  CHECK(wh.failures == 0);
  CHECK(wl.failures == 0);
  CHECK(wa.failures == 0);

  // Token types matter: all-zero types give other hidden states (so the comparison above saw them).
  auto s0 = model.new_session();
  const float* h0 = model.encode(*s0, ref.tokens.data(), T, nullptr);
  CHECK(testutil::max_abs_diff(h0, hidden.data(), size_t(T) * d) > 1e-2);
  CHECK_ERROR(model.decode(*s, ref.tokens.data(), T), "has no decoder");
}

TEST_CASE("Llama HF folder (GQA 4/2 heads, rope_theta 500000, untied lm_head) equals PyTorch",
          "[runtime][parity][llama]") {
  Reference ref("llama_ref.json");
  auto m = load_model({file("llama/config.json"), file("llama/model.safetensors")});
  check_card(*m, ref.card(), "safetensors");
  CHECK(m->tokenizer() == nullptr);
  CHECK(m->model().info().positions == "rope");
  CHECK(m->model().info().n_kv_heads == 2);
  check_decoder(m->model(), ref, "llama hf");
}

TEST_CASE("safetensors folders: bad input names the file and the problem", "[runtime][parity][errors]") {
  const auto gpt2_st = file("gpt2/model.safetensors");
  const auto llama_st = file("llama/model.safetensors");
  const auto bert_st = file("bert/model.safetensors");

  SECTION("unknown architecture") {
    CHECK_ERROR(load_model({text_file("config.json", config_with("gpt2/config.json",
                                                                       {{"architectures", {"FooForCausalLM"}}, {"model_type", "foo"}})),
                                  gpt2_st}),
                      "config.json: unsupported architecture \"FooForCausalLM\"");
  }
  SECTION("config.json disagrees with the tensors") {
    auto bad = [](const std::string& cfg, const nlohmann::json& change, FilePtr st) {
      return load_model({text_file("config.json", config_with(cfg, change)), st});
    };
    CHECK_ERROR(bad("gpt2/config.json", {{"n_embd", 48}}, gpt2_st),
                      "model.safetensors: tensor transformer.wte.weight has shape [277, 32], expected [277, 48]");
    // Conv1D weights are [in, out]: the expected shape is said the way the file stores it.
    CHECK_ERROR(bad("gpt2/config.json", {{"n_inner", 64}}, gpt2_st),
                      "model.safetensors: tensor transformer.h.0.mlp.c_fc.weight has shape [32, 128], expected [32, 64]");
    CHECK_ERROR(bad("llama/config.json", {{"hidden_size", 64}}, llama_st),
                      "model.safetensors: tensor model.embed_tokens.weight has shape [307, 32], expected [307, 64]");
    CHECK_ERROR(bad("llama/config.json", {{"num_key_value_heads", 4}}, llama_st),
                      "model.safetensors: tensor model.layers.0.self_attn.k_proj.weight has shape [16, 32], expected [32, 32]");
    CHECK_ERROR(bad("llama/config.json", {{"intermediate_size", 96}}, llama_st),
                      "model.safetensors: tensor model.layers.0.mlp.gate_proj.weight has shape [64, 32], expected [96, 32]");
    CHECK_ERROR(bad("bert/config.json", {{"intermediate_size", 128}}, bert_st),
                      "model.safetensors: tensor bert.encoder.layer.0.intermediate.dense.weight has shape [64, 32], expected [128, 32]");
    CHECK_ERROR(bad("bert/config.json", {{"max_position_embeddings", 512}}, bert_st),
                      "model.safetensors: tensor bert.embeddings.position_embeddings.weight has shape [32, 32], expected [512, 32]");
  }
  SECTION("a missing tensor") {
    auto without = [](FilePtr st, const std::string& name) {
      StFile f = read_st(st->bytes);
      REQUIRE(f.erase(name) == 1);
      return bytes_file("model.safetensors", write_st(f));
    };
    CHECK_ERROR(load_model({file("gpt2/config.json"), without(gpt2_st, "transformer.h.1.ln_2.bias")}),
                      "model.safetensors: missing tensor transformer.h.1.ln_2.bias");
    CHECK_ERROR(load_model({file("llama/config.json"), without(llama_st, "lm_head.weight")}),
                      "model.safetensors: missing tensor lm_head.weight");
    CHECK_ERROR(load_model({file("bert/config.json"), without(bert_st, "bert.encoder.layer.1.attention.self.key.bias")}),
                      "model.safetensors: missing tensor bert.encoder.layer.1.attention.self.key.bias");
  }
  SECTION("tensor dtypes other than F32 / F16 / BF16") {
    StFile f = read_st(gpt2_st->bytes);
    StTensor& wpe = f.at("transformer.wpe.weight");
    std::vector<float> v(wpe.data.size() / 4);
    std::memcpy(v.data(), wpe.data.data(), wpe.data.size());
    StFile f64 = f, i8 = f;
    std::vector<uint8_t> as64(v.size() * 8), as8(v.size());
    for (size_t i = 0; i < v.size(); ++i) {
      const double x = v[i];
      std::memcpy(as64.data() + 8 * i, &x, 8);
      as8[i] = uint8_t(int8_t(std::lround(std::max(-127.f, std::min(127.f, v[i] * 50)))));
    }
    f64.at("transformer.wpe.weight") = {"F64", wpe.shape, as64};
    i8.at("transformer.wpe.weight") = {"I8", wpe.shape, as8};
    CHECK_ERROR(load_model({file("gpt2/config.json"), bytes_file("model.safetensors", write_st(f64))}),
                      "model.safetensors: tensor transformer.wpe.weight has dtype F64, supported: F32, F16, BF16");
    CHECK_ERROR(load_model({file("gpt2/config.json"), bytes_file("model.safetensors", write_st(i8))}),
                      "model.safetensors: tensor transformer.wpe.weight has dtype I8, supported: F32, F16, BF16");
    // The rewriter itself is faithful: the untouched copy loads.
    CHECK_NOTHROW(load_model({file("gpt2/config.json"), bytes_file("model.safetensors", write_st(f))}));
  }
  SECTION("token ids (and BERT token types) out of range") {
    auto g = gpt2();
    auto s = g->model().new_session();
    const int bad[] = {5, 277};
    CHECK_ERROR(g->model().decode(*s, bad, 2), "decode: token id 277 at index 1 is out of range [0, 277)");
    const int neg = -1;
    CHECK_ERROR(g->model().decode(*s, &neg, 1), "token id -1 at index 0 is out of range [0, 277)");
    CHECK(s->position() == 0);  // nothing was consumed
    auto l = load_model({file("llama/config.json"), llama_st});
    auto ls = l->model().new_session();
    const int big = 307;
    CHECK_ERROR(l->model().decode(*ls, &big, 1), "token id 307 at index 0 is out of range [0, 307)");
    auto b = load_model({file("bert/config.json"), bert_st});
    auto bs = b->model().new_session();
    const int ids[] = {2, 80};
    CHECK_ERROR(b->model().encode(*bs, ids, 2), "encode: token id 80 at index 1 is out of range [0, 80)");
    const int ok[] = {2, 3}, types[] = {0, 2};
    CHECK_ERROR(b->model().encode(*bs, ok, 2, types), "token type 2 at index 1 is out of range [0, 2)");
    // More positions than the model has.
    std::vector<int> long_prompt(33, 5);
    CHECK_ERROR(b->model().encode(*bs, long_prompt.data(), 33), "33 tokens exceed the 32 positions of bert");
    CHECK_ERROR(g->model().decode(*s, long_prompt.data(), 33), "context overflow");
  }
}
