// File-format readers: llama2.c, GGUF, safetensors (+ sharded), detect_file_kind, and bad input.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "formats/model_file.h"
#include "test_util.h"

using namespace attnlens;
using Catch::Matchers::Contains;
using Catch::Matchers::StartsWith;
using json = nlohmann::json;

namespace {

Bytes as_bytes(const std::vector<uint8_t>& v, const std::string& name) { return Bytes{v.data(), v.size(), name}; }

// The message of the attnlens::Error that f throws (the test fails if it throws nothing or something else).
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const attnlens::Error& e) {
    return e.what();
  } catch (const std::exception& e) {
    FAIL("threw a non-attnlens exception: " << e.what());
  }
  FAIL("did not throw");
  return "";
}

std::vector<size_t> all_lengths_below(size_t n) {
  std::vector<size_t> v;
  for (size_t i = 0; i < n; ++i) v.push_back(i);
  return v;
}

// Every length below 4096, every 4099th after that, and the last 64.
std::vector<size_t> sampled_lengths_below(size_t n) {
  std::vector<size_t> v;
  for (size_t i = 0; i < n; ++i)
    if (i < 4096 || i % 4099 == 0 || i + 64 >= n) v.push_back(i);
  return v;
}

// Reads each prefix of `full` from its own exactly-sized heap copy (so AddressSanitizer sees any read past
// the end). Each must throw attnlens::Error whose message starts with "<name>: ", and detect_file_kind
// must not throw on it.
template <class Read>
void check_truncations(const std::vector<uint8_t>& full, const std::string& name, const std::vector<size_t>& lengths,
                       Read read) {
  size_t bad = 0;
  std::string first;
  for (size_t len : lengths) {
    std::unique_ptr<uint8_t[]> copy(new uint8_t[len]);
    if (len) std::memcpy(copy.get(), full.data(), len);
    Bytes b{copy.get(), len, name};
    std::string problem;
    try {
      read(b);
      problem = "no error";
    } catch (const attnlens::Error& e) {
      if (std::string(e.what()).rfind(name + ": ", 0) != 0) problem = std::string("message without the file name: ") + e.what();
    } catch (const std::exception& e) {
      problem = std::string("non-attnlens exception: ") + e.what();
    }
    try {
      (void)detect_file_kind(b);
    } catch (...) {
      problem += " detect_file_kind threw";
    }
    if (!problem.empty() && bad++ == 0) first = "length " + std::to_string(len) + ": " + problem;
  }
  INFO(name << ": " << lengths.size() << " truncations, first problem: " << first);
  CHECK(bad == 0);
  CHECK(lengths.size() > 0);
}

// Overwrites each byte of `full` (or of its first `first_bytes`) in turn with 0x00, 0xff, 0x80 and byte+1, in an exactly-sized heap copy.
// Each read must either succeed with every view inside the buffer or throw attnlens::Error naming the file.
template <class Read>
void check_byte_corruptions(const std::vector<uint8_t>& full, const std::string& name, Read read,
                            size_t first_bytes = SIZE_MAX) {
  size_t bad = 0, threw = 0, reads = 0;
  std::string first;
  for (size_t i = 0; i < full.size() && i < first_bytes; ++i) {
    for (int variant = 0; variant < 4; ++variant) {
      const uint8_t v = variant == 0 ? 0x00 : variant == 1 ? 0xff : variant == 2 ? 0x80 : uint8_t(full[i] + 1);
      if (v == full[i]) continue;
      std::unique_ptr<uint8_t[]> copy(new uint8_t[full.size()]);
      std::memcpy(copy.get(), full.data(), full.size());
      copy[i] = v;
      Bytes b{copy.get(), full.size(), name};
      std::string problem;
      ++reads;
      try {
        const TensorMap m = read(b);
        for (const auto& kv : m.all())
          if (kv.second.data < b.data || kv.second.nbytes > size_t(b.data + b.size - kv.second.data))
            problem = "tensor " + kv.first + " outside the buffer";
      } catch (const attnlens::Error& e) {
        ++threw;
        if (std::string(e.what()).rfind(name + ": ", 0) != 0) problem = std::string("message without the file name: ") + e.what();
      } catch (const std::exception& e) {
        problem = std::string("non-attnlens exception: ") + e.what();
      }
      if (!problem.empty() && bad++ == 0) first = "byte " + std::to_string(i) + " = " + std::to_string(v) + ": " + problem;
    }
  }
  INFO(name << ": " << reads << " corrupted copies, " << threw << " rejected, first problem: " << first);
  CHECK(bad == 0);
  CHECK(threw > 0);
}

float f32_at(const uint8_t* p, size_t index) {
  float f;
  std::memcpy(&f, p + 4 * index, 4);
  return f;
}
uint16_t u16_at(const uint8_t* p, size_t index) {
  uint16_t h;
  std::memcpy(&h, p + 2 * index, 2);
  return h;
}

// Little-endian byte builder for hand-made files.
struct Buf {
  std::vector<uint8_t> b;
  template <class T>
  Buf& put(T v) {
    uint8_t t[sizeof(T)];
    std::memcpy(t, &v, sizeof v);
    b.insert(b.end(), t, t + sizeof v);
    return *this;
  }
  Buf& str(const std::string& s) {  // GGUF string
    put<uint64_t>(s.size());
    b.insert(b.end(), s.begin(), s.end());
    return *this;
  }
  Buf& raw(const std::string& s) {
    b.insert(b.end(), s.begin(), s.end());
    return *this;
  }
  Buf& append(const std::vector<uint8_t>& v) {
    b.insert(b.end(), v.begin(), v.end());
    return *this;
  }
};

// ---- llama2.c -------------------------------------------------------------------------------------

// Where each array of the checkpoint layout (src/formats/model_file.h, read_llama2c) starts, in floats after the header.
struct Llama2cLayout {
  int64_t dim, hidden, layers, heads, kv_heads, vocab, seq_len;
  bool shared;
  std::map<std::string, int64_t> start;
  int64_t total_floats = 0;
  Llama2cLayout(int64_t dim_, int64_t hidden_, int64_t layers_, int64_t heads_, int64_t kv_heads_, int64_t vocab_,
                int64_t seq_len_, bool shared_)
      : dim(dim_), hidden(hidden_), layers(layers_), heads(heads_), kv_heads(kv_heads_), vocab(vocab_),
        seq_len(seq_len_), shared(shared_) {
    const int64_t kv = dim * kv_heads / heads, head_size = dim / heads;
    auto put = [&](const char* name, int64_t count) {
      start[name] = total_floats;
      total_floats += count;
    };
    put("token_embedding", vocab * dim);
    put("rms_att", layers * dim);
    put("wq", layers * dim * dim);
    put("wk", layers * kv * dim);
    put("wv", layers * kv * dim);
    put("wo", layers * dim * dim);
    put("rms_ffn", layers * dim);
    put("w1", layers * hidden * dim);
    put("w2", layers * dim * hidden);
    put("w3", layers * hidden * dim);
    put("rms_final", dim);
    put("freq_cis", 2 * (seq_len * head_size / 2));
    if (!shared) put("wcls", vocab * dim);
  }
  int64_t kv_dim() const { return dim * kv_heads / heads; }
  size_t byte_offset(const std::string& array, int64_t float_index) const { return 28 + 4 * size_t(start.at(array) + float_index); }
  size_t file_size() const { return 28 + 4 * size_t(total_floats); }
};

// Per-layer GGUF name suffix -> (README array, floats per layer).
std::vector<std::pair<std::string, std::pair<std::string, int64_t>>> layer_arrays(const Llama2cLayout& l) {
  const int64_t kv = l.kv_dim();
  return {{"attn_norm.weight", {"rms_att", l.dim}},          {"attn_q.weight", {"wq", l.dim * l.dim}},
          {"attn_k.weight", {"wk", kv * l.dim}},             {"attn_v.weight", {"wv", kv * l.dim}},
          {"attn_output.weight", {"wo", l.dim * l.dim}},     {"ffn_norm.weight", {"rms_ffn", l.dim}},
          {"ffn_gate.weight", {"w1", l.hidden * l.dim}},     {"ffn_down.weight", {"w2", l.dim * l.hidden}},
          {"ffn_up.weight", {"w3", l.hidden * l.dim}}};
}

