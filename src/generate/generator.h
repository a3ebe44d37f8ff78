// Autoregressive generation (Vaswani et al. 2017, §3: the decoder is auto-regressive):
// prefill the prompt in one forward pass (matrix multiplies), then decode one token at a time through
// the KV cache, sampling each next token, until an end token, a stop string, max_new_tokens, the end
// of the context, or the caller says stop.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "generate/beam_search.h"
#include "generate/processors.h"
#include "generate/predictions.h"
#include "generate/sampler.h"
#include "models/model.h"
#include "tokenizers/tokenizer.h"

namespace attnlens::generate {

// The special tokens around a text tokenized with add_special, when the tokenizer's configuration
// asks for other ones than the tokenizer adds by itself (tokenizer_config.json add_bos_token /
// add_eos_token over tokenizer.json's post-processor, GGUF tokenizer.ggml.add_bos_token /
// add_eos_token): the text's tokens, with BOS first if add_bos and EOS last if add_eos (the way
// transformers rebuilds the post-processor from these flags). Filled in by the runtime.
struct SpecialTokenFlags {
  bool override = false;  // false: the tokenizer's own special tokens
  bool add_bos = false;
  bool add_eos = false;
  int bos = -1;
  int eos = -1;
};

// tokenizer.encode(text, add_special) with the flags applied.
std::vector<int> encode_text(const Tokenizer& tok, const SpecialTokenFlags& flags, std::string_view text, bool add_special);

// How a model family turns a prompt into tokens and knows it is done (filled in by the runtime).
struct PromptFormat {
  bool add_special = true;       // encode_text(tokenizer, special, text, add_special)
  SpecialTokenFlags special;
  int empty_prompt_token = -1;   // fed when the prompt encodes to nothing (GPT-2: <|endoftext|>)
  std::vector<int> stop_tokens;  // generating one of these ends generation (it is kept in tokens)
  // encoder–decoder models: the prompt is the source; the decoder starts from this token.
  int decoder_start_token = -1;
  bool source_suffix_eos = false;  // append eos_token to the source
  int eos_token = -1;
};

struct GenerateOptions {
  SamplingOptions sampling;    // (its repetition_penalty is applied; processors.repetition_penalty is not used)
  ProcessorOptions processors;  // n-gram, bad words, min length, forced tokens (processors.h)
  BeamOptions beams;            // num_beams > 1: beam search (greedy only: temperature 0, no stop strings)
  int max_new_tokens = 128;
  std::vector<std::string> stop;  // stop strings: generation ends when the text contains one (cut there)
  // Prefill a decoder-only prompt this many tokens per step() (0 = the whole prompt in one pass), so
  // that a caller stepping the generation can yield, and abort, between chunks of a long prompt.
  int prefill_chunk = 0;
  int predictions = 0;            // > 0: each step also reports the top-k of the logits it sampled from
};

struct TokenEvent {
  int token;         // the token just chosen; -1 for a prefill step or a beam search step (nothing chosen yet)
  int position;      // its position in the decoder sequence (prefill steps: the prompt tokens fed so far; beam steps: -1)
  std::string text;  // text newly completed by it (may be empty mid UTF-8 character)
  // With GenerateOptions::predictions: the most likely tokens of the distribution this token was
  // drawn from (the model's, before sampling options), rows = 1; valid until the next step. Else null
  // (beam search hands out its tokens without them).
  const TopK* predictions = nullptr;
};

struct ScoredSequence {
  std::vector<int> tokens;  // decoder sequence, prompt included
  double score;             // beam search's length-normalised log-probability
};

struct GenerateResult {
  std::vector<int> tokens;     // decoder tokens fed at each position: prompt then generated
  std::vector<int> source;     // encoder–decoder: the source tokens
  int prompt_tokens = 0;       // how many of `tokens` came from the prompt
  std::string text;            // the generated text (without the prompt)
  std::string finish_reason;   // "eos", "stop", "length", "context", "aborted"
  double prefill_ms = 0;       // the prompt's forward pass (and the encoder's)
  int prefilled = 0;           // prompt tokens the prefill fed (fewer than prompt_tokens when aborted)
  double decode_ms = 0;        // every later forward pass
  int decoded = 0;             // tokens run through the decoder after the prefill (every beam's)
  // Beam search: the returned sequence's score and every hypothesis kept, best first.
  double score = 0;
  std::vector<ScoredSequence> hypotheses;
};

// Called after each new token; return false to stop (finish_reason "aborted"). The session's
// recorder, if any, holds the attention of the forward pass that produced the token during the call
// (with beam search: the pass of the returned beam that chose it).
using TokenCallback = std::function<bool(const TokenEvent&)>;

// Prompt text → the decoder's (or, for encoder–decoder models, the encoder's) input tokens.
std::vector<int> encode_prompt(const Tokenizer& tok, const PromptFormat& f, const std::string& text);

// One generation, advanced a token at a time by the caller (the JS bindings yield to the event loop
// between steps, so an AbortSignal stops it within one token). The first step()s run the prefill —
// the whole prompt in one step, or one chunk of prefill_chunk tokens per step — and return events
// with token -1 (the session's recorder then holds that pass's attention); the next step samples
// the first token. A session whose should_stop fires during a pass ends the generation ("aborted").
class TextStream;

// With beam search (options.beams.num_beams > 1), step() first runs the search one beam step per
// call, reporting token −1, then hands out the returned hypothesis' tokens one per call, with the
// attention of the passes that chose them loaded into the session's recorder.
class Generation {
 public:
  Generation(const models::Model& model, const Tokenizer& tok, const PromptFormat& f, models::Session& session,
             const std::vector<int>& prompt, const GenerateOptions& o);
  ~Generation();
  // Samples the next token, then feeds it (so the following step's logits are ready). Returns
  // false once finished (the event is then not filled in). A prefill step feeds the prompt (or its
  // next chunk) and returns an event with token -1.
  bool step(TokenEvent& ev);
  void abort();  // finish now with reason "aborted"
  bool done() const { return done_; }
  bool searching() const { return beam_ && !beam_->done(); }  // a beam search still running
  // The result so far (final once done()).
  const GenerateResult& result();

