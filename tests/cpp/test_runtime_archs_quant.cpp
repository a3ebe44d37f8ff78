// Every decoder-only architecture in GGUF files made by llama.cpp's own quantizer, against llama.cpp's
// logits on the same files (tests/fixtures/archs/make_arch_quant_fixtures.py: Q4_K_M for each, and a
// second type — Q2_K, Q3_K_M, q4_0, q4_1, q5_0, q5_1, q8_0 — so that every block type, and the fallback
// types llama.cpp picks for rows that are not a multiple of 256, appears in some architecture).
// Teacher-forced over 33 positions, f32 KV cache; each file runs as one prefill, token by token and in
// two chunks (the matmul and the matvec kernels of every type it holds).
//
// How close, and why. The engine quantizes the activations exactly as llama.cpp pairs them (q8_0 for
// the 32-element blocks, q8_K for the K-quants, q8_1 for q4_1/q5_1) and sums the same integer products
// per block, so a dot product differs from llama.cpp's only by the order of float additions of its
// block partial sums (~1e-7 relative). That stays ~1e-6 of the logit range, except where the order moves
// an activation of a later matrix across an 8-bit rounding boundary (x·127/amax within ~1e-7 of k + ½):
// that one step then differs — as it does between two llama.cpp builds (AVX2 vs AVX-512 sum in other
// orders). With D = max |llama.cpp(quantized file) − llama.cpp(f32 file)|, llama.cpp's own quantization
// drift (from the manifest), every file must give
//   * everywhere: max |ours − llama.cpp| ≤ 0.25·D;
//   * at all but ≤ 3 isolated positions: ≤ 1e-4 × the logit range, and an RMS there ≤ 0.03 × llama.cpp's
//     RMS drift;
//   * except, in a file of two layers or more, one tail: when the step is taken differently in a layer
//     below the last at position p, that position's K/V rows of the layers above differ and every later
//     position attends to them, so all of p…T−1 move (gemma3-f-q4_k_m: x·127/amax = 1.50000095 in our
//     f32 product at position 10, a q8_0 block of layer 0, found by printing the near-ties of the
//     activation quantizer; before it, every position agrees to ~2e-6). The tail's RMS must stay
//     ≤ 0.25 × llama.cpp's RMS drift, like its max. In a one-layer file every K/V row depends on its own
//     token only: a tail there is a failure;
//   * wherever llama.cpp's top-2 margin exceeds the position's tolerance, llama.cpp's top-1 token.
// Gemma and GPT-NeoX load with the llamacpp_gelu parity option (llama.cpp's f16-table GELU, see
// test_runtime_archs.cpp): with the exact GELU, their FFN activations differ by ~1e-3 before they are
// quantized to 8 bits, which is a difference of the model, not of the quantized kernels.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "runtime/loader.h"
#include "llamacpp_compare.h"
#include "test_util.h"

using namespace attnlens;

namespace {

std::string qpath(const std::string& f) { return testutil::fixture_path("archs/quant/" + f); }

runtime::FilePtr load_file(const std::string& name) {
  auto f = std::make_shared<runtime::File>();
  f->name = name;
  f->bytes = testutil::read_bytes(qpath(name));
  return f;
}

constexpr int kLlamaCppContext = 1024;  // llamacpp_logits.mjs's context (Phi-3 takes its long RoPE factors)

using llamacpp_compare::Row;
using llamacpp_compare::compare_row;

// Logits of every position: one prefill, token by token, two chunks.
std::vector<std::vector<float>> run_three_ways(const models::Model& model, const std::vector<int>& ids) {
  const int T = int(ids.size()), V = model.info().vocab_size;
  std::vector<std::vector<float>> out(3, std::vector<float>(size_t(T) * V));
  {
    auto s = model.new_session(kLlamaCppContext);
    const float* lg = model.decode(*s, ids.data(), T, true);
    std::copy(lg, lg + size_t(T) * V, out[0].begin());
  }
  {
    auto s = model.new_session(kLlamaCppContext);
    for (int t = 0; t < T; ++t) {
      const float* lg = model.decode(*s, &ids[size_t(t)], 1);
      std::copy(lg, lg + V, out[1].begin() + long(size_t(t) * V));
    }
  }
  {
    auto s = model.new_session(kLlamaCppContext);
    const int k = T / 2;
    const float* lg = model.decode(*s, ids.data(), k, true);
    std::copy(lg, lg + size_t(k) * V, out[2].begin());
    lg = model.decode(*s, ids.data() + k, T - k, true);
    std::copy(lg, lg + size_t(T - k) * V, out[2].begin() + long(size_t(k) * V));
  }
  return out;
}

bool gelu_architecture(const std::string& name) {
  return name == "gemma" || name == "gemma2" || name == "gemma3" || name == "gptneox";
}

}  // namespace

