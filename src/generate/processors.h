// What may come next, before a token is chosen: the logits processors of Hugging Face's generate(),
// applied in its order to one row of scores (raw logits for greedy decoding and sampling,
// log-probabilities for beam search):
//   repetition_penalty      CTRL (Keskar et al. 2019): scores of tokens already in the sequence
//                           divided by the penalty when positive, multiplied when negative
//   no_repeat_ngram_size n  no n-gram occurs twice: a token completing an n-gram seen before is banned
//   bad_words               sequences never generated: the last token of each is banned where the
//                           sequence so far ends with the others (single tokens: always)
//   min_new_tokens          end-of-sequence tokens banned until this many tokens were generated
//   forced_bos_token        the only allowed first generated token (score set to 0)
//   forced_eos_token        the only allowed token at the last allowed step (score 0)
// "Banned" = score −∞. The sequence the n-gram and penalty rules look at is the decoder's whole
// sequence, prompt (for an encoder–decoder: the decoder start token) included, as in generate().
#pragma once
#include <vector>

namespace attnlens::generate {

struct ProcessorOptions {
  float repetition_penalty = 1.0f;
  int no_repeat_ngram_size = 0;
  std::vector<std::vector<int>> bad_words;
  int min_new_tokens = 0;
  int forced_bos_token = -1;
  int forced_eos_token = -1;
};

// Throws attnlens::Error naming a bad option (ids checked against the vocabulary size).
void check_processor_options(const ProcessorOptions& o, int vocab);

// Where the processors look: the sequence so far and how it relates to the limits.
struct ProcessorState {
  const std::vector<int>* sequence = nullptr;  // decoder tokens so far, prompt included
  int prompt_tokens = 0;                       // how many of them are the prompt
  int max_new_tokens = 0;                      // the step generating new token max_new_tokens forces EOS
  const std::vector<int>* eos_tokens = nullptr;  // banned before min_new_tokens
};

// scores[vocab] in place. `penalty` false skips the repetition penalty (the sampler applies it).
void apply_processors(const ProcessorOptions& o, const ProcessorState& s, float* scores, int vocab, bool penalty = true);
void apply_processors(const ProcessorOptions& o, const ProcessorState& s, double* scores, int vocab, bool penalty = true);

}  // namespace attnlens::generate
