// SentencePiece BPE (Llama family). Encoding follows llama2.c run.c's encode(): optional dummy-prefix
// space, one initial symbol per UTF-8 character (bytes of characters missing from the vocabulary
// become <0xXX> byte tokens), then greedy merging of the best pair. llama.cpp's SPM tokenizer and HF
// tokenizers' BPE with byte_fallback give the same ids for Llama vocabularies.
#include "tokenizers/sentencepiece_bpe.h"

#include <algorithm>
#include <functional>

#include "core/error.h"
#include "tokenizers/bpe_merge.h"
#include "tokenizers/unicode.h"

namespace attnlens {
namespace tok {

namespace {

constexpr std::string_view kSpaceMarker = "\xE2\x96\x81";  // U+2581, SentencePiece's visible space
constexpr int kNormal = 1, kUnknown = 2, kControl = 3, kUserDefined = 4, kUnused = 5, kByte = 6;  // GGUF types

// SentencePiece pieces with "▁" replaced by a real space: the spelling llama2.c's tokenizer.bin uses,
// and the one this class works in, so concatenating pieces gives text.
std::string with_spaces(std::string_view piece) {
  std::string out;
  out.reserve(piece.size());
  for (size_t i = 0; i < piece.size();) {
    if (piece.compare(i, kSpaceMarker.size(), kSpaceMarker) == 0) {
      out.push_back(' ');
      i += kSpaceMarker.size();
    } else {
      out.push_back(piece[i++]);
    }
  }
  return out;
}

// Length of the llama2.c character group at s[pos]: one byte plus up to three continuation bytes.
size_t utf8_group(std::string_view s, size_t pos) {
  size_t len = 1;
  while (len < 4 && pos + len < s.size() && (uint8_t(s[pos + len]) & 0xC0) == 0x80) ++len;
  return len;
}

class SentencePieceBpe final : public VocabTokenizer {
 public:
  explicit SentencePieceBpe(SentencePieceConfig cfg);

  std::string decode(const std::vector<int>& ids) const override;
  std::string token_bytes(int id) const override;
  int token_id(std::string_view piece) const override;

 protected:
  void encode_text(std::string_view text, bool at_start, std::vector<int>& out) const override;
  std::string display(int id) const override;

 private:
  static VocabSpec spaced(VocabSpec v);
  void init_bytes(const std::vector<int>& token_types);
  void init_scores(const std::vector<float>& scores);
  void initial_symbols(std::string_view text, std::vector<int>& out) const;
  void push_unknown(std::vector<int>& out) const;

