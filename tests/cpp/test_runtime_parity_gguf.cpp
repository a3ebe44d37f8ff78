// GGUF (converted as llama.cpp's convert_hf_to_gguf.py does) and llama2.c checkpoints loaded by
// runtime::load_model equal PyTorch: Llama in f32 and f16, GPT-2 from the same weights as the
// Hugging Face folder, a llama2.c checkpoint with a separate classifier. Then bad input.
// Fixtures: tests/fixtures/models_torch (tests/fixtures/make_model_fixtures.py).
#include <cstring>

#include "formats/model_file.h"
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

// q8_0 (and every other GGML block type) is checked against llama.cpp itself on files llama.cpp's
// quantizer made: tests/cpp/test_runtime_parity_llamacpp.cpp. (The bound-based q8_0 check that was
// here allowed more than the whole q8_0-vs-f32 drift: an engine that widened q8_0 to f32 passed it.)

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
    REQUIRE(bytes.size() > 4);
    bytes.resize(bytes.size() - 4);
    CHECK_ERROR(load_model({bytes_file("cut.bin", bytes)}), "cut.bin: not a model file");
  }
}

TEST_CASE("quantize at load: q8_0, q4_0 and q4_k from f32 and f16 files; non-finite weights are errors",
          "[runtime][parity][gguf][quantize]") {
  using attnlens::models::WeightFormat;
  // End to end only: the quantizers are checked byte for byte against llama.cpp's
  // (test_kernels_quant.cpp) and quantized models against llama.cpp's logits
  // (test_runtime_parity_llamacpp.cpp). Here: the types chosen per matrix, the bytes held, and
  // logits that move from the f32 model's more for 4 bits than for 8.
  Reference f32("llama_ref.json");
  for (const char* name : {"llama_f32.gguf", "llama_f16.gguf"}) {
    double drift[3] = {0, 0, 0};
    int i = 0;
    for (WeightFormat f : {WeightFormat::Q8_0, WeightFormat::Q4_0, WeightFormat::Q4_K}) {
      attnlens::runtime::LoadOptions o;
      o.format = f;
      auto m = load_model({file(name)}, o);
      const auto& info = m->model().info();
      INFO(name << " quantized " << attnlens::models::weight_format_name(f) << ": " << info.weight_dtype);
      // The fixture's matrices are 32 and 64 wide: q4_k falls back to q5_0 (rows that are not whole
      // 256-blocks), as llama.cpp's quantizer does.
      const std::string want = f == WeightFormat::Q8_0 ? "q8_0" : f == WeightFormat::Q4_0 ? "q4_0" : "q5_0";
      CHECK(info.weight_dtype == want);
      REQUIRE(info.weight_types.size() == 1);
      const double bits = 8.0 * double(info.weight_types[0].bytes) / double(info.weight_types[0].params);
      CHECK(bits == (f == WeightFormat::Q8_0 ? 8.5 : f == WeightFormat::Q4_0 ? 4.5 : 5.5));
      auto s = m->model().new_session();
      const float* lg = m->model().decode(*s, f32.tokens.data(), f32.T(), true);
      for (size_t k = 0; k < f32.logits.size(); ++k) {
        REQUIRE(std::isfinite(lg[k]));
        drift[i] = std::max(drift[i], double(std::fabs(lg[k] - f32.logits[k])));
      }
      ++i;
    }
    INFO(name << ": largest logit change from the f32 model: q8_0 " << drift[0] << ", q4_0 " << drift[1] << ", q5_0 "
              << drift[2]);
    CHECK(drift[0] > 0);
    CHECK(drift[0] < drift[2]);
    CHECK(drift[2] < drift[1]);
  }
  // A NaN / infinity in an f32 weight: every quantize path names the tensor (a NaN cast to an
  // integer would be undefined behaviour); f16 weights are checked as they are kept as stored.
  const auto bytes = file("llama_f32.gguf")->bytes;
  const auto mf = attnlens::read_gguf({bytes.data(), bytes.size(), "llama_f32.gguf"});
  const auto& t = mf.tensors.get("blk.1.ffn_up.weight");
  const size_t at = size_t(t.data - bytes.data()) + 4 * 37;
  for (float bad : {NAN, INFINITY}) {
    auto patched = bytes;
    std::memcpy(patched.data() + at, &bad, 4);
    for (WeightFormat f : {WeightFormat::AsStored, WeightFormat::Q8_0, WeightFormat::Q4_0, WeightFormat::Q4_K}) {
      attnlens::runtime::LoadOptions o;
      o.format = f;
      CHECK_ERROR(load_model({bytes_file("llama_f32.gguf", patched)}, o),
                  str("llama_f32.gguf: tensor blk.1.ffn_up.weight holds ", std::isnan(bad) ? "NaN" : "an infinity",
                      " at element 37 of ", t.numel()));
    }
  }
  const auto hb = file("llama_f16.gguf")->bytes;
  const auto mh = attnlens::read_gguf({hb.data(), hb.size(), "llama_f16.gguf"});
  auto patched = hb;
  for (uint16_t h : {uint16_t(0x7C00), uint16_t(0xFC00), uint16_t(0x7E00)}) {  // +inf, -inf, NaN
    std::memcpy(patched.data() + size_t(mh.tensors.get("blk.0.attn_v.weight").data - hb.data()) + 2 * 5, &h, 2);
    CHECK_ERROR(load_model({bytes_file("llama_f16.gguf", patched)}),
                str("llama_f16.gguf: tensor blk.0.attn_v.weight holds ", h == 0x7E00 ? "NaN" : "an infinity",
                    " at element 5 of 512"));
  }
}
