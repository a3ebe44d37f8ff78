// Model-level benchmark: decode tokens/s and prefill time of a llama2.c-format checkpoint, f32 or
// q8_0, natively or in wasm (Node, NODERAWFS), with the method of ../shared/anchors (onnxruntime-web)
// so that the two engines' figures compare:
//
//   decode   positions 0..steps-1 (200); the prompt ids are forced (BOS first), then the argmax is
//            fed back; the clock starts after the first forward pass; tok/s = (steps-1) / elapsed.
//            One cold pass after loading, untimed warm-up passes (at least one and at least
//            --warmup-s seconds: V8 runs wasm in its baseline tier first and optimises hot functions
//            later), then --reps timed passes; the median is reported.
//   prefill  the first N tokens of the generated sequence (64 and 256; decoding continues past
//            `steps`, untimed, when N > steps) in one forward pass from position 0, last-token
//            logits only; one warm-up, median of --prefill-reps (5), in ms.
//   generate (with --tokenizer) the same greedy decode through generate::Generation (sampler, text
//            streaming, stop checks), to show what the generation loop costs per token.
//
// Implied rates, printed with each figure:
//   GB/s     weight bytes read per token (ModelInfo::weight_bytes: every matrix incl. the output
//            projection, plus the norm vectors; the embedding row is not counted) × tokens/s.
//            Decode also reads the KV cache (kv_gbs): 2 × layers × kv_dim × 4 B × positions.
//   GFLOP/s  2 × (parameters in matrix multiplies) per token — q, k, v, o, the FFN and the output
//            projection (prefill: output projection for the last token only) — plus attention:
//            4 × n_heads × head_dim × keys per layer and query (q·k and p·v), summed over the
//            positions actually computed. `gflops_matmul` leaves attention out.
//
// CHECKPOINT is any model file the engine loads (llama2.c .bin, GGUF in any of its types);
// --quantize TYPE (q8_0, q4_0, q4_k; --q8 = --quantize q8_0) quantizes its f32 matrices at load.
// usage: bench_models CHECKPOINT.bin [--q8] [--quantize TYPE] [--steps 200] [--prompt "1 9038 2501 263 931"] [--reps 3]
//          [--warmup-s 10] [--prefill 64,256] [--prefill-reps 5] [--tokenizer tokenizer.bin] [--quick]
//          [--no-decode] [--label NAME] [--threads N] [--limits] [--at 200,2048]
// --threads N: the engine's work split over N threads (core/parallel.h; default 1).
// --at P,…: decode speed at position P (long context): the cache is filled by a prefill of P tokens
//   (untimed), then 32 single-token steps from P are timed, 1 warm-up + 5 reps (the cache cut back to P
//   each time), median ("decode_at" lines); one session per position (and cache), all their timed runs
//   alternated in each rep. Needs a model whose context holds P + 32 positions.
// --kv-cache f32|q8_0|f32,q8_0: how the session's KV cache stores keys and values (nn/kv_cache.h; default
//   f32); with both, --at times them alternated in one process (one decode_at line each).
// --limits: first measure what the machine gives N threads in this build ("limits" line): memory
//   read GB/s (kernels::matvec over 128 MiB, split over the threads) and the SIMD peaks of the f32
//   step in GFLOP/s and of the integer step in G op/s (bench/limits.h).
// One JSON line per measurement on stdout ("load", "decode", "prefill", "generate"); progress on stderr.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "bench_util.h"
#include "core/error.h"
#include "core/parallel.h"
#include "generate/generator.h"
#include "kernels/kernels.h"
#include "limits.h"
#include "runtime/loader.h"

using namespace attnlens;
using bench::cpu_ms;
using bench::kPlatform;
using bench::now_ms;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[(v.size() - 1) / 2];  // the lower middle, as bench_ort.mjs takes it
}

constexpr int kAtSteps = 32;  // --at: steps timed from each position

