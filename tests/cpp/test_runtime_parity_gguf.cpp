// GGUF (converted as llama.cpp's convert_hf_to_gguf.py does) and llama2.c checkpoints loaded by
// runtime::load_model equal PyTorch: Llama in f32, f16 and q8_0, GPT-2 from the same weights as the
// Hugging Face folder, a llama2.c checkpoint with a separate classifier. Then bad input.
// Fixtures: tests/fixtures/models_torch (tests/fixtures/make_model_fixtures.py).
#include <cstring>

#include "generate/generator.h"
#include "test_runtime_parity.h"

using namespace attnlens;
using namespace parity;
using runtime::load_model;

namespace {

// The GGUF u32 metadata value of `key` set to `value` (the value follows the key and its u32 type).
std::vector<uint8_t> with_u32(std::vector<uint8_t> bytes, const std::string& key, uint32_t value) {
  const size_t at = find_bytes(bytes, key) + key.size();
  uint32_t type;
  std::memcpy(&type, bytes.data() + at, 4);
  REQUIRE(type == 4);  // GGUF_TYPE_UINT32
  std::memcpy(bytes.data() + at + 4, &value, 4);
  return bytes;
}

}  // namespace

TEST_CASE("GGUF llama f32 (Q/K permuted as convert_hf_to_gguf.py does) equals the HF model", "[runtime][parity][gguf]") {
  // The same weights as tests/fixtures/models_torch/llama/: the HF reference holds for the GGUF.
  Reference ref("llama_ref.json");
  auto m = load_model({file("llama_f32.gguf")});
  check_card(*m, ref.card(), "gguf");
  CHECK(m->model().info().weight_dtype == "f32");
  // SentencePiece tokenizer from the metadata: BOS, dummy prefix, merges by score, "é" as the
  // byte tokens <0xC3> <0xA9>.
  REQUIRE(m->tokenizer());
  CHECK(m->tokenizer()->kind() == "sentencepiece-bpe");
  const std::string prompt = ref.fx.config().at("prompt");
  CHECK(generate::encode_prompt(m->require_tokenizer(), m->prompt_format(), prompt) == ref.tokens);
  CHECK(m->require_tokenizer().decode(ref.tokens) == prompt);
  CHECK(m->prompt_format().stop_tokens == std::vector<int>{1, 2});
  check_decoder(m->model(), ref, "llama gguf f32");
}

TEST_CASE("GGUF llama f16 equals PyTorch on the f16-rounded weights", "[runtime][parity][gguf]") {
  Reference ref("llama_f16_ref.json");
  auto m = load_model({file("llama_f16.gguf")});
  check_card(*m, ref.card(), "gguf");
  INFO("f16 weights move the logits by up to " << ref.fx.config().at("max_change_from_f32").get<double>()
                                               << " from the f32 model");
  check_decoder(m->model(), ref, "llama gguf f16");
}

