#include "models/decoder_only.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/error.h"
#include "kernels/kernels.h"
#include "models/config.h"

namespace attnlens::models {

// ---- the model ----------------------------------------------------------------------------------

namespace {
// RoPE tables cover this many positions at most; later positions are computed on the spot.
constexpr int kRopeTablePositions = 8192;
}  // namespace

DecoderOnlyTransformer::DecoderOnlyTransformer(ModelInfo info, DecoderOnlyWeights w, WeightStorage storage)
    : info_(std::move(info)), w_(std::move(w)), storage_(std::move(storage)) {
  for (size_t l = 0; l < w_.layers.size(); ++l) nn::check_encoder_layer(w_.layers[l], "layer " + std::to_string(l));
  nn::check_norm(w_.final_norm, info_.d_model, "final norm");
  nn::check_linear(w_.lm_head, info_.d_model, info_.vocab_size, "output projection");
  AL_CHECK(w_.attention.empty() || w_.attention.size() == w_.layers.size(), "decoder: ", w_.attention.size(),
           " per-layer attention entries for ", w_.layers.size(), " layers");
  for (const LayerAttention& a : w_.attention)
    AL_CHECK(a.window >= 0 && (w_.ropes.empty() || (a.rope >= 0 && a.rope < int(w_.ropes.size()))),
             "decoder: bad per-layer attention (window ", a.window, ", rope ", a.rope, ")");
  AL_CHECK(std::isfinite(w_.embedding_scale) && std::isfinite(w_.final_softcap) && w_.final_softcap >= 0,
           "decoder: bad embedding scale or final soft-cap");
  AL_CHECK(w_.long_ropes.empty() || (w_.long_ropes.size() == w_.ropes.size() && w_.long_context > 0),
           "decoder: long-context RoPE variants do not match the RoPE variants");
  const int table = std::min(info_.context_length, kRopeTablePositions);
  for (const nn::RopeParams& p : w_.ropes) ropes_.push_back(std::make_unique<nn::Rope>(p, table));
  for (const nn::RopeParams& p : w_.long_ropes) long_ropes_.push_back(std::make_unique<nn::Rope>(p, table));
  for (const auto* set : {&ropes_, &long_ropes_})
    for (const auto& r : *set) info_.owned_bytes += r->table_bytes();
}

// x[n, d_model] = token embeddings · scale (+ learned position embeddings).
void DecoderOnlyTransformer::embed(const int* tokens, int n, int pos0, float* x) const {
  const int d = info_.d_model;
  const nn::Matrix& pe = w_.position_embedding;
  std::vector<float> row;  // [d] one f16/bf16 position row widened (allocated once per call)
  for (int i = 0; i < n; ++i) {
    float* xi = x + size_t(i) * d;
    nn::embedding_row(w_.token_embedding, tokens[i], xi);
    if (w_.embedding_scale != 1.f) kernels::scale(xi, w_.embedding_scale, d);
    if (pe.empty()) continue;
    const int pos = pos0 + i;
    AL_CHECK(pos >= 0 && pos < pe.rows, "position ", pos, " is past the ", pe.rows, " learned positions");
    if (pe.dtype == DType::F32) {  // add the row in place: no copy, no allocation per token
      kernels::add(xi, static_cast<const float*>(pe.data) + size_t(pos) * d, d);
    } else {
      if (row.empty()) row.resize(size_t(d));
      nn::embedding_row(pe, pos, row.data());
      kernels::add(xi, row.data(), d);
    }
  }
}

nn::SelfAttentionOptions DecoderOnlyTransformer::layer_options(int layer, bool long_context) const {
  const LayerAttention a = w_.attention.empty() ? LayerAttention{} : w_.attention[size_t(layer)];
  const auto& ropes = long_context && !long_ropes_.empty() ? long_ropes_ : ropes_;
  nn::SelfAttentionOptions opt;
  opt.causal = true;
  opt.window = a.window;
  opt.rope = ropes.empty() ? nullptr : ropes[size_t(a.rope)].get();
  return opt;
}

const float* DecoderOnlyTransformer::decode(Session& s, const int* tokens, int n, bool all_logits) const {
  check_tokens(tokens, n, "decode");
  const int pos0 = s.position();
  s.cache.reserve(n);  // context overflow is an error before any work, and the cache is untouched
  const int d = info_.d_model;
  nn::ArenaScope scope(s.arena);
  float* x = s.arena.alloc(size_t(n) * d);  // the residual stream [n, d_model]
  embed(tokens, n, pos0, x);

  const bool long_context = w_.long_context > 0 && s.cache.capacity() > w_.long_context;
  for (int l = 0; l < int(w_.layers.size()); ++l) {
    poll(s);  // abort() reaches a running pass between layers
    nn::AttentionCapture capture;
    if (s.recorder) {
      capture.weights = s.recorder->slot(nn::AttentionKind::Self, l, info_.n_heads, n, pos0 + n, pos0);
      capture.head_mask = s.recorder->head_mask(info_.n_heads);
    }
    capture.tap = {s.hooks, nn::AttentionKind::Self, l, pos0};
    nn::encoder_layer(w_.layers[l], x, nn::Pass{n, pos0, &s.cache, l}, layer_options(l, long_context), capture, s.arena);
  }
  s.cache.advance(n);

  // The last token's logits only, unless every position is asked for.
  const int rows = all_logits ? n : 1;
  s.logits.resize(logits_size(rows));
  unembed(s, x + size_t(n - rows) * d, rows, s.logits.data());
  return s.logits.data();
}

// logits = Norm(x) · W_vocabᵀ (soft-capped for Gemma 2)
void DecoderOnlyTransformer::unembed(Session& s, const float* x, int rows, float* logits) const {
  nn::ArenaScope scope(s.arena);
  float* h = s.arena.alloc(size_t(rows) * info_.d_model);
  nn::norm(w_.final_norm, x, rows, h);
  nn::linear(w_.lm_head, h, rows, logits);
  if (w_.final_softcap > 0.f) kernels::softcap(logits, rows * info_.vocab_size, w_.final_softcap);
}

// ---- the builder --------------------------------------------------------------------------------

std::string DecoderNames::layer(int i, const std::string& r) const {
  std::string prefix = layer_prefix;
  const size_t at = prefix.find("{i}");
  if (at != std::string::npos) prefix.replace(at, 3, std::to_string(i));
  for (const auto& [gguf, name] : roles)
    if (gguf == r) return prefix + name;
  return prefix + r;
}

DecoderNames gguf_decoder_names() {
  DecoderNames n;
  n.embed = "token_embd";
  n.position = "position_embd";
  n.final_norm = "output_norm";
  n.output = "output";
  n.layer_prefix = "blk.{i}.";
  return n;
}

DecoderNames hf_llama_names() {
  DecoderNames n;
  n.embed = "model.embed_tokens";
  n.final_norm = "model.norm";
  n.output = "lm_head";
  n.layer_prefix = "model.layers.{i}.";
  n.roles = {{role::attn_norm, "input_layernorm"},
             {role::attn_q, "self_attn.q_proj"},
             {role::attn_k, "self_attn.k_proj"},
             {role::attn_v, "self_attn.v_proj"},
             {role::attn_qkv, "self_attn.qkv_proj"},
             {role::attn_output, "self_attn.o_proj"},
             {role::attn_q_norm, "self_attn.q_norm"},
             {role::attn_k_norm, "self_attn.k_norm"},
             {role::ffn_norm, "post_attention_layernorm"},
             {role::ffn_gate, "mlp.gate_proj"},
             {role::ffn_up, "mlp.up_proj"},
             {role::ffn_down, "mlp.down_proj"}};
  return n;
}

void accept_inv_freq(Weights& w, const std::string& name, const nn::RopeParams& rope) {
  if (!w.has(name)) return;
  const int half = (rope.rot_dims ? rope.rot_dims : rope.head_dim) / 2;
  const float* f = w.vector(name, half);
  for (int i = 0; i < half; ++i) {
    double expect = 1.0 / std::pow(double(rope.base), 2.0 * i / (2 * half));
    if (!rope.freq_factors.empty()) expect /= rope.freq_factors[size_t(i)];
    AL_CHECK(std::fabs(f[i] - expect) <= 1e-5 * expect, w.tensors().context, ": tensor ", name, "[", i, "] = ", f[i],
             " differs from the RoPE frequency ", expect, " of the configuration");
  }
}

namespace {

// Reads the tensors of a spec under a naming scheme.
class SpecReader {
 public:
  SpecReader(const DecoderSpec& s, const DecoderNames& names, Weights& w, bool llamacpp_gelu)
      : s_(s), names_(names), w_(w), llamacpp_gelu_(llamacpp_gelu) {}

