// llama2.c checkpoints: 7 int32 header, then float32 arrays (the layout: read_llama2c in src/formats/model_file.h).
#include <cstring>

#include "formats/byte_reader.h"
#include "formats/internal.h"
#include "formats/model_file.h"

namespace attnlens {
namespace formats_internal {

namespace {

// Sums products in 64 bits, remembering whether anything overflowed.
struct CheckedSum {
  uint64_t total = 0;
  bool overflow = false;
  void add(uint64_t a, uint64_t b = 1, uint64_t c = 1) {
    uint64_t ab = 0, abc = 0;
    if (!checked_mul(a, b, &ab) || !checked_mul(ab, c, &abc) || !checked_add(total, abc, &total)) overflow = true;
  }
};

}  // namespace

std::string llama2c_check(const uint8_t* header, uint64_t file_size, Llama2cConfig* out) {
  static const char* const kNames[7] = {"dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size", "seq_len"};
  int32_t h[7];
  std::memcpy(h, header, sizeof h);
  for (int i = 0; i < 7; ++i) {
    bool ok = i == 5 ? h[i] != 0 && h[i] != INT32_MIN : h[i] > 0;  // negative vocab_size: separate classifier
    if (!ok) {
      return str("header says ", kNames[i], "=", h[i],
                 i == 5 ? " (must be nonzero; negative means a separate classifier)" : " (must be positive)");
    }
  }
  Llama2cConfig c;
  c.dim = h[0];
  c.hidden_dim = h[1];
  c.n_layers = h[2];
  c.n_heads = h[3];
  c.n_kv_heads = h[4];
  c.shared_classifier = h[5] > 0;
  c.vocab_size = h[5] > 0 ? h[5] : -int64_t(h[5]);
  c.seq_len = h[6];
  if (c.dim % c.n_heads != 0) return str("header says dim=", c.dim, ", not a multiple of n_heads=", c.n_heads);
  if (c.n_heads % c.n_kv_heads != 0)
    return str("header says n_heads=", c.n_heads, ", not a multiple of n_kv_heads=", c.n_kv_heads);
  const uint64_t dim = c.dim, hidden = c.hidden_dim, L = c.n_layers, vocab = c.vocab_size, kv = c.kv_dim();
  CheckedSum floats;
  floats.add(vocab, dim);                                 // token_embedding
  floats.add(L, dim);                                     // rms_att
  floats.add(L, dim, dim);                                // wq
  floats.add(L, kv, dim);                                 // wk
  floats.add(L, kv, dim);                                 // wv
  floats.add(L, dim, dim);                                // wo
  floats.add(L, dim);                                     // rms_ffn
  floats.add(L, hidden, dim);                             // w1
  floats.add(L, dim, hidden);                             // w2
  floats.add(L, hidden, dim);                             // w3
  floats.add(dim);                                        // rms_final
  floats.add(2, uint64_t(c.seq_len) * uint64_t(c.head_size()) / 2);  // legacy freq_cis_real, freq_cis_imag
  if (!c.shared_classifier) floats.add(vocab, dim);       // wcls
  uint64_t expected = 0;
  if (floats.overflow || !checked_mul(floats.total, 4, &expected) || !checked_add(expected, kLlama2cHeaderBytes, &expected)) {
    return str("header (dim=", c.dim, ", hidden_dim=", c.hidden_dim, ", n_layers=", c.n_layers,
               ", vocab_size=", h[5], ") implies more than 2^64 bytes");
  }
  if (expected != file_size) {
    return str("header (dim=", c.dim, ", hidden_dim=", c.hidden_dim, ", n_layers=", c.n_layers,
               ", n_heads=", c.n_heads, ", n_kv_heads=", c.n_kv_heads, ", vocab_size=", h[5], ", seq_len=", c.seq_len,
               ") implies ", expected, " bytes, but the file has ", file_size,
               file_size < expected ? " (truncated?)" : " (trailing bytes?)");
  }
  *out = c;
  return "";
}

}  // namespace formats_internal

using formats_internal::Llama2cConfig;

ModelFile read_llama2c(const Bytes& file) {
  ByteReader r(file.data, file.size, file.name);
  const uint8_t* header = r.take(formats_internal::kLlama2cHeaderBytes, "the llama2.c header (7 int32)");
  Llama2cConfig c;
  std::string problem = formats_internal::llama2c_check(header, file.size, &c);
  if (!problem.empty()) r.fail(problem);

  ModelFile mf;
  mf.format = "llama2c";
  mf.name = file.name;
  mf.tensors.context = file.name;
  const int64_t dim = c.dim, hidden = c.hidden_dim, kv = c.kv_dim(), vocab = c.vocab_size;

  // One array of the file (`count` floats); the size check above guarantees these takes succeed.
  auto take_floats = [&](uint64_t count, const char* what) { return r.take(count * 4, what); };
  auto add = [&](std::string name, std::vector<int64_t> shape, const uint8_t* data) {
    TensorView t;
    t.name = std::move(name);
    t.dtype = DType::F32;
    t.shape = std::move(shape);
    t.data = data;
    t.nbytes = static_cast<size_t>(t.numel()) * 4;
    mf.tensors.add(std::move(t));
  };
  // A stacked per-layer array [n_layers, shape...]: one view per layer.
  auto add_layers = [&](const char* suffix, std::vector<int64_t> shape, const char* what) {
    uint64_t per_layer = 1;
    for (int64_t d : shape) per_layer *= uint64_t(d);
    const uint8_t* base = take_floats(per_layer * uint64_t(c.n_layers), what);
    for (int64_t i = 0; i < c.n_layers; ++i)
      add("blk." + std::to_string(i) + "." + suffix, shape, base + uint64_t(i) * per_layer * 4);
  };

  add("token_embd.weight", {vocab, dim}, take_floats(uint64_t(vocab) * dim, "token_embedding_table"));
  add_layers("attn_norm.weight", {dim}, "rms_att_weight");
  add_layers("attn_q.weight", {dim, dim}, "wq");
  add_layers("attn_k.weight", {kv, dim}, "wk");
  add_layers("attn_v.weight", {kv, dim}, "wv");
  add_layers("attn_output.weight", {dim, dim}, "wo");
  add_layers("ffn_norm.weight", {dim}, "rms_ffn_weight");
  add_layers("ffn_gate.weight", {hidden, dim}, "w1");
  add_layers("ffn_down.weight", {dim, hidden}, "w2");
  add_layers("ffn_up.weight", {hidden, dim}, "w3");
  add("output_norm.weight", {dim}, take_floats(uint64_t(dim), "rms_final_weight"));
  r.skip(2 * (uint64_t(c.seq_len) * uint64_t(c.head_size()) / 2) * 4, "freq_cis_real/imag");
  if (!c.shared_classifier) add("output.weight", {vocab, dim}, take_floats(uint64_t(vocab) * dim, "wcls"));
  AL_CHECK(r.remaining() == 0, file.name, ": internal error: ", r.remaining(), " bytes left after the llama2.c arrays");

  mf.config = {
      {"general.architecture", "llama"},
      {"llama.embedding_length", c.dim},
      {"llama.feed_forward_length", c.hidden_dim},
      {"llama.block_count", c.n_layers},
      {"llama.attention.head_count", c.n_heads},
      {"llama.attention.head_count_kv", c.n_kv_heads},
      {"llama.context_length", c.seq_len},
      {"llama.attention.layer_norm_rms_epsilon", 1e-5},
      {"llama.rope.freq_base", 10000.0},
      {"llama.vocab_size", c.vocab_size},
      {"attnlens.rope_style", "adjacent"},
  };
  return mf;
}

}  // namespace attnlens
