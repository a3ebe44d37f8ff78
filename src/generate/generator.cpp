#include "generate/generator.h"

#include <algorithm>
#include <chrono>

#include "core/error.h"

namespace attnlens::generate {

// The generated text so far, emitted in increments that never split a UTF-8 character: each step
// decodes the recent tokens (with a token before them for context, so tokenizer rules such as the
// SentencePiece dummy-prefix space apply as in a full decode) and emits what is new, holding back
// a trailing replacement character until the next byte arrives or the stream ends.
//
// Only a bounded window of tokens is decoded per step (decoding everything generated so far made a
// long generation quadratic): once the window holds kWindow tokens and nothing is held back, it
// restarts from its last kKeep tokens — the first of them as context, the others as text already
// emitted — provided decoding those alone reproduces the end of the text emitted so far. Decoding
// rules only look at neighbouring tokens, so later steps emit exactly what a full decode would.
class TextStream {
 public:
  TextStream(const Tokenizer& tok, int context_token) : tok_(tok) {
    if (context_token >= 0) ids_.push_back(context_token);
    base_ = tok_.decode(ids_).size();
  }
  std::string push(int token) {
    ids_.push_back(token);
    std::string full = tok_.decode(ids_);
    full.erase(0, std::min(base_, full.size()));
    static const std::string kReplacement = "\xEF\xBF\xBD";
    size_t stable = full.size();
    while (stable >= 3 && full.compare(stable - 3, 3, kReplacement) == 0) stable -= 3;
    if (stable < window_emitted_.size() || full.compare(0, window_emitted_.size(), window_emitted_) != 0) return "";
    std::string delta = full.substr(window_emitted_.size(), stable - window_emitted_.size());
    window_emitted_.append(delta);
    emitted_.append(delta);
    last_full_ = std::move(full);
    if (ids_.size() >= kWindow && window_emitted_.size() == last_full_.size()) restart_window();
    return delta;
  }
  std::string flush() {  // whatever was held back
    std::string rest = last_full_.size() > window_emitted_.size() ? last_full_.substr(window_emitted_.size()) : "";
    window_emitted_ = last_full_;
    emitted_.append(rest);
    return rest;
  }
  const std::string& text() const { return emitted_; }