// A synthetic checkpoint whose float number i (after the header) has the value i.
std::vector<uint8_t> make_llama2c(const Llama2cLayout& l) {
  Buf f;
  f.put<int32_t>(int32_t(l.dim)).put<int32_t>(int32_t(l.hidden)).put<int32_t>(int32_t(l.layers));
  f.put<int32_t>(int32_t(l.heads)).put<int32_t>(int32_t(l.kv_heads));
  f.put<int32_t>(int32_t(l.shared ? l.vocab : -l.vocab)).put<int32_t>(int32_t(l.seq_len));
  for (int64_t i = 0; i < l.total_floats; ++i) f.put<float>(float(i));
  return f.b;
}

std::vector<uint8_t> with_header_field(std::vector<uint8_t> file, int field, int32_t value) {
  std::memcpy(file.data() + 4 * field, &value, 4);
  return file;
}

}  // namespace

TEST_CASE("llama2c: stories260K config, GGUF names, shapes and values at README offsets", "[formats][llama2c]") {
  const std::string path = testutil::shared_path("models/stories260K/stories260K.bin");
  SKIP_UNLESS_FILE(path);
  const std::vector<uint8_t> raw = testutil::read_bytes(path);
  const Llama2cLayout l(64, 172, 5, 8, 4, 512, 512, true);
  REQUIRE(raw.size() == l.file_size());
  ModelFile mf = read_llama2c(as_bytes(raw, "stories260K.bin"));

  CHECK(mf.format == "llama2c");
  CHECK(mf.name == "stories260K.bin");
  CHECK(mf.tensors.context == "stories260K.bin");
  CHECK(mf.config["general.architecture"] == "llama");
  CHECK(mf.config["llama.embedding_length"] == 64);
  CHECK(mf.config["llama.feed_forward_length"] == 172);
  CHECK(mf.config["llama.block_count"] == 5);
  CHECK(mf.config["llama.attention.head_count"] == 8);
  CHECK(mf.config["llama.attention.head_count_kv"] == 4);
  CHECK(mf.config["llama.vocab_size"] == 512);
  CHECK(mf.config["llama.context_length"] == 512);
  CHECK(mf.config["llama.attention.layer_norm_rms_epsilon"].get<double>() == Approx(1e-5));
  CHECK(mf.config["llama.rope.freq_base"].get<double>() == 10000.0);
  CHECK(mf.config["attnlens.rope_style"] == "adjacent");
  CHECK_FALSE(mf.tensors.has("output.weight"));  // shared classifier
  CHECK(mf.tensors.size() == 2 + 9 * 5);

  CHECK(mf.tensors.get("token_embd.weight").shape == std::vector<int64_t>{512, 64});
  CHECK(mf.tensors.get("output_norm.weight").shape == std::vector<int64_t>{64});
  for (int i = 0; i < 5; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    CHECK_NOTHROW(mf.tensors.get(p + "attn_norm.weight", {64}));
    CHECK_NOTHROW(mf.tensors.get(p + "attn_q.weight", {64, 64}));
    CHECK_NOTHROW(mf.tensors.get(p + "attn_k.weight", {32, 64}));
    CHECK_NOTHROW(mf.tensors.get(p + "attn_v.weight", {32, 64}));
    CHECK_NOTHROW(mf.tensors.get(p + "attn_output.weight", {64, 64}));
    CHECK_NOTHROW(mf.tensors.get(p + "ffn_norm.weight", {64}));
    CHECK_NOTHROW(mf.tensors.get(p + "ffn_gate.weight", {172, 64}));
    CHECK_NOTHROW(mf.tensors.get(p + "ffn_down.weight", {64, 172}));
    CHECK_NOTHROW(mf.tensors.get(p + "ffn_up.weight", {172, 64}));
  }
  for (const auto& kv : mf.tensors.all()) {
    const TensorView& t = kv.second;
    CHECK(t.dtype == DType::F32);
    CHECK(t.nbytes == size_t(t.numel()) * 4);
    CHECK(t.data >= raw.data() + 28);
    CHECK(t.data + t.nbytes <= raw.data() + raw.size());
  }

  // Values: the view element vs. the raw file at the offset the README layout gives.
  auto raw_f32 = [&](size_t byte_offset) {
    float f;
    std::memcpy(&f, raw.data() + byte_offset, 4);
    return f;
  };
  struct Probe {
    std::string tensor;
    int64_t row, col, row_len;
    std::string array;
    int64_t layer_floats;
    int layer;
  };
  const int64_t kv = 32;
  const std::vector<Probe> probes = {
      {"token_embd.weight", 3, 5, 64, "token_embedding", 0, 0},
      {"token_embd.weight", 511, 63, 64, "token_embedding", 0, 0},
      {"blk.0.attn_norm.weight", 0, 17, 64, "rms_att", 64, 0},
      {"blk.3.attn_q.weight", 10, 20, 64, "wq", 64 * 64, 3},
      {"blk.2.attn_k.weight", 7, 9, 64, "wk", kv * 64, 2},
      {"blk.4.attn_v.weight", 31, 63, 64, "wv", kv * 64, 4},
      {"blk.1.attn_output.weight", 63, 0, 64, "wo", 64 * 64, 1},
      {"blk.4.ffn_norm.weight", 0, 63, 64, "rms_ffn", 64, 4},
      {"blk.0.ffn_gate.weight", 171, 1, 64, "w1", 172 * 64, 0},
      {"blk.4.ffn_down.weight", 63, 171, 172, "w2", 64 * 172, 4},
      {"blk.2.ffn_up.weight", 100, 50, 64, "w3", 172 * 64, 2},
      {"output_norm.weight", 0, 42, 64, "rms_final", 0, 0},
  };
  for (const Probe& p : probes) {
    INFO(p.tensor << "[" << p.row << ", " << p.col << "]");
    const TensorView& t = mf.tensors.get(p.tensor);
    const int64_t in_tensor = p.row * p.row_len + p.col;
    const float expected = raw_f32(l.byte_offset(p.array, p.layer * p.layer_floats + in_tensor));
    CHECK(f32_at(t.data, size_t(in_tensor)) == expected);
    CHECK(expected != 0.0f);  // a probe that lands on a real weight, not padding
  }
}

TEST_CASE("llama2c: synthetic unshared-classifier checkpoint, every tensor at its README offset", "[formats][llama2c]") {
  const Llama2cLayout l(8, 12, 2, 4, 2, 16, 4, false);
  const std::vector<uint8_t> file = make_llama2c(l);
  ModelFile mf = read_llama2c(as_bytes(file, "tiny.bin"));
  CHECK(mf.config["llama.vocab_size"] == 16);
  CHECK(mf.tensors.size() == 3 + 9 * 2);
  // Float i of the file holds the value i, so each view's first element is its offset in floats.
  CHECK(f32_at(mf.tensors.get("token_embd.weight", {16, 8}).data, 0) == float(l.start.at("token_embedding")));
  CHECK(f32_at(mf.tensors.get("output_norm.weight", {8}).data, 0) == float(l.start.at("rms_final")));
  const TensorView& out = mf.tensors.get("output.weight", {16, 8});
  CHECK(f32_at(out.data, 0) == float(l.start.at("wcls")));
  CHECK(f32_at(out.data, 16 * 8 - 1) == float(l.total_floats - 1));
  for (int layer = 0; layer < 2; ++layer) {
    for (const auto& a : layer_arrays(l)) {
      const TensorView& t = mf.tensors.get("blk." + std::to_string(layer) + "." + a.first);
      INFO(t.name);
      CHECK(t.numel() == a.second.second);
      const int64_t first = l.start.at(a.second.first) + layer * a.second.second;
      CHECK(f32_at(t.data, 0) == float(first));
      CHECK(f32_at(t.data, size_t(t.numel() - 1)) == float(first + t.numel() - 1));
    }
  }
  CHECK(mf.tensors.get("blk.1.attn_k.weight").shape == std::vector<int64_t>{4, 8});  // kv_dim = 8 * 2 / 4
  CHECK(mf.tensors.get("blk.0.ffn_down.weight").shape == std::vector<int64_t>{8, 12});
}

