// Internal: reading a tokenizer.json fast. Most of a large file (9 MB for Llama 3, 33 MB for Gemma 3)
// is model.vocab and model.merges; building a nlohmann::json of them costs far more than the
// tokenizer itself. So a small strict JSON scanner reads those two members straight into vectors and
// hands every other member (small) to nlohmann.
#pragma once
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tokenizers/models.h"

namespace attnlens::tok {

struct VocabLists {
  bool has_vocab = false, vocab_is_object = false;
  std::vector<std::string> pieces;                       // {"piece": id, ...}: index = id ("" for gaps)
  std::vector<std::pair<std::string, double>> scored;    // [["piece", score], ...] (Unigram)
  bool has_merges = false;
  MergeList merges;  // "a b" or ["a", "b"]
};

// The document without model.vocab and model.merges, which go into lists. Throws attnlens::Error
// naming the byte offset of a syntax error, or the JSON path of a bad vocabulary entry (an id that is
// not a small non-negative integer, one id given twice, ill-formed UTF-8, a merge that is not two
// tokens, an id at or above max_vocab) or a size beyond core/limits.h (token bytes, merges, nesting).
nlohmann::json parse_tokenizer_json(std::string_view text, VocabLists& lists, int64_t max_vocab);

// The names of the top-level members of a JSON object (none if the document is not an object), as
// "\nNAME\nC" each, C the first character of the value ('{' an object, '[' an array, '"' a string,
// ...): find("\nmodel\n{") says there is an object "model". Checks the whole document's syntax and
// nesting as parse_json does but builds no values: the loader tells a tokenizer.json from a
// config.json by them without a DOM of a 10 MB file. Throws attnlens::Error "WHAT: not valid JSON at
// byte N: ..." (what = "file0: "). stop_at: a member name whose object value ends the scan there (the
// names so far, that one last, the rest unchecked): "model" stops before a tokenizer.json's
// vocabulary and merges, which its own reader then checks.
std::string json_member_names(std::string_view text, std::string_view what, std::string_view stop_at = {});

}  // namespace attnlens::tok
