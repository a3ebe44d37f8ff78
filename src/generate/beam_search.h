// Beam search (seed 004 §"decoding strategies"), with the semantics of Hugging Face's generate()
// (BeamSearchScorer / BeamHypotheses as of transformers 4.40), so that a model gives the same
// translation here as there:
//   * every step, each live beam's next-token log-probabilities go through the logits processors
//     (processors.h) and get the beam's score added; the best 2·num_beams (beam, token) pairs over
//     all beams are taken in order of score;
//   * an end-of-sequence candidate ranked among the first num_beams finishes a hypothesis scored
//     sum_logprobs / generated_length ^ length_penalty (generated_length counts the EOS, not the
//     prompt); the first num_beams other candidates become the next beams;
//   * the search stops at max_new_tokens, or once num_beams hypotheses are finished and
//       early_stopping true:   nothing more is needed;
//       false (default):       the best live beam cannot beat the worst hypothesis if it ended now;
//       "never":               it cannot beat it at the longest length still possible;
//   * at the end, live beams count as hypotheses too (unless the search was already done), and the
//     best-scoring one is returned (with its EOS, when it ended with one).
// At the first step all beams hold the same prompt; beams 2… start at −10⁹ so that only the first
// one spreads (as generate() does).
//
// Each beam is its own Session (its KV cache); a beam continuing another one copies its state. The
// attention of every forward pass is kept per beam as a shared history, so the returned hypothesis
// comes with exactly the weights of the passes that chose its tokens.
#pragma once
#include <memory>
#include <vector>

#include "generate/processors.h"
#include "models/model.h"
#include "nn/recorder.h"

namespace attnlens::generate {

enum class EarlyStopping { Heuristic, Done, Never };  // generate()'s early_stopping False, True, "never"

struct BeamOptions {
  int num_beams = 1;
  float length_penalty = 1.0f;
  EarlyStopping early_stopping = EarlyStopping::Heuristic;
};

// The attention records of one forward pass, and the passes before it in the same sequence.
struct PassRecord {
  std::vector<nn::AttentionRecord> records;  // decoder self / cross (no encoder records)
  std::shared_ptr<const PassRecord> previous;
};

struct Hypothesis {
  std::vector<int> tokens;  // the decoder sequence: prompt, generated tokens, EOS if it ended with one
  double score = 0;         // sum of log-probabilities / generated_length ^ length_penalty
  bool finished = false;    // ended with EOS
  std::shared_ptr<const PassRecord> passes;  // the last pass; null when attention was not recorded
};

class BeamSearch {
 public:
  // `main` has run the prompt (encoder and decoder prefill): `first_logits` are its output and its
  // recorder (if any) holds that pass's weights. Each beam gets a session of the same capacity.
  BeamSearch(const models::Model& model, models::Session& main, const std::vector<int>& prompt,
             const float* first_logits, const BeamOptions& beam, const ProcessorOptions& processors,
             const std::vector<int>& eos_tokens, int max_new_tokens);
  ~BeamSearch();
  // One step of every beam; false once the search is over (the result is then final).
  bool step();
  bool done() const { return done_; }
  // Ends the search now (an abort): the live beams are ranked with the hypotheses.
  void finish();
  // Every hypothesis kept, best first (up to num_beams).
  const std::vector<Hypothesis>& hypotheses() const { return ranked_; }
  int steps() const { return steps_; }

 private:
  struct Beam {
    std::vector<int> tokens;
    double score = 0;
    std::unique_ptr<models::Session> session;
    std::unique_ptr<nn::AttentionRecorder> recorder;
    // The passes run on its tokens, newest first: after a step they produced its tokens; once its last
    // token is run too (decoded_), the newest is the pass whose scores are in logprobs.
    std::shared_ptr<const PassRecord> passes;
    std::vector<double> logprobs;  // the last pass's processed log-probabilities + beam score
  };
  void score_beam(Beam& b, const float* logits, std::shared_ptr<const PassRecord> pass);
  void add_hypothesis(const Beam& b, int eos, double sum_logprobs, int generated_length,
                      std::shared_ptr<const PassRecord> passes);
  bool is_done(double best_sum_logprobs, int cur_len) const;
  std::shared_ptr<const PassRecord> take_pass(const nn::AttentionRecorder* rec, const Beam& b) const;

  const models::Model& model_;
  BeamOptions o_;
  ProcessorOptions processors_;
  std::vector<int> eos_;
  int prompt_len_, max_length_, vocab_;
  std::vector<Beam> beams_;
  std::vector<Hypothesis> hyps_, ranked_;
  double worst_ = 1e9;
  bool done_ = false, finished_ = false;
  bool decoded_ = true;  // the beams' last tokens have been run (their passes go one beyond their tokens)
  int steps_ = 0;
};

}  // namespace attnlens::generate
