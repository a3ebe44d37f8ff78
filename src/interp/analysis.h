// The interpretability toolkit over any model the engine runs: one forward pass with predictions,
// logit lens, hidden states, head scores and rollout (analyze); activation patching between a clean
// and a corrupted input (patch, patch_sweep); the head detectors on the repeated random-token probe
// (run_probe). Everything works through the layers' hooks (nn/hooks.h) and the attention recorder,
// so it applies to every architecture built on the shared layers.
//
// Logit lens (nostalgebraist 2020, "interpreting GPT: the logit lens"): the residual stream after
// each layer l, passed through the model's final norm and unembedding (Model::unembed), read as the
// prediction the model would make if it stopped there. After the last layer it equals the output.
#pragma once
#include <vector>

#include "generate/predictions.h"
#include "interp/heads.h"
#include "interp/interventions.h"
#include "models/model.h"
#include "runtime/loader.h"

namespace attnlens::interp {

// The input of one forward pass from position 0.
struct Input {
  std::vector<int> tokens;       // decoder-only and encoder-only: the tokens; encoder–decoder: the target
  std::vector<int> source;       // encoder–decoder: the source
  std::vector<int> token_types;  // encoder-only (BERT): segment ids, or empty (all 0)
};

// The layers the lens, hidden states, probe and patching use unless told otherwise: the decoder's
// (Self) for decoder-only and encoder–decoder models, the encoder's for encoder-only ones.
nn::AttentionKind main_stack(const models::Model& m);

struct AnalyzeOptions {
  int top_k = 0;               // > 0: the top-k predictions at every position
  int lens_top_k = 0;          // > 0: the logit lens, top-k at every layer and position
  bool lens_logits = false;    // the logit lens's full logits [layer][position][vocab]
  bool hidden_states = false;  // the residual stream after each layer [layer][position][d_model]
  bool heads = false;          // head scores (detectors, entropy, sink) of this input's attention
  bool rollout = false;        // attention rollout [layer][position][position]
  std::vector<Ablation> ablations;
};

struct Analysis {
  int n = 0, vocab = 0, layers = 0, d_model = 0;
  nn::AttentionKind stack = nn::AttentionKind::Self;
  const float* logits = nullptr;     // [n][vocab] (the session's; null: an encoder without an MLM head)
  generate::TopK top;                // [n][k]
  std::vector<generate::TopK> lens;  // per layer, [n][k]
  std::vector<float> lens_logits;    // [layer][n][vocab]
  std::vector<float> hidden;         // [layer][n][d_model]
  HeadScores heads;
  std::vector<float> rollout;        // [layer][n][n]
};

// One forward pass over `in` from position 0 (the session is reset). `recorder`, if given, receives
// the attention of the pass (with the ablations applied); head scores and rollout need it to record
// every head of every layer (a private recorder is used when it is null).
Analysis analyze(const models::Model& m, models::Session& s, const Input& in, const AnalyzeOptions& o,
                 nn::AttentionRecorder* recorder = nullptr);

// ---- activation patching ----------------------------------------------------------------------

// logits[position][correct] − logits[position][incorrect]; position −1 = the last one.
struct LogitDiff {
  int position = -1;
  int correct = 0;
  int incorrect = 0;
};

// Denoise: run the corrupted input with one activation taken from the clean run (how much of the
// clean behaviour does it restore?). Noise: run the clean input with it taken from the corrupted run.
enum class Direction { Denoise, Noise };

struct PatchResult {
  double clean = 0, corrupted = 0;  // the metric on each run unpatched
  double patched = 0;               // on the patched run
};

// The two inputs must have the same shape (token counts, and source lengths for encoder–decoder).
// `recorder`, if given, receives the patched run's attention.
PatchResult patch(const models::Model& m, models::Session& s, const Input& clean, const Input& corrupted,
                  const LogitDiff& metric, const Site& site, Direction dir, nn::AttentionRecorder* recorder = nullptr);

struct PatchMap {
  double clean = 0, corrupted = 0;
  nn::HookPoint point = nn::HookPoint::HeadOutputs;
  int layers = 0, columns = 0;  // columns: heads (HeadOutputs) or positions (the others)
  std::vector<float> patched;   // [layer][column]: the metric with that one activation patched
};

// Every head of every layer (point HeadOutputs), or every (layer, position) of the other points.
PatchMap patch_sweep(const models::Model& m, models::Session& s, const Input& clean, const Input& corrupted,
                     const LogitDiff& metric, nn::HookPoint point, nn::AttentionKind stack, Direction dir);

// ---- the repeated random-token probe ---------------------------------------------------------

// `batch` sequences of BOS (when the tokenizer has one) + r + r, r being `length` tokens drawn
// uniformly (PCG32, from `seed`) from the ids that are not special tokens — TransformerLens's
// induction probe (random tokens repeated once; its head_detector prepends BOS). length 0 = as long
// as fits: min(50, (context − 1) / 2).
struct ProbeOptions {
  int length = 0;
  int batch = 4;
  uint64_t seed = 0;
  std::vector<Ablation> ablations;
};

struct ProbeResult {
  int length = 0;                         // r's length
  int offset = 0;                         // 1 with a BOS first, else 0
  std::vector<std::vector<int>> sequences;
  nn::AttentionKind stack = nn::AttentionKind::Self;
  HeadScores heads;  // averaged over the sequences
  // Mean next-token cross-entropy (nats) predicting r[1..] in the first and in the second copy
  // (NaN for an encoder-only model): induction makes the second far lower.
  double loss_first = 0, loss_second = 0;
};

// One probe sequence: [BOS] + r + r; *offset = 1 with the BOS, else 0.
std::vector<int> probe_sequence(const runtime::LoadedModel& lm, int length, uint64_t seed, int* offset = nullptr);
int probe_length(const models::Model& m, int requested);  // requested 0 = the default
ProbeResult run_probe(const runtime::LoadedModel& lm, models::Session& s, const ProbeOptions& o);

}  // namespace attnlens::interp