TEST_CASE("llama2c: bad headers and sizes give precise errors", "[formats][llama2c][bad]") {
  const Llama2cLayout l(8, 12, 2, 4, 2, 16, 4, true);
  const std::vector<uint8_t> good = make_llama2c(l);
  auto err = [](const std::vector<uint8_t>& f) { return error_of([&] { read_llama2c(as_bytes(f, "stories.bin")); }); };

  CHECK_THAT(err(with_header_field(good, 0, -3)), StartsWith("stories.bin: header says dim=-3"));
  CHECK_THAT(err(with_header_field(good, 1, 0)), StartsWith("stories.bin: header says hidden_dim=0"));
  CHECK_THAT(err(with_header_field(good, 2, -1)), StartsWith("stories.bin: header says n_layers=-1"));
  CHECK_THAT(err(with_header_field(good, 4, 0)), StartsWith("stories.bin: header says n_kv_heads=0"));
  CHECK_THAT(err(with_header_field(good, 5, 0)), StartsWith("stories.bin: header says vocab_size=0"));
  CHECK_THAT(err(with_header_field(good, 6, -512)), StartsWith("stories.bin: header says seq_len=-512"));
  CHECK_THAT(err(with_header_field(good, 3, 3)), Contains("dim=8, not a multiple of n_heads=3"));
  CHECK_THAT(err(with_header_field(good, 4, 3)), Contains("n_heads=4, not a multiple of n_kv_heads=3"));
  // Products that overflow 64 bits.
  std::vector<uint8_t> huge = good;
  for (int f : {0, 1, 2, 6}) huge = with_header_field(huge, f, std::numeric_limits<int32_t>::max());
  huge = with_header_field(with_header_field(huge, 3, 1), 4, 1);
  CHECK_THAT(err(huge), Contains("implies more than 2^64 bytes"));
  // Truncated / oversized by one float, or a sign-flipped vocab (unshared needs 512 more bytes).
  std::vector<uint8_t> shorter(good.begin(), good.end() - 4), longer = good;
  longer.push_back(0);
  CHECK_THAT(err(shorter), Contains("implies " + std::to_string(good.size()) + " bytes, but the file has " +
                                    std::to_string(good.size() - 4) + " (truncated?)"));
  CHECK_THAT(err(longer), Contains("but the file has " + std::to_string(good.size() + 1) + " (trailing bytes?)"));
  CHECK_THAT(err(with_header_field(good, 5, -16)), Contains("implies " + std::to_string(good.size() + 16 * 8 * 4)));
  CHECK_THAT(err({1, 2, 3}), StartsWith("stories.bin: truncated at byte 0: the llama2.c header (7 int32) needs 28 bytes, 3 remain"));
}

TEST_CASE("llama2c: every truncation throws", "[formats][llama2c][bad]") {
  const Llama2cLayout l(8, 12, 2, 4, 2, 16, 4, false);
  const std::vector<uint8_t> file = make_llama2c(l);
  check_truncations(file, "tiny.bin", all_lengths_below(file.size()), [](const Bytes& b) { read_llama2c(b); });

  const std::string path = testutil::shared_path("models/stories260K/stories260K.bin");
  SKIP_UNLESS_FILE(path);
  const std::vector<uint8_t> raw = testutil::read_bytes(path);
  check_truncations(raw, "stories260K.bin", sampled_lengths_below(raw.size()), [](const Bytes& b) { read_llama2c(b); });
}

// ---- GGUF ------------------------------------------------------------------------------------------

namespace {

enum : uint32_t { kU8, kI8, kU16, kI16, kU32, kI32, kF32, kBool, kString, kArray, kU64, kI64, kF64 };

std::vector<uint8_t> kv(const std::string& key, uint32_t type, const Buf& value) {
  Buf b;
  b.str(key).put<uint32_t>(type).append(value.b);
  return b.b;
}

struct TSpec {
  std::string name;
  std::vector<uint64_t> ne;  // innermost first, as in the file
  uint32_t type;
  uint64_t offset;
};

struct GSpec {
  std::string magic = "GGUF";
  uint32_t version = 3;
  bool override_counts = false;
  uint64_t n_tensors = 0, n_kv = 0;  // used when override_counts
  std::vector<std::vector<uint8_t>> kvs;
  std::vector<TSpec> tensors;
  uint64_t pad_to = 32;  // padding written before the data (general.alignment is a separate kv)
  size_t data_bytes = 0;
};

uint8_t data_pattern(size_t i) { return uint8_t(i * 7 + 3); }

std::vector<uint8_t> build_gguf(const GSpec& s, size_t* data_start = nullptr) {
  Buf f;
  f.raw(s.magic).put<uint32_t>(s.version);
  f.put<uint64_t>(s.override_counts ? s.n_tensors : s.tensors.size());
  f.put<uint64_t>(s.override_counts ? s.n_kv : s.kvs.size());
  for (const auto& p : s.kvs) f.append(p);
  for (const TSpec& t : s.tensors) {
    f.str(t.name).put<uint32_t>(uint32_t(t.ne.size()));
    for (uint64_t d : t.ne) f.put<uint64_t>(d);
    f.put<uint32_t>(t.type).put<uint64_t>(t.offset);
  }
  while (f.b.size() % s.pad_to) f.put<uint8_t>(0);
  if (data_start) *data_start = f.b.size();
  for (size_t i = 0; i < s.data_bytes; ++i) f.put<uint8_t>(data_pattern(i));
  return f.b;
}

// Alignment 64; one metadata pair of every value type; one tensor of every supported type, a 4-D one
// and a 0-D one; the data ends exactly where the last tensor does.
GSpec valid_gguf_spec() {
  GSpec s;
  s.pad_to = 64;
  s.kvs = {
      kv("general.alignment", kU32, Buf().put<uint32_t>(64)),
      kv("general.architecture", kString, Buf().str("llama")),
      kv("k.u8", kU8, Buf().put<uint8_t>(250)),
      kv("k.i8", kI8, Buf().put<int8_t>(-7)),
      kv("k.u16", kU16, Buf().put<uint16_t>(65535)),
      kv("k.i16", kI16, Buf().put<int16_t>(-32768)),
      kv("k.i32", kI32, Buf().put<int32_t>(-5)),
      kv("k.f32", kF32, Buf().put<float>(-1.75f)),
      kv("k.bool", kBool, Buf().put<uint8_t>(0)),
      kv("k.u64", kU64, Buf().put<uint64_t>(~uint64_t(0))),
      kv("k.i64", kI64, Buf().put<int64_t>(std::numeric_limits<int64_t>::min())),
      kv("k.f64", kF64, Buf().put<double>(1e-300)),
      kv("k.arr.u16", kArray, Buf().put<uint32_t>(kU16).put<uint64_t>(3).put<uint16_t>(1).put<uint16_t>(2).put<uint16_t>(3)),
      kv("k.arr.nested", kArray,
         Buf().put<uint32_t>(kArray).put<uint64_t>(2)
             .put<uint32_t>(kString).put<uint64_t>(1).str("x")
             .put<uint32_t>(kF64).put<uint64_t>(0)),
  };
  s.tensors = {
      {"a", {3, 2}, 0, 0},           // f32 [2, 3]: 24 bytes
      {"b", {4}, 30, 64},            // bf16 [4]: 8 bytes
      {"c", {32, 2}, 8, 128},        // q8_0 [2, 32]: 2 blocks = 68 bytes
      {"d", {2, 1, 1, 1}, 1, 256},   // f16 [1, 1, 1, 2]: 4 bytes
      {"e", {}, 0, 320},             // f32 scalar: 4 bytes
  };
  s.data_bytes = 324;
  return s;
}

std::string gguf_error(const GSpec& s) {
  const std::vector<uint8_t> f = build_gguf(s);
  return error_of([&] { read_gguf(as_bytes(f, "x.gguf")); });
}

}  // namespace

