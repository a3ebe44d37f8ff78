// SessionHandle: one sequence's state (KV cache, encoder memory), forward passes, attention, generation.
#include <emscripten/bind.h>

#include "bindings/handles.h"
#include "core/parallel.h"

namespace attnlens::bindings {

using namespace emscripten;

SessionHandle::SessionHandle(std::shared_ptr<const runtime::LoadedModel> m, int capacity, nn::KVType kv) : m_(std::move(m)) {
  s_ = m_->model().new_session(capacity, kv);
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
    parallel::Threads use(threads_);
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
    parallel::Threads use(threads_);
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
    if (!m_->model().has_mlm_head()) return val::null();  // a BertModel without the masked-LM head
    parallel::Threads use(threads_);
    const float* l = m_->model().mlm_logits(*s_);
    return val(typed_memory_view(s_->logits.size(), l));
  });
}

val SessionHandle::embed(const val& inputs, const val& options) {
  return guarded([&] {
    AL_CHECK(m_->model().kind() == models::ModelKind::EncoderOnly, "embed: ", m_->model().info().architecture,
             " is not an encoder-only model");
    AL_CHECK(inputs.isArray() && inputs["length"].as<int>() > 0, "embed: inputs must be a non-empty array");
    const runtime::EmbeddingConfig& cfg = m_->embedding();
    const int n = inputs["length"].as<int>();
    const int limit = cfg.max_length > 0 ? cfg.max_length : m_->model().info().context_length;
    runtime::EncoderInputs in;
    if (inputs[0].isString()) {
      std::vector<std::string> texts;
      for (int i = 0; i < n; ++i) {
        AL_CHECK(inputs[i].isString(), "embed: inputs[", i, "] must be a string like the others");
        texts.push_back(utf8(inputs[i], "inputs[i]"));
      }
      in = runtime::tokenize_inputs(m_->require_tokenizer(), texts, limit);
    } else {
      for (int i = 0; i < n; ++i) {
        in.ids.push_back(to_ints(inputs[i], "inputs[i]"));
        AL_CHECK(int(in.ids.back().size()) <= limit, "embed: inputs[", i, "] has ", in.ids.back().size(),
                 " tokens, more than the ", limit, " this model takes (texts are truncated; token ids are not)");
        in.truncated.push_back(0);
      }
    }
    models::Pooling pooling = cfg.pooling;
    const val p = options.isUndefined() || options.isNull() ? val::undefined() : options["pooling"];
    if (!p.isUndefined()) {
      AL_CHECK(p.isString(), "option pooling must be a string");
      pooling = models::parse_pooling(p.as<std::string>());
    }
    const bool normalize = bool_field(options, "normalize", cfg.normalize);
    const Tokenizer* tok = m_->tokenizer();
    const int pad = tok && tok->pad_id() >= 0 ? tok->pad_id() : 0;
    if (s_->recorder) recorder_.clear();
    const runtime::Embeddings e = runtime::embed_ids(m_->model(), *s_, in.ids, pad, pooling, normalize);
    val o = val::object();
    val vectors = val::array(), tokens = val::array(), special = val::array();
    for (size_t i = 0; i < e.vectors.size(); ++i) {
      vectors.set(i, val::global("Float32Array").new_(typed_memory_view(e.vectors[i].size(), e.vectors[i].data())));
      tokens.set(i, to_array(in.ids[i]));
      val flags = val::array();
      for (size_t t = 0; t < in.ids[i].size(); ++t) flags.set(t, tok != nullptr && tok->is_special(in.ids[i][t]));
      special.set(i, flags);
    }
    o.set("embeddings", vectors);
    o.set("tokens", tokens);
    o.set("special", special);  // [input][token]: a special token ([CLS], [SEP], <s>, </s> …)
    o.set("truncated", to_array(in.truncated));
    o.set("length", e.length);
    o.set("pooling", std::string(models::pooling_name(pooling)));
    o.set("normalize", normalize);
    return o;
  });
}

