// The tokenizer made of a Pipeline (pipeline.h), following HF tokenizers' TokenizerImpl::encode /
// decode (tokenizer/mod.rs) and AddedVocabulary::extract_and_normalize.
#include "tokenizers/pipeline.h"

#include <algorithm>

#include "core/error.h"
#include "tokenizers/string_table.h"
#include "tokenizers/unicode.h"
#include "tokenizers/vocab_tokenizer.h"  // special_label

namespace attnlens::tok {

namespace {

class PipelineTokenizer final : public Tokenizer {
 public:
  explicit PipelineTokenizer(Pipeline p);

  std::vector<int> encode(std::string_view text, bool add_special) const override;
  std::string decode(const std::vector<int>& ids) const override;
  std::string token_bytes(int id) const override;
  std::string piece(int id) const override;
  int vocab_size() const override { return int(pieces_.size()); }
  int bos_id() const override { return p_.ids.bos; }
  int eos_id() const override { return p_.ids.eos; }
  int pad_id() const override { return p_.ids.pad; }
  int unk_id() const override { return p_.ids.unk; }
  bool is_special(int id) const override {
    check_id(id, "is_special");
    return special_[size_t(id)] != 0;
  }
  std::string kind() const override { return p_.kind; }
  int token_id(std::string_view piece) const override;

 private:
  void check_id(int id, const char* what) const {
    if (id < 0 || id >= int(pieces_.size()))
      fail(p_.kind, " tokenizer ", what, ": token id ", id, " is out of range (vocabulary size ", pieces_.size(), ")");
  }
  // Repeated words are encoded once per call: the cache lives for one encode() only, so the
  // tokenizer stays immutable and thread-safe.
  struct WordCache {
    StringTable words;
    std::vector<uint32_t> begin{0};  // word i's ids are ids[begin[i], begin[i + 1])
    std::vector<int> ids;
  };
  void encode_stretch(std::string_view text, bool at_start, std::vector<int>& out, WordCache& cache) const;
  void encode_words(const Words& w, std::vector<int>& out, WordCache& cache) const;