TEST_CASE("gguf: fixture written by tools/py/gguf_io.py", "[formats][gguf]") {
  const std::vector<uint8_t> file = testutil::read_bytes(testutil::fixture_path("formats/tiny.gguf"));
  ModelFile mf = read_gguf(as_bytes(file, "tiny.gguf"));
  const json& c = mf.config;
  CHECK(mf.format == "gguf");
  CHECK(mf.tensors.context == "tiny.gguf");
  CHECK(c["general.architecture"] == "llama");
  CHECK(c["general.name"] == "tiny");
  CHECK(c["test.u8"] == 200);
  CHECK(c["test.i8"] == -100);
  CHECK(c["test.u16"] == 60000);
  CHECK(c["test.i16"] == -30000);
  CHECK(c["test.u32"].get<uint64_t>() == 4000000000u);
  CHECK(c["test.i32"] == -2000000000);
  CHECK(c["test.f32"].get<double>() == 0.25);
  CHECK(c["test.bool"] == true);
  CHECK(c["test.string"] == "h\xc3\xa9llo");
  CHECK(c["test.u64"].get<uint64_t>() == (uint64_t(1) << 63) + 5);
  CHECK(c["test.i64"].get<int64_t>() == -(int64_t(1) << 62));
  CHECK(c["test.f64"].get<double>() == 3.141592653589793);
  CHECK(c["test.array.string"] == json({"a", "bc", ""}));
  CHECK(c["test.array.f32"] == json({0.5, -1.5}));
  CHECK(c["test.array.i32"] == json({1, -2, 3}));
  CHECK(c["test.array.bool"] == json({true, false}));
  CHECK(c["test.array.empty"] == json::array());
  CHECK(c["test.array.nested"] == json::parse("[[1, 2], [3]]"));
  CHECK(c["llama.block_count"] == 1);
  CHECK(c.size() == 21);

  REQUIRE(mf.tensors.size() == 5);
  const TensorView& f32 = mf.tensors.get("t.f32", {2, 3});
  CHECK(f32.dtype == DType::F32);
  CHECK(f32.nbytes == 24);
  for (int i = 0; i < 6; ++i) CHECK(f32_at(f32.data, i) == i * 0.5f - 1);

  const TensorView& f16 = mf.tensors.get("t.f16", {4});
  CHECK(f16.dtype == DType::F16);
  CHECK(f16.nbytes == 8);
  const float f16_expected[] = {1, -2, 0.5f, 65504};
  for (int i = 0; i < 4; ++i) CHECK(f16_to_f32(u16_at(f16.data, i)) == f16_expected[i]);

  const TensorView& bf16 = mf.tensors.get("t.bf16", {2, 2});
  CHECK(bf16.dtype == DType::BF16);
  CHECK(u16_at(bf16.data, 0) == 0x3F80);  // 1
  CHECK(u16_at(bf16.data, 1) == 0xC000);  // -2
  CHECK(bf16_to_f32(u16_at(bf16.data, 2)) == 0.15625f);
  CHECK(u16_at(bf16.data, 3) == 0x3F80);  // 1 + 2^-8 rounds to even: 1

  const TensorView& t3 = mf.tensors.get("t.3d", {2, 3, 4});
  CHECK(f32_at(t3.data, 1 * 12 + 2 * 4 + 3) == 23.0f);  // [1, 2, 3] of arange(24)

  // q8_0 [2, 64] = 4 blocks {f16 d, int8 q[32]}: ggml's quantize_row_q8_0_ref, checked here independently.
  const TensorView& q = mf.tensors.get("t.q8_0", {2, 64});
  CHECK(q.dtype == DType::Q8_0);
  REQUIRE(q.nbytes == 4 * 34);
  auto block_d = [&](int b) { return u16_at(q.data + 34 * b, 0); };
  auto block_q = [&](int b, int j) { return int8_t(q.data[34 * b + 2 + j]); };
  CHECK(block_d(0) == 0x3C00);  // amax 127 -> d = 1
  const int head[8] = {127, 3, -3, 1, -1, 2, -2, 127};  // 127, 2.5, -2.5, 0.5, -0.5, 1.5, -1.5, 126.5: roundf
  for (int j = 0; j < 8; ++j) CHECK(block_q(0, j) == head[j]);
  for (int j = 8; j < 32; ++j) CHECK(block_q(0, j) == int(std::roundf(j / 4.0f - 3)));
  CHECK(block_d(1) == 0);  // all-zero block
  for (int j = 0; j < 32; ++j) CHECK(block_q(1, j) == 0);
  for (int b = 2; b < 4; ++b) {
    float amax = 0, x[32];
    for (int j = 0; j < 32; ++j) {
      x[j] = float(std::sin(0.37 * ((b - 2) * 32 + j)) * 3);
      amax = std::max(amax, std::fabs(x[j]));
    }
    const float d = f16_to_f32(block_d(b));
    CHECK(d == Approx(amax / 127).epsilon(1e-3));
    for (int j = 0; j < 32; ++j) CHECK(std::fabs(d * block_q(b, j) - x[j]) <= 0.5f * d + 127 * 1e-3f * d);
  }
  // Every tensor is 32-byte aligned in the file (default general.alignment).
  for (const auto& kvp : mf.tensors.all()) CHECK((kvp.second.data - file.data()) % 32 == 0);
}

TEST_CASE("gguf: hand-built file with alignment 64, every value type, every tensor type", "[formats][gguf]") {
  size_t data_start = 0;
  const std::vector<uint8_t> file = build_gguf(valid_gguf_spec(), &data_start);
  ModelFile mf = read_gguf(as_bytes(file, "x.gguf"));
  const json& c = mf.config;
  CHECK(c.size() == 14);
  CHECK(c["general.alignment"] == 64);
  CHECK(c["k.u8"] == 250);
  CHECK(c["k.i8"] == -7);
  CHECK(c["k.u16"] == 65535);
  CHECK(c["k.i16"] == -32768);
  CHECK(c["k.i32"] == -5);
  CHECK(c["k.f32"].get<double>() == -1.75);
  CHECK(c["k.bool"] == false);
  CHECK(c["k.u64"].get<uint64_t>() == ~uint64_t(0));
  CHECK(c["k.i64"].get<int64_t>() == std::numeric_limits<int64_t>::min());
  CHECK(c["k.f64"].get<double>() == 1e-300);
  CHECK(c["k.arr.u16"] == json({1, 2, 3}));
  CHECK(c["k.arr.nested"] == json::parse("[[\"x\"], []]"));

  CHECK(data_start % 64 == 0);
  struct Want {
    const char* name;
    DType dtype;
    std::vector<int64_t> shape;
    size_t offset, nbytes;
  };
  const Want want[] = {{"a", DType::F32, {2, 3}, 0, 24},
                       {"b", DType::BF16, {4}, 64, 8},
                       {"c", DType::Q8_0, {2, 32}, 128, 68},
                       {"d", DType::F16, {1, 1, 1, 2}, 256, 4},
                       {"e", DType::F32, {}, 320, 4}};
  REQUIRE(mf.tensors.size() == 5);
  for (const Want& w : want) {
    INFO(w.name);
    const TensorView& t = mf.tensors.get(w.name, w.shape);
    CHECK(t.dtype == w.dtype);
    CHECK(t.nbytes == w.nbytes);
    CHECK(t.data == file.data() + data_start + w.offset);
    bool same = true;
    for (size_t i = 0; i < t.nbytes; ++i) same = same && t.data[i] == data_pattern(w.offset + i);
    CHECK(same);
  }
  CHECK(mf.tensors.get("e").numel() == 1);

  // No tensors and no metadata is a valid (empty) file.
  GSpec empty;
  const std::vector<uint8_t> e = build_gguf(empty);
  ModelFile me = read_gguf(as_bytes(e, "empty.gguf"));
  CHECK(me.tensors.size() == 0);
  CHECK(me.config.is_object());
  CHECK(me.config.empty());
}

