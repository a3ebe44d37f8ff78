// make_sentencepiece_model_tokenizer: a SentencePiece ModelProto as a tokenizer pipeline.
#include "runtime/sentencepiece_tokenizer.h"

#include <algorithm>
#include <cfloat>
#include <limits>

#include "core/error.h"
#include "core/json.h"
#include "core/limits.h"
#include "tokenizers/models.h"
#include "tokenizers/pipeline.h"
#include "tokenizers/post_processors.h"
#include "tokenizers/sentencepiece_model.h"
#include "tokenizers/string_table.h"
#include "tokenizers/unicode.h"

namespace attnlens::runtime {

namespace {

using Proto = SentencePieceModelProto;
using Type = Proto::PieceType;

tok::SpmPiece kind_of(Type t) {
  switch (t) {
    case Type::Normal: return tok::SpmPiece::Normal;
    case Type::UserDefined: return tok::SpmPiece::UserDefined;
    case Type::Unused: return tok::SpmPiece::Unused;
    default: return tok::SpmPiece::Reserved;
  }
}

// The checks sentencepiece's ModelInterface::InitializePieces makes, plus what we do not apply.
// Returns the UNKNOWN piece's id.
int check(const Proto& m) {
  const std::string& f = m.name;
  const Proto::Trainer& t = m.trainer;
  if (t.model_type != Proto::ModelType::Unigram && t.model_type != Proto::ModelType::Bpe)
    fail(f, ": trainer_spec.model_type ", model_type_name(t.model_type),
         " is not supported (UNIGRAM and BPE models are; WORD and CHAR models are not)");
  if (t.treat_whitespace_as_suffix)
    fail(f, ": trainer_spec.treat_whitespace_as_suffix is set; the engine only applies the dummy prefix at the start");
  if (m.denormalizer.present && !m.denormalizer.precompiled_charsmap.empty())
    fail(f, ": denormalizer_spec has a charsmap (", m.denormalizer.precompiled_charsmap.size(),
         " bytes) for decoding, which the engine does not apply");
  const int n = int(m.pieces.size());
  int unk = -1;
  int bytes_found = 0;
  std::vector<bool> byte_seen(256, false);
  tok::StringTable seen;  // distinct pieces; index -> the id that defined it
  std::vector<int> defined_by;
  defined_by.reserve(size_t(n));
  for (int id = 0; id < n; ++id) {
    const Proto::Piece& p = m.pieces[size_t(id)];
    const size_t index = size_t(seen.insert(p.piece));
    if (index < defined_by.size())
      fail(f, ": piece \"", p.piece, "\" is defined twice (ids ", defined_by[index], " and ", id, ")");
    defined_by.push_back(id);
    if (p.type == Type::Unknown) {
      if (unk >= 0) fail(f, ": pieces ", unk, " and ", id, " are both UNKNOWN (one unk piece is allowed)");
      unk = id;
    }
    if (p.type == Type::Byte) {
      if (!t.byte_fallback)
        fail(f, ": piece ", id, " (", p.piece, ") is a BYTE piece but trainer_spec.byte_fallback is false");
      const int v = unicode::byte_piece_value(p.piece);
      if (v < 0) fail(f, ": piece ", id, " is a BYTE piece but \"", p.piece, "\" is not <0xXX>");
      if (!byte_seen[size_t(v)]) ++bytes_found;
      byte_seen[size_t(v)] = true;
    }
    if (p.type == Type::Unused && t.model_type == Proto::ModelType::Bpe)
      fail(f, ": piece ", id, " (", p.piece, ") is UNUSED; BPE models with UNUSED pieces are not supported");
  }
  if (unk < 0) fail(f, ": no piece is UNKNOWN (sentencepiece requires an unk piece)");
  if (t.byte_fallback && bytes_found != 256)
    fail(f, ": trainer_spec.byte_fallback is set but only ", bytes_found, " of the 256 <0xXX> byte pieces exist");
  for (const auto& [name, id] : {std::pair<const char*, int>{"bos_id", t.bos_id}, {"eos_id", t.eos_id}, {"pad_id", t.pad_id}})
    if (id < -1 || id >= n) fail(f, ": trainer_spec.", name, " ", id, " is outside the vocabulary (", n, " pieces)");
  return unk;
}

std::unique_ptr<tok::Model> unigram(const Proto& m, int unk, const std::vector<tok::SpmPiece>& kinds, bool byte_fallback) {
  tok::UnigramConfig u;
  u.vocab.reserve(m.pieces.size());
  float min_score = FLT_MAX, max_score = FLT_MIN;  // sentencepiece's initial values (FLT_MIN > 0)
  for (const Proto::Piece& p : m.pieces) {
    u.vocab.emplace_back(p.piece, double(p.score));
    if (p.type == Type::Normal) {
      min_score = std::min(min_score, p.score);
      max_score = std::max(max_score, p.score);
    }
  }
  u.unk_id = unk;
  u.byte_fallback = byte_fallback;
  u.fuse_unk = true;
  u.float32_scores = true;
  u.min_score = double(min_score);
  u.max_score = double(max_score);
  u.kinds = kinds;
  return std::make_unique<tok::UnigramModel>(std::move(u));
}

std::unique_ptr<tok::Model> bpe(const Proto& m, int unk, std::vector<tok::SpmPiece> kinds) {
  tok::SentencePieceBpeConfig b;
  b.pieces.reserve(m.pieces.size());
  b.scores.reserve(m.pieces.size());
  for (const Proto::Piece& p : m.pieces) {
    b.pieces.push_back(p.piece);
    b.scores.push_back(p.score);
  }
  b.kinds = std::move(kinds);
  b.unk_id = unk;
  b.byte_fallback = m.trainer.byte_fallback;
  return std::make_unique<tok::SentencePieceBpeModel>(std::move(b));
}

// A model whose ids are another vocabulary's: the inner model's ids mapped through `map`.
class VocabMappedModel final : public tok::Model {
 public:
  VocabMappedModel(std::unique_ptr<tok::Model> inner, int inner_unk, std::vector<int> map, std::vector<std::string> pieces,
                   int unk)
      : inner_(std::move(inner)), inner_unk_(inner_unk), map_(std::move(map)), pieces_(std::move(pieces)), index_(pieces_),
        unk_(unk) {}
  // An unknown stretch of the text is looked up in the vocabulary by its text, as MarianTokenizer
  // looks up the piece sentencepiece returns for it (the characters themselves): a character the
  // SentencePiece model lacks may still be a piece of vocab.json (a shared vocabulary's other side).
  void encode_word(std::string_view word, std::vector<int>& out) const override {
    const size_t from = out.size();
    inner_->encode_word(word, out);
    const int inner_unk = inner_unk_;
    const std::vector<std::string>& inner_pieces = inner_->pieces();
    // The unknown stretch's bytes: from where the known pieces before it end to where the next
    // piece's text starts (sentencepiece gives one unknown piece per stretch); a byte piece (1 byte
    // of text, 6 of piece) or two unknown pieces in a row leave it <unk>.
    size_t pos = 0;
    bool exact = true;
    for (size_t i = from; i < out.size(); ++i) {
      const int id = out[i];
      if (id != inner_unk) {
        const std::string& piece = inner_pieces[size_t(id)];
        if (piece.size() == 6 && piece.compare(0, 3, "<0x") == 0) exact = false;
        pos += piece.size();
        out[i] = map_[size_t(id)];
        continue;
      }
      size_t end = word.size();
      if (i + 1 < out.size()) {
        if (out[i + 1] == inner_unk) exact = false;
        const std::string& next = exact ? inner_pieces[size_t(out[i + 1])] : std::string();
        end = exact ? word.find(next, pos + 1) : std::string_view::npos;
        if (end == std::string_view::npos) exact = false;
      }
      int mapped = unk_;
      if (exact && end > pos && end <= word.size()) {
        const int v = index_.find(word.substr(pos, end - pos));
        if (v >= 0) mapped = v;
        pos = end;
      } else {
        exact = false;
      }
      out[i] = mapped;
    }
  }
  const std::vector<std::string>& pieces() const override { return pieces_; }
  int token_to_id(std::string_view piece) const override { return index_.find(piece); }
  int unk_id() const override { return unk_; }
  const char* name() const override { return inner_->name(); }

