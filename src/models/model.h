// What every architecture offers the runtime, the bindings and generation.
//
//   decoder-only (Llama, GPT-2):      decode(tokens) → next-token logits, KV cache in the Session
//   encoder-only (BERT):              encode(tokens) → hidden states (and masked-LM logits if present)
//   encoder–decoder (our seq2seq):    encode(source) once, then decode(target tokens) with cross-attention
//
// A Model holds weights only and is never modified by running it; everything that changes while a
// sequence is processed (KV cache, encoder memory, scratch, position) lives in a Session, so several
// sessions can run on one model.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "nn/arena.h"
#include "nn/hooks.h"
#include "nn/kv_cache.h"
#include "nn/multi_head_attention.h"
#include "nn/recorder.h"

namespace attnlens::models {

enum class ModelKind { DecoderOnly, EncoderOnly, EncoderDecoder };
const char* model_kind_name(ModelKind k);  // "decoder-only", "encoder-only", "encoder-decoder"

struct ModelInfo {
  std::string architecture;  // "llama", "gpt2", "bert", "seq2seq"
  ModelKind kind = ModelKind::DecoderOnly;
  int64_t n_params = 0;
  int d_model = 0;
  int n_layers = 0;          // decoder layers (encoder layers for encoder-only models)
  int n_encoder_layers = 0;  // encoder–decoder models
  int n_heads = 0;
  int n_kv_heads = 0;
  int head_dim = 0;
  int d_ff = 0;
  int vocab_size = 0;         // the logits' size (an encoder–decoder's target vocabulary)
  int source_vocab_size = 0;  // encoder–decoder: ids the encoder takes (== vocab_size unless separate vocabularies)
  int context_length = 0;
  std::string positions;      // "rope", "learned", "sinusoidal"
  std::string weight_dtype;   // "f32", "q8_0", "q4_K", … or "mixed (q4_K, q6_K, …)" (largest first)
  size_t weight_bytes = 0;    // bytes of weights the kernels read
  // Bytes the model owns beside the files' bytes: converted weight copies (unaligned f32 copies,
  // transposes, matrices quantized at load) and precomputed tables (RoPE angles).
  size_t owned_bytes = 0;
  struct TypeTotals {
    std::string dtype;        // "q4_K"
    int tensors = 0;          // matrices and embedding tables of that type
    int64_t params = 0;
    size_t bytes = 0;
  };
  std::vector<TypeTotals> weight_types;  // per element type, largest bytes first
};

class Weights;
// The fields every builder fills the same way (sizes from the config, totals from the weights).
struct Shape {
  int d_model, n_layers, n_heads, n_kv_heads, d_ff, vocab_size, context_length;
  int n_encoder_layers = 0;
  int head_dim = 0;           // 0: d_model / n_heads
  int source_vocab_size = 0;  // 0: vocab_size
};
ModelInfo make_info(const std::string& architecture, ModelKind kind, const Shape& s, const std::string& positions,
                    const Weights& w);

// A batch of sequences for an encoder, padded on the right to one length.
struct EncoderBatch {
  const int* tokens = nullptr;       // [batch][length] (padding positions hold any valid id, e.g. pad)
  const int* token_types = nullptr;  // [batch][length], or null: all 0
  const uint8_t* padding = nullptr;  // [batch][length], non-zero = padding (a suffix of each row); null: none
  int batch = 1, length = 0;
};

// Per-sequence state.
class Session {
 public:
  Session(int n_layers, int n_kv_heads, int head_dim, int capacity, nn::KVType kv = nn::KVType::F32,
          const std::string& model = "this model")
      : cache(n_layers, n_kv_heads, head_dim, capacity, kv, model) {}
  virtual ~Session() = default;

  int position() const { return cache.length(); }  // decoder tokens processed so far
  void reset() {
    cache.reset();
    memory.clear();
    memory_length = 0;
  }
  // The sequence state of another session of the same model (decoder cache, encoder memory): a beam
  // continuing another beam. With memory false the encoder memory is kept (beams share one source).
  void copy_state_from(const Session& other, bool memory_too = true) {
    cache.copy_from(other.cache);
    if (memory_too) {
      memory = other.memory;
      memory_length = other.memory_length;
    }
  }