// q8_0. The reference is the model on exactly the weights the file holds, f16(d)·q per block of 32
// (the float64 forward of the dequantized weights). An engine that multiplies those weights in
// float32 agrees with it like the f32 model does (1e-4). An engine that also quantizes the
// activations entering each q8_0 matvec to 8 bits (llama.cpp's vec_dot with q8_0 activation blocks:
// per block of 32, d = amax/127, xq = round(x/d), |x − d·xq| ≤ amax·(1/254 + 1/2048) with d
// rounded to f16) moves further. The fixture script derives, per logit and per attention weight,
// how far (tests/fixtures/make_model_fixtures.py, q8_0_bounds):
//   first order, Δo = Σ_X Σ_j (∂o/∂X_j)·ΔX_j over every quantized input X (the attention input
//   shared by q/k/v, the attention output, the FFN input shared by gate/up, the FFN hidden, the
//   final norm output; every position), with the gradients taken by autograd through the reference;
//   worst case   B = Σ |∂o/∂X_j| · amax_b · (1/254 + 1/2048)
//   probabilistic σ² = Σ (∂o/∂X_j)² (amax_b/127)²/12 + Σ_b (Σ_{j∈b} ∂o/∂X_j · X_j)² · 2^-22/3
//   (rounding errors independent and uniform, the standard probabilistic model of rounding error),
// and stores bound = min(B, 6σ): a value of a correct engine exceeds 6σ with probability ~2e-9.
// The script checks the bound on simulated activation quantization (f32 and f16 scales: it uses up
// to 0.66 of it, 3.95σ). Here: |engine − reference| ≤ 1e-4 + bound (1e-5 + bound for attention),
// and (b) the engine is closer to the q8_0 reference than to the f32 model (it computes with the
// file's q8_0 weights, not something else), both numbers reported.
TEST_CASE("GGUF llama q8_0: within the derived quantization error of the dequantized-weight reference",
          "[runtime][parity][gguf][q8_0]") {
  Reference ref("llama_q8_0_ref.json");
  Reference f32("llama_ref.json");
  REQUIRE(f32.tokens == ref.tokens);
  auto m = load_model({file("llama_q8_0.gguf")});
  check_card(*m, ref.card(), "gguf");
  CHECK(m->model().info().weight_dtype == "q8_0");
  const std::vector<float> lb = ref.fx.get("logits_bound"), ab = ref.fx.get("attention_bound");
  REQUIRE(lb.size() == ref.logits.size());
  REQUIRE(ab.size() == ref.attention.size());
  const double bound_max = *std::max_element(lb.begin(), lb.end());
  const double weight_drift = testutil::max_abs_diff(ref.logits, f32.logits);

  auto res = run_decoder(m->model(), ref, {1e-4, &lb}, {1e-5, &ab});
  auto vs_f32 = run_decoder(m->model(), ref, {INFINITY}, {INFINITY}, &f32.logits, &f32.attention);
  const char* runs[] = {"prefill", "step", "chunked"};
  for (int r = 0; r < 3; ++r) {
    const auto& q = res[size_t(r)];
    const auto& f = vs_f32[size_t(r)];
    INFO("q8_0 " << runs[r] << ": vs the q8_0 reference: logits " << q.logits.str() << " (largest allowed "
                 << 1e-4 + bound_max << "), attention " << q.attention.str() << "; vs the f32 model: logits "
                 << f.logits.str());
    CHECK(q.logits.failures == 0);
    CHECK(q.attention.failures == 0);
    CHECK(q.logits.rms() < f.logits.rms());
    WARN("q8_0 " << runs[r] << ": |engine - q8_0 reference| max " << q.logits.diff << " rms " << q.logits.rms()
                 << "; |engine - f32 model| max " << f.logits.diff << " rms " << f.logits.rms()
                 << " (the weights alone move the reference by " << weight_drift << "; allowed " << 1e-4 + bound_max
                 << " max)");
  }
}

TEST_CASE("GGUF gpt2 (llama.cpp naming, [out, in] weights) equals the HF GPT-2 reference", "[runtime][parity][gguf]") {
  Reference ref("gpt2_ref.json");
  auto m = load_model({file("gpt2.gguf")});
  // convert_hf_to_gguf.py stores output.weight as a copy of token_embd: the file's model is an
  // untied GPT-2, vocab × d_model parameters more than the PyTorch model it came from.
  nlohmann::json card = ref.card();
  card["params"] = card["params"].get<int64_t>() + int64_t(ref.vocab) * card["d_model"].get<int64_t>();
  check_card(*m, card, "gguf");
  REQUIRE(m->tokenizer());
  CHECK(m->tokenizer()->kind() == "byte-level-bpe");
  const std::string prompt = ref.fx.config().at("prompt");
  CHECK(generate::encode_prompt(m->require_tokenizer(), m->prompt_format(), prompt) == ref.tokens);
  CHECK(m->require_tokenizer().decode(ref.tokens) == prompt);
  CHECK(m->prompt_format().empty_prompt_token == ref.vocab - 1);
  check_decoder(m->model(), ref, "gpt2 gguf");
}

TEST_CASE("llama2.c checkpoint with a separate classifier (negative vocab_size) equals PyTorch",
          "[runtime][parity][llama2c]") {
  Reference ref("llama2c_ref.json");
  auto m = load_model({file("llama2c_cls.bin", "model.bin")});
  check_card(*m, ref.card(), "llama2c");
  CHECK(m->model().info().n_kv_heads == 1);
  check_decoder(m->model(), ref, "llama2.c");
}

