#include "interp/analysis.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/error.h"
#include "generate/sampler.h"
#include "kernels/top_k.h"

namespace attnlens::interp {

using models::ModelKind;
using nn::AttentionKind;
using nn::HookPoint;

nn::AttentionKind main_stack(const models::Model& m) {
  return m.kind() == ModelKind::EncoderOnly ? AttentionKind::Encoder : AttentionKind::Self;
}

namespace {

// Installs hooks and a recorder on a session for one scope, restoring what was there.
class SessionScope {
 public:
  SessionScope(models::Session& s, nn::ForwardHooks* hooks, nn::AttentionRecorder* recorder)
      : s_(s), hooks_(s.hooks), recorder_(s.recorder) {
    s.hooks = hooks;
    s.recorder = recorder;
  }
  ~SessionScope() {
    s_.hooks = hooks_;
    s_.recorder = recorder_;
  }

 private:
  models::Session& s_;
  nn::ForwardHooks* hooks_;
  nn::AttentionRecorder* recorder_;
};

void check_input(const models::Model& m, const Input& in, const char* what) {
  AL_CHECK(!in.tokens.empty(), what, ": no tokens");
  if (m.kind() == ModelKind::EncoderDecoder)
    AL_CHECK(!in.source.empty(), what, ": an encoder-decoder model needs a source");
}

int layers_of(const models::Model& m, AttentionKind stack) {
  const auto& i = m.info();
  if (stack == AttentionKind::Encoder) return m.kind() == ModelKind::EncoderDecoder ? i.n_encoder_layers : i.n_layers;
  return i.n_layers;
}

void check_stack(const models::Model& m, AttentionKind stack, const char* what) {
  const bool ok = m.kind() == ModelKind::EncoderOnly  ? stack == AttentionKind::Encoder
                  : m.kind() == ModelKind::DecoderOnly ? stack == AttentionKind::Self
                                                       : true;
  AL_CHECK(ok, what, ": a ", models::model_kind_name(m.kind()), " model has no ", nn::attention_kind_name(stack),
           " attention layers");
}

// One pass from position 0: the logits of every position (all_logits) or of the last one; null for
// an encoder without a masked-LM head.
const float* run(const models::Model& m, models::Session& s, const Input& in, bool all_logits) {
  const int n = int(in.tokens.size());
  switch (m.kind()) {
    case ModelKind::DecoderOnly:
      s.reset();
      return m.decode(s, in.tokens.data(), n, all_logits);
    case ModelKind::EncoderDecoder:
      m.encode(s, in.source.data(), int(in.source.size()));  // resets the decoder
      return m.decode(s, in.tokens.data(), n, all_logits);
    case ModelKind::EncoderOnly:
      m.encode(s, in.tokens.data(), n, in.token_types.empty() ? nullptr : in.token_types.data());
      return m.has_mlm_head() ? m.mlm_logits(s) : nullptr;
  }
  return nullptr;
}

// The logit lens. After the last layer it is the output itself (a.logits); every other layer's
// residual stream [n][d_model] goes through the final norm and the unembedding (Model::unembed) as
// rows of ONE product over the layers — (L−1)·n rows against the [vocab][d_model] unembedding, which
// nn::linear then reads once per chunk of a few hundred rows rather than once per layer — and each
// row's top-k is taken from the block just made. The full [layer][n][vocab] logits are kept only when asked
// (then unembedded straight into them); otherwise a block holds as many layers as fit in
// kBlockFloats (at least one).
void logit_lens(const models::Model& m, models::Session& s, const Interventions& iv, const AnalyzeOptions& o,
                Analysis& a) {
  constexpr size_t kBlockFloats = size_t(4) << 20;  // 16 MiB of logits
  const int L = a.layers, n = a.n, V = a.vocab, d = a.d_model;
  const size_t layer_logits = size_t(n) * V;
  a.lens.resize(size_t(L));
  if (o.lens_logits) a.lens_logits.resize(size_t(L) * layer_logits);
  const int per_block = o.lens_logits ? std::max(1, L - 1)
                                      : int(std::clamp<size_t>(kBlockFloats / layer_logits, 1, size_t(std::max(1, L - 1))));
  std::vector<float> x, block;
  if (!o.lens_logits && L > 1) block.resize(size_t(std::min(per_block, L - 1)) * layer_logits);
  for (int l0 = 0; l0 + 1 < L; l0 += per_block) {
    const int count = std::min(per_block, L - 1 - l0);
    x.resize(size_t(count) * n * d);  // the residual streams of layers l0 … l0 + count − 1, [layer][n][d_model]
    for (int l = l0; l < l0 + count; ++l) {
      const auto* rows = iv.captured(a.stack, l, HookPoint::ResidualPost);
      AL_CHECK(rows && rows->size() == size_t(n) * d, "logit lens: layer ", l, " was not captured");
      std::copy(rows->begin(), rows->end(), x.begin() + long(size_t(l - l0) * n * d));
    }
    float* out = o.lens_logits ? a.lens_logits.data() + size_t(l0) * layer_logits : block.data();
    m.unembed(s, x.data(), count * n, out);
    if (o.lens_top_k > 0)
      for (int l = l0; l < l0 + count; ++l) a.lens[size_t(l)].compute(out + size_t(l - l0) * layer_logits, n, V, o.lens_top_k);
  }
  if (o.lens_top_k > 0) a.lens[size_t(L - 1)].compute(a.logits, n, V, o.lens_top_k);
  if (o.lens_logits) std::copy(a.logits, a.logits + layer_logits, a.lens_logits.begin() + long(size_t(L - 1) * layer_logits));
}

}  // namespace

Analysis analyze(const models::Model& m, models::Session& s, const Input& in, const AnalyzeOptions& o,
                 nn::AttentionRecorder* recorder) {
  check_input(m, in, "analyze");
  AL_CHECK(o.top_k >= 0 && o.lens_top_k >= 0, "analyze: top-k must be ≥ 0");
  const auto& info = m.info();
  Analysis a;
  a.n = int(in.tokens.size());
  a.vocab = info.vocab_size;
  a.d_model = info.d_model;
  a.stack = main_stack(m);
  a.layers = layers_of(m, a.stack);
  const bool lens = o.lens_top_k > 0 || o.lens_logits;

  Interventions iv(info.head_dim);
  iv.ablations = o.ablations;
  if (lens || o.hidden_states)
    for (int l = 0; l < a.layers; ++l) iv.capture(a.stack, l, HookPoint::ResidualPost);
  nn::AttentionRecorder own;
  if (!recorder && (o.heads || o.rollout)) recorder = &own;
  const bool hooked = !iv.ablations.empty() || lens || o.hidden_states;
  {
    SessionScope scope(s, hooked ? &iv : s.hooks, recorder ? recorder : s.recorder);
    if (recorder) recorder->clear();
    a.logits = run(m, s, in, true);
  }
  if (lens && m.kind() == ModelKind::EncoderOnly)
    AL_CHECK(a.logits, "logit lens: this ", info.architecture, " model has no output head (masked-LM) to read the layers with");

  if (a.logits && o.top_k > 0) a.top.compute(a.logits, a.n, a.vocab, o.top_k);

  if (o.hidden_states) {
    a.hidden.resize(size_t(a.layers) * a.n * a.d_model);
    for (int l = 0; l < a.layers; ++l) {
      const auto* rows = iv.captured(a.stack, l, HookPoint::ResidualPost);
      AL_CHECK(rows && rows->size() == size_t(a.n) * a.d_model, "hidden states: layer ", l, " was not captured");
      std::copy(rows->begin(), rows->end(), a.hidden.begin() + long(size_t(l) * a.n * a.d_model));
    }
  }

  if (lens) logit_lens(m, s, iv, o, a);

  if (o.heads) a.heads = score_heads(*recorder, a.stack, a.stack == AttentionKind::Encoder && m.kind() == ModelKind::EncoderDecoder ? in.source : in.tokens);
  if (o.rollout) a.rollout = attention_rollout(*recorder, a.stack, a.n);
  return a;
}

// ---- patching -----------------------------------------------------------------------------------

namespace {

struct MetricRun {
  const models::Model& m;
  models::Session& s;
  const LogitDiff& metric;