 private:
  static constexpr size_t kWindow = 64, kKeep = 8;
  void restart_window() {
    std::vector<int> keep(ids_.end() - kKeep, ids_.end());
    const std::string context = tok_.decode({keep[0]});
    std::string text = tok_.decode(keep);
    if (text.compare(0, context.size(), context) != 0) return;
    text.erase(0, context.size());
    if (text.size() > emitted_.size() || emitted_.compare(emitted_.size() - text.size(), text.size(), text) != 0) return;
    ids_ = std::move(keep);
    base_ = context.size();
    window_emitted_ = text;
    last_full_ = std::move(text);
  }
  const Tokenizer& tok_;
  std::vector<int> ids_;          // the window: context token(s), then tokens whose text is window_emitted_…
  size_t base_ = 0;               // bytes of the window's decoded text that belong to its context
  std::string window_emitted_;    // text emitted from the window's tokens
  std::string last_full_;         // the window's decoded text (after its context), held-back part included
  std::string emitted_;           // all text emitted
};

namespace {

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

bool is_stop_token(const PromptFormat& f, int t) {
  return std::find(f.stop_tokens.begin(), f.stop_tokens.end(), t) != f.stop_tokens.end();
}

}  // namespace

std::vector<int> encode_text(const Tokenizer& tok, const SpecialTokenFlags& flags, std::string_view text, bool add_special) {
  if (!add_special || !flags.override) return tok.encode(text, add_special);
  std::vector<int> ids;
  if (flags.add_bos) ids.push_back(flags.bos);
  const std::vector<int> body = tok.encode(text, false);
  ids.insert(ids.end(), body.begin(), body.end());
  if (flags.add_eos) ids.push_back(flags.eos);
  return ids;
}

std::vector<int> encode_prompt(const Tokenizer& tok, const PromptFormat& f, const std::string& text) {
  std::vector<int> ids = encode_text(tok, f.special, text, f.add_special);
  if (f.source_suffix_eos && f.eos_token >= 0) ids.push_back(f.eos_token);
  if (ids.empty() && f.empty_prompt_token >= 0) ids.push_back(f.empty_prompt_token);
  return ids;
}

Generation::Generation(const models::Model& model, const Tokenizer& tok, const PromptFormat& f,
                       models::Session& session, const std::vector<int>& prompt, const GenerateOptions& o)
    : model_(model), f_(f), session_(session), o_(o), sampler_(o.sampling) {
  AL_CHECK(o.max_new_tokens >= 0, "max_new_tokens must be ≥ 0, got ", o.max_new_tokens);
  AL_CHECK(o.prefill_chunk >= 0, "prefill_chunk must be ≥ 0, got ", o.prefill_chunk);
  AL_CHECK(o.predictions >= 0, "predictions must be ≥ 0, got ", o.predictions);
  AL_CHECK(!prompt.empty(), "the prompt is empty: it encodes to no tokens");
  check_processor_options(o.processors, model.info().vocab_size);
  const bool beams = o.beams.num_beams > 1;
  AL_CHECK(o.beams.num_beams >= 1, "num_beams must be ≥ 1, got ", o.beams.num_beams);
  AL_CHECK(!beams || o.sampling.temperature == 0.f, "beam search picks the likeliest beams: it takes temperature 0 ",
           "(sampling within beams is not supported), got temperature ", o.sampling.temperature);
  AL_CHECK(!beams || o.stop.empty(), "stop strings are not supported with beam search");
  session_.reset();
  if (model.kind() == models::ModelKind::EncoderDecoder) {
    AL_CHECK(f.decoder_start_token >= 0, "this encoder-decoder model has no decoder start token: its config.json (or ",
             "generation_config.json) gives no decoder_start_token_id (nor bos_token_id to fall back on)");
    r_.source = prompt;
    r_.tokens = {f.decoder_start_token};
  } else {
    AL_CHECK(int(prompt.size()) <= session_.cache.capacity(), "the prompt has ", prompt.size(),
             " tokens, more than the context length of ", session_.cache.capacity());
    r_.tokens = prompt;
  }
  r_.prompt_tokens = int(r_.tokens.size());
  text_ = std::make_unique<TextStream>(tok, r_.tokens.back());
  decode_start_ = now_ms();
}

// Prefill (encoder–decoder: the encoder, then the start token): the prompt in one pass, or its next
// chunk. A chunk never leaves a single token for the last one (a one-row pass takes another kernel
// path): the remainder joins the chunk before it.
bool Generation::prefill_some() {
  const double t0 = now_ms();
  const int n = int(r_.tokens.size());
  if (!r_.source.empty() && fed_ == 0 && session_.memory_length == 0)
    model_.encode(session_, r_.source.data(), int(r_.source.size()));
  int take = n - fed_;
  if (o_.prefill_chunk > 0 && r_.source.empty() && take > o_.prefill_chunk + 1) take = o_.prefill_chunk;
  logits_ = model_.decode(session_, r_.tokens.data() + fed_, take);
  fed_ += take;
  r_.prefilled = fed_;
  r_.prefill_ms += now_ms() - t0;
  return fed_ == n;
}

Generation::~Generation() = default;

void Generation::finish(const std::string& reason) {
  if (done_) return;
  done_ = true;
  r_.finish_reason = reason;
  if (reason != "stop") r_.text = text_->text() + text_->flush();
  if (!beam_) r_.decode_ms = prefilled_ ? now_ms() - decode_start_ : 0;
}

void Generation::abort() {
  if (done_) return;
  if (searching()) {  // the best sequence found so far, without replaying it
    beam_->finish();
    r_.decode_ms = now_ms() - decode_start_;
    const auto& best = beam_->hypotheses().front();
    r_.tokens = best.tokens;
    r_.score = best.score;
    for (int t : std::vector<int>(best.tokens.begin() + r_.prompt_tokens, best.tokens.end())) text_->push(t);
  }
  finish("aborted");
}

const GenerateResult& Generation::result() {
  if (!done_) {
    r_.text = text_->text();
    if (!beam_) r_.decode_ms = prefilled_ ? now_ms() - decode_start_ : 0;
  }
  return r_;
}

// After the prefill: the beams start from its logits.
void Generation::start_search() {
  const int room = session_.cache.capacity() - session_.position() + 1;  // the last token is never run
  context_limited_ = room < o_.max_new_tokens;
  const int max_new = context_limited_ ? room : o_.max_new_tokens;
  ProcessorOptions p = o_.processors;
  p.repetition_penalty = o_.sampling.repetition_penalty;
  beam_ = std::make_unique<BeamSearch>(model_, session_, r_.tokens, logits_, o_.beams, p, f_.stop_tokens, max_new);
}

// The search is over: the returned hypothesis is handed out token by token from now on.
void Generation::start_replay() {
  r_.decode_ms = now_ms() - decode_start_;
  const auto& hyps = beam_->hypotheses();
  for (const Hypothesis& h : hyps) r_.hypotheses.push_back({h.tokens, h.score});
  const Hypothesis& best = hyps.front();
  r_.score = best.score;
  r_.decoded = beam_->steps() * o_.beams.num_beams;
  replay_.assign(best.tokens.begin() + r_.prompt_tokens, best.tokens.end());
  for (auto p = best.passes; p; p = p->previous) passes_.push_back(p);
  std::reverse(passes_.begin(), passes_.end());
  AL_CHECK(passes_.empty() || passes_.size() == replay_.size(), "beam search: ", passes_.size(),
           " recorded passes for ", replay_.size(), " tokens");
  load_pass(0);
  if (replay_.empty()) finish("length");
}

// The recorder shows the pass that chose replayed token i (the encoder's records stay).
void Generation::load_pass(size_t i) {
  if (!session_.recorder || i >= passes_.size()) return;
  for (const nn::AttentionRecord& r : passes_[i]->records) session_.recorder->put(r);
}

// Appends `next` to the sequence and fills the event; false when generation is over after it.
bool Generation::emit(int next, TokenEvent& ev) {
  r_.tokens.push_back(next);
  ++steps_;
  const size_t emitted_before = text_->text().size();
  ev = TokenEvent{next, int(r_.tokens.size()) - 1, text_->push(next), nullptr};
  if (is_stop_token(f_, next)) {
    finish("eos");
    return false;
  }
  for (const std::string& s : o_.stop) {  // cut the text where the first stop string begins
    // Earlier steps found none in the text before emitted_before: search only where a new one can be.
    const size_t from = emitted_before >= s.size() ? emitted_before - (s.size() - 1) : 0;
    const size_t at = s.empty() ? std::string::npos : text_->text().find(s, from);
    if (at != std::string::npos) {
      r_.text = text_->text().substr(0, at);
      ev.text = at > emitted_before ? text_->text().substr(emitted_before, at - emitted_before) : "";
      finish("stop");
      return false;
    }
  }
  return true;
}

bool Generation::step(TokenEvent& ev) {
  if (done_) return false;
  if (!prefilled_) {  // a prefill step: the next chunk of the prompt (or all of it); no token yet
    try {
      prefilled_ = prefill_some();
    } catch (const Cancelled&) {
      finish("aborted");
      return false;
    }
    ev = TokenEvent{-1, fed_, "", nullptr};
    if (prefilled_) {
      decode_start_ = now_ms();
      if (o_.max_new_tokens == 0) finish("length");
      else if (o_.beams.num_beams > 1) start_search();
    }
    return true;
  }
  if (beam_) {
    if (!beam_->done()) {
      try {
        if (!beam_->step()) start_replay();
      } catch (const Cancelled&) {
        abort();  // the best sequence found so far
        return false;
      }
      ev = TokenEvent{-1, -1, "", nullptr};
      return true;
    }
    const int next = replay_[replayed_++];
    if (emit(next, ev)) {
      if (replayed_ == replay_.size()) finish(context_limited_ ? "context" : "length");
      else load_pass(replayed_);
    }
    return true;
  }
  const int vocab = model_.info().vocab_size;
  // The model's own distribution over the next token (the processors and the sampler work on a copy).
  if (o_.predictions > 0) top_.compute(logits_, 1, vocab, o_.predictions);
  scores_.assign(logits_, logits_ + vocab);
  ProcessorState st{&r_.tokens, r_.prompt_tokens, o_.max_new_tokens, &f_.stop_tokens};
  apply_processors(o_.processors, st, scores_.data(), vocab, /*penalty=*/false);  // the sampler applies it
  const int next = sampler_.sample(scores_.data(), vocab, r_.tokens);
  const bool more = emit(next, ev);
  if (o_.predictions > 0) ev.predictions = &top_;
  if (!more) return true;
  if (steps_ == o_.max_new_tokens) {
    finish("length");
    return true;
  }
  if (session_.position() >= session_.cache.capacity()) {
    finish("context");
    return true;
  }
  try {
    logits_ = model_.decode(session_, &next, 1);
  } catch (const Cancelled&) {
    finish("aborted");  // this step's token stands; the pass that would follow it was stopped
    return true;
  }
  ++r_.decoded;
  return true;
}

GenerateResult generate(const models::Model& model, const Tokenizer& tok, const PromptFormat& f,
                        models::Session& session, const std::string& prompt, const GenerateOptions& o,
                        const TokenCallback& on_token) {
  return generate_from_tokens(model, tok, f, session, encode_prompt(tok, f, prompt), o, on_token);
}

GenerateResult generate_from_tokens(const models::Model& model, const Tokenizer& tok, const PromptFormat& f,
                                    models::Session& session, const std::vector<int>& prompt,
                                    const GenerateOptions& o, const TokenCallback& on_token) {
  Generation g(model, tok, f, session, prompt, o);
  TokenEvent ev;
  while (g.step(ev))
    if (ev.token >= 0 && on_token && !on_token(ev)) g.abort();
  return g.result();
}

}  // namespace attnlens::generate
