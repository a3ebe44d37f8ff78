// What the interpretability toolkit costs (issue 13's targets), natively or in wasm (Node, NODERAWFS).
// Every variant is timed in the same process, in rotation within each round (so that a slower stretch
// of this shared machine hits them all alike), by the process's CPU time (other processes' load does
// not count; their cache pollution still does); the median of the rounds is reported, with the ratio
// to the first variant of its group.
//
//   decode   greedy decode of positions 0..steps-1 from the model's first token, one token per pass:
//     off        the session without hooks (what decoding costs with the toolkit unused)
//     noop-hooks a ForwardHooks that does nothing installed: every hook point of every layer is called
//                (an upper bound of what the points cost when hooks are off: then they are a null test)
//     top-k      + the top-k predictions of every step (generate::TopK, k = --k): target ≤ 5% overhead
//   forward  one pass over the first --n tokens of that sequence from position 0, logits of every position:
//     forward    interp::analyze with nothing asked (a plain forward pass)
//     top-k      + top-k predictions at every position
//     lens       + the logit lens: top-k at every layer and position: target ≤ 2× a forward pass
//     lens-full  + the full lens logits [layer][position][vocab]
//
// --decode-only leaves out the forward group (bench/interp.mjs's A/B runs of decode alone).
// --variant off|noop-hooks|top-k [--calls C]: no timing rounds, only C (default 1) greedy decodes of that
// variant after the set-up, for counting instructions (valgrind --tool=callgrind; bench/interp.mjs
// --instructions): the difference of two counts with different C is what one decode of the variant costs.
//
// usage: bench_interp MODEL_FILE... [--steps 128] [--n 64] [--k 10] [--rounds 7] [--label NAME] [--quick]
//                     [--decode-only] [--variant NAME [--calls C]]
// One JSON line per variant on stdout; progress on stderr.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench_util.h"
#include "core/error.h"
#include "generate/predictions.h"
#include "interp/analysis.h"
#include "runtime/loader.h"

using namespace attnlens;
using bench::cpu_ms;
using bench::kPlatform;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct Options {
  std::vector<std::string> files;
  std::string label;
  int steps = 128, n = 64, k = 10, rounds = 7;
  bool decode_only = false;
  std::string variant;
  int calls = 1;
};

[[noreturn]] void usage(const char* msg) {
  std::fprintf(stderr, "bench_interp: %s\nusage: bench_interp MODEL_FILE... [--steps 128] [--n 64] [--k 10] "
                       "[--rounds 7] [--label NAME] [--quick] [--decode-only]\n", msg);
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> int {
      if (i + 1 >= argc) usage(("missing value after " + a).c_str());
      return std::atoi(argv[++i]);
    };
    if (a == "--steps") o.steps = value();
    else if (a == "--n") o.n = value();
    else if (a == "--k") o.k = value();
    else if (a == "--rounds") o.rounds = value();
    else if (a == "--quick") o.rounds = 3;
    else if (a == "--decode-only") o.decode_only = true;
    else if (a == "--calls") o.calls = value();
    else if (a == "--variant") {
      if (i + 1 >= argc) usage("missing value after --variant");
      o.variant = argv[++i];
    }
    else if (a == "--label") {
      if (i + 1 >= argc) usage("missing value after --label");
      o.label = argv[++i];
    } else if (!a.empty() && a[0] == '-') usage(("unknown option " + a).c_str());
    else o.files.push_back(a);
  }
  if (o.files.empty()) usage("no model files");
  if (o.steps < 2 || o.n < 1 || o.k < 1 || o.rounds < 1) usage("bad numbers");
  return o;
}

int argmax(const float* x, int n) {
  int best = 0;
  for (int i = 1; i < n; ++i)
    if (x[i] > x[best]) best = i;
  return best;
}

class NoopHooks : public nn::ForwardHooks {
 public:
  void at(const nn::HookSite& site, float* x) override { sink_ += x[0] * 0.f + site.n; }
  double sink_ = 0;
};