TEST_CASE("gguf: corrupted header fields give precise errors", "[formats][gguf][bad]") {
  GSpec s = valid_gguf_spec();
  REQUIRE_NOTHROW(build_gguf(s));

  SECTION("magic and version") {
    s.magic = "GGUG";
    CHECK(gguf_error(s) == "x.gguf: not a GGUF file (no \"GGUF\" magic at byte 0)");
    s = valid_gguf_spec();
    s.version = 2;
    CHECK(gguf_error(s) == "x.gguf: unsupported GGUF version 2 (only 3)");
    s.version = 0x03000000;
    CHECK_THAT(gguf_error(s), Contains("big-endian"));
  }
  SECTION("counts larger than the file") {
    s.override_counts = true;
    s.n_kv = s.kvs.size();
    s.n_tensors = uint64_t(1) << 62;
    CHECK(gguf_error(s) == "x.gguf: header says 4611686018427387904 tensors (at most 1048576)");
    s.n_tensors = uint64_t(1) << 20;  // within the limit, but more than the bytes that follow can describe
    CHECK_THAT(gguf_error(s), StartsWith("x.gguf: header says 1048576 tensors, but only "));
    s.n_tensors = s.tensors.size();
    s.n_kv = uint64_t(1) << 62;
    CHECK(gguf_error(s) == "x.gguf: header says 4611686018427387904 metadata pairs (at most 65536)");
    s.n_kv = uint64_t(1) << 16;
    CHECK_THAT(gguf_error(s), StartsWith("x.gguf: header says 65536 metadata pairs, but only "));
    s.n_kv = ~uint64_t(0);
    CHECK_THAT(gguf_error(s), Contains("18446744073709551615 metadata pairs"));
    // One more pair than present: the reader runs into the tensor infos and fails there, not past the end.
    s.n_kv = s.kvs.size() + 1;
    CHECK_THAT(gguf_error(s), StartsWith("x.gguf: "));
  }
  SECTION("strings, value types, arrays") {
    GSpec t;
    t.override_counts = true;
    t.n_kv = 1;
    t.kvs = {Buf().put<uint64_t>(uint64_t(1) << 40).raw("abc").b};
    // (the file is padded to 64 bytes, so 32 bytes follow the length)
    CHECK(gguf_error(t) == "x.gguf: the key in metadata pair #0 at byte 24 claims 1099511627776 bytes, but only 32 remain");
    s.kvs.push_back(kv("k.bad", 13, Buf().put<uint32_t>(0)));
    CHECK(gguf_error(s) == "x.gguf: metadata key k.bad has unknown value type 13 (known: 0..12)");
    s.kvs.back() = kv("k.bool2", kBool, Buf().put<uint8_t>(2));
    CHECK(gguf_error(s) == "x.gguf: metadata key k.bool2: bool value is 2 (must be 0 or 1)");
    s.kvs.back() = kv("k.str", kString, Buf().put<uint64_t>(~uint64_t(0)));
    CHECK_THAT(gguf_error(s), Contains("a string value in metadata key k.str at byte"));
    CHECK_THAT(gguf_error(s), Contains("claims 18446744073709551615 bytes"));
    s.kvs.back() = kv("k.arr", kArray, Buf().put<uint32_t>(kU32).put<uint64_t>(uint64_t(1) << 61));
    CHECK(gguf_error(s) == "x.gguf: metadata key k.arr: an array of 2305843009213693952 values (at most 2097152)");
    s.kvs.back() = kv("k.arr", kArray, Buf().put<uint32_t>(kU32).put<uint64_t>(uint64_t(1) << 21));
    CHECK_THAT(gguf_error(s), StartsWith("x.gguf: metadata key k.arr: array of 2097152 u32 needs at least 4 bytes each"));
    s.kvs.back() = kv("k.arr", kArray, Buf().put<uint32_t>(kString).put<uint64_t>(uint64_t(1) << 20));
    CHECK_THAT(gguf_error(s), Contains("array of 1048576 string needs at least 8 bytes each"));
    s.kvs.back() = kv("k.arr", kArray, Buf().put<uint32_t>(77).put<uint64_t>(1));
    CHECK(gguf_error(s) == "x.gguf: metadata key k.arr: array has unknown element type 77");
    s.kvs.back() = kv("general.name", kString, Buf().str("a"));
    s.kvs.push_back(kv("general.name", kString, Buf().str("b")));
    CHECK(gguf_error(s) == "x.gguf: metadata key general.name appears twice");
  }
  SECTION("array nesting") {
    auto nested = [](int levels) {
      Buf b;
      for (int i = 1; i < levels; ++i) b.put<uint32_t>(kArray).put<uint64_t>(1);
      b.put<uint32_t>(kU8).put<uint64_t>(0);
      return b;
    };
    s.kvs.push_back(kv("k.deep", kArray, nested(4)));
    const std::vector<uint8_t> ok = build_gguf(s);
    CHECK(read_gguf(as_bytes(ok, "x.gguf")).config["k.deep"] == json::parse("[[[[]]]]"));
    s.kvs.back() = kv("k.deep", kArray, nested(5));
    CHECK(gguf_error(s) == "x.gguf: metadata key k.deep: arrays nested more than 4 deep");
  }
  SECTION("general.alignment") {
    s.kvs[0] = kv("general.alignment", kU32, Buf().put<uint32_t>(48));
    CHECK(gguf_error(s) == "x.gguf: general.alignment=48 is not a power of two");
    s.kvs[0] = kv("general.alignment", kU32, Buf().put<uint32_t>(0));
    CHECK(gguf_error(s) == "x.gguf: general.alignment=0 is not a power of two");
    s.kvs[0] = kv("general.alignment", kString, Buf().str("64"));
    CHECK(gguf_error(s) == "x.gguf: general.alignment is \"64\" (must be a positive integer)");
    // Without the key, the default 32 applies: tensor b's offset 64 is still fine, but the data start moves.
    s.kvs.erase(s.kvs.begin());
    s.pad_to = 32;
    const std::vector<uint8_t> f = build_gguf(s);
    CHECK(read_gguf(as_bytes(f, "x.gguf")).tensors.size() == 5);
  }
  SECTION("tensor infos") {
    s.tensors[0].ne = {1, 1, 1, 1, 6};
    CHECK(gguf_error(s) == "x.gguf: tensor a has 5 dimensions (at most 4)");
    s.tensors[0].ne = {3, uint64_t(1) << 63};
    CHECK(gguf_error(s) == "x.gguf: tensor a has ne[1]=9223372036854775808 (negative as int64)");
    s.tensors[0].ne = {uint64_t(1) << 32, uint64_t(1) << 32};
    CHECK(gguf_error(s) == "x.gguf: tensor a: the element count overflows (ne[1]=4294967296)");
    s.tensors[0].ne = {uint64_t(1) << 62, 1};
    CHECK(gguf_error(s) == "x.gguf: tensor a: the byte size overflows");
    s.tensors[0].ne = {3, 2};
    s.tensors[0].name = "blk.0.attn_q.weight";
    s.tensors[0].type = 12;
    CHECK(gguf_error(s) == "x.gguf: tensor blk.0.attn_q.weight is q4_K but its rows (ne[0]=3) are not a multiple of "
                           "the 256-element block");
    s.tensors[0].type = 16;
    const std::string supported =
        "(supported: f32, f16, bf16, q8_0, q4_0, q4_1, q5_0, q5_1, q2_K, q3_K, q4_K, q5_K, q6_K, iq4_nl, iq4_xs)";
    CHECK(gguf_error(s) == "x.gguf: tensor blk.0.attn_q.weight has type iq2_xxs (16), which is not supported " + supported);
    s.tensors[0].type = 99;
    CHECK(gguf_error(s) == "x.gguf: tensor blk.0.attn_q.weight has type unknown (99), which is not supported " + supported);
    s.tensors[0].type = 0;
    s.tensors[2].ne = {16, 4};
    CHECK(gguf_error(s) == "x.gguf: tensor c is q8_0 but its rows (ne[0]=16) are not a multiple of the 32-element block");
    s.tensors[2].ne = {32, 2};
    s.tensors[3].name = "blk.0.attn_q.weight";
    CHECK(gguf_error(s) == "x.gguf: tensor blk.0.attn_q.weight appears twice");
  }
  SECTION("tensor offsets") {
    s.tensors[1].offset = 8;
    CHECK(gguf_error(s) == "x.gguf: tensor b data offset 8 is not a multiple of the alignment 64");
    s.tensors[1].offset = 384;
    CHECK(gguf_error(s) == "x.gguf: tensor b (8 bytes at data offset 384) exceeds the 324-byte data section");
    s.tensors[1].offset = uint64_t(0) - 64;  // offset + size wraps around 2^64
    CHECK(gguf_error(s) == "x.gguf: tensor b (8 bytes at data offset 18446744073709551552) exceeds the 324-byte data section");
    s.tensors[1].offset = 320;  // e's place: b's 8 bytes run past the end
    CHECK(gguf_error(s) == "x.gguf: tensor b (8 bytes at data offset 320) exceeds the 324-byte data section");
    s.tensors[1].offset = 64;
    s.tensors[0].ne = {3, 6};  // a grows to 72 bytes, over b at 64
    CHECK(gguf_error(s) == "x.gguf: tensor a (bytes 0..72 of the data) overlaps tensor b (bytes 64..72)");
    s.tensors[0].ne = {3, 2};
    s.tensors[4].offset = 256;  // e over d
    CHECK(gguf_error(s) == "x.gguf: tensor d (bytes 256..260 of the data) overlaps tensor e (bytes 256..260)");
  }
  SECTION("data section past the end") {
    s.data_bytes = 0;
    s.pad_to = 1;  // the file ends right after the tensor infos, without the padding
    std::vector<uint8_t> f = build_gguf(s);
    REQUIRE(f.size() % 64 != 0);
    CHECK(error_of([&] { read_gguf(as_bytes(f, "x.gguf")); }) ==
          "x.gguf: the data section should start at byte " + std::to_string((f.size() + 63) / 64 * 64) +
              " (aligned to 64), past the end of the " + std::to_string(f.size()) + "-byte file");
  }
}

