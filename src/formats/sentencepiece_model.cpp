// read_sentencepiece_model: the protobuf wire format of sentencepiece_model.proto's ModelProto.
#include "formats/sentencepiece_model.h"

#include <cmath>
#include <cstring>

#include "core/error.h"
#include "core/limits.h"

namespace attnlens {

namespace {

using Proto = SentencePieceModelProto;

// Protobuf wire types.
enum Wire : uint8_t { kVarint = 0, kFixed64 = 1, kLen = 2, kStartGroup = 3, kEndGroup = 4, kFixed32 = 5 };

const char* wire_name(unsigned w) {
  switch (w) {
    case kVarint: return "varint";
    case kFixed64: return "64-bit";
    case kLen: return "length-delimited";
    case kStartGroup: return "start-group";
    case kEndGroup: return "end-group";
    case kFixed32: return "32-bit";
    default: return "invalid";
  }
}

// Strict UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF.
bool valid_utf8(const std::string& s) {
  const auto* p = reinterpret_cast<const uint8_t*>(s.data());
  const size_t n = s.size();
  for (size_t i = 0; i < n;) {
    const uint8_t c = p[i];
    size_t len;
    uint32_t cp;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      len = 2, cp = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3, cp = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4, cp = c & 0x07;
    } else {
      return false;
    }
    if (i + len > n) return false;
    for (size_t k = 1; k < len; ++k) {
      if ((p[i + k] & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (p[i + k] & 0x3F);
    }
    static const uint32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return false;
    i += len;
  }
  return true;
}

// One message's bytes [pos, end) of the file, read field by field. `path` names the message in
// errors ("trainer_spec", "pieces[17]").
class Message {
 public:
  Message(const Bytes& file, size_t begin, size_t end, std::string path)
      : file_(file), begin_(begin), pos_(begin), end_(end), path_(std::move(path)) {}

  // The next field's number and wire type; false at the end of the message.
  bool next() {
    if (pos_ >= end_) return false;
    field_at_ = pos_;
    const uint64_t tag = varint("a field tag");
    field_ = tag >> 3;
    wire_ = unsigned(tag & 7);
    if (field_ == 0 || field_ > 0x1FFFFFFF) fail_here("field number ", field_, " is invalid");
    if (wire_ == kStartGroup || wire_ == kEndGroup || wire_ > kFixed32)
      fail_here("field ", field_, " has wire type ", wire_, " (", wire_name(wire_), "), which ModelProto never uses");
    return true;
  }
  uint64_t field() const { return field_; }

  // The current field as the type the schema gives it (the wire type must match).
  uint64_t as_varint(const char* name) {
    expect(kVarint, name);
    return varint(name);
  }
  bool as_bool(const char* name) {
    const uint64_t v = as_varint(name);
    if (v > 1) fail_field(name, " is ", v, ", not a bool (0 or 1)");
    return v == 1;
  }
  // int32 fields are varints of the value sign-extended to 64 bits.
  int32_t as_int32(const char* name) {
    const int64_t v = int64_t(as_varint(name));
    if (v < INT32_MIN || v > INT32_MAX) fail_field(name, " is ", v, ", outside the int32 range");
    return int32_t(v);
  }
  float as_float(const char* name) {
    expect(kFixed32, name);
    need(4, name);
    float f;
    std::memcpy(&f, file_.data + pos_, 4);
    pos_ += 4;
    return f;
  }
  // A length-delimited field: its bytes [begin, end) in the file.
  std::pair<size_t, size_t> as_bytes(const char* name) {
    expect(kLen, name);
    const uint64_t len = varint(name);
    need(len, name);
    const size_t begin = pos_;
    pos_ += size_t(len);
    return {begin, pos_};
  }
  std::string as_string(const char* name, bool utf8 = true) {
    const auto r = as_bytes(name);
    std::string s(reinterpret_cast<const char*>(file_.data + r.first), r.second - r.first);
    if (utf8 && !valid_utf8(s)) fail_field(name, " (", r.second - r.first, " bytes) is not valid UTF-8");
    return s;
  }
  Message as_message(const char* name) {
    const auto r = as_bytes(name);
    return Message(file_, r.first, r.second, path_.empty() ? name : path_ + "." + name);
  }
  // A field the engine does not need (the trainer's own settings): its wire type is checked and its
  // value skipped.
  void skip(Wire expected, const char* name) {
    switch (expected) {
      case kVarint: as_varint(name); break;
      case kFixed32: as_float(name); break;
      case kLen: as_bytes(name); break;
      default: fail_field(name, " has an unexpected schema type");
    }
  }
  [[noreturn]] void unknown_field() const {
    fail_here("field number ", field_, " (", wire_name(wire_), ") is not part of sentencepiece's ",
              path_.empty() ? "ModelProto" : path_, " schema");
  }
  template <class... Parts>
  [[noreturn]] void fail_field(const char* name, const Parts&... parts) const {
    fail_here(name, parts...);
  }
  // A problem with the message as a whole ("pieces[3] has an empty piece").
  template <class... Parts>
  [[noreturn]] void fail_message(const Parts&... parts) const {
    ::attnlens::fail(file_.name, ": byte ", begin_, ": ", path_, " ", parts...);
  }
  const std::string& path() const { return path_; }
  size_t field_offset() const { return field_at_; }

 private:
  template <class... Parts>
  [[noreturn]] void fail_here(const Parts&... parts) const {
    ::attnlens::fail(file_.name, ": byte ", field_at_, ": ", path_.empty() ? "" : path_, path_.empty() ? "" : ": ", parts...);
  }
  void expect(Wire w, const char* name) const {
    if (wire_ != w)
      fail_here(name, " (field ", field_, ") is ", wire_name(wire_), " but the schema says ", wire_name(w));
  }
  void need(uint64_t n, const char* what) const {
    if (n > end_ - pos_)
      fail_here(what, " needs ", n, " bytes but ", end_ - pos_, " remain in ", path_.empty() ? "the file" : path_);
  }
  uint64_t varint(const char* what) {
    uint64_t v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
      if (pos_ >= end_) fail_here(what, ": a varint runs past the end of ", path_.empty() ? "the file" : path_);
      const uint8_t b = file_.data[pos_++];
      if (shift == 63 && (b & 0x7E)) fail_here(what, ": a varint does not fit in 64 bits");
      v |= uint64_t(b & 0x7F) << shift;
      if (!(b & 0x80)) return v;
    }
    fail_here(what, ": a varint is longer than 10 bytes");
  }

  const Bytes& file_;
  size_t begin_, pos_, end_;
  std::string path_;
  size_t field_at_ = 0;
  uint64_t field_ = 0;
  unsigned wire_ = 0;
};

Proto::Piece read_piece(Message m) {
  Proto::Piece p;
  bool has_piece = false;
  while (m.next()) {
    switch (m.field()) {
      case 1: p.piece = m.as_string("piece"); has_piece = true; break;
      case 2:
        p.score = m.as_float("score");
        if (!std::isfinite(p.score)) m.fail_field("score", " is ", p.score, ", not a finite number");
        break;
      case 3: {
        const uint64_t t = m.as_varint("type");
        if (t < 1 || t > 6) m.fail_field("type", " is ", t, ", not a SentencePiece.Type (1-6)");
        p.type = Proto::PieceType(t);
        break;
      }
      default: m.unknown_field();
    }
  }
  if (!has_piece || p.piece.empty()) m.fail_message("has an empty piece");
  if (p.piece.size() > size_t(limits::kMaxTokenBytes))
    m.fail_message("is ", p.piece.size(), " bytes long (at most ", limits::kMaxTokenBytes, ")");
  return p;
}

void read_trainer(Message m, Proto::Trainer& t) {
  while (m.next()) {
    switch (m.field()) {
      case 3: {
        const uint64_t v = m.as_varint("model_type");
        if (v < 1 || v > 4) m.fail_field("model_type", " is ", v, ", not a TrainerSpec.ModelType (1-4)");
        t.model_type = Proto::ModelType(v);
        break;
      }
      case 35: t.byte_fallback = m.as_bool("byte_fallback"); break;
      case 40: t.unk_id = m.as_int32("unk_id"); break;
      case 41: t.bos_id = m.as_int32("bos_id"); break;
      case 42: t.eos_id = m.as_int32("eos_id"); break;
      case 43: t.pad_id = m.as_int32("pad_id"); break;
      case 45: t.unk_piece = m.as_string("unk_piece"); break;
      case 46: t.bos_piece = m.as_string("bos_piece"); break;
      case 47: t.eos_piece = m.as_string("eos_piece"); break;
      case 48: t.pad_piece = m.as_string("pad_piece"); break;
      case 44: t.unk_surface = m.as_string("unk_surface"); break;
      case 24: t.treat_whitespace_as_suffix = m.as_bool("treat_whitespace_as_suffix"); break;
      case 26: t.allow_whitespace_only_pieces = m.as_bool("allow_whitespace_only_pieces"); break;
      case 30: t.control_symbols.push_back(m.as_string("control_symbols")); break;
      case 31: t.user_defined_symbols.push_back(m.as_string("user_defined_symbols")); break;
      // The trainer's own settings: they shaped the vocabulary and do not change how it encodes.
      case 1: m.skip(kLen, "input"); break;
      case 7: m.skip(kLen, "input_format"); break;
      case 2: m.skip(kLen, "model_prefix"); break;
      case 4: m.skip(kVarint, "vocab_size"); break;
      case 5: m.skip(kLen, "accept_language"); break;
      case 6: m.skip(kVarint, "self_test_sample_size"); break;
      case 50: m.skip(kVarint, "enable_differential_privacy"); break;
      case 51: m.skip(kFixed32, "differential_privacy_noise_level"); break;
      case 52: m.skip(kVarint, "differential_privacy_clipping_threshold"); break;
      case 10: m.skip(kFixed32, "character_coverage"); break;
      case 11: m.skip(kVarint, "input_sentence_size"); break;
      case 19: m.skip(kVarint, "shuffle_input_sentence"); break;
      case 12: m.skip(kVarint, "mining_sentence_size"); break;
      case 13: m.skip(kVarint, "training_sentence_size"); break;
      case 14: m.skip(kVarint, "seed_sentencepiece_size"); break;
      case 15: m.skip(kFixed32, "shrinking_factor"); break;
      case 18: m.skip(kVarint, "max_sentence_length"); break;
      case 16: m.skip(kVarint, "num_threads"); break;
      case 17: m.skip(kVarint, "num_sub_iterations"); break;
      case 20: m.skip(kVarint, "max_sentencepiece_length"); break;
      case 21: m.skip(kVarint, "split_by_unicode_script"); break;
      case 23: m.skip(kVarint, "split_by_number"); break;
      case 22: m.skip(kVarint, "split_by_whitespace"); break;
      case 25: m.skip(kVarint, "split_digits"); break;
      case 53: m.skip(kLen, "pretokenization_delimiter"); break;
      case 36: m.skip(kLen, "required_chars"); break;
      case 32: m.skip(kVarint, "vocabulary_output_piece_score"); break;
      case 33: m.skip(kVarint, "hard_vocab_limit"); break;
      case 34: m.skip(kVarint, "use_all_vocab"); break;
      case 49: m.skip(kVarint, "train_extremely_large_corpus"); break;
      case 54: m.skip(kLen, "seed_sentencepieces_file"); break;
      default: m.unknown_field();
    }
  }
}

void read_normalizer(Message m, Proto::Normalizer& n) {
  n.present = true;
  while (m.next()) {
    switch (m.field()) {
      case 1: n.name = m.as_string("name"); break;
      case 2: n.precompiled_charsmap = m.as_string("precompiled_charsmap", /*utf8=*/false); break;
      case 3: n.add_dummy_prefix = m.as_bool("add_dummy_prefix"); break;
      case 4: n.remove_extra_whitespaces = m.as_bool("remove_extra_whitespaces"); break;
      case 5: n.escape_whitespaces = m.as_bool("escape_whitespaces"); break;
      case 6: n.normalization_rule_tsv = m.as_string("normalization_rule_tsv"); break;
      default: m.unknown_field();
    }
  }
}

void read_self_test(Message m, std::vector<std::pair<std::string, std::string>>& out) {
  while (m.next()) {
    if (m.field() != 1) m.unknown_field();
    Message s = m.as_message(str("samples[", out.size(), "]").c_str());
    std::pair<std::string, std::string> sample;
    while (s.next()) {
      switch (s.field()) {
        case 1: sample.first = s.as_string("input"); break;
        case 2: sample.second = s.as_string("expected"); break;
        default: s.unknown_field();
      }
    }
    out.push_back(std::move(sample));
  }
}

Proto read(const Bytes& file) {
  AL_CHECK(file.data != nullptr || file.size == 0, file.name, ": no bytes");
  Proto p;
  p.name = file.name;
  Message m(file, 0, file.size, "");
  while (m.next()) {
    switch (m.field()) {
      case 1: {
        if (p.pieces.size() >= size_t(limits::kMaxVocab))
          m.fail_field("pieces", ": more than ", limits::kMaxVocab, " pieces");
        const std::string path = str("pieces[", p.pieces.size(), "]");
        p.pieces.push_back(read_piece(m.as_message(path.c_str())));
        break;
      }
      case 2: read_trainer(m.as_message("trainer_spec"), p.trainer); p.has_trainer = true; break;
      case 3: read_normalizer(m.as_message("normalizer_spec"), p.normalizer); break;
      case 4: read_self_test(m.as_message("self_test_data"), p.self_test); break;
      case 5: read_normalizer(m.as_message("denormalizer_spec"), p.denormalizer); break;
      default: m.unknown_field();
    }
  }
  return p;
}

}  // namespace

const char* piece_type_name(Proto::PieceType t) {
  switch (t) {
    case Proto::PieceType::Normal: return "NORMAL";
    case Proto::PieceType::Unknown: return "UNKNOWN";
    case Proto::PieceType::Control: return "CONTROL";
    case Proto::PieceType::UserDefined: return "USER_DEFINED";
    case Proto::PieceType::Unused: return "UNUSED";
    case Proto::PieceType::Byte: return "BYTE";
  }
  return "?";
}

const char* model_type_name(Proto::ModelType t) {
  switch (t) {
    case Proto::ModelType::Unigram: return "UNIGRAM";
    case Proto::ModelType::Bpe: return "BPE";
    case Proto::ModelType::Word: return "WORD";
    case Proto::ModelType::Char: return "CHAR";
  }
  return "?";
}

SentencePieceModelProto read_sentencepiece_model(const Bytes& file) {
  Proto p = read(file);
  if (p.pieces.empty()) fail(file.name, ": a SentencePiece model needs pieces (field 1), the file has none");
  return p;
}

bool looks_like_sentencepiece_model(const Bytes& file) {
  // Field 1, length-delimited: the tag byte 0x0A, then the first piece's length.
  if (!file.data || file.size < 4 || file.data[0] != 0x0A) return false;
  try {
    read_sentencepiece_model(file);
    return true;
  } catch (const Error&) {
    return false;
  }
}

}  // namespace attnlens