void report(const Options& o, const char* group, const char* variant, double value, const char* unit, double base) {
  std::printf("{\"platform\":\"%s\",\"label\":\"%s\",\"group\":\"%s\",\"variant\":\"%s\",\"%s\":%.4f,\"ratio\":%.4f}\n",
              kPlatform, o.label.c_str(), group, variant, unit, value, value / base);
  std::fflush(stdout);
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse(argc, argv);
  std::vector<runtime::FilePtr> files;
  for (const auto& f : o.files) files.push_back(bench::read_file("bench_interp", f));
  auto lm = runtime::load_model(files);
  const models::Model& m = lm->model();
  AL_CHECK(m.kind() == models::ModelKind::DecoderOnly, "bench_interp times decoder-only models");
  const int V = m.info().vocab_size;
  const int steps = std::min(o.steps, m.info().context_length);
  const int n = std::min(o.n, steps);
  auto s = m.new_session();
  int first = lm->tokenizer() && lm->tokenizer()->bos_id() >= 0 ? lm->tokenizer()->bos_id() : 0;

  // The greedy sequence (and a warm-up).
  std::vector<int> seq{first};
  s->reset();
  for (int p = 0; p + 1 < steps; ++p) seq.push_back(argmax(m.decode(*s, &seq[size_t(p)], 1), V));

  NoopHooks noop;
  generate::TopK top;
  enum { Off, Noop, TopK, kDecodeVariants };
  const char* decode_names[] = {"off", "noop-hooks", "top-k"};
  // Each timed sample repeats its work `reps` times, enough for ≥ kSampleMs of CPU time (a tiny model's
  // single pass is too short for the clock and this machine's interruptions).
  constexpr double kSampleMs = 60;
  int decode_reps = 1, forward_reps = 1;
  auto decode = [&](int variant) {
    s->hooks = variant == Noop ? &noop : nullptr;
    const double t0 = cpu_ms();
    for (int r = 0; r < decode_reps; ++r) {
      s->reset();
      for (int p = 0; p < steps; ++p) {
        const float* logits = m.decode(*s, &seq[size_t(p)], 1);
        if (variant == TopK) top.compute(logits, 1, V, o.k);
      }
    }
    const double ms = cpu_ms() - t0;
    s->hooks = nullptr;
    return double(steps) * decode_reps * 1000.0 / ms;  // tokens/s
  };

  interp::Input in;
  in.tokens.assign(seq.begin(), seq.begin() + n);
  const char* forward_names[] = {"forward", "top-k", "lens", "lens-full"};
  auto forward = [&](int variant) {
    interp::AnalyzeOptions a;
    if (variant == 1) a.top_k = o.k;
    if (variant == 2) a.lens_top_k = o.k;
    if (variant == 3) a.lens_logits = true;
    const double t0 = cpu_ms();
    for (int r = 0; r < forward_reps; ++r) interp::analyze(m, *s, in, a);
    return (cpu_ms() - t0) / forward_reps;
  };

  if (!o.variant.empty()) {  // counting instructions: one variant, o.calls decodes, nothing else
    int v = 0;
    while (v < kDecodeVariants && o.variant != decode_names[v]) ++v;
    if (v == kDecodeVariants) usage(("unknown variant " + o.variant).c_str());
    decode_reps = std::max(0, o.calls);
    report(o, "decode", decode_names[v], decode_reps ? decode(v) : 0., "tok_s", 1.);
    return int(noop.sink_ < 0);
  }
  std::vector<std::vector<double>> dec(kDecodeVariants), fwd(4);
  for (int v = 0; v < kDecodeVariants; ++v) decode(v);  // warm-up (wasm tiers up), then calibration
  const int forward_variants = o.decode_only ? 0 : 4;
  for (int v = 0; v < forward_variants; ++v) forward(v);
  decode_reps = std::max(1, int(kSampleMs / (steps * 1000.0 / decode(Off))));
  if (forward_variants) forward_reps = std::max(1, int(kSampleMs / forward(0)));
  for (int r = 0; r < o.rounds; ++r) {
    for (int i = 0; i < kDecodeVariants; ++i) {
      const int v = (i + r) % kDecodeVariants;  // rotate the order from round to round
      dec[size_t(v)].push_back(decode(v));
    }
    for (int i = 0; i < forward_variants; ++i) {
      const int v = (i + r) % 4;
      fwd[size_t(v)].push_back(forward(v));
    }
    std::fprintf(stderr, "bench_interp %s %s: round %d/%d\n", kPlatform, o.label.c_str(), r + 1, o.rounds);
  }
  const double base_tps = median(dec[0]);
  for (int v = 0; v < kDecodeVariants; ++v) report(o, "decode", decode_names[v], median(dec[size_t(v)]), "tok_s", base_tps);
  if (!forward_variants) return int(noop.sink_ < 0);
  const double base_ms = median(fwd[0]);
  for (int v = 0; v < 4; ++v) report(o, "forward", forward_names[v], median(fwd[size_t(v)]), "ms", base_ms);
  return int(noop.sink_ < 0);
}
