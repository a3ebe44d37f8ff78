// Sentence embeddings and masked-token inputs from an encoder-only model: texts tokenized as the
// model's tokenizer does it (special tokens included), cut to the model's limit, run as one padded
// batch, pooled (models/pooling.h).
//
// Truncation (as sentence-transformers / the tokenizers' `truncation=True`): an input longer than
// max_length tokens keeps its first tokens and its closing special tokens ([SEP], </s>) — the
// number of tokens dropped is reported per input, never silently.
#pragma once
#include <string>
#include <vector>

#include "models/model.h"
#include "models/pooling.h"
#include "tokenizers/tokenizer.h"

namespace attnlens::runtime {

// How a model's files say to embed (sentence-transformers modules, GGUF pooling_type), else defaults.
struct EmbeddingConfig {
  models::Pooling pooling = models::Pooling::Mean;
  bool normalize = false;
  int max_length = 0;          // tokens per input, special tokens included (0: the model's positions)
  std::string from = "default";  // "sentence-transformers", "gguf" or "default"
};

struct EncoderInputs {
  std::vector<std::vector<int>> ids;
  std::vector<int> truncated;  // tokens dropped from each input
};

EncoderInputs tokenize_inputs(const Tokenizer& tok, const std::vector<std::string>& texts, int max_length);

struct Embeddings {
  int dim = 0;
  int length = 0;                           // the padded length of the batch
  std::vector<std::vector<float>> vectors;  // one per input
};

// One padded batch (padding with pad_id, on the right) through the encoder, then pooling. The
// session's recorder (if any) gets the batch's attention ([input][heads][length][length]).
Embeddings embed_ids(const models::Model& model, models::Session& s, const std::vector<std::vector<int>>& ids,
                     int pad_id, models::Pooling pooling, bool normalize);

}  // namespace attnlens::runtime
