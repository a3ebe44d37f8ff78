// What the recorded attention says about each head, computed from the weights alone.
//
// Head detectors, as TransformerLens defines them (transformer_lens/head_detector.py): a detection
// pattern D [n][n] of 0/1 marks the (query, key) pairs a head of that type attends to, and a head's
// score is the share of its attention that falls there, Σ A∘D / Σ A ("mul" error measure; with rows
// of A summing to 1 that is the mean over queries of the weight on the marked keys):
//   previous-token   D[i][i−1] = 1
//   duplicate-token  D[i][j] = 1 for j < i with token[j] = token[i]
//   induction        D[i][j] = 1 for 0 < j ≤ i with token[j−1] = token[i] (the token right after an earlier
//                    occurrence of the current one: the duplicate pattern shifted one key to the right)
// On a repeated random-token sequence (probe.h) these single out the heads of the induction circuit
// (Olsson et al. 2022, "In-context learning and induction heads").
//
// Per head and query position (a row p of weights over the keys):
//   entropy      H = −Σ_j p_j ln p_j  (nats; 0 for a row that puts all its weight on one key)
//   sink mass    p_0, the weight on the first token (Xiao et al. 2023, "attention sinks")
// Their per-head summaries average over the queries that can see more than one key (under a causal
// mask query 0 sees only itself: its entropy is always 0 and its sink mass always 1).
//
// Attention rollout (Abnar & Zuidema 2020, "Quantifying attention flow in transformers"): with the
// residual connection modelled as an identity term, each layer's mixing matrix is
//   Â_l = 0.5 · mean_heads(A_l) + 0.5 · I,   rows renormalized to sum to 1,
// and the rollout through layer l is R_l = Â_l · Â_{l−1} ··· Â_0: R_l[i][j] is how much of position
// i's representation after layer l traces back to input token j.
#pragma once
#include <vector>

#include "nn/recorder.h"

namespace attnlens::interp {

enum class Detector { PreviousToken, DuplicateToken, Induction };

// The detection pattern for these tokens, [n][n] row-major, 0 or 1, lower-triangular.
std::vector<float> detection_pattern(Detector d, const std::vector<int>& tokens);

// Σ A∘D / Σ A over one head's square attention A [n][n] (0 if A is all 0).
double detection_score(const float* attention, const float* pattern, int n);

// Scores of every head of every layer, [layer][head] (entropy and sink also [layer][head][position]).
struct HeadScores {
  int layers = 0, heads = 0, positions = 0;
  std::vector<float> previous_token, duplicate_token, induction;  // [layer][head]
  std::vector<float> entropy, sink;                               // [layer][head], means over queries
  std::vector<float> entropy_per_position, sink_per_position;     // [layer][head][position]

  // Adds `other` (same shape) to this one, and scales by f: for averaging over several sequences.
  void accumulate(const HeadScores& other);
  void scale(float f);
};

// From the records of one attention kind ("self" or "encoder") of a forward pass over `tokens` from
// position 0, every layer of it recorded with every head (throws attnlens::Error otherwise, naming
// what is missing). Causal self-attention and bidirectional encoder attention alike.
HeadScores score_heads(const nn::AttentionRecorder& recorder, nn::AttentionKind kind, const std::vector<int>& tokens);

// The rollout R_l for every layer l of that kind, [layer][n][n].
std::vector<float> attention_rollout(const nn::AttentionRecorder& recorder, nn::AttentionKind kind, int n);

}  // namespace attnlens::interp