  nn::Norm norm(const std::string& name, int dim) {
    if (s_.norm == nn::NormKind::LayerNorm) return w_.layer_norm(name, dim, s_.norm_eps);
    return w_.rms_norm(name + ".weight", dim, s_.norm_eps, s_.norm_offset);
  }
  nn::Norm layer_norm(int i, const char* r, int dim) { return norm(names_.layer(i, r), dim); }

  // A linear layer [out, in] (+ bias [out]).
  nn::Linear linear(const std::string& name, bool bias, int64_t out, int64_t in) {
    bias = bias || (s_.gguf_flexible && w_.has(name + ".bias"));
    if (!s_.conv1d) return w_.linear(name + ".weight", bias ? name + ".bias" : "", out, in);
    nn::Linear l;
    l.w = w_.matrix_transposed(name + ".weight", out, in);
    if (bias) l.b = w_.vector(name + ".bias", out);
    return l;
  }
  nn::Linear layer_linear(int i, const char* r, bool bias, int64_t out, int64_t in) {
    return linear(names_.layer(i, r), bias, out, in);
  }

  nn::MultiHeadAttention attention(int i) {
    const int hd = s_.head_dim, qd = s_.n_heads * hd, kd = s_.n_kv_heads * hd;
    nn::MultiHeadAttention a;
    a.d_model = s_.d_model;
    a.shape = nn::AttentionShape{s_.n_heads, s_.n_kv_heads, hd, s_.attn_scale, s_.attn_softcap};
    const bool fused = s_.fused_qkv || (s_.gguf_flexible && w_.has(names_.layer(i, role::attn_qkv) + ".weight"));
    if (!fused) {
      a.q = layer_linear(i, role::attn_q, s_.qkv_bias, qd, s_.d_model);
      a.k = layer_linear(i, role::attn_k, s_.qkv_bias, kd, s_.d_model);
      a.v = layer_linear(i, role::attn_v, s_.qkv_bias, kd, s_.d_model);
    } else if (!s_.interleaved_qkv) {
      a.qkv = layer_linear(i, role::attn_qkv, s_.qkv_bias, qd + 2 * kd, s_.d_model);
    } else {
      // Stored per head, [q_h; k_h; v_h] (rows h·3·hd …): row r of [Q; K; V] is part p = r / qd
      // (0 q, 1 k, 2 v), head h, dimension j.
      AL_CHECK(s_.n_kv_heads == s_.n_heads, "interleaved q/k/v rows need as many key/value heads as heads");
      auto src = [qd, hd](int64_t r) {
        const int64_t p = r / qd, h = (r % qd) / hd, j = r % hd;
        return h * 3 * hd + p * hd + j;
      };
      const std::string name = names_.layer(i, role::attn_qkv);
      a.qkv.w = w_.matrix_rows(name + ".weight", 3 * qd, s_.d_model, src);
      if (s_.qkv_bias) a.qkv.b = w_.vector_rows(name + ".bias", 3 * qd, src);
    }
    a.o = layer_linear(i, role::attn_output, s_.o_bias, s_.d_model, qd);
    if (s_.qk_norm) {
      a.q_norm = layer_norm(i, role::attn_q_norm, hd);
      a.k_norm = layer_norm(i, role::attn_k_norm, hd);
    }
    return a;
  }

