// Model file readers: llama2.c checkpoints, GGUF v3, safetensors (single and sharded).
//
// Readers never copy tensor data. They return TensorViews pointing into the caller's bytes, so those
// bytes must outlive the returned TensorMap / ModelFile. Every offset and size read from a file is
// checked against the buffer before use (no out-of-bounds read), and every count is checked against
// the bytes that remain before anything is allocated (a lying header cannot trigger a huge allocation).
// All problems throw attnlens::Error with a message that starts with the file name, e.g.
//   "model.safetensors: tensor lm_head.weight data_offsets [0, 4096] exceed the 2048 data bytes"
//
// Tensor data pointers are NOT guaranteed to be aligned to their element size (a safetensors header
// of odd length, or a caller buffer at an odd address): read them with memcpy or convert them.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/tensor.h"

namespace attnlens {

// A file's bytes, not owned.
struct Bytes {
  const uint8_t* data = nullptr;
  size_t size = 0;
  std::string name;  // file name used in every error message ("stories260K.bin")
};

// What a reader found in one model file.
struct ModelFile {
  std::string format;  // "llama2c" or "gguf"
  std::string name;    // the file name, for messages
  // GGUF-style metadata. For GGUF: every key/value of the file (integers and floats as JSON numbers,
  // bools, strings as their raw bytes, arrays as JSON arrays). For llama2.c: the equivalent llama
  // keys (see read_llama2c). Strings are not validated as UTF-8. Never dump() these values into a
  // message (use json_brief from core/json.h): they come from the file.
  nlohmann::json config;
  TensorMap tensors;   // views into the file's bytes; tensors.context == name
};

enum class FileKind {
  Llama2c,            // llama2.c checkpoint (.bin)
  LlamaTokenizerBin,  // llama2.c tokenizer (tokenizer.bin, tok512.bin)
  Gguf,               // GGUF (any version: read_gguf then says which versions it supports)
  Safetensors,        // one safetensors file (or one shard)
  SafetensorsIndex,   // model.safetensors.index.json (a JSON object with a "weight_map" object)
  Json,               // any other JSON object (config.json, tokenizer.json, ...)
  SentencePieceModel, // a SentencePiece ModelProto (spiece.model, source.spm, tokenizer.model)
  Unknown,
};
const char* file_kind_name(FileKind k);  // "llama2c", "llama2c-tokenizer", "gguf", ...

// Classifies a file by its content, never by its name:
//   Gguf:              starts with the magic "GGUF"
//   Safetensors:       u64 header length N with 8 + N <= size, and byte 8 is '{'
//   Llama2c:           7 int32 that pass read_llama2c's header checks and imply exactly the file size
//   LlamaTokenizerBin: int32 max_token_length in [1, 1024], then records {f32 finite score, i32 len in
//                      [0, max_token_length], len bytes} that end exactly at the end of the file
//   SafetensorsIndex / Json: '{' after optional whitespace; an index if it parses and its top-level
//                      object has a "weight_map" object (only parsed when the text mentions "weight_map")
//   SentencePieceModel: none of the above, the first byte is 0x0A (field 1, pieces, length-delimited)
//                      and the whole file reads as a ModelProto (formats/sentencepiece_model.h)
FileKind detect_file_kind(const Bytes& file);

// llama2.c checkpoint (Karpathy's run.c format). The header's 7 int32
// must be positive (vocab_size may be negative: separate classifier), dim % n_heads == 0,
// n_heads % n_kv_heads == 0, and the file size must match the header exactly.
// Tensors get GGUF names and PyTorch (outermost-first) shapes, all f32:
//   token_embd.weight [vocab, dim]; output_norm.weight [dim]; output.weight [vocab, dim] (only when
//   the classifier is unshared); per layer i: blk.i.attn_norm.weight [dim], blk.i.attn_q.weight
//   [dim, dim], blk.i.attn_k.weight / attn_v.weight [kv_dim, dim], blk.i.attn_output.weight [dim, dim],
//   blk.i.ffn_norm.weight [dim], blk.i.ffn_gate.weight (w1) [hidden, dim], blk.i.ffn_down.weight (w2)
//   [dim, hidden], blk.i.ffn_up.weight (w3) [hidden, dim].
// config: general.architecture "llama", llama.embedding_length, llama.feed_forward_length,
//   llama.block_count, llama.attention.head_count, llama.attention.head_count_kv, llama.context_length,
//   llama.attention.layer_norm_rms_epsilon 1e-5, llama.rope.freq_base 10000, llama.vocab_size,
//   attnlens.rope_style "adjacent" (RoPE rotates pairs (2i, 2i+1), as GGUF llama does).
ModelFile read_llama2c(const Bytes& file);

// GGUF version 3 (ggml's docs/gguf.md). config holds every metadata key. Tensor shapes are reported
// outermost-first (the file's ne[] reversed). Supported tensor types: f32, f16, bf16, q8_0 (q8_0 rows
// are ne[0] elements = ne[0]/32 blocks of 34 bytes). Checked: version, counts against the remaining
// bytes, string and array lengths, value types, bool values 0/1, array nesting (at most 4 deep),
// duplicate keys and tensor names, n_dims <= 4, element-count overflow, general.alignment (a power of
// two, default 32), tensor offsets aligned, inside the data section and not overlapping.
ModelFile read_gguf(const Bytes& file);

// One safetensors file (or one shard of a sharded checkpoint). Float tensors (F32, F16, BF16) become
// views; I64 and I32 tensors (buffers such as position_ids) are skipped and, when `skipped` is given,
// their names appended to it; any other dtype is an error naming the tensor and the dtype.
// Checked like the reference implementation: header length within the file, header is a JSON object,
// each entry has dtype / shape / data_offsets, shape x dtype size == data_offsets span, and the
// tensors exactly tile the data section (no overlap, no gap, no trailing bytes). __metadata__ is ignored.
TensorMap read_safetensors(const Bytes& file, std::vector<std::string>* skipped = nullptr);

// model.safetensors.index.json.
struct SafetensorsIndex {
  std::string name;                               // the index file name, for messages
  std::vector<std::string> shards;                // distinct shard file names, sorted (= shard order for
                                                  // HF's model-0000i-of-0000n.safetensors names)
  std::map<std::string, std::string> weight_map;  // tensor name -> shard file name
};
// Requires a JSON object with a non-empty "weight_map" object whose values are plain file names
// (no '/', '\\', "." or "..").
SafetensorsIndex read_safetensors_index(const Bytes& file);

// Reads every shard of an index and merges them. `shards` holds each shard file once, in any order;
// a shard is matched to the index by its name's last path component. Checks that every listed shard is
// given, every tensor sits in the shard the index says, and every indexed tensor was found
// (skipped integer tensors count as found; their names are appended to `skipped` when given). The
// result's context is the index name.
TensorMap read_safetensors_shards(const SafetensorsIndex& index, const std::vector<Bytes>& shards,
                                  std::vector<std::string>* skipped = nullptr);

// Adds every tensor of `from` to `into`; a name present in both is an error naming both contexts.
void merge_tensors(TensorMap& into, const TensorMap& from);

}  // namespace attnlens