TEST_CASE("GGUF and llama2.c: bad input names the file and the problem", "[runtime][parity][errors]") {
  const auto llama = file("llama_f32.gguf");
  SECTION("unsupported architecture") {
    auto bytes = patched(llama->bytes, "llama", "mamba", find_bytes(llama->bytes, "general.architecture"));
    CHECK_ERROR(load_model({bytes_file("llama_f32.gguf", bytes)}),
                      "llama_f32.gguf: unsupported architecture \"mamba\"");
  }
  SECTION("metadata disagrees with the tensors") {
    // A wider model: its head size grows with it (RoPE then rotates 8 of its 16 dimensions).
    const auto wide = with_u32(llama->bytes, "llama.embedding_length", 64);
    CHECK_ERROR(load_model({bytes_file("llama_f32.gguf", wide)}),
                      "llama_f32.gguf: tensor token_embd.weight has shape [307, 32], expected [307, 64]");
    CHECK_ERROR(load_model({bytes_file("llama_f32.gguf", with_u32(llama->bytes, "llama.rope.dimension_count", 7))}),
                      "llama_f32.gguf: llama.rope.dimension_count 7 must be even and at most the head dimension 8");
    CHECK_ERROR(load_model({bytes_file("llama_f32.gguf", with_u32(llama->bytes, "llama.rope.dimension_count", 16))}),
                      "llama_f32.gguf: llama.rope.dimension_count 16 must be even and at most the head dimension 8");
    CHECK_ERROR(load_model({bytes_file("llama_f32.gguf", with_u32(llama->bytes, "llama.attention.head_count_kv", 4))}),
                      "llama_f32.gguf: tensor blk.0.attn_k.weight has shape [16, 32], expected [32, 32]");
    const auto g = file("gpt2.gguf");
    CHECK_ERROR(load_model({bytes_file("gpt2.gguf", with_u32(g->bytes, "gpt2.feed_forward_length", 64))}),
                      "gpt2.gguf: tensor blk.0.ffn_up.weight has shape [128, 32], expected [64, 32]");
    const auto q = file("llama_q8_0.gguf");
    CHECK_ERROR(load_model({bytes_file("llama_q8_0.gguf", with_u32(q->bytes, "llama.feed_forward_length", 96))}),
                      "llama_q8_0.gguf: tensor blk.0.ffn_gate.weight has shape [64, 32], expected [96, 32]");
  }
  SECTION("a missing tensor") {
    auto bytes = patched(llama->bytes, "output_norm.weight", "output_norX.weight");
    CHECK_ERROR(load_model({bytes_file("llama_f32.gguf", bytes)}),
                      "llama_f32.gguf: missing tensor output_norm.weight");
    const auto g = file("gpt2.gguf");
    CHECK_ERROR(load_model({bytes_file("gpt2.gguf", patched(g->bytes, "position_embd.weight", "position_embX.weight"))}),
                      "gpt2.gguf: missing tensor position_embd.weight");
  }
  SECTION("token ids out of range") {
    auto m = load_model({llama});
    auto s = m->model().new_session();
    const int ids[] = {1, 307};
    CHECK_ERROR(m->model().decode(*s, ids, 2), "decode: token id 307 at index 1 is out of range [0, 307)");
    auto l = load_model({file("llama2c_cls.bin")});
    auto ls = l->model().new_session();
    const int big = 64;
    CHECK_ERROR(l->model().decode(*ls, &big, 1), "token id 64 at index 0 is out of range [0, 64)");
    std::vector<int> seventeen(17, 3);
    CHECK_ERROR(l->model().decode(*ls, seventeen.data(), 17), "context overflow");
  }
  SECTION("a truncated llama2.c checkpoint") {
    auto cut = file("llama2c_cls.bin", "cut.bin");
    auto bytes = cut->bytes;
    bytes.resize(bytes.size() - 4);
    CHECK_ERROR(load_model({bytes_file("cut.bin", bytes)}), "cut.bin: not a model file");
  }
}
