// make_sentencepiece_model_tokenizer: a SentencePiece ModelProto as a tokenizer pipeline.
#include "runtime/sentencepiece_tokenizer.h"

#include <algorithm>
#include <cfloat>
#include <limits>

#include "core/error.h"
#include "core/json.h"
#include "core/limits.h"
#include "tokenizers/models.h"
#include "tokenizers/normalizers.h"
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

constexpr const char* kSpace = "\xE2\x96\x81";  // "▁"

tok::SentencePieceNormalizerOptions normalizer_options(const Proto& m) {
  tok::SentencePieceNormalizerOptions no;  // the schema's defaults when the NormalizerSpec is absent
  no.charsmap = m.normalizer.precompiled_charsmap;
  for (const Proto::Piece& p : m.pieces)
    if (p.type == Type::UserDefined) no.user_defined.push_back(p.piece);
  no.add_dummy_prefix = m.normalizer.add_dummy_prefix;
  no.remove_extra_whitespaces = m.normalizer.remove_extra_whitespaces;
  no.escape_whitespaces = m.normalizer.escape_whitespaces;
  return no;
}

tok::SentencePieceDecoderOptions decoder_options(const Proto& m, const std::string& unk_piece) {
  tok::SentencePieceDecoderOptions dec;
  dec.unk_piece = unk_piece;
  dec.unk_surface = m.trainer.unk_surface;
  dec.byte_pieces = m.trainer.byte_fallback;
  dec.strip_first_space = m.normalizer.add_dummy_prefix || m.normalizer.remove_extra_whitespaces;
  dec.strip_leading_spaces = m.normalizer.remove_extra_whitespaces;
  return dec;
}

