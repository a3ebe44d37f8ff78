#include "interp/heads.h"

#include <cmath>

#include "core/error.h"

namespace attnlens::interp {

std::vector<float> detection_pattern(Detector d, const std::vector<int>& tokens) {
  const int n = int(tokens.size());
  std::vector<float> p(size_t(n) * n, 0.f);
  for (int i = 0; i < n; ++i) {
    float* row = p.data() + size_t(i) * n;
    switch (d) {
      case Detector::PreviousToken:
        if (i > 0) row[i - 1] = 1.f;
        break;
      case Detector::DuplicateToken:
        for (int j = 0; j < i; ++j) row[j] = tokens[j] == tokens[i] ? 1.f : 0.f;
        break;
      case Detector::Induction:
        for (int j = 1; j <= i; ++j) row[j] = tokens[j - 1] == tokens[i] ? 1.f : 0.f;
        break;
    }
  }
  return p;
}

double detection_score(const float* a, const float* pattern, int n) {
  double hit = 0, all = 0;
  for (size_t i = 0; i < size_t(n) * n; ++i) {
    hit += double(a[i]) * pattern[i];
    all += a[i];
  }
  return all > 0 ? hit / all : 0.0;
}

void HeadScores::accumulate(const HeadScores& o) {
  AL_CHECK(o.layers == layers && o.heads == heads, "head scores of different shapes cannot be averaged");
  auto add = [](std::vector<float>& a, const std::vector<float>& b) {
    if (a.size() != b.size()) {  // per-position arrays of sequences of other lengths: not averaged
      a.clear();
      return;
    }
    for (size_t i = 0; i < a.size(); ++i) a[i] += b[i];
  };
  for (auto [a, b] : {std::pair{&previous_token, &o.previous_token}, {&duplicate_token, &o.duplicate_token},
                      {&induction, &o.induction}, {&entropy, &o.entropy}, {&sink, &o.sink},
                      {&entropy_per_position, &o.entropy_per_position}, {&sink_per_position, &o.sink_per_position}})
    add(*a, *b);
  if (o.positions != positions) positions = 0;
}

void HeadScores::scale(float f) {
  for (auto* v : {&previous_token, &duplicate_token, &induction, &entropy, &sink, &entropy_per_position,
                  &sink_per_position})
    for (float& x : *v) x *= f;
}

namespace {

// The records of one kind, one per layer 0..L−1, each square over n positions from position 0 with
// every head recorded.
std::vector<const nn::AttentionRecord*> square_records(const nn::AttentionRecorder& recorder, nn::AttentionKind kind,
                                                       int n, const char* what) {
  std::vector<const nn::AttentionRecord*> out;
  for (const auto& r : recorder.records())
    if (r.kind == kind) {
      AL_CHECK(r.n_queries == n && r.n_keys == n && r.q_pos0 == 0, what, ": layer ", r.layer, " recorded ", r.n_queries,
               " queries over ", r.n_keys, " keys from position ", r.q_pos0, "; expected one pass over all ", n,
               " tokens from position 0");
      if (int(out.size()) <= r.layer) out.resize(size_t(r.layer) + 1, nullptr);
      out[size_t(r.layer)] = &r;
    }
  AL_CHECK(!out.empty(), what, ": no ", nn::attention_kind_name(kind), " attention was recorded");
  for (size_t l = 0; l < out.size(); ++l)
    AL_CHECK(out[l], what, ": layer ", l, " of the ", nn::attention_kind_name(kind), " attention was not recorded");
  return out;
}

}  // namespace

HeadScores score_heads(const nn::AttentionRecorder& recorder, nn::AttentionKind kind, const std::vector<int>& tokens) {
  const int n = int(tokens.size());
  AL_CHECK(n > 0, "head scores: no tokens");
  const auto records = square_records(recorder, kind, n, "head scores");
  HeadScores s;
  s.layers = int(records.size());
  s.heads = records[0]->n_heads;
  s.positions = n;
  const size_t lh = size_t(s.layers) * s.heads;
  for (auto* v : {&s.previous_token, &s.duplicate_token, &s.induction, &s.entropy, &s.sink}) v->assign(lh, 0.f);
  s.entropy_per_position.assign(lh * n, 0.f);
  s.sink_per_position.assign(lh * n, 0.f);
  const auto prev = detection_pattern(Detector::PreviousToken, tokens);
  const auto dup = detection_pattern(Detector::DuplicateToken, tokens);
  const auto ind = detection_pattern(Detector::Induction, tokens);
  const bool causal = kind != nn::AttentionKind::Encoder;
  const int first_query = causal && n > 1 ? 1 : 0;  // queries that see more than one key
  for (int l = 0; l < s.layers; ++l) {
    const nn::AttentionRecord& r = *records[size_t(l)];
    AL_CHECK(r.n_heads == s.heads, "head scores: layer ", l, " has ", r.n_heads, " heads, layer 0 has ", s.heads);
    for (int h = 0; h < s.heads; ++h) {
      const float* a = r.weights.data() + size_t(h) * n * n;
      const size_t at = size_t(l) * s.heads + h;
      double row_sum = 0;
      for (int i = 0; i < n * n; ++i) row_sum += a[i];
      AL_CHECK(row_sum > 0, "head scores: layer ", l, " head ", h, " was not recorded (select every head)");
      s.previous_token[at] = float(detection_score(a, prev.data(), n));
      s.duplicate_token[at] = float(detection_score(a, dup.data(), n));
      s.induction[at] = float(detection_score(a, ind.data(), n));
      double entropy_sum = 0, sink_sum = 0;
      for (int i = 0; i < n; ++i) {
        const float* p = a + size_t(i) * n;
        double e = 0;
        for (int j = 0; j < n; ++j)
          if (p[j] > 0.f) e -= double(p[j]) * std::log(double(p[j]));
        s.entropy_per_position[at * n + i] = float(e);
        s.sink_per_position[at * n + i] = p[0];
        if (i >= first_query) {
          entropy_sum += e;
          sink_sum += p[0];
        }
      }
      s.entropy[at] = float(entropy_sum / (n - first_query));
      s.sink[at] = float(sink_sum / (n - first_query));
    }
  }
  return s;
}

std::vector<float> attention_rollout(const nn::AttentionRecorder& recorder, nn::AttentionKind kind, int n) {
  const auto records = square_records(recorder, kind, n, "attention rollout");
  const size_t nn_ = size_t(n) * n;
  std::vector<float> out(records.size() * nn_);
  std::vector<double> mix(nn_), prev(nn_), next(nn_);
  for (size_t l = 0; l < records.size(); ++l) {
    const nn::AttentionRecord& r = *records[l];
    // Â = 0.5 · mean over heads + 0.5 · I, rows renormalized.
    for (size_t i = 0; i < nn_; ++i) mix[i] = 0;
    for (int h = 0; h < r.n_heads; ++h) {
      const float* a = r.weights.data() + size_t(h) * nn_;
      for (size_t i = 0; i < nn_; ++i) mix[i] += a[i];
    }
    for (int i = 0; i < n; ++i) {
      double* row = mix.data() + size_t(i) * n;
      double sum = 0;
      for (int j = 0; j < n; ++j) {
        row[j] = 0.5 * row[j] / r.n_heads + (i == j ? 0.5 : 0.0);
        sum += row[j];
      }
      for (int j = 0; j < n; ++j) row[j] /= sum;  // sum ≥ 0.5: the identity term
    }
    if (l == 0) {
      prev = mix;
    } else {  // R_l = Â_l · R_{l−1} (masked entries of Â are 0: a causal product stays triangular)
      for (size_t i = 0; i < nn_; ++i) next[i] = 0;
      for (int i = 0; i < n; ++i)
        for (int t = 0; t < n; ++t) {
          const double m = mix[size_t(i) * n + t];
          if (m == 0) continue;
          const double* src = prev.data() + size_t(t) * n;
          double* dst = next.data() + size_t(i) * n;
          for (int j = 0; j < n; ++j) dst[j] += m * src[j];
        }
      prev.swap(next);
    }
    for (size_t i = 0; i < nn_; ++i) out[l * nn_ + i] = float(prev[i]);
  }
  return out;
}

}  // namespace attnlens::interp
