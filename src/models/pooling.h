// From an encoder's token vectors to one vector per sequence (sentence embeddings, as
// sentence-transformers' Pooling and Normalize modules and llama.cpp's pooling_type define them):
//   mean   the average of the sequence's real tokens (padding excluded), special tokens included
//   cls    the first token's vector ([CLS] / <s>)
//   max    the element-wise maximum over the real tokens
// then, if asked, divided by its Euclidean norm.
#pragma once
#include <string>

namespace attnlens::models {

enum class Pooling { Mean, Cls, Max };
const char* pooling_name(Pooling p);  // "mean", "cls", "max"
Pooling parse_pooling(const std::string& name);  // throws attnlens::Error naming the accepted ones

// out[d] from hidden [tokens][d] of which the first `real` are the sequence (the rest padding).
void pool(Pooling p, const float* hidden, int real, int d, bool normalize, float* out);

}  // namespace attnlens::models