std::vector<tok::SpmPiece> kinds_of(const Proto& m) {
  std::vector<tok::SpmPiece> kinds;
  kinds.reserve(m.pieces.size());
  for (const Proto::Piece& p : m.pieces) kinds.push_back(kind_of(p.type));
  return kinds;
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

std::string albert_preprocess(std::string_view text, const SentencePieceOptions& o) {
  std::string s;
  bool gap = false;
  for (size_t pos = 0; pos < text.size();) {
    const unicode::Utf8Step c = unicode::decode_utf8(text, pos);
    // " ".join(text.strip().split()): Python's str.isspace whitespace
    if (o.remove_space && unicode::is_python_space(c.cp)) {
      gap = !s.empty();
    } else {
      if (gap) s.push_back(' ');
      gap = false;
      if ((c.cp == '`' || c.cp == '\'') && pos + 1 < text.size() && text[pos + 1] == char(c.cp)) {
        s.push_back('"');  // `` and '' -> "
        pos += 2;
        continue;
      }
      s.append(text.substr(pos, c.len));
    }
    pos += c.len;
  }
  if (!o.keep_accents) {
    const std::string d = unicode::normalize(s, unicode::NormalForm::NFKD);
    s.clear();
    for (size_t pos = 0; pos < d.size();) {
      const unicode::Utf8Step c = unicode::decode_utf8(d, pos);
      if (unicode::combining_class(c.cp) == 0) s.append(d, pos, c.len);  // unicodedata.combining
      pos += c.len;
    }
  }
  return o.do_lower_case ? unicode::python_lower(s) : s;
}

namespace {

// ALBERT's preprocess_text before sentencepiece's own normalizer.
class AlbertNormalizer final : public tok::Normalizer {
 public:
  AlbertNormalizer(std::unique_ptr<tok::Normalizer> inner, const SentencePieceOptions& o) : inner_(std::move(inner)), o_(o) {}
  std::string normalize(std::string_view text) const override { return inner_->normalize(albert_preprocess(text, o_)); }

 private:
  std::unique_ptr<tok::Normalizer> inner_;
  SentencePieceOptions o_;
};

// AlbertTokenizer._tokenize: a piece of two or more characters ending with a digit and "," is
// encoded again without the "," (and without "▁"; the leading "▁" the result gets is dropped when
// the piece had none), the "," following as a piece of its own.
class AlbertModel final : public tok::Model {
 public:
  AlbertModel(std::unique_ptr<tok::Model> inner, const Proto& m)
      : inner_(std::move(inner)), norm_(normalizer_options(m)), comma_(id_or_unk(",")) {}
  void encode_word(std::string_view word, std::vector<int>& out) const override {
    std::vector<int> ids;
    inner_->encode_word(word, ids);
    const std::vector<std::string>& pieces = inner_->pieces();
    for (const int id : ids) {
      const std::string& p = pieces[size_t(id)];
      if (p.size() < 2 || p.back() != ',' || !unicode::is_python_digit(last_char(p.substr(0, p.size() - 1)))) {
        out.push_back(id);
        continue;
      }
      std::string text;
      for (size_t k = 0; k + 1 < p.size(); ++k)
        if (p.compare(k, 3, kSpace) == 0) k += 2;
        else text.push_back(p[k]);
      const size_t at = out.size();
      const std::string n = norm_.normalize(text);
      if (!n.empty()) inner_->encode_word(n, out);
      if (p.compare(0, 3, kSpace) != 0 && out.size() > at && pieces[size_t(out[at])].compare(0, 3, kSpace) == 0) {
        const std::string rest = pieces[size_t(out[at])].substr(3);
        if (rest.empty()) out.erase(out.begin() + long(at));
        else out[at] = id_or_unk(rest);
      }
      out.push_back(comma_);
    }
  }
  const std::vector<std::string>& pieces() const override { return inner_->pieces(); }
  int token_to_id(std::string_view piece) const override { return inner_->token_to_id(piece); }
  int unk_id() const override { return inner_->unk_id(); }
  const char* name() const override { return inner_->name(); }

 private:
  int id_or_unk(std::string_view piece) const {  // sentencepiece's PieceToId
    const int id = inner_->token_to_id(piece);
    return id >= 0 ? id : inner_->unk_id();
  }
  static char32_t last_char(std::string_view s) {
    size_t at = s.size() - 1;
    while (at > 0 && (uint8_t(s[at]) & 0xC0) == 0x80) --at;
    return unicode::decode_utf8(s, at).cp;
  }
  std::unique_ptr<tok::Model> inner_;
  tok::SentencePieceNormalizer norm_;
  int comma_;
};

// T5Tokenizer's _add_eos_if_not_present.
class EosUnlessLast final : public tok::PostProcessor {
 public:
  explicit EosUnlessLast(int eos) : eos_(eos) {}
  void process(std::vector<int>& ids) const override {
    if (ids.empty() || ids.back() != eos_) ids.push_back(eos_);
  }
  void check_ids(int) const override {}
  size_t added_count() const override { return 1; }

 private:
  int eos_;
};

void add_special(tok::Pipeline& p, int id, std::string content, bool lstrip = false, bool rstrip = false) {
  if (id < 0) return;
  tok::AddedToken a;
  a.id = id;
  a.content = std::move(content);
  a.special = true;
  a.lstrip = lstrip;
  a.rstrip = rstrip;
  a.python_space = true;  // transformers' tokenize(): str.rstrip() / str.lstrip() of the neighbours
  p.added.push_back(std::move(a));
}

}  // namespace

SentencePieceOptions sentencepiece_family(const nlohmann::json& tc, const nlohmann::json& config, const std::string& tc_name) {
  SentencePieceOptions o;
  const auto text = [](const nlohmann::json& j, const char* key) {
    return j.is_object() && j.contains(key) && j.at(key).is_string() ? j.at(key).get<std::string>() : std::string();
  };
  std::string cls = text(tc, "tokenizer_class");
  if (cls.size() > 4 && cls.compare(cls.size() - 4, 4, "Fast") == 0) cls.resize(cls.size() - 4);
  const std::string type = text(config, "model_type");
  if (!cls.empty()) o.family = cls == "T5Tokenizer" || cls == "MT5Tokenizer" ? SpmFamily::T5
                             : cls == "XLMRobertaTokenizer"                  ? SpmFamily::XlmRoberta
                             : cls == "AlbertTokenizer"                      ? SpmFamily::Albert
                                                                             : SpmFamily::None;
  else o.family = type == "t5" || type == "mt5" || type == "umt5" ? SpmFamily::T5
                : type == "xlm-roberta"                           ? SpmFamily::XlmRoberta
                : type == "albert"                                ? SpmFamily::Albert
                                                                  : SpmFamily::None;
  if (!tc.is_object()) return o;
  const auto flag = [&](const char* key, bool& out) {
    if (!tc.contains(key) || tc.at(key).is_null()) return;
    AL_CHECK(tc.at(key).is_boolean(), tc_name, ": ", key, " must be true or false, got ", json_brief(tc.at(key)));
    out = tc.at(key).get<bool>();
  };
  if (o.family == SpmFamily::Albert) {
    flag("remove_space", o.remove_space);
    flag("keep_accents", o.keep_accents);
    flag("do_lower_case", o.do_lower_case);
  }
  if (o.family != SpmFamily::T5) return o;
  bool legacy = true;
  flag("legacy", legacy);
  AL_CHECK(legacy, tc_name, ": legacy false (T5Tokenizer's handling of the text after a special token without a ",
           "dummy prefix) is not applied to .model files");
  if (tc.contains("extra_ids")) {
    const nlohmann::json& v = tc.at("extra_ids");
    AL_CHECK(v.is_number_integer() && v.get<int64_t>() >= 0 && v.get<int64_t>() <= 100000, tc_name,
             ": extra_ids must be an integer in [0, 100000], got ", json_brief(v));
    o.extra_ids = v.get<int>();
  }
  // T5Tokenizer: the sentinels additional_special_tokens names must be extra_ids many
  if (tc.contains("additional_special_tokens") && tc.at("additional_special_tokens").is_array()) {
    int named = 0;
    for (const nlohmann::json& t : tc.at("additional_special_tokens")) {
      const std::string s = t.is_string() ? t.get<std::string>() : t.is_object() ? text(t, "content") : std::string();
      named += s.find("<extra_id_") != std::string::npos;
    }
    AL_CHECK(named == 0 || named == o.extra_ids, tc_name, ": additional_special_tokens names ", named,
             " sentinels (<extra_id_i>) but extra_ids is ", o.extra_ids, " (T5Tokenizer requires them to agree)");
  }
  return o;
}

std::unique_ptr<Tokenizer> make_sentencepiece_model_tokenizer(const Proto& m, const SentencePieceOptions& options) {
  const int unk = check(m);
  const std::vector<tok::SpmPiece> kinds = kinds_of(m);
  tok::Pipeline p;
  const SpmFamily family = options.family;
  p.normalizer = std::make_unique<tok::SentencePieceNormalizer>(normalizer_options(m));
  if (family == SpmFamily::Albert) p.normalizer = std::make_unique<AlbertNormalizer>(std::move(p.normalizer), options);
  const bool is_bpe = m.trainer.model_type == Proto::ModelType::Bpe;
  AL_CHECK(!(options.llamacpp_ugm && is_bpe), m.name, ": llama.cpp's UGM rules apply to Unigram vocabularies only");
  p.model = is_bpe ? bpe(m, unk, kinds) : unigram(m, unk, kinds, m.trainer.byte_fallback && !options.llamacpp_ugm);
  tok::SentencePieceDecoderOptions dec = decoder_options(m, m.pieces[size_t(unk)].piece);
  dec.strip_ends = family != SpmFamily::None;
  p.decoder = std::make_unique<tok::SentencePieceDecoder>(std::move(dec));
  const int n = int(m.pieces.size());
  // Control pieces are special (decode drops them, piece() shows their name) but never matched in
  // text: sentencepiece encodes "</s>" typed in the text as characters.
  std::vector<int> map;  // XLM-R: the .model's ids -> fairseq's
  if (family == SpmFamily::XlmRoberta) {
    AL_CHECK(n >= 3 && unk == 0 && m.pieces[1].piece == "<s>" && m.pieces[2].piece == "</s>", m.name,
             ": XLM-R's tokenizer (XLMRobertaTokenizer) reads a SentencePiece model with <unk> <s> </s> at ids 0, 1, 2; this one has ",
             n > 0 ? m.pieces[0].piece : "", " ", n > 1 ? m.pieces[1].piece : "", " ", n > 2 ? m.pieces[2].piece : "");
    std::vector<std::string> pieces{"<s>", "<pad>", "</s>", "<unk>"};
    map = {3, 0, 2};
    for (int id = 3; id < n; ++id) {
      pieces.push_back(m.pieces[size_t(id)].piece);
      map.push_back(id + 1);
    }
    pieces.push_back("<mask>");
    p.model = std::make_unique<VocabMappedModel>(std::move(p.model), unk, map, std::move(pieces), 3);
    for (int id = 0; id < 4; ++id) add_special(p, id, p.model->pieces()[size_t(id)]);
    add_special(p, n + 1, "<mask>", true);
    p.post_processor = std::make_unique<tok::WrapProcessor>(std::vector<int>{0}, std::vector<int>{2});
    p.ids = {0, 2, 1, 3};
  } else if (family == SpmFamily::Albert) {
    const auto id_of = [&](const char* piece) {
      const int id = p.model->token_to_id(piece);
      AL_CHECK(id >= 0, m.name, ": ALBERT's tokenizer (AlbertTokenizer) puts [CLS] A [SEP] around a text, but this SentencePiece ",
               "model has no ", piece, " piece");
      return id;
    };
    const int cls = id_of("[CLS]"), sep = id_of("[SEP]");
    for (int id : {cls, sep, unk, m.trainer.pad_id}) add_special(p, id, id >= 0 ? m.pieces[size_t(id)].piece : "");
    add_special(p, p.model->token_to_id("[MASK]"), "[MASK]", true);
    // PreTrainedTokenizer.tokenize with do_lower_case (transformers' tokenization_utils.py), before
    // the special tokens are split out: re.sub("(<special>|...)|(.+?)", ...) lowercases each
    // character outside the special tokens on its own, so Σ is σ wherever it stands and "<UNK>"
    // typed becomes the special token "<unk>". preprocess_text lowercases again (str.lower()).
    if (options.do_lower_case) p.before_added = std::make_unique<tok::LowercaseNormalizer>();
    p.model = std::make_unique<AlbertModel>(std::move(p.model), m);
    p.post_processor = std::make_unique<tok::WrapProcessor>(std::vector<int>{cls}, std::vector<int>{sep});
    p.ids = {cls, sep, m.trainer.pad_id, unk};
  } else {
    p.ids = {m.trainer.bos_id, m.trainer.eos_id, m.trainer.pad_id, unk};
  }
  if (family == SpmFamily::T5) {
    const int eos = m.trainer.eos_id;
    AL_CHECK(eos >= 0, m.name, ": T5's tokenizer closes a text with </s>, but this model has no eos_id");
    for (int id : {eos, unk, m.trainer.pad_id}) add_special(p, id, id >= 0 ? m.pieces[size_t(id)].piece : "");
    for (int i = 0; i < options.extra_ids; ++i) add_special(p, n + options.extra_ids - 1 - i, "<extra_id_" + std::to_string(i) + ">", true, true);
    p.post_processor = std::make_unique<EosUnlessLast>(eos);
  }
  for (int id = 0; id < n; ++id) {
    const Type type = m.pieces[size_t(id)].type;
    if (options.llamacpp_ugm && (type == Type::UserDefined || type == Type::Control || type == Type::Unknown)) {
      add_special(p, id, m.pieces[size_t(id)].piece);  // llama.cpp's tokenizer_st_partition, special tokens parsed
      p.added.back().special = type != Type::UserDefined;
    } else if (type == Type::Control)
      p.control.push_back(map.empty() ? id : map[size_t(id)]);
  }
  p.kind = is_bpe ? "sentencepiece-bpe" : "sentencepiece-unigram";
  std::unique_ptr<Tokenizer> t = tok::make_pipeline_tokenizer(std::move(p));

  // self_test_data: each sample's input encodes to the expected pieces (space-separated).
  for (size_t i = 0; i < m.self_test.size() && family == SpmFamily::None; ++i) {
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
  const std::vector<tok::SpmPiece> kinds = kinds_of(m);
  tok::Pipeline p;
  p.normalizer = std::make_unique<tok::SentencePieceNormalizer>(normalizer_options(m));
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
  p.decoder = std::make_unique<tok::SentencePieceDecoder>(decoder_options(m, "<unk>"));
  p.ids = {-1, eos, pad, vunk};
  p.kind = is_bpe ? "marian-bpe" : "marian-unigram";
  return tok::make_pipeline_tokenizer(std::move(p));
}

std::unique_ptr<Tokenizer> load_sentencepiece_model(const Bytes& file) {
  return make_sentencepiece_model_tokenizer(read_sentencepiece_model(file));
}

}  // namespace attnlens::runtime
