// SentencePiece model files (.model, .spm: T5's spiece.model, Marian's source.spm / target.spm,
// ALBERT, XLM-R, Llama 1/2's tokenizer.model): a serialized protobuf message `ModelProto` of
// sentencepiece's sentencepiece_model.proto (proto2), read here with a small bounds-checked decoder
// of the protobuf wire format (https://protobuf.dev/programming-guides/encoding/): varints,
// fixed32/fixed64 and length-delimited fields, no groups.
//
// Every field number the schema defines is known: the fields that decide how text is tokenized are
// returned, the trainer's own settings (input files, vocab_size, coverage, ...) are skipped after
// their wire type is checked. A field number the schema does not define, a wire type that does not
// match the field, an enum value outside the schema, a length past the end of its message, a piece
// that is not valid UTF-8 or a score that is not finite is an error naming the file, the byte offset
// and the field ("spiece.model: byte 1234: pieces[17].type is 9, not a SentencePiece.Type").
//
// The reader does not judge whether the engine can apply what the file says (model_type WORD, a
// denormalizer, whitespace as suffix): the tokenizer builder does, and refuses what it cannot apply.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "formats/model_file.h"

namespace attnlens {

struct SentencePieceModelProto {
  // SentencePiece.Type.
  enum class PieceType : uint8_t { Normal = 1, Unknown = 2, Control = 3, UserDefined = 4, Unused = 5, Byte = 6 };
  struct Piece {
    std::string piece;  // valid UTF-8, "▁" (U+2581) for a space
    float score = 0;
    PieceType type = PieceType::Normal;
  };
  // TrainerSpec.ModelType.
  enum class ModelType : uint8_t { Unigram = 1, Bpe = 2, Word = 3, Char = 4 };

  // The TrainerSpec fields that matter when encoding (defaults are the schema's).
  struct Trainer {
    ModelType model_type = ModelType::Unigram;
    bool byte_fallback = false;
    int unk_id = 0, bos_id = 1, eos_id = 2, pad_id = -1;  // -1: none
    std::string unk_piece = "<unk>", bos_piece = "<s>", eos_piece = "</s>", pad_piece = "<pad>";
    std::string unk_surface = " \xE2\x81\x87 ";  // " ⁇ ": what decoding shows for an unknown token
    bool treat_whitespace_as_suffix = false;
    bool allow_whitespace_only_pieces = false;
    std::vector<std::string> control_symbols, user_defined_symbols;  // as given to the trainer
  };

  // NormalizerSpec (also the type of denormalizer_spec).
  struct Normalizer {
    bool present = false;               // the message occurs in the file
    std::string name;                   // "nmt_nfkc", "identity", "user_defined", ...
    std::string precompiled_charsmap;   // raw bytes: [u32 trie size][darts-clone trie][strings]
    bool add_dummy_prefix = true;
    bool remove_extra_whitespaces = true;
    bool escape_whitespaces = true;
    std::string normalization_rule_tsv; // the trainer's rule file (the charsmap is what applies)
  };

  std::string name;  // the file name, for messages
  std::vector<Piece> pieces;  // index = id
  Trainer trainer;
  bool has_trainer = false;
  Normalizer normalizer, denormalizer;
  std::vector<std::pair<std::string, std::string>> self_test;  // SelfTestData samples (input, expected)
};

const char* piece_type_name(SentencePieceModelProto::PieceType t);   // "NORMAL", "BYTE", ...
const char* model_type_name(SentencePieceModelProto::ModelType t);   // "UNIGRAM", "BPE", ...

// Parses a whole file as ModelProto. Limits: at most limits::kMaxVocab pieces, each at most
// limits::kMaxTokenBytes bytes.
SentencePieceModelProto read_sentencepiece_model(const Bytes& file);

// Whether the bytes look like a ModelProto (its first field is pieces, field 1, length-delimited, and
// the whole file parses): used to classify files by content.
bool looks_like_sentencepiece_model(const Bytes& file);

}  // namespace attnlens