  nn::FeedForward ffn(int i) {
    nn::FeedForward f;
    f.act = s_.act == nn::Activation::GeluTanh && llamacpp_gelu_ ? nn::Activation::GeluTanhF16 : s_.act;
    const int ff = s_.d_ff, d = s_.d_model;
    if (s_.ffn == FfnKind::Plain) {
      f.up = layer_linear(i, role::ffn_up, s_.ffn_bias, ff, d);
    } else if (s_.fused_gate_up) {  // rows [gate; up]: two views of one matrix
      const nn::Linear both = layer_linear(i, role::ffn_up, s_.ffn_bias, 2 * int64_t(ff), d);
      f.gate = {nn::row_block(both.w, 0, ff), both.b};
      f.up = {nn::row_block(both.w, ff, ff), both.b ? both.b + ff : nullptr};
    } else {
      f.gate = layer_linear(i, role::ffn_gate, s_.ffn_bias, ff, d);
      f.up = layer_linear(i, role::ffn_up, s_.ffn_bias, ff, d);
    }
    f.down = layer_linear(i, role::ffn_down, s_.ffn_bias, d, ff);
    return f;
  }

  nn::EncoderLayer layer(int i) {
    nn::EncoderLayer l;
    l.placement = nn::NormPlacement::Pre;
    l.parallel = s_.parallel_residual;
    l.norm1 = layer_norm(i, role::attn_norm, s_.d_model);
    l.self_attn = attention(i);
    l.norm2 = layer_norm(i, role::ffn_norm, s_.d_model);
    l.ffn = ffn(i);
    if (s_.post_norms) {
      l.post_norm1 = layer_norm(i, role::attn_post_norm, s_.d_model);
      l.post_norm2 = layer_norm(i, role::ffn_post_norm, s_.d_model);
    }
    return l;
  }