struct Options {
  std::string checkpoint;
  std::string tokenizer;
  std::string label;
  std::string quantize = "none";
  std::string kv_cache = "f32";
  bool decode = true;
  int steps = 200;
  std::vector<int> prompt{1, 9038, 2501, 263, 931};
  int reps = 3;
  double warmup_s = 10;
  std::vector<int> prefill{64, 256};
  int prefill_reps = 5;
  int threads = 1;
  bool limits = false;
  std::vector<int> at;
};

[[noreturn]] void usage(const char* msg) {
  std::fprintf(stderr, "bench_models: %s\n", msg);
  std::fprintf(stderr,
               "usage: bench_models CHECKPOINT.bin [--q8] [--quantize TYPE] [--steps 200] [--prompt \"1 9038 2501 263 931\"] [--reps 3]\n"
               "         [--warmup-s 10] [--prefill 64,256] [--prefill-reps 5] [--tokenizer tokenizer.bin] [--quick]\n"
               "         [--no-decode] [--label NAME] [--threads N] [--limits] [--at 200,2048] [--kv-cache f32|q8_0]\n");
  std::exit(2);
}

std::vector<int> parse_ints(const std::string& s) {
  std::vector<int> out;
  std::string t = s;
  std::replace(t.begin(), t.end(), ',', ' ');
  std::istringstream in(t);
  for (int x; in >> x;) out.push_back(x);
  return out;
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage(("missing value after " + a).c_str());
      return argv[++i];
    };
    if (a == "--q8") o.quantize = "q8_0";
    else if (a == "--quantize") o.quantize = value();
    else if (a == "--no-decode") o.decode = false;
    else if (a == "--quick") {
      o.reps = 1;
      o.warmup_s = 2;
      o.prefill_reps = 3;
    } else if (a == "--steps") o.steps = std::atoi(value().c_str());
    else if (a == "--prompt") o.prompt = parse_ints(value());
    else if (a == "--reps") o.reps = std::atoi(value().c_str());
    else if (a == "--warmup-s") o.warmup_s = std::atof(value().c_str());
    else if (a == "--prefill") o.prefill = parse_ints(value());
    else if (a == "--prefill-reps") o.prefill_reps = std::atoi(value().c_str());
    else if (a == "--tokenizer") o.tokenizer = value();
    else if (a == "--label") o.label = value();
    else if (a == "--threads") o.threads = std::atoi(value().c_str());
    else if (a == "--limits") o.limits = true;
    else if (a == "--at") o.at = parse_ints(value());
    else if (a == "--kv-cache") o.kv_cache = value();
    else if (!a.empty() && a[0] == '-') usage(("unknown option " + a).c_str());
    else if (o.checkpoint.empty()) o.checkpoint = a;
    else usage("more than one checkpoint");
  }
  if (o.checkpoint.empty()) usage("no checkpoint");
  if (o.steps < 2 || o.prompt.empty() || o.reps < 1 || o.prefill_reps < 1 || o.threads < 1) usage("bad numbers");
  return o;
}

int argmax(const float* x, int n) {
  int best = 0;
  for (int i = 1; i < n; ++i)
    if (x[i] > x[best]) best = i;
  return best;
}

// Work per token, from the model's shape.
struct Costs {
  double layer_matmul_params = 0;  // per token, all layers
  double head_params = 0;          // output projection
  double attn_per_key = 0;         // flops per (query, key) pair summed over layers: 4·n_heads·head_dim·layers
  double kv_bytes_per_pos = 0;     // K and V bytes of one position, all layers
  double weight_bytes = 0;

  // Decode of positions [p0, p1): flops per token, averaged.
  double decode_flops(int p0, int p1, bool attention) const {
    double keys = 0;
    for (int p = p0; p < p1; ++p) keys += p + 1;
    const double per_tok = 2 * (layer_matmul_params + head_params);
    return per_tok + (attention ? attn_per_key * keys / (p1 - p0) : 0);
  }
  double decode_kv_bytes(int p0, int p1) const {
    double keys = 0;
    for (int p = p0; p < p1; ++p) keys += p + 1;
    return kv_bytes_per_pos * keys / (p1 - p0);
  }
  // Prefill of n tokens from position 0 (logits of the last token only): total flops.
  double prefill_flops(int n, bool attention) const {
    const double keys = double(n) * (n + 1) / 2;
    return 2 * (layer_matmul_params * n + head_params) + (attention ? attn_per_key * keys : 0);
  }
};