TEST_CASE("gguf: every truncation throws", "[formats][gguf][bad]") {
  const std::vector<uint8_t> hand = build_gguf(valid_gguf_spec());
  check_truncations(hand, "x.gguf", all_lengths_below(hand.size()), [](const Bytes& b) { read_gguf(b); });
  const std::vector<uint8_t> fixture = testutil::read_bytes(testutil::fixture_path("formats/tiny.gguf"));
  // The fixture's last tensor (t.3d, 96 bytes) needs no padding, so every shorter file is invalid.
  ModelFile mf = read_gguf(as_bytes(fixture, "tiny.gguf"));
  const TensorView& last = mf.tensors.get("t.3d");
  REQUIRE(last.data + last.nbytes == fixture.data() + fixture.size());
  check_truncations(fixture, "tiny.gguf", all_lengths_below(fixture.size()), [](const Bytes& b) { read_gguf(b); });
}

// ---- safetensors -----------------------------------------------------------------------------------

namespace {

std::vector<uint8_t> make_safetensors(const std::string& header, size_t data_bytes, uint64_t length_field = ~uint64_t(0)) {
  Buf b;
  b.put<uint64_t>(length_field == ~uint64_t(0) ? header.size() : length_field).raw(header);
  for (size_t i = 0; i < data_bytes; ++i) b.put<uint8_t>(data_pattern(i));
  return b.b;
}

std::string st_error(const std::string& header, size_t data_bytes) {
  const std::vector<uint8_t> f = make_safetensors(header, data_bytes);
  return error_of([&] { read_safetensors(as_bytes(f, "model.safetensors")); });
}

}  // namespace

TEST_CASE("safetensors: fixture with F32, F16, BF16 and a skipped I64 buffer", "[formats][safetensors]") {
  const std::vector<uint8_t> file = testutil::read_bytes(testutil::fixture_path("formats/tiny.safetensors"));
  std::vector<std::string> skipped;
  TensorMap m = read_safetensors(as_bytes(file, "tiny.safetensors"), &skipped);
  CHECK(m.context == "tiny.safetensors");
  CHECK(m.size() == 3);
  CHECK(skipped == std::vector<std::string>{"position_ids"});
  const TensorView& a = m.get("a.f32", {2, 3});
  CHECK(a.dtype == DType::F32);
  for (int i = 0; i < 6; ++i) CHECK(f32_at(a.data, i) == i * 0.5f - 1);
  const TensorView& b = m.get("b.f16", {4});
  CHECK(b.dtype == DType::F16);
  CHECK(f16_to_f32(u16_at(b.data, 3)) == 65504.0f);
  CHECK(f16_to_f32(u16_at(b.data, 1)) == -2.0f);
  const TensorView& c = m.get("c.bf16", {2, 2});
  CHECK(c.dtype == DType::BF16);
  CHECK(bf16_to_f32(u16_at(c.data, 2)) == 0.15625f);
  CHECK(u16_at(c.data, 3) == 0x3F80);
  // Views point into the caller's bytes: header length + 8 + data_offsets.
  uint64_t n;
  std::memcpy(&n, file.data(), 8);
  CHECK(a.data == file.data() + 8 + n);
  CHECK(b.data == file.data() + 8 + n + 24);
  CHECK_NOTHROW(read_safetensors(as_bytes(file, "tiny.safetensors")));  // no skipped list wanted
}