  Pipeline p_;
  std::vector<std::string_view> pieces_;  // id -> token string (model pieces and added tokens, owned by p_)
  std::vector<uint8_t> special_;
  AddedTokenMatcher raw_added_, normalized_added_;
  StringTable added_index_;      // added token contents; index -> added_ids_
  std::vector<int> added_ids_;
  StringTable special_labels_;   // special tokens by label; index -> special_label_ids_
  std::vector<int> special_label_ids_;
};

PipelineTokenizer::PipelineTokenizer(Pipeline p) : p_(std::move(p)) {
  AL_CHECK(p_.model, "tokenizer pipeline: no model");
  pieces_.assign(p_.model->pieces().begin(), p_.model->pieces().end());
  size_t n = pieces_.size();
  for (const AddedToken& t : p_.added) {
    AL_CHECK(t.id >= 0, "added token \"", t.content, "\" has a negative id");
    n = std::max(n, size_t(t.id) + 1);
  }
  AL_CHECK(n > 0, "tokenizer pipeline: empty vocabulary");
  pieces_.resize(n);
  special_.assign(n, 0);
  std::vector<AddedToken> raw, normalized;
  for (const AddedToken& a : p_.added) {
    const std::string_view model_piece = pieces_[size_t(a.id)];
    AL_CHECK(model_piece.empty() || model_piece == a.content, "added token \"", a.content, "\" has id ", a.id,
             ", which the model's vocabulary gives to \"", model_piece, "\"");
    pieces_[size_t(a.id)] = a.content;  // p_.added is not modified from here on
    AddedToken t = a;
    if (t.special) special_[size_t(t.id)] = 1;
    if (t.normalized && p_.normalizer) {
      t.content = p_.normalizer->normalize(t.content);  // matched in normalized text
      if (t.content.empty()) continue;
      normalized.push_back(std::move(t));
    } else {
      raw.push_back(std::move(t));
    }
  }
  for (const AddedToken& t : p_.added)
    if (size_t(added_index_.insert(pieces_[size_t(t.id)])) == added_ids_.size()) added_ids_.push_back(t.id);
  raw_added_ = AddedTokenMatcher(std::move(raw));
  normalized_added_ = AddedTokenMatcher(std::move(normalized));
  for (int id : {p_.ids.bos, p_.ids.eos, p_.ids.pad, p_.ids.unk})
    AL_CHECK(id >= -1 && id < int(n), p_.kind, " tokenizer: special token id ", id, " is outside the vocabulary (size ", n, ")");
  for (int id : {p_.ids.bos, p_.ids.eos, p_.ids.pad})
    if (id >= 0) special_[size_t(id)] = 1;
  for (int id : p_.control) {
    AL_CHECK(id >= 0 && id < int(n), p_.kind, " tokenizer: control token id ", id, " is outside the vocabulary (size ", n, ")");
    special_[size_t(id)] = 1;
  }
  if (p_.post_processor) p_.post_processor->check_ids(int(n));
  if (p_.limits.pad)
    AL_CHECK(p_.limits.pad_id >= 0 && p_.limits.pad_id < int(n), "padding id ", p_.limits.pad_id,
             " is outside the vocabulary (size ", n, ")");
  if (p_.kind.empty()) {
    for (const char* c = p_.model->name(); *c; ++c) p_.kind.push_back(char(*c >= 'A' && *c <= 'Z' ? *c + 32 : *c));
  }
  for (size_t id = 0; id < n; ++id)
    if (special_[id] && size_t(special_labels_.insert(special_label(pieces_[id]))) == special_label_ids_.size())
      special_label_ids_.push_back(int(id));
}

void PipelineTokenizer::encode_stretch(std::string_view text, bool at_start, std::vector<int>& out, WordCache& cache) const {
  if (text.empty()) return;
  Words w;
  w.text.assign(text);
  w.spans.push_back({0, uint32_t(text.size())});
  w.at_start = at_start;
  if (p_.pre_tokenizer) p_.pre_tokenizer->pre_tokenize(w);
  encode_words(w, out, cache);
}

// The per-word loop, without objects of its own to destroy (in the wasm build every call made from a
// function with an exception landing pad goes through a JS trampoline).
__attribute__((noinline)) void PipelineTokenizer::encode_words(const Words& w, std::vector<int>& out, WordCache& cache) const {
  constexpr size_t kCachedWordBytes = 64;  // longer words are rare: encoded without the cache
  for (size_t k = 0; k < w.spans.size(); ++k) {
    const std::string_view word = w.word(k);
    if (word.empty()) continue;
    if (w.spans.size() == 1 || word.size() > kCachedWordBytes) {
      p_.model->encode_word(word, out);
      continue;
    }
    const size_t known = cache.words.size();
    const size_t i = size_t(cache.words.insert(word));
    if (i == known) {  // a new word: its ids are appended to cache.ids
      p_.model->encode_word(word, cache.ids);
      cache.begin.push_back(uint32_t(cache.ids.size()));
    }
    for (uint32_t j = cache.begin[i]; j < cache.begin[i + 1]; ++j) out.push_back(cache.ids[j]);
  }
}

std::vector<int> PipelineTokenizer::encode(std::string_view text, bool add_special) const {
  std::vector<int> out;
  out.reserve(text.size() / 3 + 8);
  WordCache cache;
  std::string before;
  if (p_.before_added) {  // the stretches between added tokens rewritten, the tokens matched again
    for (const Segment& s : raw_added_.split(text))
      if (s.added_id >= 0) before.append(s.text);
      else before += p_.before_added->normalize(s.text);
    text = before;
  }
  for (const Segment& raw : raw_added_.split(text)) {
    if (raw.added_id >= 0) {
      out.push_back(raw.added_id);
      continue;
    }
    if (!p_.normalizer) {
      encode_stretch(raw.text, raw.offset == 0, out, cache);
      continue;
    }
    const std::string normalized = p_.normalizer->normalize(raw.text);
    for (const Segment& s : normalized_added_.split(normalized)) {
      if (s.added_id >= 0)
        out.push_back(s.added_id);
      else
        encode_stretch(s.text, raw.offset == 0 && s.offset == 0, out, cache);
    }
  }
  const Limits& l = p_.limits;
  if (l.max_length >= 0) {  // room is left for the ids the post-processor adds
    const size_t added = add_special && p_.post_processor ? p_.post_processor->added_count() : 0;
    const size_t keep = size_t(l.max_length) > added ? size_t(l.max_length) - added : 0;
    if (out.size() > keep) {
      if (l.truncate_left) out.erase(out.begin(), out.end() - long(keep));
      else out.resize(keep);
    }
  }
  if (add_special && p_.post_processor) p_.post_processor->process(out);
  if (l.pad) {
    size_t target = std::max(out.size(), size_t(l.pad_to));
    if (l.pad_to_multiple_of > 0) target = (target + size_t(l.pad_to_multiple_of) - 1) / size_t(l.pad_to_multiple_of) * size_t(l.pad_to_multiple_of);
    if (target > out.size()) out.insert(l.pad_left ? out.begin() : out.end(), target - out.size(), l.pad_id);
  }
  return out;
}

std::string PipelineTokenizer::decode(const std::vector<int>& ids) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int id : ids) {
    check_id(id, "decode");
    if (!special_[size_t(id)]) tokens.emplace_back(pieces_[size_t(id)]);
  }
  if (p_.decoder) p_.decoder->decode_chain(tokens, DecodePosition::Text);
  std::string bytes;
  for (const std::string& t : tokens) bytes += t;
  return unicode::sanitize_utf8(bytes);
}

std::string PipelineTokenizer::token_bytes(int id) const {
  check_id(id, "token_bytes");
  if (special_[size_t(id)]) return {};
  std::vector<std::string> one{std::string(pieces_[size_t(id)])};
  if (p_.decoder) p_.decoder->decode_chain(one, DecodePosition::Token);
  std::string bytes;
  for (const std::string& t : one) bytes += t;
  return bytes;
}

std::string PipelineTokenizer::piece(int id) const {
  check_id(id, "piece");
  if (special_[size_t(id)]) return special_label(pieces_[size_t(id)]);
  std::string label(pieces_[size_t(id)]);
  if (p_.decoder) p_.decoder->display(label);
  return unicode::display_bytes(label);
}

int PipelineTokenizer::token_id(std::string_view piece) const {
  if (const int id = p_.model->token_to_id(piece); id >= 0) return id;
  if (const int i = added_index_.find(piece); i >= 0) return added_ids_[size_t(i)];
  if (const int i = special_labels_.find(piece); i >= 0) return special_label_ids_[size_t(i)];
  return -1;
}

}  // namespace

std::unique_ptr<Tokenizer> make_pipeline_tokenizer(Pipeline p) { return std::make_unique<PipelineTokenizer>(std::move(p)); }

}  // namespace attnlens::tok