 private:
  const DecoderSpec& s_;
  const DecoderNames& names_;
  Weights& w_;
  bool llamacpp_gelu_;
};

void check_spec(const DecoderSpec& s, const std::string& source) {
  AL_CHECK(s.d_model > 0 && s.n_layers > 0 && s.n_heads > 0 && s.n_kv_heads > 0 && s.head_dim > 0 && s.d_ff > 0 &&
               s.vocab > 0 && s.context > 0,
           source, ": ", s.architecture, " sizes must be positive (d_model ", s.d_model, ", layers ", s.n_layers,
           ", heads ", s.n_heads, ", kv heads ", s.n_kv_heads, ", head_dim ", s.head_dim, ", d_ff ", s.d_ff, ", vocab ",
           s.vocab, ", context ", s.context, ")");
  AL_CHECK(s.n_heads % s.n_kv_heads == 0, source, ": ", s.n_heads, " heads are not a multiple of ", s.n_kv_heads,
           " key/value heads");
  // Sizes computed from the file, in 64-bit, against what one matrix may hold.
  const int64_t limit = int64_t(1) << 31;
  AL_CHECK(int64_t(s.n_heads) * s.head_dim < limit && int64_t(s.vocab) * s.d_model < limit &&
               int64_t(s.d_ff) * s.d_model * 2 < limit,
           source, ": ", s.architecture, " matrix sizes exceed 2^31 elements");
  AL_CHECK(s.layer_attention.empty() || int(s.layer_attention.size()) == s.n_layers, source,
           ": per-layer attention table has ", s.layer_attention.size(), " entries for ", s.n_layers, " layers");
  AL_CHECK(s.ropes.empty() || !s.learned_positions, source, ": both RoPE and learned positions");
  for (const nn::RopeParams& r : s.ropes)
    AL_CHECK(r.head_dim == s.head_dim, source, ": RoPE head dimension ", r.head_dim, " != head_dim ", s.head_dim);
}

}  // namespace

std::unique_ptr<Model> build_decoder_only(const DecoderSpec& s, const DecoderNames& names, Weights& w,
                                          const BuildOptions& o) {
  check_spec(s, o.source);
  SpecReader read(s, names, w, o.llamacpp_gelu);
  DecoderOnlyWeights d;
  d.token_embedding = w.table(names.embed + ".weight", s.vocab, s.d_model);
  if (s.learned_positions) d.position_embedding = w.table(names.position + ".weight", s.context, s.d_model);
  d.embedding_scale = s.embedding_scale;
  for (int i = 0; i < s.n_layers; ++i) d.layers.push_back(read.layer(i));
  d.attention = s.layer_attention;
  d.ropes = s.ropes;
  d.long_ropes = s.long_ropes;
  d.long_context = s.long_context;
  d.final_norm = read.norm(names.final_norm, s.d_model);
  if (s.tied_output) d.lm_head.w = w.matrix(names.embed + ".weight", s.vocab, s.d_model, /*tied=*/true);
  else d.lm_head = read.linear(names.output, false, s.vocab, s.d_model);
  d.final_softcap = s.final_softcap;

  // Nothing in the file may be left unapplied: neither a tensor nobody read nor an integer buffer the
  // reader set aside.
  std::vector<std::string> left = w.unused();
  left.insert(left.end(), o.skipped_buffers.begin(), o.skipped_buffers.end());
  if (!left.empty()) {
    std::string list;
    for (size_t i = 0; i < left.size() && i < 8; ++i) list += (i ? ", " : "") + left[i];
    if (left.size() > 8) list += ", …";
    fail(o.source, ": ", left.size(), " tensor", left.size() == 1 ? " is" : "s are", " in the file but not used by the ",
         s.architecture, " architecture: ", list);
  }

  Shape shape{s.d_model, s.n_layers, s.n_heads, s.n_kv_heads, s.d_ff, s.vocab, s.context};
  shape.head_dim = s.head_dim;
  const ModelInfo info =
      make_info(s.architecture, ModelKind::DecoderOnly, shape, s.learned_positions ? "learned" : "rope", w);
  return std::make_unique<DecoderOnlyTransformer>(info, std::move(d), w.release());
}

std::vector<float> llama3_rope_factors(const Llama3RopeScaling& s, float base, int rot_dims) {
  // Frequencies with wavelengths longer than original_max / low_freq_factor are slowed down by
  // `factor`, shorter than original_max / high_freq_factor kept, and blended smoothly in between
  // (Meta's Llama 3.1 reference code; convert_hf_to_gguf.py stores these divisors as rope_freqs).
  AL_CHECK(s.factor > 0 && s.low_freq_factor > 0 && s.high_freq_factor > s.low_freq_factor &&
               s.original_max_position_embeddings > 0,
           "rope_scaling llama3: bad factor ", s.factor, ", low_freq_factor ", s.low_freq_factor, ", high_freq_factor ",
           s.high_freq_factor, " or original_max_position_embeddings ", s.original_max_position_embeddings);
  const double pi = 3.14159265358979323846;
  const double low_wavelen = s.original_max_position_embeddings / s.low_freq_factor;
  const double high_wavelen = s.original_max_position_embeddings / s.high_freq_factor;
  std::vector<float> out(size_t(rot_dims / 2));
  for (int i = 0; i < rot_dims / 2; ++i) {
    const double freq = 1.0 / std::pow(double(base), 2.0 * i / rot_dims);
    const double wavelen = 2 * pi / freq;
    double f;
    if (wavelen < high_wavelen) {
      f = 1;
    } else if (wavelen > low_wavelen) {
      f = s.factor;
    } else {
      const double smooth = (s.original_max_position_embeddings / wavelen - s.low_freq_factor) /
                            (s.high_freq_factor - s.low_freq_factor);
      f = 1.0 / ((1 - smooth) / s.factor + smooth);
    }
    out[size_t(i)] = float(f);
  }
  return out;
}

std::vector<LayerAttention> swa_pattern(int n_layers, int pattern, int window, int local_rope) {
  AL_CHECK(pattern >= 1 && window >= 0, "sliding-window pattern ", pattern, " / window ", window, " is invalid");
  std::vector<LayerAttention> out(static_cast<size_t>(n_layers));
  for (int l = 0; l < n_layers; ++l)
    if (l % pattern < pattern - 1) out[size_t(l)] = LayerAttention{window, local_rope};
  return out;
}

}  // namespace attnlens::models