namespace {
// The JS strings and constructors of the hot paths, made once: every generation step builds an event
// (~10 fields) and reads every layer's attention record (~9 fields each, with the kind's value), and
// each field named by a C string is a string decoded in JS. Made on the first call, on the thread that
// calls into the module (emval handles belong to it; the engine's pool threads never touch them).
struct Names {
  // a record of attention()
  val kind{"kind"}, layer{"layer"}, heads{"heads"}, queries{"queries"}, keys{"keys"}, queryStart{"queryStart"},
      batch{"batch"}, data{"data"};
  val kinds[3] = {val(nn::attention_kind_name(nn::AttentionKind::Self)), val(nn::attention_kind_name(nn::AttentionKind::Cross)),
                  val(nn::attention_kind_name(nn::AttentionKind::Encoder))};
  // an event of step()
  val pending{"pending"}, done{"done"}, token{"token"}, position{"position"}, piece{"piece"}, text{"text"}, topk{"topk"},
      ids{"ids"}, logits{"logits"}, probs{"probs"};
  val Int32Array = val::global("Int32Array"), Float32Array = val::global("Float32Array");
};
const Names& names() {
  static const Names n;
  return n;
}
}  // namespace

val SessionHandle::attention() const {
  return guarded([&] {
    const Names& n = names();
    const auto& records = recorder_.records();
    val out = val::array();
    for (size_t i = 0; i < records.size(); ++i) {
      const nn::AttentionRecord& r = records[i];
      val o = val::object();
      o.set(n.kind, n.kinds[int(r.kind)]);
      o.set(n.layer, r.layer);
      o.set(n.heads, r.n_heads);
      o.set(n.queries, r.n_queries);
      o.set(n.keys, r.n_keys);
      o.set(n.queryStart, r.q_pos0);
      o.set(n.batch, r.batch);  // > 1: an encoder batch, data [batch][heads][queries][keys]
      o.set(n.data, val(typed_memory_view(r.weights.size(), r.weights.data())));
      out.set(i, o);
    }
    return out;
  });
}

void SessionHandle::reset() {
  gen_.reset();
  s_->reset();
  recorder_.clear();
}

