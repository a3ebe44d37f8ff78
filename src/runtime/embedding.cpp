#include "runtime/embedding.h"

#include <algorithm>

#include "core/error.h"

namespace attnlens::runtime {

EncoderInputs tokenize_inputs(const Tokenizer& tok, const std::vector<std::string>& texts, int max_length) {
  AL_CHECK(max_length > 0, "embedding: max_length must be positive, got ", max_length);
  EncoderInputs in;
  for (size_t i = 0; i < texts.size(); ++i) {
    std::vector<int> ids = tok.encode(texts[i], true);
    AL_CHECK(!ids.empty(), "input ", i, " encodes to no tokens");
    int dropped = 0;
    if (int(ids.size()) > max_length) {
      int closing = 0;  // the special tokens the tokenizer closes the sequence with
      while (closing < int(ids.size()) - 1 && tok.is_special(ids[ids.size() - 1 - size_t(closing)])) ++closing;
      AL_CHECK(closing < max_length, "input ", i, ": ", closing, " closing special tokens leave no room in ", max_length);
      dropped = int(ids.size()) - max_length;
      ids.erase(ids.end() - closing - dropped, ids.end() - closing);
    }
    in.ids.push_back(std::move(ids));
    in.truncated.push_back(dropped);
  }
  return in;
}

Embeddings embed_ids(const models::Model& model, models::Session& s, const std::vector<std::vector<int>>& ids,
                     int pad_id, models::Pooling pooling, bool normalize) {
  AL_CHECK(!ids.empty(), "embedding: no inputs");
  AL_CHECK(ids.size() <= 4096, "embedding: ", ids.size(), " inputs in one batch (at most 4096)");
  Embeddings out;
  for (size_t i = 0; i < ids.size(); ++i) {
    AL_CHECK(!ids[i].empty(), "embedding: input ", i, " is empty");
    out.length = std::max(out.length, int(ids[i].size()));
  }
  const int batch = int(ids.size()), L = out.length, d = model.info().d_model;
  std::vector<int> tokens(size_t(batch) * L, pad_id);
  std::vector<uint8_t> padding(size_t(batch) * L, 1);
  for (int b = 0; b < batch; ++b)
    for (size_t t = 0; t < ids[size_t(b)].size(); ++t) {
      tokens[size_t(b) * L + t] = ids[size_t(b)][t];
      padding[size_t(b) * L + t] = 0;
    }
  models::EncoderBatch eb;
  eb.tokens = tokens.data();
  eb.padding = padding.data();
  eb.batch = batch;
  eb.length = L;
  const float* hidden = model.encode_batch(s, eb);
  out.dim = d;
  for (int b = 0; b < batch; ++b) {
    std::vector<float> v(static_cast<size_t>(d));
    models::pool(pooling, hidden + size_t(b) * L * d, int(ids[size_t(b)].size()), d, normalize, v.data());
    out.vectors.push_back(std::move(v));
  }
  return out;
}

}  // namespace attnlens::runtime