  double operator()(const Input& in) const {
    const int n = int(in.tokens.size());
    const int pos = metric.position < 0 ? n - 1 : metric.position;
    // Only the last position's logits unless another one is measured (decoders).
    const bool last_only = pos == n - 1 && m.kind() != ModelKind::EncoderOnly;
    const float* logits = run(m, s, in, !last_only);
    AL_CHECK(logits, "patching: this ", m.info().architecture, " model has no output logits to measure");
    const float* row = logits + size_t(last_only ? 0 : pos) * m.info().vocab_size;
    return double(row[metric.correct]) - double(row[metric.incorrect]);
  }
};

void check_pair(const models::Model& m, const Input& clean, const Input& corrupted, const LogitDiff& metric) {
  check_input(m, clean, "patching (clean input)");
  check_input(m, corrupted, "patching (corrupted input)");
  AL_CHECK(clean.tokens.size() == corrupted.tokens.size(), "patching: the clean input has ", clean.tokens.size(),
           " tokens and the corrupted one ", corrupted.tokens.size(), "; they must have the same length");
  AL_CHECK(clean.source.size() == corrupted.source.size(), "patching: the clean source has ", clean.source.size(),
           " tokens and the corrupted one ", corrupted.source.size(), "; they must have the same length");
  const int n = int(clean.tokens.size()), vocab = m.info().vocab_size;
  AL_CHECK(metric.position >= -1 && metric.position < n, "patching: metric position ", metric.position,
           " is out of range [0, ", n, ") (or −1 for the last)");
  AL_CHECK(metric.correct >= 0 && metric.correct < vocab && metric.incorrect >= 0 && metric.incorrect < vocab,
           "patching: metric token ids ", metric.correct, ", ", metric.incorrect, " must be in [0, ", vocab, ")");
}

void check_site(const models::Model& m, const Site& site, int n, int source_n) {
  check_stack(m, site.stack, "patching");
  const auto& info = m.info();
  const int layers = layers_of(m, site.stack);
  AL_CHECK(site.layer >= 0 && site.layer < layers, "patching: layer ", site.layer, " is out of range [0, ", layers, ")");
  if (site.stack == AttentionKind::Cross)
    AL_CHECK(site.point == HookPoint::HeadOutputs || site.point == HookPoint::AttentionOut,
             "patching: cross-attention has heads and an attention output only");
  AL_CHECK(site.head >= -1 && site.head < info.n_heads, "patching: head ", site.head, " is out of range [0, ",
           info.n_heads, ")");
  AL_CHECK(site.head < 0 || site.point == HookPoint::HeadOutputs, "patching: a head is given for a site of ",
           nn::hook_point_name(site.point), " (heads only)");
  const int positions = site.stack == AttentionKind::Encoder && m.kind() == ModelKind::EncoderDecoder ? source_n : n;
  AL_CHECK(site.position >= -1 && site.position < positions, "patching: position ", site.position,
           " is out of range [0, ", positions, ")");
}

}  // namespace

PatchResult patch(const models::Model& m, models::Session& s, const Input& clean, const Input& corrupted,
                  const LogitDiff& metric, const Site& site, Direction dir, nn::AttentionRecorder* recorder) {
  check_pair(m, clean, corrupted, metric);
  check_site(m, site, int(clean.tokens.size()), int(clean.source.size()));
  const Input& source = dir == Direction::Denoise ? clean : corrupted;
  const Input& target = dir == Direction::Denoise ? corrupted : clean;
  MetricRun measure{m, s, metric};
  PatchResult r;
  Interventions iv(m.info().head_dim);
  iv.capture(site.stack, site.layer, site.point);
  {
    SessionScope scope(s, &iv, nullptr);
    (dir == Direction::Denoise ? r.clean : r.corrupted) = measure(source);
  }
  std::vector<float> taken = *iv.captured(site.stack, site.layer, site.point);
  {
    SessionScope scope(s, nullptr, nullptr);
    (dir == Direction::Denoise ? r.corrupted : r.clean) = measure(target);
  }
  Interventions patcher(m.info().head_dim);
  patcher.set_patch(site, &taken);
  {
    SessionScope scope(s, &patcher, recorder);
    if (recorder) recorder->clear();
    r.patched = measure(target);
  }
  return r;
}

PatchMap patch_sweep(const models::Model& m, models::Session& s, const Input& clean, const Input& corrupted,
                     const LogitDiff& metric, HookPoint point, AttentionKind stack, Direction dir) {
  check_pair(m, clean, corrupted, metric);
  check_site(m, Site{point, stack, 0, -1, -1}, int(clean.tokens.size()), int(clean.source.size()));
  const Input& source = dir == Direction::Denoise ? clean : corrupted;
  const Input& target = dir == Direction::Denoise ? corrupted : clean;
  MetricRun measure{m, s, metric};
  PatchMap map;
  map.point = point;
  map.layers = layers_of(m, stack);
  const bool heads = point == HookPoint::HeadOutputs;
  const int positions = stack == AttentionKind::Encoder && m.kind() == ModelKind::EncoderDecoder
                            ? int(clean.source.size())
                            : int(clean.tokens.size());
  map.columns = heads ? m.info().n_heads : positions;

  Interventions iv(m.info().head_dim);
  for (int l = 0; l < map.layers; ++l) iv.capture(stack, l, point);
  {
    SessionScope scope(s, &iv, nullptr);
    (dir == Direction::Denoise ? map.clean : map.corrupted) = measure(source);
  }
  {
    SessionScope scope(s, nullptr, nullptr);
    (dir == Direction::Denoise ? map.corrupted : map.clean) = measure(target);
  }
  map.patched.resize(size_t(map.layers) * map.columns);
  Interventions patcher(m.info().head_dim);
  SessionScope scope(s, &patcher, nullptr);
  for (int l = 0; l < map.layers; ++l) {
    const std::vector<float>* taken = iv.captured(stack, l, point);
    for (int c = 0; c < map.columns; ++c) {
      Site site{point, stack, l, heads ? c : -1, heads ? -1 : c};
      patcher.set_patch(site, taken);
      map.patched[size_t(l) * map.columns + c] = float(measure(target));
    }
  }
  return map;
}

// ---- the probe ------------------------------------------------------------------------------------

int probe_length(const models::Model& m, int requested) {
  const int most = (m.info().context_length - 1) / 2;
  AL_CHECK(most >= 2, "probe: the model's context of ", m.info().context_length, " positions is too short");
  if (requested == 0) return most < 50 ? most : 50;
  AL_CHECK(requested >= 2 && requested <= most, "probe: length ", requested, " is out of range [2, ", most,
           "] (BOS + two copies must fit in the context)");
  return requested;
}

std::vector<int> probe_sequence(const runtime::LoadedModel& lm, int length, uint64_t seed, int* offset) {
  const models::Model& m = lm.model();
  // An encoder–decoder's probe feeds the same ids to its decoder and (after the start token) to its
  // encoder: ids of both vocabularies, special on neither side (Marian's target.spm has its own).
  const bool encdec = m.kind() == ModelKind::EncoderDecoder;
  const Tokenizer* tok = lm.tokenizer();
  const Tokenizer* target = encdec ? lm.output_tokenizer() : nullptr;
  const int vocab = encdec ? std::min(m.info().vocab_size, m.info().source_vocab_size) : m.info().vocab_size;
  const auto special = [](const Tokenizer* t, int id) { return t && id < t->vocab_size() && t->is_special(id); };
  std::vector<int> allowed;
  for (int id = 0; id < vocab; ++id)
    if (!special(tok, id) && !special(target, id)) allowed.push_back(id);
  AL_CHECK(!allowed.empty(), "probe: every token of the vocabulary is special");
  generate::Pcg32 rng(seed);
  std::vector<int> r(static_cast<size_t>(length));
  for (int& t : r) t = allowed[size_t((uint64_t(rng.next()) * allowed.size()) >> 32)];
  std::vector<int> seq;
  int bos = -1;
  if (encdec) bos = lm.prompt_format().decoder_start_token;
  else if (tok) bos = tok->bos_id();
  if (bos >= 0) seq.push_back(bos);
  if (offset) *offset = bos >= 0 ? 1 : 0;
  seq.insert(seq.end(), r.begin(), r.end());
  seq.insert(seq.end(), r.begin(), r.end());
  return seq;
}

ProbeResult run_probe(const runtime::LoadedModel& lm, models::Session& s, const ProbeOptions& o) {
  const models::Model& m = lm.model();
  AL_CHECK(o.batch >= 1 && o.batch <= 256, "probe: batch ", o.batch, " is out of range [1, 256]");
  ProbeResult r;
  r.length = probe_length(m, o.length);
  r.stack = main_stack(m);
  const int L = r.length, vocab = m.info().vocab_size;
  double first = 0, second = 0;
  int counted = 0;
  for (int b = 0; b < o.batch; ++b) {
    Input in;
    in.tokens = probe_sequence(lm, L, o.seed + uint64_t(b), &r.offset);
    if (m.kind() == ModelKind::EncoderDecoder) {
      in.source.assign(in.tokens.begin() + r.offset, in.tokens.end());
      const auto& f = lm.prompt_format();
      if (f.source_suffix_eos && f.eos_token >= 0) in.source.push_back(f.eos_token);
    }
    AnalyzeOptions ao;
    ao.heads = true;
    ao.ablations = o.ablations;
    nn::AttentionRecorder rec;
    Analysis a = analyze(m, s, in, ao, &rec);
    if (b == 0) r.heads = a.heads;
    else r.heads.accumulate(a.heads);
    if (m.kind() != ModelKind::EncoderOnly) {
      // The logits at position p predict token p + 1: r[1..] of each copy.
      auto loss = [&](int p) {
        const float* row = a.logits + size_t(p) * vocab;
        return double(kernels::log_sum_exp(row, vocab)) - row[in.tokens[size_t(p) + 1]];
      };
      for (int i = 1; i < L; ++i) {
        first += loss(r.offset + i - 1);
        second += loss(r.offset + L + i - 1);
      }
      counted += L - 1;
    }
    r.sequences.push_back(std::move(in.tokens));
  }
  r.heads.scale(1.f / float(o.batch));  // every sequence has the same length: all arrays are means
  const double nan = std::numeric_limits<double>::quiet_NaN();
  r.loss_first = counted ? first / counted : nan;
  r.loss_second = counted ? second / counted : nan;
  return r;
}

}  // namespace attnlens::interp
