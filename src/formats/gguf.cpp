// GGUF v3: "GGUF", u32 version, u64 n_tensors, u64 n_kv, n_kv x {string key, u32 type, value},
// n_tensors x {string name, u32 n_dims, u64 ne[n_dims] (innermost first), u32 ggml type, u64 offset},
// padding to general.alignment, then the tensor data (offsets are relative to its start).
#include <algorithm>
#include <string>
#include <vector>

#include "core/json.h"
#include "core/limits.h"
#include "formats/byte_reader.h"
#include "formats/model_file.h"

namespace attnlens {
namespace {

using json = nlohmann::json;

enum ValueType : uint32_t { kU8, kI8, kU16, kI16, kU32, kI32, kF32, kBool, kString, kArray, kU64, kI64, kF64, kNumValueTypes };

const char* value_type_name(uint32_t t) {
  static const char* const names[kNumValueTypes] = {"u8",     "i8",    "u16", "i16", "u32", "i32", "f32",
                                                    "bool",   "string", "array", "u64", "i64", "f64"};
  return t < kNumValueTypes ? names[t] : "unknown";
}

// Fewest bytes one value of type t can take (used to bound counts before allocating).
uint64_t min_value_bytes(uint32_t t) {
  switch (t) {
    case kU8: case kI8: case kBool: return 1;
    case kU16: case kI16: return 2;
    case kU32: case kI32: case kF32: return 4;
    case kU64: case kI64: case kF64: return 8;
    case kString: return 8;     // u64 length
    case kArray: return 4 + 8;  // u32 element type + u64 count
  }
  return 1;
}

constexpr int kMaxArrayDepth = 4;   // arrays of arrays: allowed by the spec, bounded here
// Counts no real file approaches (a few dozen keys, a few thousand tensors, arrays as long as the
// vocabulary or the merges), checked before anything is allocated: a metadata value costs the
// engine several times its bytes in the file.
constexpr uint64_t kMaxPairs = 1 << 16;
constexpr uint64_t kMaxTensors = 1 << 20;
constexpr uint64_t kMaxArrayLength = std::max<uint64_t>(limits::kMaxVocab, limits::kMaxMerges);
constexpr uint32_t kMaxDims = 4;    // GGML_MAX_DIMS
constexpr uint64_t kDefaultAlignment = 32;

// ggml_type numbers as in ggml.h (names as ggml_type_name prints them).
const char* ggml_type_name(uint32_t t) {
  static const char* const names[] = {
      "f32",   "f16",   "q4_0",  "q4_1",   "q4_2",    "q4_3",   "q5_0",    "q5_1",  "q8_0",   "q8_1",
      "q2_K",  "q3_K",  "q4_K",  "q5_K",   "q6_K",    "q8_K",   "iq2_xxs", "iq2_xs", "iq3_xxs", "iq1_s",
      "iq4_nl", "iq3_s", "iq2_s", "iq4_xs", "i8",      "i16",    "i32",     "i64",   "f64",    "iq1_m",
      "bf16",  "q4_0_4_4", "q4_0_4_8", "q4_0_8_8", "tq1_0", "tq2_0", "iq4_nl_4_4", "iq4_nl_4_8", "iq4_nl_8_8", "mxfp4"};
  return t < sizeof(names) / sizeof(names[0]) ? names[t] : "unknown";
}

// The ggml types the engine reads (the others name themselves in the error).
bool ggml_to_dtype(uint32_t t, DType* out) {
  switch (t) {
    case 0: *out = DType::F32; return true;
    case 1: *out = DType::F16; return true;
    case 2: *out = DType::Q4_0; return true;
    case 3: *out = DType::Q4_1; return true;
    case 6: *out = DType::Q5_0; return true;
    case 7: *out = DType::Q5_1; return true;
    case 8: *out = DType::Q8_0; return true;
    case 10: *out = DType::Q2_K; return true;
    case 11: *out = DType::Q3_K; return true;
    case 12: *out = DType::Q4_K; return true;
    case 13: *out = DType::Q5_K; return true;
    case 14: *out = DType::Q6_K; return true;
    case 20: *out = DType::IQ4_NL; return true;
    case 23: *out = DType::IQ4_XS; return true;
    case 30: *out = DType::BF16; return true;
  }
  return false;
}

constexpr const char* kSupportedTypes = "f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q2_K, q3_K, q4_K, q5_K, q6_K, "
                                        "iq4_nl, iq4_xs";

json read_value(ByteReader& r, uint32_t type, const std::string& key, int depth);

json read_array(ByteReader& r, const std::string& key, int depth) {
  if (depth >= kMaxArrayDepth) r.fail("metadata key ", key, ": arrays nested more than ", kMaxArrayDepth, " deep");
  uint32_t elem = r.read<uint32_t>("the array element type");
  if (elem >= kNumValueTypes) r.fail("metadata key ", key, ": array has unknown element type ", elem);
  uint64_t count = r.read<uint64_t>("the array length");
  if (count > kMaxArrayLength) r.fail("metadata key ", key, ": an array of ", count, " values (at most ", kMaxArrayLength, ")");
  uint64_t min = min_value_bytes(elem);
  if (count > r.remaining() / min) {
    r.fail("metadata key ", key, ": array of ", count, " ", value_type_name(elem), " needs at least ", min,
           " bytes each, but only ", r.remaining(), " bytes remain");
  }
  json arr = json::array();
  arr.get_ref<json::array_t&>().reserve(static_cast<size_t>(count));
  for (uint64_t i = 0; i < count; ++i) arr.push_back(read_value(r, elem, key, depth + 1));
  return arr;
}

json read_value(ByteReader& r, uint32_t type, const std::string& key, int depth) {
  switch (type) {
    case kU8: return r.read<uint8_t>("a u8 value");
    case kI8: return r.read<int8_t>("an i8 value");
    case kU16: return r.read<uint16_t>("a u16 value");
    case kI16: return r.read<int16_t>("an i16 value");
    case kU32: return r.read<uint32_t>("a u32 value");
    case kI32: return r.read<int32_t>("an i32 value");
    case kF32: return r.read<float>("an f32 value");
    case kU64: return r.read<uint64_t>("a u64 value");
    case kI64: return r.read<int64_t>("an i64 value");
    case kF64: return r.read<double>("an f64 value");
    case kBool: {
      uint8_t b = r.read<uint8_t>("a bool value");
      if (b > 1) r.fail("metadata key ", key, ": bool value is ", int(b), " (must be 0 or 1)");
      return b == 1;
    }
    case kString: return r.read_string("a string value");
    case kArray: return read_array(r, key, depth);
  }
  r.fail("metadata key ", key, " has unknown value type ", type, " (known: 0..12)");
}

struct TensorInfo {
  std::string name;
  std::vector<int64_t> shape;  // outermost first
  DType dtype;
  uint64_t offset;  // relative to the data section
  uint64_t nbytes;
};

TensorInfo read_tensor_info(ByteReader& r, uint64_t index) {
  TensorInfo t;
  r.set_section("tensor info #" + std::to_string(index));
  t.name = r.read_string("the tensor name");
  r.set_section("tensor info #" + std::to_string(index) + " (" + t.name + ")");
  uint32_t n_dims = r.read<uint32_t>("the dimension count");
  if (n_dims > kMaxDims) r.fail("tensor ", brief_name(t.name), " has ", n_dims, " dimensions (at most ", kMaxDims, ")");
  uint64_t ne[kMaxDims] = {1, 1, 1, 1};
  uint64_t numel = 1;
  for (uint32_t d = 0; d < n_dims; ++d) {
    ne[d] = r.read<uint64_t>("a dimension");
    if (ne[d] > uint64_t(INT64_MAX)) r.fail("tensor ", brief_name(t.name), " has ne[", d, "]=", ne[d], " (negative as int64)");
    if (!checked_mul(numel, ne[d], &numel) || numel > uint64_t(INT64_MAX))
      r.fail("tensor ", brief_name(t.name), ": the element count overflows (ne[", d, "]=", ne[d], ")");
  }
  uint32_t type = r.read<uint32_t>("the ggml type");
  t.offset = r.read<uint64_t>("the data offset");
  if (!ggml_to_dtype(type, &t.dtype))
    r.fail("tensor ", brief_name(t.name), " has type ", ggml_type_name(type), " (", type, "), which is not supported (supported: ",
           kSupportedTypes, ")");
  // Blocks run along ne[0]: a row must be whole blocks (then so is the whole tensor).
  const uint64_t block = uint64_t(dtype_block_elems(t.dtype));
  const uint64_t row = n_dims ? ne[0] : 1;
  if (row % block != 0)
    r.fail("tensor ", brief_name(t.name), " is ", dtype_name(t.dtype), " but its rows (ne[0]=", row, ") are not a multiple of the ",
           block, "-element block");
  if (!checked_mul(numel / block, uint64_t(dtype_block_bytes(t.dtype)), &t.nbytes))
    r.fail("tensor ", brief_name(t.name), ": the byte size overflows");
  for (uint32_t d = n_dims; d-- > 0;) t.shape.push_back(static_cast<int64_t>(ne[d]));
  return t;
}

uint64_t alignment_of(const ByteReader& r, const json& config) {
  auto it = config.find("general.alignment");
  if (it == config.end()) return kDefaultAlignment;
  uint64_t a = 0;
  if (it->is_number_unsigned()) a = it->get<uint64_t>();
  else if (it->is_number_integer() && it->get<int64_t>() > 0) a = uint64_t(it->get<int64_t>());
  else r.fail("general.alignment is ", json_brief(*it), " (must be a positive integer)");
  if (a == 0 || (a & (a - 1)) != 0) r.fail("general.alignment=", a, " is not a power of two");
  return a;
}

}  // namespace

ModelFile read_gguf(const Bytes& file) {
  ByteReader r(file.data, file.size, file.name);
  const uint8_t* magic = r.take(4, "the magic \"GGUF\"");
  if (std::memcmp(magic, "GGUF", 4) != 0) r.fail("not a GGUF file (no \"GGUF\" magic at byte 0)");
  uint32_t version = r.read<uint32_t>("the version");
  if (version != 3) {
    r.fail("unsupported GGUF version ", version, " (only 3)",
           version == 0x03000000u ? "; this looks like a big-endian GGUF file, which is not supported" : "");
  }
  uint64_t n_tensors = r.read<uint64_t>("the tensor count");
  uint64_t n_kv = r.read<uint64_t>("the metadata count");
  // Smallest possible entries: a pair is key length (8) + type (4) + a 1-byte value; a tensor info is
  // name length (8) + n_dims (4) + type (4) + offset (8).
  if (n_kv > kMaxPairs) r.fail("header says ", n_kv, " metadata pairs (at most ", kMaxPairs, ")");
  if (n_tensors > kMaxTensors) r.fail("header says ", n_tensors, " tensors (at most ", kMaxTensors, ")");
  if (n_kv > r.remaining() / 13)
    r.fail("header says ", n_kv, " metadata pairs, but only ", r.remaining(), " bytes follow (each needs at least 13)");
  if (n_tensors > r.remaining() / 24)
    r.fail("header says ", n_tensors, " tensors, but only ", r.remaining(), " bytes follow (each tensor info needs at least 24)");

  ModelFile mf;
  mf.format = "gguf";
  mf.name = file.name;
  mf.tensors.context = file.name;
  mf.config = json::object();
  for (uint64_t i = 0; i < n_kv; ++i) {
    r.set_section("metadata pair #" + std::to_string(i));
    std::string key = r.read_string("the key");
    r.set_section("metadata key " + brief_name(key));
    uint32_t type = r.read<uint32_t>("the value type");
    json value = read_value(r, type, brief_name(key), 0);
    if (mf.config.contains(key)) r.fail("metadata key ", key, " appears twice");
    mf.config[key] = std::move(value);
  }
  const uint64_t alignment = alignment_of(r, mf.config);

  std::vector<TensorInfo> infos;
  infos.reserve(static_cast<size_t>(n_tensors));  // bounded by the check above
  for (uint64_t i = 0; i < n_tensors; ++i) infos.push_back(read_tensor_info(r, i));
  r.set_section("");
  if (infos.empty()) return mf;

  const uint64_t pad = (alignment - r.pos() % alignment) % alignment;
  if (pad > r.remaining())
    r.fail("the data section should start at byte ", uint64_t(r.pos()) + pad, " (aligned to ", alignment,
           "), past the end of the ", r.size(), "-byte file");
  const uint64_t data_start = r.pos() + pad;
  const uint64_t data_size = r.size() - data_start;
  for (const TensorInfo& t : infos) {
    if (t.offset % alignment != 0)
      r.fail("tensor ", brief_name(t.name), " data offset ", t.offset, " is not a multiple of the alignment ", alignment);
    if (t.offset > data_size || t.nbytes > data_size - t.offset)
      r.fail("tensor ", brief_name(t.name), " (", t.nbytes, " bytes at data offset ", t.offset, ") exceeds the ", data_size,
             "-byte data section");
  }
  std::vector<const TensorInfo*> by_offset;
  for (const TensorInfo& t : infos) by_offset.push_back(&t);
  std::sort(by_offset.begin(), by_offset.end(), [](const TensorInfo* a, const TensorInfo* b) {
    return a->offset != b->offset ? a->offset < b->offset : a->nbytes < b->nbytes;
  });
  const TensorInfo* furthest = nullptr;  // the tensor ending furthest so far, in offset order
  for (const TensorInfo* b : by_offset) {
    if (b->nbytes == 0) continue;
    if (furthest && furthest->offset + furthest->nbytes > b->offset)
      r.fail("tensor ", furthest->name, " (bytes ", furthest->offset, "..", furthest->offset + furthest->nbytes,
             " of the data) overlaps tensor ", b->name, " (bytes ", b->offset, "..", b->offset + b->nbytes, ")");
    if (!furthest || b->offset + b->nbytes > furthest->offset + furthest->nbytes) furthest = b;
  }
  for (TensorInfo& t : infos) {
    TensorView v;
    v.name = std::move(t.name);
    v.dtype = t.dtype;
    v.shape = std::move(t.shape);
    v.data = file.data + data_start + t.offset;
    v.nbytes = static_cast<size_t>(t.nbytes);
    mf.tensors.add(std::move(v));
  }
  return mf;
}

}  // namespace attnlens