void SessionHandle::start(const val& prompt_ids, const val& options) {
  guarded([&] {
    parallel::Threads use(threads_);
    generate::GenerateOptions o;
    const double max_new = number_field(options, "maxNewTokens", 128);
    AL_CHECK(max_new >= 0 && max_new <= (1 << 30) && max_new == double(int(max_new)),
             "maxNewTokens must be an integer from 0 to 2^30, got ", max_new);
    o.max_new_tokens = int(max_new);
    o.sampling.temperature = float(number_field(options, "temperature", 1.0));
    const double top_k = number_field(options, "topK", 0);
    AL_CHECK(top_k >= 0 && top_k <= 2147483647.0 && top_k == double(int64_t(top_k)), "topK must be a non-negative integer, got ",
             top_k);
    o.sampling.top_k = int(top_k);
    o.sampling.top_p = float(number_field(options, "topP", 1.0));
    o.sampling.repetition_penalty = float(number_field(options, "repetitionPenalty", 1.0));
    const double seed = number_field(options, "seed", 0);
    AL_CHECK(seed >= 0 && seed <= 9007199254740991.0 && seed == double(uint64_t(seed)),
             "seed must be an integer from 0 to 2^53 - 1, got ", seed);
    o.sampling.seed = uint64_t(seed);
    o.stop = strings_field(options, "stop");
    const double chunk = number_field(options, "prefillChunk", 0);
    AL_CHECK(chunk >= 0 && chunk <= (1 << 30) && chunk == double(int(chunk)), "prefillChunk must be a non-negative integer, got ", chunk);
    o.prefill_chunk = int(chunk);
    const double beams = number_field(options, "numBeams", 1);
    AL_CHECK(beams >= 1 && beams <= 256 && beams == double(int(beams)), "numBeams must be an integer from 1 to 256, got ",
             beams);
    o.beams.num_beams = int(beams);
    o.beams.length_penalty = float(number_field(options, "lengthPenalty", 1.0));
    const val early = options.isUndefined() || options.isNull() ? val::undefined() : options["earlyStopping"];
    if (!early.isUndefined()) {
      AL_CHECK(early.isTrue() || early.isFalse() || (early.isString() && early.as<std::string>() == "never"),
               "option earlyStopping must be true, false or \"never\"");
      o.beams.early_stopping = early.isString() ? generate::EarlyStopping::Never
                               : early.isTrue() ? generate::EarlyStopping::Done
                                                : generate::EarlyStopping::Heuristic;
    }
    auto count = [&](const char* key) {
      const double v = number_field(options, key, 0);
      AL_CHECK(v >= 0 && v <= (1 << 30) && v == double(int(v)), key, " must be a non-negative integer, got ", v);
      return int(v);
    };
    auto token = [&](const char* key) {
      const val v = options.isUndefined() || options.isNull() ? val::undefined() : options[key];
      if (v.isUndefined() || v.isNull()) return -1;
      const double t = number_field(options, key, -1);
      AL_CHECK(t >= 0 && t == double(int(t)), key, " must be a token id, got ", t);
      return int(t);
    };
    o.processors.no_repeat_ngram_size = count("noRepeatNgramSize");
    o.processors.min_new_tokens = count("minNewTokens");
    o.processors.bad_words = int_lists_field(options, "badWordsIds");
    o.processors.forced_bos_token = token("forcedBosTokenId");
    o.processors.forced_eos_token = token("forcedEosTokenId");
    const double predictions = number_field(options, "predictions", 0);
    AL_CHECK(predictions >= 0 && predictions <= 1000 && predictions == double(int(predictions)),
             "predictions must be an integer from 0 to 1000, got ", predictions);
    o.predictions = int(predictions);
    gen_.reset();
    if (s_->recorder) recorder_.clear();
    seed_ = o.sampling.seed;
    gen_ = std::make_unique<generate::Generation>(m_->model(), m_->require_output_tokenizer(), m_->prompt_format(), *s_,
                                                  to_ints(prompt_ids, "prompt"), o);
    return 0;
  });
}

val SessionHandle::step() {
  return guarded([&] {
    parallel::Threads use(threads_);
    AL_CHECK(gen_, "no generation was started on this session");
    generate::TokenEvent ev;
    if (!gen_->step(ev)) return val::null();
    const Names& n = names();
    val o = val::object();
    if (ev.token < 0 && ev.position < 0) {  // a beam search step: nothing chosen yet
      o.set(n.pending, true);
      o.set(n.done, gen_->done());
      return o;
    }
    o.set(n.token, ev.token);  // -1: a prefill step (position = prompt tokens fed so far)
    o.set(n.position, ev.position);
    if (ev.token >= 0) o.set(n.piece, m_->require_output_tokenizer().piece(ev.token));
    o.set(n.text, ev.text);
    o.set(n.done, gen_->done());
    if (ev.predictions) {
      const generate::TopK& t = *ev.predictions;
      val top = val::object();
      top.set(n.ids, n.Int32Array.new_(typed_memory_view(t.ids.size(), t.ids.data())));
      top.set(n.logits, n.Float32Array.new_(typed_memory_view(t.logits.size(), t.logits.data())));
      top.set(n.probs, n.Float32Array.new_(typed_memory_view(t.probs.size(), t.probs.data())));
      o.set(n.topk, top);
    }
    return o;
  });
}

void SessionHandle::set_stop_flag(const val& flag) {
  guarded([&] {
    if (flag.isNull() || flag.isUndefined()) {
      s_->should_stop = nullptr;
      return 0;
    }
    AL_CHECK(flag.instanceof(val::global("Int32Array")), "the stop flag must be an Int32Array");
    // Another thread sets flag[0] (a SharedArrayBuffer); read it between layers, through
    // Atomics.load bound to it once (a call by name would decode the name at every layer).
    const val atomics = val::global("Atomics");
    s_->should_stop = [load = atomics["load"].call<val>("bind", atomics, flag, 0)] { return load().as<int>() != 0; };
    return 0;
  });
}