TEST_CASE("safetensors: sharded checkpoint via the index", "[formats][safetensors]") {
  auto fx = [](const std::string& n) { return testutil::read_bytes(testutil::fixture_path("formats/" + n)); };
  const std::vector<uint8_t> index_bytes = fx("model.safetensors.index.json");
  const std::vector<uint8_t> s1 = fx("model-00001-of-00002.safetensors"), s2 = fx("model-00002-of-00002.safetensors");
  SafetensorsIndex idx = read_safetensors_index(as_bytes(index_bytes, "model.safetensors.index.json"));
  CHECK(idx.name == "model.safetensors.index.json");
  CHECK(idx.shards == std::vector<std::string>{"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"});
  CHECK(idx.weight_map.size() == 3);
  CHECK(idx.weight_map.at("layer.1.w") == "model-00002-of-00002.safetensors");

  // Shards in any order, named by path.
  const Bytes b1 = as_bytes(s1, "/some/dir/model-00001-of-00002.safetensors");
  const Bytes b2 = as_bytes(s2, "model-00002-of-00002.safetensors");
  TensorMap m = read_safetensors_shards(idx, {b2, b1});
  CHECK(m.context == "model.safetensors.index.json");
  CHECK(m.size() == 3);
  CHECK(f32_at(m.get("layer.0.w", {2, 2}).data, 3) == 4.0f);
  CHECK(f32_at(m.get("layer.0.b", {2}).data, 1) == 6.0f);
  CHECK(f32_at(m.get("layer.1.w", {2, 2}).data, 0) == 7.0f);
  CHECK(m.get("layer.1.w").data >= s2.data());

  CHECK(error_of([&] { read_safetensors_shards(idx, {b1}); }) ==
        "model.safetensors.index.json: shard model-00002-of-00002.safetensors is missing (1 of 2 given)");
  CHECK(error_of([&] { read_safetensors_shards(idx, {b1, b1, b2}); }) ==
        "model.safetensors.index.json: shard model-00001-of-00002.safetensors is given twice");
  CHECK(error_of([&] { read_safetensors_shards(idx, {b1, as_bytes(s2, "other.safetensors")}); }) ==
        "model.safetensors.index.json: shard other.safetensors is not one of the index's 2 shards");

  SafetensorsIndex wrong = idx;
  wrong.weight_map["layer.0.b"] = "model-00002-of-00002.safetensors";
  CHECK(error_of([&] { read_safetensors_shards(wrong, {b1, b2}); }) ==
        "model.safetensors.index.json: tensor layer.0.b is in model-00001-of-00002.safetensors, but the weight_map "
        "says model-00002-of-00002.safetensors");
  SafetensorsIndex extra = idx;
  extra.weight_map["layer.9.w"] = "model-00002-of-00002.safetensors";
  CHECK(error_of([&] { read_safetensors_shards(extra, {b1, b2}); }) ==
        "model.safetensors.index.json: tensor layer.9.w is listed in model-00002-of-00002.safetensors, but that shard "
        "does not have it");
  SafetensorsIndex fewer = idx;
  fewer.weight_map.erase("layer.0.b");
  CHECK(error_of([&] { read_safetensors_shards(fewer, {b1, b2}); }) ==
        "model.safetensors.index.json: tensor layer.0.b in model-00001-of-00002.safetensors is not in the weight_map");

  TensorMap into = read_safetensors(b1);
  CHECK(error_of([&] { merge_tensors(into, read_safetensors(b1)); }) ==
        "/some/dir/model-00001-of-00002.safetensors: tensor layer.0.b from /some/dir/model-00001-of-00002.safetensors "
        "is already present");
  merge_tensors(into, read_safetensors(b2));
  CHECK(into.size() == 3);
}

TEST_CASE("safetensors: bad index files", "[formats][safetensors][bad]") {
  auto err = [](const std::string& text) {
    std::vector<uint8_t> v(text.begin(), text.end());
    return error_of([&] { read_safetensors_index(as_bytes(v, "idx.json")); });
  };
  CHECK_THAT(err("{\"weight_map\": {"), StartsWith("idx.json: the index is not valid JSON: "));
  CHECK(err("[1]") == "idx.json: the index is not a JSON object");
  CHECK(err("{\"metadata\": {}}") == "idx.json: the index has no \"weight_map\" object");
  CHECK(err("{\"weight_map\": []}") == "idx.json: the index has no \"weight_map\" object");
  CHECK(err("{\"weight_map\": {}}") == "idx.json: the index's weight_map is empty");
  CHECK(err("{\"weight_map\": {\"w\": 3}}") == "idx.json: weight_map[\"w\"] is 3, not a file name");
  CHECK(err("{\"weight_map\": {\"w\": \"../x.safetensors\"}}") ==
        "idx.json: weight_map[\"w\"] is \"../x.safetensors\", not a plain file name");
  CHECK(err("{\"weight_map\": {\"w\": \"\"}}") == "idx.json: weight_map[\"w\"] is \"\", not a plain file name");
}

TEST_CASE("safetensors: corrupted headers give precise errors", "[formats][safetensors][bad]") {
  const std::string ok = R"({"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}})";
  REQUIRE(read_safetensors(as_bytes(make_safetensors(ok, 16), "m")).size() == 1);

  CHECK(st_error(R"({"lm_head.weight":{"dtype":"F32","shape":[32,32],"data_offsets":[0,4096]}})", 2048) ==
        "model.safetensors: tensor lm_head.weight data_offsets [0, 4096] exceed the 2048 data bytes");
  CHECK(st_error(R"({"w":{"dtype":"F32","shape":[2,2],"data_offsets":[0,12]}})", 12) ==
        "model.safetensors: tensor w has shape [2,2] of F32 (4 elements x 4 bytes), but data_offsets [0, 12] span 12 bytes");
  CHECK(st_error(R"({"w":{"dtype":"F32","shape":[2,2],"data_offsets":[16,0]}})", 16) ==
        "model.safetensors: tensor w data_offsets [16, 0] end before they begin");
  CHECK(st_error(R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},"b":{"dtype":"F32","shape":[4],"data_offsets":[8,24]}})", 24) ==
        "model.safetensors: tensor b data_offsets [8, 24] overlap tensor a [0, 16]");
  CHECK(st_error(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[16,24]}})", 24) ==
        "model.safetensors: data bytes [8, 16) before tensor b belong to no tensor");
  CHECK(st_error(ok, 20) == "model.safetensors: the tensors end at data byte 16, but the data section has 20 bytes (4 trailing)");
  CHECK(st_error(R"({"w":{"dtype":"Q4","shape":[2],"data_offsets":[0,1]}})", 1) ==
        "model.safetensors: tensor w has dtype Q4, supported: F32, F16, BF16 (I64/I32 buffers are skipped)");
  CHECK(st_error(R"({"w":{"dtype":"F64","shape":[2],"data_offsets":[0,16]}})", 16) ==
        "model.safetensors: tensor w has dtype F64, supported: F32, F16, BF16 (I64/I32 buffers are skipped)");
  CHECK(st_error(R"({"w":{"dtype":"F32","shape":[-2,2],"data_offsets":[0,16]}})", 16) ==
        "model.safetensors: tensor w has shape [-2,2]: dimensions must be non-negative integers");
  CHECK(st_error(R"({"w":{"dtype":"F32","shape":[2.5],"data_offsets":[0,16]}})", 16) ==
        "model.safetensors: tensor w has shape [2.5]: dimensions must be non-negative integers");
  CHECK(st_error(R"({"w":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,16]}})", 16) ==
        "model.safetensors: tensor w has shape [4294967296,4294967296]: the element count overflows");
  CHECK(st_error(R"({"w":{"dtype":"F32","shape":[4611686018427387904],"data_offsets":[0,16]}})", 16) ==
        "model.safetensors: tensor w has shape [4611686018427387904] of F32 (4611686018427387904 elements x 4 bytes), "
        "but data_offsets [0, 16] span 16 bytes");
  CHECK(st_error(R"({"w":{"shape":[2],"data_offsets":[0,8]}})", 8) == "model.safetensors: tensor w has no \"dtype\" string");
  CHECK(st_error(R"({"w":{"dtype":"F32","data_offsets":[0,8]}})", 8) == "model.safetensors: tensor w has no \"shape\" array");
  CHECK(st_error(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,4,8]}})", 8) ==
        "model.safetensors: tensor w has no \"data_offsets\" [begin, end] of two non-negative integers");
  CHECK(st_error(R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[-8,0]}})", 8) ==
        "model.safetensors: tensor w has no \"data_offsets\" [begin, end] of two non-negative integers");
  CHECK(st_error(R"({"w":[1,2]})", 0) == "model.safetensors: tensor w: header entry is an array of 2 values, not an object");
  CHECK_THAT(st_error(R"({"w":)", 0), StartsWith("model.safetensors: the header is not valid JSON: "));
  CHECK(st_error(R"( {"w":1})", 0) == "model.safetensors: the 8-byte header does not start with '{'");
  // An empty header {} with no data is a valid empty file; __metadata__ is ignored.
  CHECK(read_safetensors(as_bytes(make_safetensors(R"({"__metadata__":{"format":"pt"}})", 0), "m")).size() == 0);

  auto length_error = [](uint64_t len, size_t actual_header) {
    const std::vector<uint8_t> f = make_safetensors(std::string(actual_header, ' '), 0, len);
    return error_of([&] { read_safetensors(as_bytes(f, "model.safetensors")); });
  };
  CHECK(length_error(1000, 10) == "model.safetensors: header length 1000 exceeds the 10 bytes after it");
  CHECK(length_error(uint64_t(1) << 63, 10) == "model.safetensors: header length 9223372036854775808 exceeds the 10 bytes after it");
  CHECK(length_error(0, 10) == "model.safetensors: the 0-byte header does not start with '{'");
}

