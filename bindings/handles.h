// The C++ objects JavaScript holds, one EMSCRIPTEN_BINDINGS block each (files.cpp, model.cpp,
// session.cpp, module.cpp). JS owns them and must call .delete(): web/src wraps that in dispose().
// Every method is wrapped in guarded(): a C++ exception reaches JS as an Error with the same message.
#pragma once
#include <emscripten/val.h>

#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "core/error.h"
#include "interp/interventions.h"
#include "nn/recorder.h"
#include "runtime/loader.h"

namespace attnlens::bindings {

using emscripten::val;

// Errors never cross into JavaScript as exceptions: a JS exception unwinding through wasm frames runs
// no destructors, so the C++ exception object, Embind's argument copies (strings, val handles) and
// the call's locals would leak on every failed call. Instead guarded() catches, stores the message
// and returns an empty value; web/src/wasm.mjs wraps every bound method and constructor so that
// JavaScript throws an Error with that message right after the call returned (failed()/takeError()).
std::string& last_error();

template <class F>
auto guarded(F&& f) -> decltype(f()) {
  using R = decltype(f());
  try {
    return f();
  } catch (const std::bad_alloc&) {
    last_error() = "out of memory: the WebAssembly heap cannot grow further (4 GB at most)";
  } catch (const std::exception& e) {
    last_error() = e.what();
    if (last_error().empty()) last_error() = "unknown engine error";
  } catch (...) {
    last_error() = "unknown engine error";
  }
  if constexpr (std::is_void_v<R>) {
    return;
  } else if constexpr (std::is_same_v<R, val>) {
    return val::undefined();
  } else {
    return R{};
  }
}

// Transport across the boundary, one style for every binding: results are plain JS objects, arrays
// and typed arrays built here with emscripten::val, with the field names the JS API documents
// (web/src/index.d.ts), so web/src passes them on without parsing or renaming; nothing crosses as
// JSON text. Options objects coming from JS are read field by field with the readers below, which
// check each field's type (a wrong type is an attnlens::Error naming the field, never an Embind
// TypeError thrown through wasm frames).
std::vector<int> to_ints(const val& array, const char* what);  // JS array / Int32Array → ints

// Throws attnlens::Error unless `bytes` more fit in the WebAssembly heap (its maximum minus what is
// allocated), naming `what`, how much it needs, how much is left and the limit ("huge.gguf: 5000 MB
// (5000000000 bytes) of WebAssembly memory needed, but only 4290 MB more fit: …"). Called before the
// big allocations (a model's files, a KV cache), so that a model too big is refused up front.
void require_memory(double bytes, const std::string& what);
val to_int32_array(const std::vector<int>& v);                  // a copy, as an Int32Array
val to_array(const std::vector<int>& v);                        // a copy, as a plain Array of numbers
val to_array(const std::vector<std::string>& v);                // a plain Array of strings
// Field `key` of a JS options object, or `fallback` when it is undefined (or the object is).
double number_field(const val& o, const char* key, double fallback);
bool bool_field(const val& o, const char* key, bool fallback);
std::vector<std::string> strings_field(const val& o, const char* key);  // array of strings; absent = {}
// An array of arrays of integers (badWordsIds); absent = {}.
std::vector<std::vector<int>> int_lists_field(const val& o, const char* key);
// A JSON value (objects, arrays, numbers, strings, booleans, null) as the same JS value.
val json_to_val(const nlohmann::json& j);
// A JS string as UTF-8, encoded exactly as TextEncoder encodes it: a lone surrogate becomes U+FFFD and
// nothing else is lost. Every text that enters the engine goes through here (Embind's own std::string
// conversion pairs a lone surrogate with the next code unit, losing it).
std::string utf8(const val& s, const char* what);

// A tokenizer's card as JS sees it (model.info.tokenizer, tokenizer.info: index.d.ts TokenizerInfo):
// kind, vocabSize, bosId, eosId, the special tokens' text, addBosToken / addEosToken,
// modelMaxLength, the chat templates' names, the configuration settings not applied.
val tokenizer_card(const Tokenizer& t, const runtime::TokenizerConfig& c, const generate::SpecialTokenFlags& flags);
// The chat templates' sources by name ({} when there are none).
val chat_templates(const runtime::TokenizerConfig& c);

// The files of one model, filled by JS straight into wasm memory: add() allocates and returns a
// Uint8Array view of the new buffer, which JS must fill before any other call (a heap growth would
// detach the view).
class FileSet {
 public:
  val add(const std::string& name, double size);
  val view(int index) const;  // file `index` again (a fresh view: the heap may have grown since add)
  int count() const { return int(files_.size()); }
  std::vector<runtime::FilePtr> take() { return std::move(files_); }