void SessionHandle::abort() {
  if (gen_) gen_->abort();
}

val SessionHandle::result() const {
  return guarded([&] {
    AL_CHECK(gen_, "no generation was started on this session");
    const generate::GenerateResult& r = gen_->result();
    const Tokenizer& t = m_->require_output_tokenizer();
    val o = val::object();
    o.set("text", r.text);
    o.set("tokens", to_array(r.tokens));
    val pieces = val::array();
    for (size_t i = 0; i < r.tokens.size(); ++i) pieces.set(i, t.piece(r.tokens[i]));
    o.set("pieces", pieces);
    o.set("source", r.source.empty() ? val::undefined() : to_array(r.source));
    o.set("promptTokens", r.prompt_tokens);
    o.set("finishReason", r.finish_reason);
    o.set("seed", double(seed_));
    val timings = val::object();
    timings.set("prefillMs", r.prefill_ms);
    timings.set("prefilledTokens", r.prefilled);
    timings.set("decodeMs", r.decode_ms);
    timings.set("decodedTokens", r.decoded);
    timings.set("tokensPerSecond", r.decode_ms > 0 ? r.decoded * 1000.0 / r.decode_ms : 0.0);
    o.set("timings", timings);
    if (!r.hypotheses.empty()) {
      o.set("score", r.score);
      val hyps = val::array();
      for (size_t i = 0; i < r.hypotheses.size(); ++i) {
        const generate::ScoredSequence& h = r.hypotheses[i];
        val e = val::object();
        e.set("tokens", to_array(h.tokens));
        e.set("text", t.decode(std::vector<int>(h.tokens.begin() + std::min(h.tokens.size(), size_t(r.prompt_tokens)),
                                                h.tokens.end())));
        e.set("score", h.score);
        hyps.set(i, e);
      }
      o.set("hypotheses", hyps);
    }
    return o;
  });
}

val SessionHandle::memory() const {
  return guarded([&] {
    val o = val::object();
    const size_t files = m_->file_bytes(), owned = m_->model().info().owned_bytes;
    o.set("fileBytes", double(files));
    o.set("ownedBytes", double(owned));
    o.set("kvCacheBytes", double(s_->cache.bytes()));
    const size_t session = s_->bytes();
    o.set("scratchBytes", double(session - s_->cache.bytes()));
    o.set("modelBytes", double(files + owned + session));
    return o;
  });
}

EMSCRIPTEN_BINDINGS(attnlens_session) {
  class_<SessionHandle>("Session")
      .function("setAttention", &SessionHandle::set_attention)
      .function("decode", &SessionHandle::decode)
      .function("encode", &SessionHandle::encode)
      .function("mlmLogits", &SessionHandle::mlm_logits)
      .function("embed", &SessionHandle::embed)
      .function("attention", &SessionHandle::attention)
      .function("position", &SessionHandle::position)
      .function("capacity", &SessionHandle::capacity)
      .function("memory", &SessionHandle::memory)
      .function("reset", &SessionHandle::reset)
      .function("start", &SessionHandle::start)
      .function("step", &SessionHandle::step)
      .function("searching", &SessionHandle::searching)
      .function("abort", &SessionHandle::abort)
      .function("setStopFlag", &SessionHandle::set_stop_flag)
      .function("result", &SessionHandle::result)
      .function("setAblations", &SessionHandle::set_ablations)
      .function("analyze", &SessionHandle::analyze)
      .function("patch", &SessionHandle::patch)
      .function("patchSweep", &SessionHandle::patch_sweep)
      .function("probe", &SessionHandle::probe)
      .function("setThreads", &SessionHandle::set_threads)
      .function("threads", &SessionHandle::threads);
}

}  // namespace attnlens::bindings