 private:
  void finish(const std::string& reason);
  bool prefill_some();  // feeds the next chunk of the prompt; true once the whole prompt is in
  void start_search();
  void start_replay();
  void load_pass(size_t i);
  bool emit(int next, TokenEvent& ev);
  const models::Model& model_;
  const PromptFormat& f_;
  models::Session& session_;
  GenerateOptions o_;
  Sampler sampler_;
  TopK top_;
  std::unique_ptr<TextStream> text_;
  GenerateResult r_;
  const float* logits_ = nullptr;
  std::vector<float> scores_;  // the logits after the processors
  int steps_ = 0;
  int fed_ = 0;  // prompt (decoder) tokens prefilled so far
  bool prefilled_ = false;
  std::unique_ptr<BeamSearch> beam_;
  std::vector<int> replay_;                             // the returned beam's generated tokens
  std::vector<std::shared_ptr<const PassRecord>> passes_;  // the pass that chose each of them
  size_t replayed_ = 0;
  bool context_limited_ = false;  // max_new_tokens was cut to the session's room
  bool done_ = false;
  double decode_start_ = 0;
};

GenerateResult generate(const models::Model& model, const Tokenizer& tok, const PromptFormat& f,
                        models::Session& session, const std::string& prompt, const GenerateOptions& o,
                        const TokenCallback& on_token = nullptr);

// The same from token ids (the prompt already encoded).
GenerateResult generate_from_tokens(const models::Model& model, const Tokenizer& tok, const PromptFormat& f,
                                    models::Session& session, const std::vector<int>& prompt,
                                    const GenerateOptions& o, const TokenCallback& on_token = nullptr);

}  // namespace attnlens::generate