  // Bytes this session holds now: KV cache, encoder memory, scratch arena, logits and hidden states.
  size_t bytes() const;

  nn::KVCache cache;
  std::vector<nn::CrossMemory> memory;  // encoder–decoder: per decoder layer, the projected encoder output
  int memory_length = 0;                // source tokens encoded
  nn::Arena arena;
  nn::AttentionRecorder* recorder = nullptr;  // set to receive attention weights; null = none
  // Polled by every forward pass before each layer: when it returns true the pass stops by throwing
  // attnlens::Cancelled, and the session keeps the positions it had before the pass (bindings/session.cpp
  // wires abort() to it). Empty = never.
  std::function<bool()> should_stop;
  nn::ForwardHooks* hooks = nullptr;          // set to observe / change activations in the layers; null = none
  std::vector<float> logits;                  // the last decode()'s output
  std::vector<float> hidden;                  // the last encode()'s output [n, d_model]
};

class Model {
 public:
  virtual ~Model() = default;
  virtual const ModelInfo& info() const = 0;
  ModelKind kind() const { return info().kind; }

  // A session able to hold `capacity` decoder positions (0 = the model's context length), its KV
  // cache stored as `kv` (nn/kv_cache.h).
  virtual std::unique_ptr<Session> new_session(int capacity = 0, nn::KVType kv = nn::KVType::F32) const;

  // Decoder: feeds tokens[0..n) at positions session.position()… (prefill when n > 1), appends them
  // to the KV cache and returns the logits: of the last token ([vocab]), or of every token ([n][vocab])
  // when all_logits. Valid until the next call on this session.
  virtual const float* decode(Session& s, const int* tokens, int n, bool all_logits = false) const;

  // Encoder: runs the encoder over tokens[0..n). Encoder–decoder models keep the result in the
  // session as the decoder's memory (and reset the decoder); encoder-only models return the hidden
  // states [n][d_model]. token_types: BERT's segment ids (null = all 0).
  virtual const float* encode(Session& s, const int* tokens, int n, const int* token_types = nullptr) const;

  // Encoder-only models: a batch of padded sequences in one pass → hidden states [batch·length][d_model].
  // Each sequence attends to its own tokens only; padded keys get exactly zero weight (recorded as 0:
  // records are [batch][heads][length][length]).
  virtual const float* encode_batch(Session& s, const EncoderBatch& b) const;

  // Encoder-only models with a masked-LM head: logits [n][vocab] of the last encode(); else error.
  virtual const float* mlm_logits(Session& s) const;
  virtual bool has_mlm_head() const { return false; }

  // The output head applied to any residual-stream rows x [rows][d_model] (the final norm, then the
  // unembedding; BERT: its masked-LM head): logits [rows][vocab]. What the model's own output is made
  // of, for reading intermediate layers (the logit lens). Uses the session's scratch only.
  virtual void unembed(Session& s, const float* x, int rows, float* logits) const;

 protected:
  // Checks ids and sizes shared by every architecture (the ids against the vocabulary, n and the
  // pass's scratch buffers against the engine's limits, in 64 bits); throws attnlens::Error.
  void check_tokens(const int* tokens, int n, const char* what) const;
  // Floats of `rows` rows of logits (rows × vocab), checked in 64 bits.
  size_t logits_size(int rows) const;
  // Throws attnlens::Cancelled when the session's should_stop says so: call before each layer.
  static void poll(const Session& s) {
    if (s.should_stop && s.should_stop()) throw attnlens::Cancelled();
  }
  // The pass's scratch buffers for n tokens against the engine's limits (in 64 bits).
  void check_scratch(int n, const char* what) const;
  // The same against another vocabulary size (an encoder's own vocabulary).
  static void check_ids(const int* tokens, int n, int vocab, const char* what);
};

}  // namespace attnlens::models