TEST_CASE("architectures in llama.cpp-quantized GGUF files: logits match llama.cpp's on the same file",
          "[runtime][archs][quant][llamacpp]") {
  const auto man = nlohmann::json::parse(testutil::read_text(qpath("manifest.json")));
  // The architectures of test_runtime_archs.cpp, each in Q4_K_M.
  const std::set<std::string> archs = {"llama3", "mistral", "qwen2", "qwen3", "gemma",
                                       "gemma2", "gemma3", "phi3", "gptneox"};
  std::set<std::string> names, block_types;
  for (const auto& [name, shapes] : man.items()) {
    names.insert(name);
    bool q4_k_m = false;
    for (const auto& [shape, entry] : shapes.items()) {
      const std::vector<int> ids = entry.at("ids").get<std::vector<int>>();
      const int T = int(ids.size()), V = entry.at("vocab");
      REQUIRE(T >= 32);
      const double range = entry.at("logit_range");
      for (const auto& [ftype, info] : entry.at("files").items()) {
        q4_k_m |= ftype == "q4_k_m";
        for (const auto& [type, tensors] : info.at("tensor_types").items()) block_types.insert(type);
        const std::string label = name + "-" + shape + "-" + ftype;
        const auto want = testutil::read_f32(qpath(info.at("logits")));
        REQUIRE(want.size() == size_t(T) * V);
        const double drift = info.at("drift_max"), drift_rms = info.at("drift_rms");
        const double exact_tol = 1e-4 * range, tol = 0.25 * drift, rms_tol = 0.03 * drift_rms;

        runtime::LoadOptions opt;
        opt.llamacpp_gelu = gelu_architecture(name);
        auto m = runtime::load_model({load_file(info.at("gguf"))}, opt);
        const models::ModelInfo& mi = m->model().info();
        REQUIRE(mi.vocab_size == V);
        CHECK(mi.n_layers == entry.at("layers").get<int>());
        const auto runs = run_three_ways(m->model(), ids);
        const char* ways[] = {"prefill", "token by token", "two chunks"};
        const int layers = entry.at("layers");
        for (int r = 0; r < 3; ++r) {
          std::vector<Row> rows(static_cast<size_t>(T));
          std::vector<bool> inexact(static_cast<size_t>(T));
          for (int t = 0; t < T; ++t) {
            const float* ours = &runs[size_t(r)][size_t(t) * V];
            rows[size_t(t)] = compare_row(ours, &want[size_t(t) * V], V, exact_tol);
            inexact[size_t(t)] = rows[size_t(t)].max > exact_tol;
            // Top-1 is checked against the tolerance the position met (1e-4 x range, else 0.25·D).
            if (inexact[size_t(t)]) rows[size_t(t)] = compare_row(ours, &want[size_t(t) * V], V, tol);
          }
          // A tail: the positions from `tail` to the end all inexact (a rounding step taken differently in
          // a layer below the last reaches every later position through the KV cache).
          int tail = T;
          while (tail > 0 && inexact[size_t(tail - 1)]) --tail;
          if (T - tail <= 3) tail = T;
          double max = 0, head2 = 0, tail2 = 0;
          int isolated = 0, top1_checked = 0, top1_bad = 0;
          for (int t = 0; t < T; ++t) {
            const Row& row = rows[size_t(t)];
            max = std::max(max, row.max);
            (t < tail ? head2 : tail2) += row.sum2;
            isolated += t < tail && inexact[size_t(t)];
            top1_checked += row.top1_checked;
            top1_bad += !row.top1_ok;
          }
          const double head_rms = std::sqrt(head2 / double(size_t(tail) * V));
          const double tail_rms = tail < T ? std::sqrt(tail2 / double(size_t(T - tail) * V)) : 0.0;
          INFO(label << " " << ways[r] << ": |ours - llama.cpp| max " << max << "; positions beyond 1e-4 x range ("
                     << exact_tol << "): " << isolated << " isolated"
                     << (tail < T ? ", and every one from " + std::to_string(tail) : std::string()) << " of " << T
                     << "; rms " << head_rms << (tail < T ? " before, " + std::to_string(tail_rms) + " in the tail"
                                                          : std::string())
                     << "; llama.cpp's own drift from f32: max " << drift << ", rms " << drift_rms << "; tolerance max "
                     << tol << ", rms " << rms_tol << " (tail " << 0.25 * drift_rms << "); top-1 checked at "
                     << top1_checked << " positions, " << top1_bad << " differ");
          CHECK(max <= tol);
          CHECK(isolated <= 3);
          CHECK(head_rms <= rms_tol);
          if (tail < T) {
            CHECK(layers > 1);  // one layer: every K/V row is a function of its own token
            CHECK(tail >= 1);
            CHECK(tail_rms <= 0.25 * drift_rms);
          }
          CHECK(top1_checked >= T / 2);
          CHECK(top1_bad == 0);
          if (r == 0)
            WARN(label << ": |ours - llama.cpp| max " << max << " (" << max / range << " of the range); "
                       << T - isolated - (T - tail) << " of " << T << " positions within 1e-4 x range"
                       << (tail < T ? " (all from position " + std::to_string(tail) + " beyond: a tail)" : "")
                       << "; llama.cpp's drift from f32 max " << drift << ", rms " << drift_rms << "; top-1 equal at "
                       << top1_checked - top1_bad << " of " << top1_checked << " positions with a clear margin");
        }
      }
    }
    CHECK(q4_k_m);
  }
  CHECK(names == archs);
  // Every block type llama.cpp's quantizer makes for these ftypes, fallbacks included.
  for (const char* t : {"q2_K", "q3_K", "q4_K", "q5_K", "q6_K", "q4_0", "q4_1", "q5_0", "q5_1", "q8_0"}) {
    INFO(t);
    CHECK(block_types.count(t) == 1);
  }
}
