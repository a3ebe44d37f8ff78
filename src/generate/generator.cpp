#include "generate/generator.h"

#include <algorithm>
#include <chrono>

#include "core/error.h"

namespace attnlens::generate {

namespace {

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// The generated text so far, emitted in increments that never split a UTF-8 character: each step
// decodes the generated tokens (with the prompt's last token for context, so tokenizer rules such as
// the SentencePiece dummy-prefix space apply as in a full decode) and emits what is new, holding back
// a trailing replacement character until the next byte arrives or the stream ends.
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
    if (stable < emitted_.size() || full.compare(0, emitted_.size(), emitted_) != 0) return "";
    std::string delta = full.substr(emitted_.size(), stable - emitted_.size());
    emitted_ = full.substr(0, stable);
    last_full_ = std::move(full);
    return delta;
  }
  std::string flush() {  // whatever was held back
    std::string rest = last_full_.size() > emitted_.size() ? last_full_.substr(emitted_.size()) : "";
    emitted_ = last_full_;
    return rest;
  }
  const std::string& text() const { return emitted_; }

 private:
  const Tokenizer& tok_;
  std::vector<int> ids_;
  size_t base_ = 0;
  std::string emitted_, last_full_;
};

bool is_stop_token(const PromptFormat& f, int t) {
  return std::find(f.stop_tokens.begin(), f.stop_tokens.end(), t) != f.stop_tokens.end();
}

}  // namespace

std::vector<int> encode_prompt(const Tokenizer& tok, const PromptFormat& f, const std::string& text) {
  std::vector<int> ids = tok.encode(text, f.add_special);
  if (f.source_suffix_eos && f.eos_token >= 0) ids.push_back(f.eos_token);
  if (ids.empty() && f.empty_prompt_token >= 0) ids.push_back(f.empty_prompt_token);
  return ids;
}

GenerateResult generate(const models::Model& model, const Tokenizer& tok, const PromptFormat& f,
                        models::Session& session, const std::string& prompt, const GenerateOptions& o,
                        const TokenCallback& on_token) {
  return generate_from_tokens(model, tok, f, session, encode_prompt(tok, f, prompt), o, on_token);
}

GenerateResult generate_from_tokens(const models::Model& model, const Tokenizer& tok, const PromptFormat& f,
                                    models::Session& session, const std::vector<int>& prompt,
                                    const GenerateOptions& o, const TokenCallback& on_token) {
  check_sampling_options(o.sampling);
  AL_CHECK(o.max_new_tokens >= 0, "max_new_tokens must be ≥ 0, got ", o.max_new_tokens);
  AL_CHECK(!prompt.empty(), "the prompt is empty: it encodes to no tokens");
  GenerateResult r;
  Sampler sampler(o.sampling);
  const int vocab = model.info().vocab_size;
  session.reset();

  // Prefill: the whole prompt in one pass (for encoder–decoder models: the encoder, then the start token).
  double t0 = now_ms();
  const float* logits;
  if (model.kind() == models::ModelKind::EncoderDecoder) {
    AL_CHECK(f.decoder_start_token >= 0, "encoder-decoder generation needs a decoder start token");
    r.source = prompt;
    model.encode(session, prompt.data(), int(prompt.size()));
    r.tokens = {f.decoder_start_token};
  } else {
    AL_CHECK(int(prompt.size()) <= session.cache.capacity(), "the prompt has ", prompt.size(),
             " tokens, more than the context length of ", session.cache.capacity());
    r.tokens = prompt;
  }
  logits = model.decode(session, r.tokens.data(), int(r.tokens.size()));
  r.prefill_ms = now_ms() - t0;
  r.prompt_tokens = int(r.tokens.size());

  TextStream text(tok, r.tokens.back());
  double decode_start = now_ms();
  r.finish_reason = "length";
  for (int step = 0; step < o.max_new_tokens; ++step) {
    const int next = sampler.sample(logits, vocab, r.tokens);
    r.tokens.push_back(next);
    TokenEvent ev{next, int(r.tokens.size()) - 1, text.push(next)};
    if (is_stop_token(f, next)) {
      r.finish_reason = "eos";
      if (on_token) on_token(ev);
      break;
    }
    // Stop strings: cut the text where the first one begins.
    bool stopped = false;
    for (const std::string& s : o.stop) {
      size_t at = s.empty() ? std::string::npos : text.text().find(s);
      if (at != std::string::npos) {
        r.text = text.text().substr(0, at);
        stopped = true;
      }
    }
    if (on_token && !on_token(ev)) {
      r.finish_reason = "aborted";
      break;
    }
    if (stopped) {
      r.finish_reason = "stop";
      break;
    }
    if (step + 1 == o.max_new_tokens) break;
    if (session.position() >= session.cache.capacity()) {
      r.finish_reason = "context";
      break;
    }
    logits = model.decode(session, &next, 1);
    ++r.decoded;
  }
  if (r.finish_reason != "stop") r.text = text.text() + text.flush();
  r.decode_ms = now_ms() - decode_start;
  return r;
}

}  // namespace attnlens::generate
