// SessionHandle: one sequence's state (KV cache, encoder memory), forward passes, attention, generation.
#include <emscripten/bind.h>

#include "bindings/handles.h"

namespace attnlens::bindings {

using namespace emscripten;

SessionHandle::SessionHandle(std::shared_ptr<const runtime::LoadedModel> m, int capacity) : m_(std::move(m)) {
  s_ = m_->model().new_session(capacity);
}

SessionHandle::~SessionHandle() = default;

void SessionHandle::set_attention(bool on, const val& layers, const val& heads) {
  guarded([&] {
    if (!on) {
      s_->recorder = nullptr;
      recorder_.clear();
      return 0;
    }
    recorder_.select(to_ints(layers, "layers"), to_ints(heads, "heads"));
    s_->recorder = &recorder_;
    return 0;
  });
}

val SessionHandle::decode(const val& tokens, bool all_logits) {
  return guarded([&] {
    std::vector<int> t = to_ints(tokens, "tokens");
    AL_CHECK(!gen_ || gen_->done(), "a generation is running on this session");
    // No clear(): each (kind, layer) this pass records replaces its previous record, and the encoder's
    // records (from encode) stay, since they belong to the memory this decoder attends to.
    const float* logits = m_->model().decode(*s_, t.data(), int(t.size()), all_logits);
    return val(typed_memory_view(s_->logits.size(), logits));
  });
}

val SessionHandle::encode(const val& tokens, const val& token_types) {
  return guarded([&] {
    std::vector<int> t = to_ints(tokens, "tokens");
    std::vector<int> types;
    if (!token_types.isNull() && !token_types.isUndefined()) {
      types = to_ints(token_types, "tokenTypes");
      AL_CHECK(types.size() == t.size(), "tokenTypes has ", types.size(), " entries for ", t.size(), " tokens");
    }
    if (s_->recorder) recorder_.clear();
    const float* h = m_->model().encode(*s_, t.data(), int(t.size()), types.empty() ? nullptr : types.data());
    return val(typed_memory_view(size_t(t.size()) * m_->model().info().d_model, h));
  });
}

val SessionHandle::mlm_logits() {
  return guarded([&] {
    const float* l = m_->model().mlm_logits(*s_);
    return val(typed_memory_view(s_->logits.size(), l));
  });
}

val SessionHandle::attention() const {
  return guarded([&] {
    val out = val::array();
    for (const nn::AttentionRecord& r : recorder_.records()) {
      val o = val::object();
      o.set("kind", std::string(nn::attention_kind_name(r.kind)));
      o.set("layer", r.layer);
      o.set("heads", r.n_heads);
      o.set("queries", r.n_queries);
      o.set("keys", r.n_keys);
      o.set("queryStart", r.q_pos0);
      o.set("data", val(typed_memory_view(r.weights.size(), r.weights.data())));
      out.call<void>("push", o);
    }
    return out;
  });
}

void SessionHandle::reset() {
  gen_.reset();
  s_->reset();
  recorder_.clear();
}

void SessionHandle::start(const val& prompt_ids, const std::string& options_json) {
  guarded([&] {
    const nlohmann::json j = nlohmann::json::parse(options_json);
    generate::GenerateOptions o;
    o.max_new_tokens = j.value("maxNewTokens", 128);
    o.sampling.temperature = j.value("temperature", 1.0f);
    o.sampling.top_k = j.value("topK", 0);
    o.sampling.top_p = j.value("topP", 1.0f);
    o.sampling.repetition_penalty = j.value("repetitionPenalty", 1.0f);
    o.sampling.seed = j.value("seed", uint64_t(0));
    o.stop = j.value("stop", std::vector<std::string>{});
    gen_.reset();
    if (s_->recorder) recorder_.clear();
    gen_ = std::make_unique<generate::Generation>(m_->model(), m_->require_tokenizer(), m_->prompt_format(), *s_,
                                                  to_ints(prompt_ids, "prompt"), o);
    return 0;
  });
}

val SessionHandle::step() {
  return guarded([&] {
    AL_CHECK(gen_, "no generation was started on this session");
    generate::TokenEvent ev;
    if (!gen_->step(ev)) return val::null();
    val o = val::object();
    o.set("token", ev.token);
    o.set("position", ev.position);
    o.set("text", ev.text);
    o.set("done", gen_->done());
    return o;
  });
}

void SessionHandle::abort() {
  if (gen_) gen_->abort();
}

std::string SessionHandle::result() const {
  return guarded([&] {
    AL_CHECK(gen_, "no generation was started on this session");
    const generate::GenerateResult& r = gen_->result();
    nlohmann::json j = {{"tokens", r.tokens},         {"source", r.source},          {"promptTokens", r.prompt_tokens},
                        {"text", r.text},             {"finishReason", r.finish_reason}, {"prefillMs", r.prefill_ms},
                        {"decodeMs", r.decode_ms},    {"decoded", r.decoded}};
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  });
}

EMSCRIPTEN_BINDINGS(attnlens_session) {
  class_<SessionHandle>("Session")
      .function("setAttention", &SessionHandle::set_attention)
      .function("decode", &SessionHandle::decode)
      .function("encode", &SessionHandle::encode)
      .function("mlmLogits", &SessionHandle::mlm_logits)
      .function("attention", &SessionHandle::attention)
      .function("position", &SessionHandle::position)
      .function("capacity", &SessionHandle::capacity)
      .function("kvCacheBytes", &SessionHandle::kv_cache_bytes)
      .function("reset", &SessionHandle::reset)
      .function("start", &SessionHandle::start)
      .function("step", &SessionHandle::step)
      .function("abort", &SessionHandle::abort)
      .function("result", &SessionHandle::result);
}

}  // namespace attnlens::bindings