Costs costs_of(const models::ModelInfo& i) {
  Costs c;
  const double d = i.d_model, qd = double(i.n_heads) * i.head_dim, kvd = double(i.n_kv_heads) * i.head_dim;
  const int ffn_mats = i.architecture == "llama" ? 3 : 2;  // SwiGLU: gate, up, down; GPT-2: up, down
  c.layer_matmul_params = i.n_layers * (d * qd + 2 * d * kvd + qd * d + ffn_mats * d * i.d_ff);
  c.head_params = double(i.vocab_size) * d;
  c.attn_per_key = 4 * qd * i.n_layers;
  c.kv_bytes_per_pos = 2.0 * i.n_layers * kvd * sizeof(float);
  c.weight_bytes = double(i.weight_bytes);
  return c;
}

std::string json_str(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\';
    out += ch;
  }
  return out + "\"";
}

std::string json_nums(const std::vector<double>& v, int prec) {
  std::string out = "[";
  char buf[64];
  for (size_t i = 0; i < v.size(); ++i) {
    std::snprintf(buf, sizeof buf, "%s%.*f", i ? "," : "", prec, v[i]);
    out += buf;
  }
  return out + "]";
}

// One greedy decode pass: positions 0..steps-1, prompt forced. Returns tok/s, fills tokens.
struct Pass {
  double tok_per_s = 0, first_ms = 0;
  std::vector<int> tokens;
};