 private:
  std::unique_ptr<tok::Model> inner_;
  int inner_unk_;  // the SentencePiece model's unknown piece
  std::vector<int> map_;
  std::vector<std::string> pieces_;
  tok::Vocab index_;
  int unk_;
};

}  // namespace

std::unique_ptr<Tokenizer> make_sentencepiece_model_tokenizer(const Proto& m, const SentencePieceOptions& options) {
  const int unk = check(m);
  std::vector<tok::SpmPiece> kinds;
  std::vector<std::string> user;
  kinds.reserve(m.pieces.size());
  for (const Proto::Piece& p : m.pieces) {
    kinds.push_back(kind_of(p.type));
    if (p.type == Type::UserDefined) user.push_back(p.piece);
  }
  const Proto::Normalizer& ns = m.normalizer;  // the schema's defaults when absent
  tok::Pipeline p;
  tok::SentencePieceNormalizerOptions no;
  no.charsmap = ns.precompiled_charsmap;
  no.user_defined = std::move(user);
  no.add_dummy_prefix = ns.add_dummy_prefix;
  no.remove_extra_whitespaces = ns.remove_extra_whitespaces;
  no.escape_whitespaces = ns.escape_whitespaces;
  p.normalizer = std::make_unique<tok::SentencePieceNormalizer>(std::move(no));
  const bool is_bpe = m.trainer.model_type == Proto::ModelType::Bpe;
  AL_CHECK(!(options.llamacpp_ugm && is_bpe), m.name, ": llama.cpp's UGM rules apply to Unigram vocabularies only");
  p.model = is_bpe ? bpe(m, unk, kinds) : unigram(m, unk, kinds, m.trainer.byte_fallback && !options.llamacpp_ugm);
  tok::SentencePieceDecoderOptions dec;
  dec.unk_piece = m.pieces[size_t(unk)].piece;
  dec.unk_surface = m.trainer.unk_surface;
  dec.byte_pieces = m.trainer.byte_fallback;
  dec.strip_first_space = ns.add_dummy_prefix || ns.remove_extra_whitespaces;
  dec.strip_leading_spaces = ns.remove_extra_whitespaces;
  p.decoder = std::make_unique<tok::SentencePieceDecoder>(std::move(dec));
  // Control pieces are special (decode drops them, piece() shows their name) but never matched in
  // text: sentencepiece encodes "</s>" typed in the text as characters.
  for (size_t id = 0; id < m.pieces.size(); ++id) {
    const Type type = m.pieces[id].type;
    if (options.llamacpp_ugm && (type == Type::UserDefined || type == Type::Control || type == Type::Unknown)) {
      tok::AddedToken a;  // llama.cpp's tokenizer_st_partition, special tokens parsed
      a.id = int(id);
      a.content = m.pieces[id].piece;
      a.special = type != Type::UserDefined;
      p.added.push_back(std::move(a));
    } else if (type == Type::Control) {
      p.control.push_back(int(id));
    }
  }
  p.ids = {m.trainer.bos_id, m.trainer.eos_id, m.trainer.pad_id, unk};
  if (options.append_eos) {
    const int eos = m.trainer.eos_id;
    AL_CHECK(eos >= 0 && size_t(eos) < m.pieces.size(), m.name, ": T5's tokenizer closes a text with </s>, but this model has no eos_id");
    p.post_processor = std::make_unique<tok::WrapProcessor>(std::vector<int>{}, std::vector<int>{eos});
  }
  p.kind = is_bpe ? "sentencepiece-bpe" : "sentencepiece-unigram";
  std::unique_ptr<Tokenizer> t = tok::make_pipeline_tokenizer(std::move(p));

  // self_test_data: each sample's input encodes to the expected pieces (space-separated).
  for (size_t i = 0; i < m.self_test.size(); ++i) {
    const auto& [input, expected] = m.self_test[i];
    std::string got;
    for (int id : t->encode(input, false)) {
      if (!got.empty()) got.push_back(' ');
      got += m.pieces[size_t(id)].piece;
    }
    if (got != expected)
      fail(m.name, ": self_test_data sample ", i, " encodes to \"", got.substr(0, 200), "\", the file expects \"",
           expected.substr(0, 200), "\"");
  }
  return t;
}

std::unique_ptr<Tokenizer> make_marian_tokenizer(const Proto& m, const nlohmann::json& vocab, const std::string& vocab_name) {
  const int unk = check(m);
  AL_CHECK(vocab.is_object(), vocab_name, ": must be a JSON object {piece: id}");
  AL_CHECK(vocab.size() <= size_t(limits::kMaxVocab), vocab_name, ": ", vocab.size(), " entries (at most ", limits::kMaxVocab, ")");
  int n = 0;
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    AL_CHECK(it.value().is_number_integer() && it.value().get<int64_t>() >= 0 && it.value().get<int64_t>() < limits::kMaxVocab,
             vocab_name, ": the id of \"", brief_name(it.key()), "\" must be an integer in [0, ", limits::kMaxVocab, "), got ",
             json_brief(it.value()));
    n = std::max(n, it.value().get<int>() + 1);
  }
  std::vector<std::string> pieces(static_cast<size_t>(n));
  for (auto it = vocab.begin(); it != vocab.end(); ++it) {
    std::string& slot = pieces[size_t(it.value().get<int>())];
    AL_CHECK(slot.empty(), vocab_name, ": \"", brief_name(slot), "\" and \"", brief_name(it.key()), "\" have the same id ",
             it.value().get<int>());
    AL_CHECK(!it.key().empty(), vocab_name, ": an empty piece");
    slot = it.key();
  }
  const auto id_of = [&](const char* piece) {
    const auto it = vocab.find(piece);
    AL_CHECK(it != vocab.end(), vocab_name, ": has no \"", piece, "\" (Marian's end, unknown and padding tokens)");
    return it.value().get<int>();
  };
  const int eos = id_of("</s>"), vunk = id_of("<unk>"), pad = id_of("<pad>");
  // The SentencePiece model's ids -> vocab.json's (a piece vocab.json lacks is <unk>).
  std::vector<int> map(m.pieces.size(), vunk);
  for (size_t id = 0; id < m.pieces.size(); ++id) {
    const auto it = vocab.find(m.pieces[id].piece);
    if (it != vocab.end()) map[id] = it.value().get<int>();
  }
  std::vector<tok::SpmPiece> kinds;
  std::vector<std::string> user;
  for (const Proto::Piece& p : m.pieces) {
    kinds.push_back(kind_of(p.type));
    if (p.type == Type::UserDefined) user.push_back(p.piece);
  }
  tok::Pipeline p;
  tok::SentencePieceNormalizerOptions no;
  no.charsmap = m.normalizer.precompiled_charsmap;
  no.user_defined = std::move(user);
  no.add_dummy_prefix = m.normalizer.add_dummy_prefix;
  no.remove_extra_whitespaces = m.normalizer.remove_extra_whitespaces;
  no.escape_whitespaces = m.normalizer.escape_whitespaces;
  p.normalizer = std::make_unique<tok::SentencePieceNormalizer>(std::move(no));
  const bool is_bpe = m.trainer.model_type == Proto::ModelType::Bpe;
  std::unique_ptr<tok::Model> inner = is_bpe ? bpe(m, unk, kinds) : unigram(m, unk, kinds, m.trainer.byte_fallback);
  // Language codes (">>fra<<") are split out of the text as tokens of their own.
  for (int id = 0; id < n; ++id) {
    const std::string& piece = pieces[size_t(id)];
    if (piece.size() > 4 && piece.compare(0, 2, ">>") == 0 && piece.compare(piece.size() - 2, 2, "<<") == 0) {
      tok::AddedToken a;
      a.id = id;
      a.content = piece;
      p.added.push_back(std::move(a));
    }
  }
  p.model = std::make_unique<VocabMappedModel>(std::move(inner), unk, std::move(map), std::move(pieces), vunk);
  p.post_processor = std::make_unique<tok::WrapProcessor>(std::vector<int>{}, std::vector<int>{eos});
  tok::SentencePieceDecoderOptions dec;
  dec.unk_piece = "<unk>";
  dec.unk_surface = m.trainer.unk_surface;
  dec.byte_pieces = m.trainer.byte_fallback;
  dec.strip_first_space = m.normalizer.add_dummy_prefix || m.normalizer.remove_extra_whitespaces;
  dec.strip_leading_spaces = m.normalizer.remove_extra_whitespaces;
  p.decoder = std::make_unique<tok::SentencePieceDecoder>(std::move(dec));
  p.ids = {-1, eos, pad, vunk};
  p.kind = is_bpe ? "marian-bpe" : "marian-unigram";
  return tok::make_pipeline_tokenizer(std::move(p));
}

std::unique_ptr<Tokenizer> load_sentencepiece_model(const Bytes& file) {
  return make_sentencepiece_model_tokenizer(read_sentencepiece_model(file));
}

}  // namespace attnlens::runtime