 private:
  std::vector<runtime::FilePtr> files_;
};

class SessionHandle;

class ModelHandle {
 public:
  ModelHandle(FileSet& files, const std::string& quantize);
  ~ModelHandle();  // also frees the kernels' per-thread scratch (JS makes no engine call meanwhile)
  // The model card as model.info shows it (camelCase fields; see web/src/index.d.ts ModelInfo), with
  // the KV cache and memory of `session`, the session the JS Model runs on.
  val info(const SessionHandle& session) const;
  val prompt_format() const;  // {addSpecial, emptyPromptToken, stopTokens, …} (index.d.ts PromptFormat)
  bool has_tokenizer() const { return m_->tokenizer() != nullptr; }
  // Text and token ids of the source side (the model's input; target = false) or of an encoder–decoder's
  // target side (the decoder's text: Marian's target.spm when given; runtime::LoadedModel::
  // require_target_tokenizer).
  val tokenize(const val& text, bool add_special, bool target) const;  // Int32Array
  val encode_prompt(const val& text) const;             // Int32Array, as generation builds it (source)
  val pieces(const val& ids, bool target) const;                 // Array<string>
  val special(const val& ids, bool target) const;                // Array<boolean>: special/control tokens
  std::string detokenize(const val& ids, bool target) const;
  SessionHandle* new_session(int capacity, const std::string& kv_cache) const;  // kv_cache: "f32" | "q8_0"

  const std::shared_ptr<const runtime::LoadedModel>& loaded() const { return m_; }

 private:
  const Tokenizer& side(bool target) const { return target ? m_->require_target_tokenizer() : m_->require_tokenizer(); }
  std::shared_ptr<const runtime::LoadedModel> m_;
};

class SessionHandle {
 public:
  SessionHandle(std::shared_ptr<const runtime::LoadedModel> m, int capacity, nn::KVType kv);
  ~SessionHandle();
  // Attention recording: off, or these layers/heads (empty arrays = all).
  void set_attention(bool on, const val& layers, const val& heads);
  val decode(const val& tokens, bool all_logits);   // Float32Array view, valid until the next call
  val encode(const val& tokens, const val& token_types);  // hidden states view [n][d_model]
  val mlm_logits();                                 // view [n][vocab]
  // Encoder-only models: sentence embeddings of inputs (an array of strings, or of token-id arrays)
  // run as one padded batch. options: {pooling: "mean" | "cls" | "max", normalize: bool} (absent: the
  // model's own, runtime/embedding.h). → {embeddings: [Float32Array], tokens: [[ids]], truncated:
  // [count], length, pooling, normalize}; attention (if recording) is [input][heads][length][length].
  val embed(const val& inputs, const val& options);
  val attention() const;  // [{kind, layer, heads, queries, keys, queryStart, data: Float32Array view}]
  int position() const { return s_->position(); }
  int capacity() const { return s_->cache.capacity(); }
  // What the model and this session hold now: {fileBytes, ownedBytes, kvCacheBytes, scratchBytes,
  // modelBytes (their sum)}.
  val memory() const;
  const models::Session& session() const { return *s_; }
  void reset();
  // Threads this session's forward passes use (core/parallel.h; clamped to the pool's size).
  void set_threads(int n) { threads_ = n < 1 ? 1 : n; }
  int threads() const { return threads_; }

  // Generation, one token per step() so JS can yield and abort between tokens. options: {maxNewTokens,
  // temperature, topK, topP, repetitionPenalty, seed, stop, numBeams, lengthPenalty, earlyStopping,
  // noRepeatNgramSize, minNewTokens, badWordsIds, forcedBosTokenId, forcedEosTokenId}
  // (web/src/validate.mjs generateOptions) and prefillChunk (tokens per prefill step; 0 = the whole prompt).
  void start(const val& prompt_ids, const val& options);
  // {token, position, piece, text, done, topk?} or null when finished; token -1: a prefill step
  // (position = prompt tokens fed so far); {pending: true, done} while a beam search is still searching.
  val step();
  bool searching() const { return gen_ && gen_->searching(); }
  void abort();
  // flag: an Int32Array on a SharedArrayBuffer that another thread sets to 1 to stop the pass that
  // runs (checked between layers: Session::should_stop), or null.
  void set_stop_flag(const val& flag);
  // The GenerateResult so far: {text, tokens, pieces, source, promptTokens, finishReason, seed,
  // timings: {prefillMs, decodeMs, decodedTokens, tokensPerSecond}}, and with beam search score and
  // hypotheses [{tokens, text, score}] (best first).
  val result() const;

  // Interpretability (bindings/interp.cpp): plain objects and typed-array copies.
  void set_ablations(const val& ablations);  // [{kind, layer, head, mode}] for later passes; [] = none
  val analyze(const val& input, const val& options);  // forward pass + predictions, lens, scores
  val patch(const val& clean, const val& corrupted, const val& spec);
  val patch_sweep(const val& clean, const val& corrupted, const val& spec);
  val probe(const val& options);  // head detectors on the repeated random-token probe

 private:
  std::shared_ptr<const runtime::LoadedModel> m_;
  std::unique_ptr<models::Session> s_;
  nn::AttentionRecorder recorder_;
  std::unique_ptr<generate::Generation> gen_;
  uint64_t seed_ = 0;
  std::unique_ptr<interp::Interventions> ablation_hooks_;  // set_ablations()
  int threads_ = 1;
};

}  // namespace attnlens::bindings