  SpacePrefix space_prefix_;
  bool byte_fallback_, fuse_unk_, marker_is_space_;
  std::vector<int> byte_token_;  // byte value -> token id, -1 if absent
  std::vector<int> byte_value_;  // token id -> byte value, -1 for other tokens
  std::vector<int> score_rank_;  // rank of each token's score (0 = best), -1: never merged
};

VocabSpec SentencePieceBpe::spaced(VocabSpec v) {
  for (auto& p : v.pieces) p = with_spaces(p);
  for (auto& t : v.added) t.content = with_spaces(t.content);
  return v;
}

SentencePieceBpe::SentencePieceBpe(SentencePieceConfig cfg)
    : VocabTokenizer("sentencepiece-bpe", spaced(std::move(cfg.vocab))), space_prefix_(cfg.space_prefix),
      byte_fallback_(cfg.byte_fallback), fuse_unk_(cfg.fuse_unk), marker_is_space_(cfg.marker_is_space) {
  init_bytes(cfg.token_types);
  init_scores(cfg.scores);
}

void SentencePieceBpe::init_bytes(const std::vector<int>& token_types) {
  const int n = vocab_size();
  AL_CHECK(token_types.empty() || int(token_types.size()) == n, "sentencepiece tokenizer: ", token_types.size(),
           " token types for ", n, " pieces");
  byte_token_.assign(256, -1);
  byte_value_.assign(size_t(n), -1);
  for (int id = 0; id < n; ++id) {
    const int v = unicode::byte_piece_value(piece_str(id), /*lowercase_hex=*/true);
    if (!token_types.empty() && token_types[size_t(id)] == kByte)
      AL_CHECK(v >= 0, "sentencepiece tokenizer: token ", id, " has type byte but piece \"", piece_str(id),
               "\" is not <0xXX>");
    else if (!token_types.empty() || special_unchecked(id))
      continue;  // with types, only type-6 tokens are bytes
    if (v < 0) continue;
    byte_value_[size_t(id)] = v;
    if (byte_token_[size_t(v)] < 0) byte_token_[size_t(v)] = id;
  }
}

void SentencePieceBpe::init_scores(const std::vector<float>& scores) {
  const int n = vocab_size();
  AL_CHECK(int(scores.size()) == n, "sentencepiece tokenizer: ", scores.size(), " scores for ", n, " pieces");
  // llama2.c merges the pair whose concatenation has the highest score, only if it beats -1e10 (its
  // initial best_score), leftmost on ties. Ranking the distinct scores turns that into merge ranks.
  std::vector<float> distinct;
  for (float s : scores)
    if (s > -1e10f) distinct.push_back(s);
  std::sort(distinct.begin(), distinct.end(), std::greater<float>());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  score_rank_.assign(size_t(n), -1);
  for (int id = 0; id < n; ++id) {
    const float s = scores[size_t(id)];
    if (!(s > -1e10f)) continue;  // also NaN
    score_rank_[size_t(id)] = int(std::lower_bound(distinct.begin(), distinct.end(), s, std::greater<float>()) - distinct.begin());
  }
}

// A character without a token: unk (fused with a preceding unk if fuse_unk), or dropped when there is
// no unk token, as HF's BPE::merge_word does.
void SentencePieceBpe::push_unknown(std::vector<int>& out) const {
  if (unk_id() < 0) return;
  if (!(fuse_unk_ && !out.empty() && out.back() == unk_id())) out.push_back(unk_id());
}

// One symbol per character group (llama2.c's grouping: a byte and its continuation bytes); a group
// missing from the vocabulary becomes its <0xXX> byte tokens (llama2.c: id byte + 3).
void SentencePieceBpe::initial_symbols(std::string_view text, std::vector<int>& out) const {
  for (size_t pos = 0; pos < text.size();) {
    const size_t len = utf8_group(text, pos);
    const std::string_view ch = text.substr(pos, len);
    pos += len;
    if (const int id = find(ch); id >= 0) {
      out.push_back(id);
      continue;
    }
    const bool all_bytes = byte_fallback_ && std::all_of(ch.begin(), ch.end(), [&](char b) { return byte_token_[uint8_t(b)] >= 0; });
    if (!all_bytes) {
      push_unknown(out);
      continue;
    }
    for (char b : ch) out.push_back(byte_token_[uint8_t(b)]);
  }
}

void SentencePieceBpe::encode_text(std::string_view text, bool at_start, std::vector<int>& out) const {
  if (text.empty()) return;
  std::string buf, spaced_text;
  if (marker_is_space_ && text.find(kSpaceMarker) != std::string_view::npos) {
    spaced_text = with_spaces(text);
    text = spaced_text;
  }
  const bool prefix = space_prefix_ == SpacePrefix::Always || (space_prefix_ == SpacePrefix::First && at_start);
  if (prefix) {  // llama2.c: the dummy prefix " " when the text is non-empty
    buf.reserve(text.size() + 1);
    buf.push_back(' ');
    buf.append(text);
    text = buf;
  }
  std::vector<int> ids;
  ids.reserve(text.size());
  initial_symbols(text, ids);
  std::string pair;
  bpe_merge(ids, [&](int a, int b, MergeCandidate& m) {
    pair.assign(piece_str(a)).append(piece_str(b));
    const int id = find(pair);
    if (id < 0 || score_rank_[size_t(id)] < 0) return false;
    m = {score_rank_[size_t(id)], id};
    return true;
  });
  out.insert(out.end(), ids.begin(), ids.end());
}

std::string SentencePieceBpe::token_bytes(int id) const {
  check_id(id, "token_bytes");
  if (special_unchecked(id)) return {};
  if (const int v = byte_value_[size_t(id)]; v >= 0) return std::string(1, char(v));
  return piece_str(id);
}

std::string SentencePieceBpe::decode(const std::vector<int>& ids) const {
  // llama2.c decode(): after BOS, a piece's leading space (the dummy prefix) is dropped. The same is
  // done at the start of ids, so that decode(encode(x, false)) == x too.
  std::string bytes;
  int prev = -1;
  for (int id : ids) {
    check_id(id, "decode");
    std::string b = token_bytes(id);
    const bool at_start = prev < 0 || prev == bos_id();
    if (space_prefix_ != SpacePrefix::None && at_start && !b.empty() && b[0] == ' ') b.erase(0, 1);
    bytes += b;
    prev = id;
  }
  return unicode::sanitize_utf8(bytes);
}

std::string SentencePieceBpe::display(int id) const {
  const int v = byte_value_[size_t(id)];
  if (v >= 0x80) return piece_str(id);  // "<0xE2>": one byte of a longer character
  if (v >= 0) return unicode::display_bytes(std::string(1, char(v)));
  return unicode::display_bytes(piece_str(id));
}

int SentencePieceBpe::token_id(std::string_view piece) const {
  const int id = VocabTokenizer::token_id(piece);
  return id >= 0 ? id : find(with_spaces(piece));
}

}  // namespace

std::unique_ptr<Tokenizer> make_sentencepiece_bpe(SentencePieceConfig cfg) {
  return std::make_unique<SentencePieceBpe>(std::move(cfg));
}

}  // namespace tok

// GGUF tokenizer.ggml.* arrays (tokenizer.ggml.model == "llama").
std::unique_ptr<Tokenizer> make_sentencepiece_tokenizer(std::vector<std::string> pieces, std::vector<float> scores,
                                                        std::vector<int> token_types, int bos, int eos, int unk,
                                                        bool add_bos, bool add_space_prefix) {
  const int n = int(pieces.size());
  AL_CHECK(int(scores.size()) == n, "GGUF tokenizer: ", scores.size(), " scores for ", n, " tokens");
  AL_CHECK(token_types.empty() || int(token_types.size()) == n, "GGUF tokenizer: ", token_types.size(),
           " token types for ", n, " tokens");
  tok::SentencePieceConfig cfg;
  cfg.vocab.ids = {bos, eos, -1, unk};
  for (int id = 0; id < int(token_types.size()); ++id) {
    const int type = token_types[size_t(id)];
    AL_CHECK(type >= tok::kNormal && type <= tok::kByte, "GGUF tokenizer: token ", id, " has unknown type ", type);
    if (type == tok::kControl || type == tok::kUnused) cfg.vocab.special.push_back(id);
    // llama.cpp (special tokens parsed) also splits control and unknown tokens out of the text.
    if ((type == tok::kControl || type == tok::kUnknown) && !pieces[size_t(id)].empty()) {
      tok::AddedToken t;
      t.id = id;
      t.content = pieces[size_t(id)];
      t.special = true;
      cfg.vocab.added.push_back(std::move(t));
    }
    if (type == tok::kUnknown && unk < 0) cfg.vocab.ids.unk = id;
    // llama.cpp matches user-defined tokens in the text before running the SentencePiece model.
    if (type == tok::kUserDefined && !pieces[size_t(id)].empty()) {
      tok::AddedToken t;
      t.id = id;
      t.content = pieces[size_t(id)];
      cfg.vocab.added.push_back(std::move(t));
    }
  }
  for (int id : {bos, eos})
    if (id >= 0 && id < n) cfg.vocab.special.push_back(id);
  if (add_bos) {
    AL_CHECK(bos >= 0, "GGUF tokenizer: add_bos is set but there is no BOS token");
    cfg.vocab.prefix = {bos};
  }
  cfg.vocab.pieces = std::move(pieces);
  cfg.scores = std::move(scores);
  cfg.token_types = std::move(token_types);
  cfg.space_prefix = add_space_prefix ? tok::SpacePrefix::Always : tok::SpacePrefix::None;
  cfg.marker_is_space = true;
  return tok::make_sentencepiece_bpe(std::move(cfg));
}

}  // namespace attnlens
