// SessionHandle's interpretability methods (src/interp): forward analysis (top-k, logit lens, hidden
// states, head scores, rollout, ablation), activation patching, the head-detector probe. Arguments
// are plain JS objects (web/src checks them first); results are plain objects of numbers and typed
// arrays that own their memory (copies: they outlive the next call into the engine).
#include <emscripten/bind.h>

#include <cmath>

#include "bindings/handles.h"
#include "core/parallel.h"
#include "interp/analysis.h"

namespace attnlens::bindings {

using namespace emscripten;

namespace {

bool has(const val& o, const char* key) {
  if (o.isNull() || o.isUndefined()) return false;
  const val v = o[key];
  return !v.isNull() && !v.isUndefined();
}

// An integer option (number_field checks it is a number).
int int_of(const val& o, const char* key, int fallback) {
  const double d = number_field(o, key, fallback);
  AL_CHECK(std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 2147483648.0, "option ", key,
           " must be an integer, got ", d);
  return int(d);
}

bool bool_of(const val& o, const char* key) { return bool_field(o, key, false); }

std::string string_of(const val& o, const char* key, const std::string& fallback) {
  if (!has(o, key)) return fallback;
  AL_CHECK(o[key].isString(), "option ", key, " must be a string");
  return o[key].as<std::string>();
}

template <class T>
val typed(const char* type, const std::vector<T>& v) {
  return val::global(type).new_(typed_memory_view(v.size(), v.data()));
}
val floats(const std::vector<float>& v) { return typed("Float32Array", v); }

nn::AttentionKind kind_of(const std::string& name) {
  if (name == "self") return nn::AttentionKind::Self;
  if (name == "encoder") return nn::AttentionKind::Encoder;
  if (name == "cross") return nn::AttentionKind::Cross;
  fail("unknown attention kind \"", name, "\" (self, encoder or cross)");
}

nn::HookPoint point_of(const std::string& name) {
  if (name == "heads") return nn::HookPoint::HeadOutputs;
  if (name == "attn") return nn::HookPoint::AttentionOut;
  if (name == "mlp") return nn::HookPoint::MlpOut;
  if (name == "resid") return nn::HookPoint::ResidualPost;
  fail("unknown activation \"", name, "\" (heads, attn, mlp or resid)");
}

std::vector<interp::Ablation> ablations_of(const val& list, nn::AttentionKind default_kind) {
  std::vector<interp::Ablation> out;
  if (list.isNull() || list.isUndefined()) return out;
  const int n = list["length"].as<int>();
  for (int i = 0; i < n; ++i) {
    const val a = list[i];
    interp::Ablation ab;
    ab.stack = has(a, "kind") ? kind_of(a["kind"].as<std::string>()) : default_kind;
    ab.layer = int_of(a, "layer", 0);
    ab.head = int_of(a, "head", 0);
    const std::string mode = string_of(a, "mode", "zero");
    AL_CHECK(mode == "zero" || mode == "mean", "ablation mode must be \"zero\" or \"mean\", got \"", mode, "\"");
    ab.mode = mode == "mean" ? interp::AblationMode::Mean : interp::AblationMode::Zero;
    out.push_back(ab);
  }
  return out;
}

void check_ablations(const models::Model& m, const std::vector<interp::Ablation>& list) {
  const auto& info = m.info();
  for (const auto& a : list) {
    const int layers = a.stack == nn::AttentionKind::Encoder && m.kind() == models::ModelKind::EncoderDecoder
                           ? info.n_encoder_layers
                           : info.n_layers;
    const bool kind_ok = m.kind() == models::ModelKind::EncoderOnly   ? a.stack == nn::AttentionKind::Encoder
                         : m.kind() == models::ModelKind::DecoderOnly ? a.stack == nn::AttentionKind::Self
                                                                      : true;
    AL_CHECK(kind_ok, "ablation: a ", models::model_kind_name(m.kind()), " model has no ",
             nn::attention_kind_name(a.stack), " attention");
    AL_CHECK(a.layer >= 0 && a.layer < layers, "ablation: layer ", a.layer, " is out of range [0, ", layers, ")");
    AL_CHECK(a.head >= 0 && a.head < info.n_heads, "ablation: head ", a.head, " is out of range [0, ", info.n_heads, ")");
  }
}

interp::Input input_of(const val& v) {
  interp::Input in;
  in.tokens = to_ints(v["tokens"], "tokens");
  if (has(v, "source")) in.source = to_ints(v["source"], "source");
  if (has(v, "tokenTypes")) in.token_types = to_ints(v["tokenTypes"], "tokenTypes");
  AL_CHECK(in.token_types.empty() || in.token_types.size() == in.tokens.size(), "tokenTypes has ",
           in.token_types.size(), " entries for ", in.tokens.size(), " tokens");
  return in;
}

val top_k_of(const generate::TopK& t) {
  val o = val::object();
  o.set("rows", t.rows);
  o.set("k", t.k);
  o.set("ids", typed("Int32Array", t.ids));
  o.set("logits", floats(t.logits));
  o.set("probs", floats(t.probs));
  return o;
}

val scores_of(const interp::HeadScores& s) {
  val o = val::object();
  o.set("layers", s.layers);
  o.set("heads", s.heads);
  o.set("positions", s.positions);
  o.set("previousToken", floats(s.previous_token));
  o.set("duplicateToken", floats(s.duplicate_token));
  o.set("induction", floats(s.induction));
  o.set("entropy", floats(s.entropy));
  o.set("sink", floats(s.sink));
  o.set("entropyPerPosition", floats(s.entropy_per_position));
  o.set("sinkPerPosition", floats(s.sink_per_position));
  return o;
}

interp::LogitDiff metric_of(const val& spec) {
  AL_CHECK(has(spec, "metric"), "patching: metric { correct, incorrect, position } is required");
  const val m = spec["metric"];
  interp::LogitDiff d;
  d.correct = int_of(m, "correct", -1);
  d.incorrect = int_of(m, "incorrect", -1);
  d.position = int_of(m, "position", -1);
  return d;
}

interp::Direction direction_of(const val& spec) {
  const std::string d = string_of(spec, "direction", "denoise");
  AL_CHECK(d == "denoise" || d == "noise", "patching direction must be \"denoise\" or \"noise\", got \"", d, "\"");
  return d == "noise" ? interp::Direction::Noise : interp::Direction::Denoise;
}

}  // namespace

void SessionHandle::set_ablations(const val& list) {
  guarded([&] {
    const auto& m = m_->model();
    auto ablations = ablations_of(list, interp::main_stack(m));
    check_ablations(m, ablations);
    if (ablations.empty()) {
      s_->hooks = nullptr;
      ablation_hooks_.reset();
      return 0;
    }
    ablation_hooks_ = std::make_unique<interp::Interventions>(m.info().head_dim);
    ablation_hooks_->ablations = std::move(ablations);
    s_->hooks = ablation_hooks_.get();
    return 0;
  });
}

val SessionHandle::analyze(const val& input, const val& options) {
  return guarded([&] {
    parallel::Threads use(threads_);
    AL_CHECK(!gen_ || gen_->done(), "a generation is running on this session");
    const auto& m = m_->model();
    interp::AnalyzeOptions o;
    o.top_k = int_of(options, "topK", 0);
    o.lens_top_k = int_of(options, "lensTopK", 0);
    o.lens_logits = bool_of(options, "lensLogits");
    o.hidden_states = bool_of(options, "hiddenStates");
    o.heads = bool_of(options, "heads");
    o.rollout = bool_of(options, "rollout");
    o.ablations = ablations_of(options["ablate"], interp::main_stack(m));
    check_ablations(m, o.ablations);
    const interp::Input in = input_of(input);
    // The session's recorder (setAttention) receives the attention of this pass, the ablated one.
    nn::AttentionRecorder* rec = s_->recorder;
    const interp::Analysis a = interp::analyze(m, *s_, in, o, rec);
    val out = val::object();
    out.set("positions", a.n);
    out.set("layers", a.layers);
    out.set("vocab", a.vocab);
    out.set("dModel", a.d_model);
    out.set("kind", std::string(nn::attention_kind_name(a.stack)));
    out.set("logits", a.logits ? val::global("Float32Array").new_(typed_memory_view(size_t(a.n) * a.vocab, a.logits))
                               : val::null());
    if (o.top_k > 0 && a.logits) out.set("topk", top_k_of(a.top));
    if (o.lens_top_k > 0) {
      val lens = val::array();
      for (const auto& t : a.lens) lens.call<void>("push", top_k_of(t));
      out.set("lens", lens);
    }
    if (o.lens_logits) out.set("lensLogits", floats(a.lens_logits));
    if (o.hidden_states) out.set("hidden", floats(a.hidden));
    if (o.heads) out.set("heads", scores_of(a.heads));
    if (o.rollout) out.set("rollout", floats(a.rollout));
    return out;
  });
}

val SessionHandle::patch(const val& clean, const val& corrupted, const val& spec) {
  return guarded([&] {
    parallel::Threads use(threads_);
    AL_CHECK(!gen_ || gen_->done(), "a generation is running on this session");
    const auto& m = m_->model();
    AL_CHECK(has(spec, "site"), "patching: site { point, layer, head, position, kind } is required");
    const val s = spec["site"];
    interp::Site site;
    site.point = point_of(string_of(s, "point", "resid"));
    site.stack = has(s, "kind") ? kind_of(s["kind"].as<std::string>()) : interp::main_stack(m);
    site.layer = int_of(s, "layer", 0);
    site.head = int_of(s, "head", -1);
    site.position = int_of(s, "position", -1);
    const interp::PatchResult r = interp::patch(m, *s_, input_of(clean), input_of(corrupted), metric_of(spec), site,
                                                direction_of(spec), s_->recorder);
    val out = val::object();
    out.set("clean", r.clean);
    out.set("corrupted", r.corrupted);
    out.set("patched", r.patched);
    return out;
  });
}

val SessionHandle::patch_sweep(const val& clean, const val& corrupted, const val& spec) {
  return guarded([&] {
    parallel::Threads use(threads_);
    AL_CHECK(!gen_ || gen_->done(), "a generation is running on this session");
    const auto& m = m_->model();
    const nn::HookPoint point = point_of(string_of(spec, "point", "heads"));
    const nn::AttentionKind stack = has(spec, "kind") ? kind_of(spec["kind"].as<std::string>()) : interp::main_stack(m);
    const interp::PatchMap r = interp::patch_sweep(m, *s_, input_of(clean), input_of(corrupted), metric_of(spec),
                                                   point, stack, direction_of(spec));
    val out = val::object();
    out.set("clean", r.clean);
    out.set("corrupted", r.corrupted);
    out.set("point", std::string(nn::hook_point_name(r.point)));
    out.set("kind", std::string(nn::attention_kind_name(stack)));
    out.set("layers", r.layers);
    out.set("columns", r.columns);
    out.set("patched", floats(r.patched));
    return out;
  });
}

val SessionHandle::probe(const val& options) {
  return guarded([&] {
    parallel::Threads use(threads_);
    AL_CHECK(!gen_ || gen_->done(), "a generation is running on this session");
    interp::ProbeOptions o;
    o.length = int_of(options, "length", 0);
    o.batch = int_of(options, "batch", 4);
    const int seed = int_of(options, "seed", 0);
    AL_CHECK(seed >= 0, "probe seed must be ≥ 0, got ", seed);
    o.seed = uint64_t(seed);
    o.ablations = ablations_of(options["ablate"], interp::main_stack(m_->model()));
    check_ablations(m_->model(), o.ablations);
    const interp::ProbeResult r = interp::run_probe(*m_, *s_, o);
    val out = val::object();
    out.set("length", r.length);
    out.set("offset", r.offset);
    out.set("kind", std::string(nn::attention_kind_name(r.stack)));
    val seqs = val::array();
    for (const auto& sq : r.sequences) seqs.call<void>("push", to_int32_array(sq));
    out.set("sequences", seqs);
    out.set("heads", scores_of(r.heads));
    out.set("lossFirst", std::isnan(r.loss_first) ? val::null() : val(r.loss_first));
    out.set("lossSecond", std::isnan(r.loss_second) ? val::null() : val(r.loss_second));
    return out;
  });
}

}  // namespace attnlens::bindings