TEST_CASE("safetensors: every truncation throws", "[formats][safetensors][bad]") {
  for (const char* n : {"tiny.safetensors", "model-00001-of-00002.safetensors"}) {
    const std::vector<uint8_t> file = testutil::read_bytes(testutil::fixture_path(std::string("formats/") + n));
    check_truncations(file, n, all_lengths_below(file.size()), [](const Bytes& b) { read_safetensors(b); });
  }
  const std::vector<uint8_t> index = testutil::read_bytes(testutil::fixture_path("formats/model.safetensors.index.json"));
  REQUIRE(index.back() == '\n');  // without its final newline the JSON is still complete
  check_truncations(index, "index.json", all_lengths_below(index.size() - 1), [](const Bytes& b) { read_safetensors_index(b); });
}

// ---- single-byte corruptions ----------------------------------------------------------------------

TEST_CASE("every single-byte corruption reads in bounds or throws attnlens::Error", "[formats][bad]") {
  auto fx = [](const std::string& n) { return testutil::read_bytes(testutil::fixture_path("formats/" + n)); };
  check_byte_corruptions(fx("tiny.gguf"), "tiny.gguf", [](const Bytes& b) { return read_gguf(b).tensors; });
  check_byte_corruptions(build_gguf(valid_gguf_spec()), "x.gguf", [](const Bytes& b) { return read_gguf(b).tensors; });
  check_byte_corruptions(fx("tiny.safetensors"), "tiny.safetensors", [](const Bytes& b) { return read_safetensors(b); });
  // The llama2.c header (the floats after it are never interpreted).
  const std::vector<uint8_t> ck = make_llama2c(Llama2cLayout(8, 12, 2, 4, 2, 16, 4, false));
  check_byte_corruptions(ck, "tiny.bin", [](const Bytes& b) { return read_llama2c(b).tensors; }, 28);
}

// ---- detect_file_kind ------------------------------------------------------------------------------

namespace {

std::vector<uint8_t> make_tokenizer_bin() {
  Buf b;
  b.put<int32_t>(5);
  const std::pair<float, std::string> tokens[] = {{0.0f, "<unk>"}, {0.0f, "<s>"}, {-1.5f, "a"}, {-2.0f, ""}, {-3.0f, "hello"}};
  for (const auto& t : tokens) b.put<float>(t.first).put<int32_t>(int32_t(t.second.size())).raw(t.second);
  return b.b;
}

FileKind kind_of(const std::vector<uint8_t>& v) { return detect_file_kind(as_bytes(v, "f")); }
FileKind kind_of(const std::string& s) { return kind_of(std::vector<uint8_t>(s.begin(), s.end())); }

}  // namespace

TEST_CASE("detect_file_kind: each kind, by content", "[formats][detect]") {
  auto fx = [](const std::string& n) { return testutil::read_bytes(testutil::fixture_path("formats/" + n)); };
  CHECK(kind_of(fx("tiny.gguf")) == FileKind::Gguf);
  CHECK(kind_of(build_gguf(valid_gguf_spec())) == FileKind::Gguf);
  CHECK(kind_of(fx("tiny.safetensors")) == FileKind::Safetensors);
  CHECK(kind_of(fx("model-00002-of-00002.safetensors")) == FileKind::Safetensors);
  CHECK(kind_of(fx("model.safetensors.index.json")) == FileKind::SafetensorsIndex);
  CHECK(kind_of(make_llama2c(Llama2cLayout(8, 12, 2, 4, 2, 16, 4, false))) == FileKind::Llama2c);
  CHECK(kind_of(make_llama2c(Llama2cLayout(8, 12, 2, 4, 2, 16, 4, true))) == FileKind::Llama2c);
  // dim = 123 makes the first byte '{'; the exact size still makes it a checkpoint.
  CHECK(kind_of(make_llama2c(Llama2cLayout(123, 4, 1, 1, 1, 2, 2, true))) == FileKind::Llama2c);
  CHECK(kind_of(make_tokenizer_bin()) == FileKind::LlamaTokenizerBin);
  CHECK(kind_of(std::string(" \n\t{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": 64}")) == FileKind::Json);
  CHECK(kind_of(std::string("{\"note\": \"\\\"weight_map\\\"\", \"x\": {\"weight_map\": {}}}")) == FileKind::Json);
  CHECK(kind_of(std::string("{\"weight_map\": {\"a\": \"b.safetensors\"}}")) == FileKind::SafetensorsIndex);
  CHECK(kind_of(std::string("{\"weight_map\": {\"a\": \"b.safetensors\"}")) == FileKind::Json);  // broken JSON

  const std::string stories = testutil::shared_path("models/stories260K/stories260K.bin");
  const std::string tok512 = testutil::shared_path("models/stories260K/tok512.bin");
  const std::string tok32k = testutil::shared_path("models/llama2-tokenizer/tokenizer.bin");
  if (testutil::file_exists(stories)) CHECK(kind_of(testutil::read_bytes(stories)) == FileKind::Llama2c);
  if (testutil::file_exists(tok512)) CHECK(kind_of(testutil::read_bytes(tok512)) == FileKind::LlamaTokenizerBin);
  if (testutil::file_exists(tok32k)) CHECK(kind_of(testutil::read_bytes(tok32k)) == FileKind::LlamaTokenizerBin);
  CHECK(std::string(file_kind_name(FileKind::Gguf)) == "gguf");
  CHECK(std::string(file_kind_name(FileKind::LlamaTokenizerBin)) == "llama2c-tokenizer");
  CHECK(std::string(file_kind_name(FileKind::SafetensorsIndex)) == "safetensors-index");
  SKIP_UNLESS_FILE(stories);  // (says so when the ../shared files above were absent)
  SKIP_UNLESS_FILE(tok512);
  SKIP_UNLESS_FILE(tok32k);
}

TEST_CASE("detect_file_kind: garbage and near misses are Unknown", "[formats][detect][bad]") {
  CHECK(detect_file_kind(Bytes{nullptr, 0, "empty"}) == FileKind::Unknown);
  CHECK(kind_of(std::string("GGU")) == FileKind::Unknown);
  CHECK(kind_of(std::string("   ")) == FileKind::Unknown);
  CHECK(kind_of(std::vector<uint8_t>(28, 0)) == FileKind::Unknown);
  CHECK(kind_of(std::vector<uint8_t>(4096, 0xff)) == FileKind::Unknown);
  // A checkpoint one byte short is not a checkpoint; a tokenizer with a record cut short is not a tokenizer.
  std::vector<uint8_t> ck = make_llama2c(Llama2cLayout(8, 12, 2, 4, 2, 16, 4, true));
  ck.pop_back();
  CHECK(kind_of(ck) == FileKind::Unknown);
  std::vector<uint8_t> tok = make_tokenizer_bin();
  tok.pop_back();
  CHECK(kind_of(tok) == FileKind::Unknown);
  // safetensors-like length prefix pointing past the end.
  CHECK(kind_of(make_safetensors("{}", 0, 1000)) == FileKind::Unknown);
  uint32_t state = 12345;
  for (size_t n : {1, 7, 8, 9, 27, 28, 29, 100, 1000, 5000}) {
    std::vector<uint8_t> g(n);
    for (auto& x : g) x = uint8_t((state = state * 1664525u + 1013904223u) >> 24);
    g[0] = 0x80;  // not '{', 'G' or a small int32
    INFO(n);
    CHECK(kind_of(g) == FileKind::Unknown);
  }
}
