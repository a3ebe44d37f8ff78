#include "generate/beam_search.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"

namespace attnlens::generate {

namespace {

struct Candidate {
  double score;
  int beam, token;
};

// Ranked by score; ties by beam then token, so that runs are reproducible.
bool better(const Candidate& a, const Candidate& b) {
  if (a.score != b.score) return a.score > b.score;
  if (a.beam != b.beam) return a.beam < b.beam;
  return a.token < b.token;
}

}  // namespace

BeamSearch::BeamSearch(const models::Model& model, models::Session& main, const std::vector<int>& prompt,
                       const float* first_logits, const BeamOptions& beam, const ProcessorOptions& processors,
                       const std::vector<int>& eos_tokens, int max_new_tokens)
    : model_(model), o_(beam), processors_(processors), eos_(eos_tokens) {
  AL_CHECK(o_.num_beams >= 2 && o_.num_beams <= 256, "num_beams must be in [2, 256] for beam search, got ",
           o_.num_beams);
  AL_CHECK(std::isfinite(o_.length_penalty), "length_penalty must be finite, got ", o_.length_penalty);
  AL_CHECK(!eos_.empty(), "beam search needs an end-of-sequence token");
  AL_CHECK(max_new_tokens >= 1, "beam search needs max_new_tokens ≥ 1, got ", max_new_tokens);
  vocab_ = model.info().vocab_size;
  AL_CHECK(vocab_ > 2 * o_.num_beams, "num_beams ", o_.num_beams, " is too large for a vocabulary of ", vocab_);
  check_processor_options(processors_, vocab_);
  prompt_len_ = int(prompt.size());
  max_length_ = prompt_len_ + max_new_tokens;
  const std::shared_ptr<const PassRecord> first = take_pass(main.recorder, Beam{});
  beams_.resize(size_t(o_.num_beams));
  for (int b = 0; b < o_.num_beams; ++b) {
    Beam& beam_b = beams_[size_t(b)];
    beam_b.tokens = prompt;
    beam_b.score = b == 0 ? 0.0 : -1e9;
    beam_b.session = model.new_session(main.cache.capacity(), main.cache.type());
    beam_b.session->copy_state_from(main);
    beam_b.session->should_stop = main.should_stop;  // abort() reaches every beam's passes
    beam_b.session->hooks = main.hooks;               // and ablations / observers every beam's layers
    if (main.recorder) {
      beam_b.recorder = std::make_unique<nn::AttentionRecorder>(*main.recorder);  // the same selection
      beam_b.recorder->clear();
      beam_b.session->recorder = beam_b.recorder.get();
    }
    score_beam(beam_b, first_logits, first);
  }
}

BeamSearch::~BeamSearch() = default;

std::shared_ptr<const PassRecord> BeamSearch::take_pass(const nn::AttentionRecorder* rec, const Beam& b) const {
  if (!rec) return nullptr;
  auto p = std::make_shared<PassRecord>();
  for (const nn::AttentionRecord& r : rec->records())
    if (r.kind != nn::AttentionKind::Encoder) p->records.push_back(r);
  p->previous = b.passes;
  return p;
}

// logprobs = processors(log_softmax(logits)) + score, from the pass `pass` (which becomes the beam's last).
void BeamSearch::score_beam(Beam& b, const float* logits, std::shared_ptr<const PassRecord> pass) {
  b.logprobs.resize(size_t(vocab_));
  double top = -INFINITY;
  for (int i = 0; i < vocab_; ++i) top = std::max(top, double(logits[i]));
  double sum = 0;
  for (int i = 0; i < vocab_; ++i) sum += std::exp(double(logits[i]) - top);
  const double log_z = top + std::log(sum);
  for (int i = 0; i < vocab_; ++i) b.logprobs[size_t(i)] = double(logits[i]) - log_z;
  ProcessorState st{&b.tokens, prompt_len_, max_length_ - prompt_len_, &eos_};
  apply_processors(processors_, st, b.logprobs.data(), vocab_);
  for (double& x : b.logprobs) x += b.score;
  b.passes = std::move(pass);
}

void BeamSearch::add_hypothesis(const Beam& b, int eos, double sum_logprobs, int generated_length,
                                std::shared_ptr<const PassRecord> passes) {
  const double score = sum_logprobs / std::pow(double(generated_length), double(o_.length_penalty));
  const size_t k = size_t(o_.num_beams);
  if (hyps_.size() < k || score > worst_) {
    Hypothesis h;
    h.tokens = b.tokens;
    if (eos >= 0) h.tokens.push_back(eos);
    h.score = score;
    h.finished = eos >= 0;
    h.passes = std::move(passes);
    hyps_.push_back(std::move(h));
    if (hyps_.size() > k) {  // drop the worst (the first of equals); the new worst is the second worst
      size_t worst = 0;
      for (size_t i = 1; i < hyps_.size(); ++i)
        if (hyps_[i].score < hyps_[worst].score) worst = i;
      hyps_.erase(hyps_.begin() + long(worst));
      worst_ = hyps_[0].score;
      for (const Hypothesis& h : hyps_) worst_ = std::min(worst_, h.score);
    } else {
      worst_ = std::min(score, worst_);
    }
  }
}

bool BeamSearch::is_done(double best_sum_logprobs, int cur_len) const {
  if (hyps_.size() < size_t(o_.num_beams)) return false;
  const double lp = o_.length_penalty;
  switch (o_.early_stopping) {
    case EarlyStopping::Done: return true;
    case EarlyStopping::Never:
      if (lp > 0) return worst_ >= best_sum_logprobs / std::pow(double(max_length_ - prompt_len_), lp);
      [[fallthrough]];
    case EarlyStopping::Heuristic: return worst_ >= best_sum_logprobs / std::pow(double(cur_len - prompt_len_), lp);
  }
  return false;
}

bool BeamSearch::step() {
  if (done_) return false;
  const int k = o_.num_beams;
  // The best 2k (beam, token) pairs, in order: kept sorted by insertion while scanning every beam's
  // scores (2k is small next to the vocabulary; this also keeps the code small).
  const size_t keep = size_t(2 * k);
  std::vector<Candidate> cands;
  cands.reserve(keep + 1);
  for (int b = 0; b < k; ++b) {
    const std::vector<double>& lp = beams_[size_t(b)].logprobs;
    for (int t = 0; t < vocab_; ++t) {
      const Candidate c{lp[size_t(t)], b, t};
      if (cands.size() == keep && !better(c, cands.back())) continue;
      size_t at = cands.size();
      while (at > 0 && better(c, cands[at - 1])) --at;
      cands.insert(cands.begin() + long(at), c);
      if (cands.size() > keep) cands.pop_back();
    }
  }

  const int cur_len = int(beams_[0].tokens.size());
  std::vector<Candidate> next;
  for (int rank = 0; rank < 2 * k && int(next.size()) < k; ++rank) {
    const Candidate& c = cands[size_t(rank)];
    if (std::find(eos_.begin(), eos_.end(), c.token) != eos_.end()) {
      if (rank >= k) continue;  // an EOS ranked below the first num_beams does not count
      const Beam& b = beams_[size_t(c.beam)];
      add_hypothesis(b, c.token, c.score, cur_len + 1 - prompt_len_, b.passes);
    } else {
      next.push_back(c);
    }
  }
  AL_CHECK(int(next.size()) == k, "beam search: fewer than ", k, " candidates that are not end-of-sequence tokens");
  done_ = is_done(cands[0].score, cur_len + 1);

  // The next beams: a beam's first continuation takes over its session, further ones copy it;
  // sessions of beams that have no continuation are reused for those copies.
  std::vector<int> children(size_t(k), 0);
  for (const Candidate& c : next) children[size_t(c.beam)]++;
  std::vector<std::unique_ptr<models::Session>> spare;
  std::vector<std::unique_ptr<nn::AttentionRecorder>> spare_rec;
  for (int b = 0; b < k; ++b)
    if (!children[size_t(b)]) {
      spare.push_back(std::move(beams_[size_t(b)].session));
      spare_rec.push_back(std::move(beams_[size_t(b)].recorder));
    }
  std::vector<Beam> beams(static_cast<size_t>(k));
  std::vector<char> claimed(size_t(k), 0);
  for (int i = 0; i < k; ++i) {
    const Candidate& c = next[size_t(i)];
    Beam& parent = beams_[size_t(c.beam)];
    Beam& child = beams[size_t(i)];
    child.tokens = parent.tokens;
    child.tokens.push_back(c.token);
    child.score = c.score;
    child.passes = parent.passes;
    if (!claimed[size_t(c.beam)]) {  // (a parent's session is unchanged until every child has copied it)
      claimed[size_t(c.beam)] = 1;
      child.session = std::move(parent.session);
      child.recorder = std::move(parent.recorder);
    } else {
      child.session = std::move(spare.back());
      spare.pop_back();
      child.recorder = std::move(spare_rec.back());
      spare_rec.pop_back();
      const Beam* first = nullptr;
      for (int j = 0; j < i && !first; ++j)
        if (next[size_t(j)].beam == c.beam) first = &beams[size_t(j)];
      child.session->copy_state_from(*first->session, false);
    }
  }
  beams_ = std::move(beams);
  ++steps_;
  decoded_ = false;
  if (done_ || cur_len + 1 >= max_length_) {
    finish();
    return false;
  }
  for (Beam& b : beams_) {
    const int token = b.tokens.back();
    const float* logits = model_.decode(*b.session, &token, 1);
    score_beam(b, logits, take_pass(b.recorder.get(), b));
  }
  decoded_ = true;
  return true;
}

void BeamSearch::finish() {
  if (finished_) return;
  if (!done_)
    for (const Beam& b : beams_) {
      // The passes that produced its tokens: without the one already run on its last token, if any.
      auto passes = decoded_ && b.passes ? b.passes->previous : b.passes;
      add_hypothesis(b, -1, b.score, int(b.tokens.size()) - prompt_len_, passes);
    }
  done_ = finished_ = true;
  // best first (equal scores keep their order); a handful of hypotheses: insertion
  ranked_.clear();
  for (const Hypothesis& h : hyps_) {
    size_t at = ranked_.size();
    while (at > 0 && h.score > ranked_[at - 1].score) --at;
    ranked_.insert(ranked_.begin() + long(at), h);
  }
}

}  // namespace attnlens::generate
