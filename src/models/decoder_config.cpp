#include "models/decoder_config.h"

#include <cmath>
#include <set>

#include "core/error.h"
#include "core/json.h"
#include "core/limits.h"

namespace attnlens::models {

namespace {

// A JSON number as float, naming the field on error.
double json_number(const nlohmann::json& v, const std::string& source, const std::string& field) {
  AL_CHECK(v.is_number(), source, ": \"", field, "\" must be a number");
  const double x = v.get<double>();
  AL_CHECK(std::isfinite(x), source, ": \"", field, "\" is not finite");
  return x;
}

// A JSON array of `n` positive numbers.
std::vector<float> json_factors(const nlohmann::json& v, size_t n, const std::string& source, const std::string& field) {
  AL_CHECK(v.is_array(), source, ": \"", field, "\" must be an array of numbers");
  AL_CHECK(v.size() == n, source, ": \"", field, "\" has ", v.size(), " values, expected ", n,
           " (one per rotated pair of dimensions)");
  std::vector<float> out;
  for (size_t i = 0; i < n; ++i) {
    const double x = json_number(v[i], source, field);
    AL_CHECK(x > 0, source, ": \"", field, "\"[", i, "] = ", x, " must be positive");
    out.push_back(float(x));
  }
  return out;
}

}  // namespace

// ---- GGUF -------------------------------------------------------------------------------------------

void read_gguf_hparams(const ConfigReader& r, const std::string& a, Weights& w, DecoderSpec& s, bool allow_longrope) {
  auto k = [&](const char* key) { return a + "." + key; };
  const std::string& src = r.source();
  s.d_model = r.positive_int(k("embedding_length"));
  s.n_layers = r.positive_int(k("block_count"), limits::kMaxLayers);
  s.n_heads = r.positive_int(k("attention.head_count"), limits::kMaxHeads);
  s.n_kv_heads = r.positive_int(k("attention.head_count_kv"), s.n_heads, limits::kMaxHeads);
  s.d_ff = r.positive_int(k("feed_forward_length"));
  s.context = r.positive_int(k("context_length"), limits::kMaxContext);
  if (!r.has(k("attention.key_length")))
    AL_CHECK(s.d_model % s.n_heads == 0, src, ": ", k("embedding_length"), " ", s.d_model,
             " is not divisible by the number of heads ", s.n_heads, " (and no ", k("attention.key_length"), ")");
  s.head_dim = r.positive_int(k("attention.key_length"), s.d_model / s.n_heads, 1 << 16);
  const int value_dim = r.positive_int(k("attention.value_length"), s.head_dim, 1 << 16);
  AL_CHECK(value_dim == s.head_dim, src, ": ", k("attention.value_length"), " ", value_dim, " != ",
           k("attention.key_length"), " ", s.head_dim, " (different key and value sizes are not supported)");
  s.vocab = r.has(k("vocab_size")) ? r.positive_int(k("vocab_size"), limits::kMaxVocab)
                                    : leading_dim(w.tensors(), "token_embd.weight", limits::kMaxVocab, r.source());
  s.norm_eps = float(s.norm == nn::NormKind::RMSNorm ? r.number(k("attention.layer_norm_rms_epsilon"), 1e-5)
                                                     : r.number(k("attention.layer_norm_epsilon"), 1e-5));
  AL_CHECK(s.norm_eps > 0, src, ": the norm epsilon must be positive, got ", s.norm_eps);
  if (s.ropes.empty()) return;

  nn::RopeParams& p = s.ropes[0];
  p.head_dim = s.head_dim;
  p.base = float(r.number(k("rope.freq_base"), 10000.0));
  p.rot_dims = r.positive_int(k("rope.dimension_count"), s.head_dim, 1 << 16);
  AL_CHECK(p.rot_dims <= s.head_dim && p.rot_dims % 2 == 0, src, ": ", k("rope.dimension_count"), " ", p.rot_dims,
           " must be even and at most the head dimension ", s.head_dim);
  // llama.cpp reads a missing type as "linear" with the factor of rope.scaling.factor (or the older
  // rope.scale_linear), where 0 or absent means no scaling.
  const std::string type = r.string(k("rope.scaling.type"), "linear");
  double factor = r.number(k("rope.scaling.factor"), 0.0);
  if (!r.has(k("rope.scaling.factor"))) factor = r.number(k("rope.scale_linear"), 0.0);
  if (type == "none") {
    AL_CHECK(factor == 0.0 || factor == 1.0, src, ": ", k("rope.scaling.factor"), " ", factor,
             " with rope.scaling.type none");
  } else if (type == "linear") {
    AL_CHECK(factor >= 0.0, src, ": ", k("rope.scaling.factor"), " ", factor, " must not be negative");
    if (factor != 0.0) p.freq_scale = float(1.0 / factor);
  } else if (type == "longrope" && allow_longrope) {
    // the factors are tensors, read below
  } else {
    fail(src, ": ", k("rope.scaling.type"), " \"", type, "\" is not supported (supported: none, linear",
         allow_longrope ? ", longrope" : "", ")");
  }
  p.attn_factor = float(r.number(k("rope.scaling.attn_factor"), 1.0));
  AL_CHECK(p.attn_factor > 0, src, ": ", k("rope.scaling.attn_factor"), " must be positive");
  // Phi-3's LongRoPE (convert_hf_to_gguf.py writes the factors as tensors, with or without the
  // scaling type): short factors, and long ones for sessions longer than the original context.
  // (convert_hf_to_gguf.py writes Phi-3's original context length with or without them.)
  const int original = allow_longrope ? r.positive_int(k("rope.scaling.original_context_length"), s.context, 1 << 30) : 0;
  if (allow_longrope && (w.has("rope_factors_short.weight") || w.has("rope_factors_long.weight"))) {
    s.long_context = original;
    const int half = p.rot_dims / 2;
    const float* sf = w.vector("rope_factors_short.weight", half);
    const float* lf = w.vector("rope_factors_long.weight", half);
    p.freq_factors.assign(sf, sf + half);
    nn::RopeParams long_rope = p;
    long_rope.freq_factors.assign(lf, lf + half);
    s.long_ropes = {long_rope};
  }
  // Llama 3's rope_scaling, as convert_hf_to_gguf.py stores it: θ_i divided by rope_freqs[i].
  if (w.has("rope_freqs.weight")) {
    const float* f = w.vector("rope_freqs.weight", p.rot_dims / 2);
    p.freq_factors.assign(f, f + p.rot_dims / 2);
  }
}

int gguf_sliding_window(const ConfigReader& r, const std::string& a) {
  const std::string key = a + ".attention.sliding_window";
  if (!r.has(key)) return 0;
  const nlohmann::json& v = r.json().at(key);
  AL_CHECK(v.is_number_integer() && v.get<int64_t>() >= 0 && v.get<int64_t>() < (int64_t(1) << 30), r.source(), ": \"",
           key, "\" must be a non-negative integer");
  r.mark_read(key);
  return int(v.get<int64_t>());
}

void check_gguf_keys_used(const ConfigReader& r, const std::string& a) {
  // Keys llama.cpp writes that change nothing in the computation.
  static const std::set<std::string> informational = {"rope.scaling.finetuned", "tensor_data_layout"};
  if (!r.json().is_object()) return;
  const std::string prefix = a + ".";
  for (const auto& [key, value] : r.json().items()) {
    if (key.compare(0, prefix.size(), prefix) != 0 || r.was_read(key)) continue;
    const std::string rest = key.substr(prefix.size());
    if (informational.count(rest)) continue;
    // Mixture-of-experts counts of 0 describe a dense model.
    if ((rest == "expert_count" || rest == "expert_used_count") && value.is_number() && value.get<double>() == 0)
      continue;
    std::string shown = value.is_primitive() ? json_brief(value) : std::string(value.is_array() ? "[…]" : "{…}");
    if (shown.size() > 60) shown = shown.substr(0, 60) + "…";
    fail(r.source(), ": GGUF key \"", key, "\" = ", shown, " is not supported by the ", a,
         " architecture here (the engine would ignore it)");
  }
}

// ---- Hugging Face -----------------------------------------------------------------------------------

void read_hf_sizes(const ConfigReader& r, const TensorMap& tensors, const std::string& embed, DecoderSpec& s) {
  const std::string& src = r.source();
  s.d_model = r.positive_int("hidden_size");
  s.n_layers = r.positive_int("num_hidden_layers", limits::kMaxLayers);
  s.n_heads = r.positive_int("num_attention_heads", limits::kMaxHeads);
  s.n_kv_heads = r.positive_int("num_key_value_heads", s.n_heads, limits::kMaxHeads);
  s.d_ff = r.positive_int("intermediate_size");
  s.context = r.positive_int("max_position_embeddings", limits::kMaxContext);
  if (!r.has("head_dim"))
    AL_CHECK(s.d_model % s.n_heads == 0, src, ": hidden_size ", s.d_model, " is not divisible by num_attention_heads ",
             s.n_heads, " (and no head_dim)");
  s.head_dim = r.positive_int("head_dim", s.d_model / s.n_heads, 1 << 16);
  s.vocab = r.has("vocab_size") ? r.positive_int("vocab_size", limits::kMaxVocab) : leading_dim(tensors, embed, limits::kMaxVocab, r.source());
}

void read_hf_rope(const ConfigReader& r, nn::RopeParams& p, int context, LongRope* longrope) {
  const bool allow_longrope = longrope != nullptr;
  const std::string& src = r.source();
  const nlohmann::json& j = r.json();
  nlohmann::json params;  // the scaling fields
  std::string where;      // their name in messages
  double theta = 10000.0;
  if (r.has("rope_parameters")) {  // transformers 5
    params = j.at("rope_parameters");
    where = "rope_parameters";
    AL_CHECK(params.is_object(), src, ": \"rope_parameters\" must be an object");
    if (params.contains("rope_theta")) theta = json_number(params.at("rope_theta"), src, "rope_parameters.rope_theta");
    r.mark_read("rope_parameters");
  } else {
    theta = r.number("rope_theta", 10000.0);
    where = "rope_scaling";
    if (r.has("rope_scaling")) {
      params = j.at("rope_scaling");
      AL_CHECK(params.is_object(), src, ": \"rope_scaling\" must be an object or null");
      r.mark_read("rope_scaling");
    }
  }
  AL_CHECK(theta > 0, src, ": rope_theta ", theta, " must be positive");
  p.base = float(theta);
  if (params.is_null()) return;

  std::string type = "default";
  for (const char* key : {"rope_type", "type"})
    if (params.contains(key)) {
      AL_CHECK(params.at(key).is_string(), src, ": \"", where, ".", key, "\" must be a string");
      type = params.at(key).get<std::string>();
    }
  if (type == "su") type = "longrope";  // Phi-3's first name for it
  std::set<std::string> fields = {"rope_type", "type", "rope_theta", "partial_rotary_factor"};
  auto field = [&](const char* name) -> const nlohmann::json& {
    AL_CHECK(params.contains(name), src, ": ", where, " of type \"", type, "\" needs \"", name, "\"");
    fields.insert(name);
    return params.at(name);
  };
  auto number = [&](const char* name) { return json_number(field(name), src, where + "." + name); };
  auto number_or = [&](const char* name, double fallback) { return params.contains(name) ? number(name) : fallback; };
  const int half = (p.rot_dims ? p.rot_dims : p.head_dim) / 2;

  if (type == "default") {
  } else if (type == "linear") {
    const double factor = number("factor");
    AL_CHECK(factor > 0, src, ": ", where, ".factor ", factor, " must be positive");
    p.freq_scale = float(1.0 / factor);
  } else if (type == "llama3") {
    Llama3RopeScaling s{number("factor"), number("low_freq_factor"), number("high_freq_factor"),
                        int(number("original_max_position_embeddings"))};
    p.freq_factors = llama3_rope_factors(s, p.base, 2 * half);
  } else if (type == "longrope" && allow_longrope) {
    // original_max_position_embeddings: in the scaling (transformers 5) or at the top level.
    double original;
    if (params.contains("original_max_position_embeddings")) original = number("original_max_position_embeddings");
    else original = r.positive_int("original_max_position_embeddings");
    AL_CHECK(original > 0, src, ": original_max_position_embeddings must be positive");
    const std::vector<float> lf = json_factors(field("long_factor"), size_t(half), src, where + ".long_factor");
    const std::vector<float> sf = json_factors(field("short_factor"), size_t(half), src, where + ".short_factor");
    const double scale = double(context) / original;
    p.attn_factor = float(number_or("attention_factor",
                                    scale > 1 ? std::sqrt(1 + std::log(scale) / std::log(original)) : 1.0));
    p.freq_factors = sf;
    longrope->params = p;
    longrope->params.freq_factors = lf;
    longrope->original_context = int(original);
    fields.insert("factor");  // informational: max / original positions
  } else {
    fail(src, ": ", where, ".", params.contains("rope_type") ? "rope_type" : "type", " \"", type,
         "\" is not supported (supported: default, linear, llama3", allow_longrope ? ", longrope" : "", ")");
  }
  for (const auto& [key, value] : params.items())
    AL_CHECK(fields.count(key), src, ": ", where, ".", key, " is not supported for RoPE type \"", type,
             "\" (the engine would ignore it)");
}

nn::Activation read_hf_activation(const ConfigReader& r, const std::string& key, const std::string& fallback,
                                  std::initializer_list<nn::Activation> allowed) {
  const std::string name = r.string(key, fallback);
  nn::Activation a;
  try {
    a = nn::parse_activation(name);
  } catch (const Error& e) {
    fail(r.source(), ": \"", key, "\": ", e.what());
  }
  for (nn::Activation ok : allowed)
    if (a == ok) return a;
  std::string list;
  for (nn::Activation ok : allowed) list += std::string(list.empty() ? "" : ", ") + nn::activation_name(ok);
  fail(r.source(), ": \"", key, "\" = \"", name, "\" is not supported for this architecture (supported: ", list, ")");
}

void require_hf_bool(const ConfigReader& r, const std::string& key, bool ok, const std::string& why) {
  AL_CHECK(r.boolean(key, ok) == ok, r.source(), ": \"", key, "\" = ", ok ? "false" : "true", " is not supported (",
           why, ")");
}

}  // namespace attnlens::models