Pass decode_pass(const models::Model& model, models::Session& s, const std::vector<int>& prompt, int steps) {
  Pass r;
  const int vocab = model.info().vocab_size;
  s.reset();
  int token = prompt[0];
  r.tokens.push_back(token);
  const double t0 = now_ms();
  double t_start = t0;
  for (int pos = 0; pos < steps; ++pos) {
    const float* logits = model.decode(s, &token, 1);
    token = pos + 1 < int(prompt.size()) ? prompt[pos + 1] : argmax(logits, vocab);
    if (pos + 1 < steps) r.tokens.push_back(token);
    if (pos == 0) {
      t_start = now_ms();
      r.first_ms = t_start - t0;
    }
  }
  r.tok_per_s = (steps - 1) / ((now_ms() - t_start) / 1000);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  Options o = parse(argc, argv);
  const int threads = parallel::reserve(o.threads);
  if (threads < o.threads) {
    std::fprintf(stderr, "bench_models: only %d threads available\n", threads);
    return 1;
  }
  parallel::Threads use(o.threads);
  if (o.limits) {
    std::printf("{\"type\":\"limits\",\"platform\":\"%s\",\"simd\":\"%s\",\"threads\":%d,\"read_gbs\":%.2f,\"peak_gflops\":%.2f,"
                "\"peak_int_gops\":%.2f}\n",
                kPlatform, kernels::simd_arch_name(), o.threads, bench::read_gbs(), bench::peak_gflops(o.threads),
                bench::peak_int_gops(o.threads));
    std::fflush(stdout);
  }
  try {
    runtime::LoadOptions lo;
    lo.format = models::parse_weight_format(o.quantize);
    std::vector<runtime::FilePtr> files{bench::read_file("bench_models", o.checkpoint)};
    if (!o.tokenizer.empty()) files.push_back(bench::read_file("bench_models", o.tokenizer));
    const double tl = now_ms();
    auto loaded = runtime::load_model(files, lo);
    const double load_ms = now_ms() - tl;
    files.clear();
    const models::Model& model = loaded->model();
    const models::ModelInfo& info = model.info();
    Costs c = costs_of(info);
    std::string label = o.label;
    if (label.empty()) {
      label = o.checkpoint.substr(o.checkpoint.find_last_of('/') + 1);
      if (label.size() > 4 && label.compare(label.size() - 4, 4, ".bin") == 0) label.resize(label.size() - 4);
    }
    const std::string common = "\"platform\":\"" + std::string(kPlatform) + "\",\"simd\":\"" +
                               kernels::simd_arch_name() + "\",\"model\":" + json_str(label) + ",\"weights\":\"" +
                               info.weight_dtype + "\",\"threads\":" + std::to_string(o.threads);
    std::printf(
        "{\"type\":\"load\",%s,\"load_ms\":%.1f,\"params\":%lld,\"weight_bytes\":%zu,\"matmul_params_per_token\":%.0f,"
        "\"d_model\":%d,\"layers\":%d,\"heads\":%d,\"kv_heads\":%d,\"d_ff\":%d,\"vocab\":%d,\"context\":%d}\n",
        common.c_str(), load_ms, static_cast<long long>(info.n_params), info.weight_bytes,
        c.layer_matmul_params + c.head_params, info.d_model, info.n_layers, info.n_heads, info.n_kv_heads, info.d_ff,
        info.vocab_size, info.context_length);
    std::fflush(stdout);

    const int max_prefill = o.prefill.empty() ? 0 : *std::max_element(o.prefill.begin(), o.prefill.end());
    const int max_at = o.at.empty() ? 0 : *std::max_element(o.at.begin(), o.at.end()) + kAtSteps;
    const int capacity = std::max({o.steps, max_prefill, max_at});
    if (capacity > info.context_length) {
      std::fprintf(stderr, "bench_models: %d positions do not fit in the context length %d\n", capacity,
                   info.context_length);
      return 1;
    }
    // One session per KV cache type asked for ("f32,q8_0": both, alternated in the --at runs).
    std::vector<std::string> kv_names;
    for (size_t a = 0, b; a <= o.kv_cache.size(); a = b + 1) {
      b = o.kv_cache.find(',', a);
      if (b == std::string::npos) b = o.kv_cache.size();
      kv_names.push_back(o.kv_cache.substr(a, b - a));
    }
    std::vector<std::unique_ptr<models::Session>> sessions;
    for (const std::string& kv : kv_names) sessions.push_back(model.new_session(capacity, nn::parse_kv_type(kv, "--kv-cache")));
    models::Session& s = *sessions[0];
    c.kv_bytes_per_pos = 2.0 * info.n_layers * double(s.cache.row_bytes());

    // --- decode at long positions: one session per (position, cache), each filled by a prefill of p
    // tokens; then their timed runs alternated, every position and cache in every round, so that a
    // drift of the machine's speed moves all of them alike (the 2048 ÷ 200 ratios are what --at is for)
    if (!o.at.empty()) {
      std::vector<std::vector<int>> at_ids;  // per position: the prompt's first id, then a fixed spread
      for (int p : o.at) {
        std::vector<int> ids(size_t(p) + kAtSteps);
        for (size_t i = 0; i < ids.size(); ++i) ids[i] = i == 0 ? o.prompt[0] : int(3 + (i * 7919) % (info.vocab_size - 3));
        at_ids.push_back(std::move(ids));
      }
      struct AtRun {
        int p;
        size_t kv;
        const std::vector<int>* ids;
        models::Session* session;
        std::unique_ptr<models::Session> own;  // positions after the first: their own session
        std::vector<double> tok_s;
      };
      std::vector<AtRun> at_runs;
      for (size_t a = 0; a < o.at.size(); ++a)
        for (size_t k = 0; k < sessions.size(); ++k) {
          AtRun r{o.at[a], k, &at_ids[a], sessions[k].get(), nullptr, {}};
          if (a > 0) {
            r.own = model.new_session(capacity, nn::parse_kv_type(kv_names[k], "--kv-cache"));
            r.session = r.own.get();
          }
          r.session->reset();
          model.decode(*r.session, r.ids->data(), r.p);  // the cache now holds p positions
          at_runs.push_back(std::move(r));
        }
      for (int round = 0; round <= 5; ++round)
        for (AtRun& r : at_runs) {
          r.session->cache.truncate(r.p);
          const double t0 = now_ms();
          for (int i = 0; i < kAtSteps; ++i) model.decode(*r.session, &(*r.ids)[size_t(r.p) + i], 1);
          const double ms = now_ms() - t0;
          if (round > 0) r.tok_s.push_back(kAtSteps / (ms / 1000));
        }
      for (AtRun& r : at_runs) {
        Costs ck = c;
        ck.kv_bytes_per_pos = 2.0 * info.n_layers * double(sessions[r.kv]->cache.row_bytes());
        const double tps = median(r.tok_s);
        std::printf("{\"type\":\"decode_at\",%s,\"position\":%d,\"steps\":%d,\"tok_s\":%s,\"tok_s_median\":%.2f,\"gbs\":%.2f,\"kv_gbs\":%.3f,"
                    "\"kv_cache\":\"%s\",\"kv_bytes\":%.0f}\n",
                    common.c_str(), r.p, kAtSteps, json_nums(r.tok_s, 2).c_str(), tps, c.weight_bytes * tps / 1e9,
                    ck.decode_kv_bytes(r.p, r.p + kAtSteps) * tps / 1e9, kv_names[r.kv].c_str(), ck.kv_bytes_per_pos * r.p);
        std::fprintf(stderr, "  %s %s %s KV %s decode at %d: %.2f tok/s\n", label.c_str(), kPlatform, info.weight_dtype.c_str(),
                     kv_names[r.kv].c_str(), r.p, tps);
      }
      std::fflush(stdout);
      for (AtRun& r : at_runs) r.own.reset();
    }
    if (!o.decode && o.prefill.empty()) return 0;

    // --- decode
    Pass cold = decode_pass(model, s, o.prompt, o.steps);
    std::fprintf(stderr, "  %s %s %s cold: %.2f tok/s (first step %.1f ms)\n", label.c_str(), kPlatform,
                 info.weight_dtype.c_str(), cold.tok_per_s, cold.first_ms);
    std::vector<int> sequence = cold.tokens;  // the prefill prompts are its prefixes
    if (max_prefill > int(sequence.size())) {
      // Continue the cold pass's greedy decode, untimed, to have max_prefill tokens.
      int token = sequence.back();
      while (int(sequence.size()) < max_prefill) {
        const float* logits = model.decode(s, &token, 1);
        token = argmax(logits, info.vocab_size);
        sequence.push_back(token);
      }
    }
    if (o.decode) {
      int warm = 0;
      const double tw = now_ms();
      while (warm < 1 || (now_ms() - tw) / 1000 < o.warmup_s) {
        Pass p = decode_pass(model, s, o.prompt, o.steps);
        ++warm;
        std::fprintf(stderr, "  %s %s %s warm-up %d: %.2f tok/s\n", label.c_str(), kPlatform, info.weight_dtype.c_str(),
                     warm, p.tok_per_s);
      }
      std::vector<double> runs;
      bool differ = false;
      const double c0 = cpu_ms(), w0 = now_ms();
      for (int r = 0; r < o.reps; ++r) {
        Pass p = decode_pass(model, s, o.prompt, o.steps);
        differ |= p.tokens != cold.tokens;
        runs.push_back(p.tok_per_s);
        std::fprintf(stderr, "  %s %s %s rep %d: %.2f tok/s\n", label.c_str(), kPlatform, info.weight_dtype.c_str(), r,
                     p.tok_per_s);
      }
      const double cpu_per_wall = (cpu_ms() - c0) / (now_ms() - w0);
      const double tps = median(runs);
      const double flops = c.decode_flops(1, o.steps, true), flops_mm = c.decode_flops(1, o.steps, false);
      std::string head;
      for (int i = 0; i < 16 && i < int(cold.tokens.size()); ++i) head += (i ? " " : "") + std::to_string(cold.tokens[i]);
      std::printf(
          "{\"type\":\"decode\",%s,\"steps\":%d,\"cold_tok_s\":%.2f,\"first_step_ms\":%.2f,\"warmup_passes\":%d,"
          "\"tok_s\":%s,\"tok_s_median\":%.2f,\"tok_s_best\":%.2f,\"gbs\":%.2f,\"kv_gbs\":%.3f,\"gflops\":%.2f,"
          "\"gflops_matmul\":%.2f,\"cpu_per_wall\":%.2f,\"tokens_head\":\"%s\"%s}\n",
          common.c_str(), o.steps, cold.tok_per_s, cold.first_ms, warm, json_nums(runs, 2).c_str(), tps,
          *std::max_element(runs.begin(), runs.end()), c.weight_bytes * tps / 1e9,
          c.decode_kv_bytes(1, o.steps) * tps / 1e9, flops * tps / 1e9, flops_mm * tps / 1e9, cpu_per_wall, head.c_str(),
          differ ? ",\"tokens_differ_between_passes\":true" : "");
      std::fflush(stdout);
    }

    // --- prefill
    for (int n : o.prefill) {
      if (n < 1) continue;
      std::vector<double> times;
      double cpu = 0, wall = 0;
      for (int r = 0; r <= o.prefill_reps; ++r) {  // r == 0: the warm-up
        s.reset();
        const double c0 = cpu_ms(), t0 = now_ms();
        model.decode(s, sequence.data(), n);
        const double ms = now_ms() - t0;
        if (r > 0) {
          times.push_back(ms);
          wall += ms;
          cpu += cpu_ms() - c0;
        }
      }
      const double ms = median(times);
      const double tps = n / (ms / 1000);
      std::printf(
          "{\"type\":\"prefill\",%s,\"tokens\":%d,\"ms\":%s,\"ms_median\":%.2f,\"tok_s\":%.1f,\"gflops\":%.2f,"
          "\"gflops_matmul\":%.2f,\"gbs\":%.2f,\"cpu_per_wall\":%.2f}\n",
          common.c_str(), n, json_nums(times, 2).c_str(), ms, tps, c.prefill_flops(n, true) / (ms / 1000) / 1e9,
          c.prefill_flops(n, false) / (ms / 1000) / 1e9, c.weight_bytes / (ms / 1000) / 1e9, cpu / wall);
      std::fprintf(stderr, "  %s %s %s prefill %d: %.2f ms\n", label.c_str(), kPlatform, info.weight_dtype.c_str(), n,
                   ms);
      std::fflush(stdout);
    }

    // --- the same decode through the generation loop (sampler + text streaming)
    if (loaded->tokenizer()) {
      generate::GenerateOptions go;
      go.sampling.temperature = 0;
      go.max_new_tokens = o.steps - int(o.prompt.size());
      generate::PromptFormat pf = loaded->prompt_format();
      pf.stop_tokens.clear();  // random weights may well pick EOS: decode the full length anyway
      std::vector<double> runs;
      size_t text_bytes = 0;
      for (int r = 0; r < o.reps + 1; ++r) {
        generate::GenerateResult g =
            generate::generate_from_tokens(model, *loaded->tokenizer(), pf, s, o.prompt, go);
        text_bytes = g.text.size();
        if (r > 0) runs.push_back(g.decoded / (g.decode_ms / 1000));
      }
      const double tps = median(runs);
      std::printf("{\"type\":\"generate\",%s,\"new_tokens\":%d,\"text_bytes\":%zu,\"tok_s\":%s,\"tok_s_median\":%.2f}\n",
                  common.c_str(), go.max_new_tokens, text_bytes, json_nums(runs, 2).c_str(), tps);
      std::fprintf(stderr, "  %s %s %s generate: %.2f tok/s\n", label.c_str(), kPlatform, info.weight_dtype.c_str(), tps);
      std::fflush(stdout);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "bench_models: %s\n", e.what());
    return 1;
  }
  return 0;
}
