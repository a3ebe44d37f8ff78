// The BERT family on the shared encoder-only transformer (encoder_only.h): one table of names per
// checkpoint layout, and a few flags.
//
//   family       HF classes                                   differs from BERT by
//   bert         BertModel / ForMaskedLM / ForPreTraining     (Devlin et al. 2019)
//   roberta      RobertaModel / ForMaskedLM, XLMRoberta…      positions from pad_token_id + 1; lm_head
//   distilbert   DistilBertModel / ForMaskedLM                no token types; q_lin…; vocab_* head
//   albert       AlbertModel / ForMaskedLM                    embeddings of size E projected to H; one
//                                                             group of layers shared by all layers
//   mpnet        MPNetModel / ForMaskedLM                     positions from pad + 1; a T5-style relative
//                                                             bias (32 buckets, distance 128) in every layer
//   GGUF bert    llama.cpp's convert_hf_to_gguf BertModel     its tensor names (no masked-LM head)
// Every layer: post-LN, bidirectional attention (q, k, v, o with biases), FFN up → act → down.
// A masked-LM head, when the file has one: transform → act → LayerNorm → decoder (tied to the word
// embeddings unless stored) + bias.
#include "core/error.h"
#include "core/limits.h"
#include "models/config.h"
#include "models/decoder_config.h"
#include "models/encoder_only.h"
#include "models/registry.h"

namespace attnlens::models {

namespace {

struct EncoderConfig {
  std::string arch;
  int d, layers, heads, ff, positions, types, vocab;
  int embedding = 0;  // ALBERT's E (0: = d)
  int groups = 1, inner = 1;  // ALBERT: layer groups, layers per group
  int position_offset = 0;
  float eps = 1e-12f;
  nn::Activation act = nn::Activation::GeluErf;
  nn::Activation mlm_act = nn::Activation::GeluErf;
};

// A layer's eight tensors (each "<name>.weight" / "<name>.bias"), in this order.
enum Role { kQ, kK, kV, kO, kAttnNorm, kUp, kDown, kOutNorm, kRoles };

// Where each tensor lives: embeddings, the layers' names (a prefix, then a role's name), the
// masked-LM head.
struct EncoderNames {
  std::string word, position, token_type, embed_norm, embed_projection;
  std::string layers;           // layer i is "<layers><i>." (ALBERT: see layer_prefix)
  const char* const* roles;     // kRoles names
  std::string mlm_transform, mlm_norm, mlm_decoder, mlm_bias;
  std::string relative_bias;
  std::vector<std::string> unused;  // tensors deliberately not run (see below)
};

const char* const kBertRoles[kRoles] = {"attention.self.query", "attention.self.key", "attention.self.value",
                                        "attention.output.dense", "attention.output.LayerNorm", "intermediate.dense",
                                        "output.dense", "output.LayerNorm"};
const char* const kMpnetRoles[kRoles] = {"attention.attn.q", "attention.attn.k", "attention.attn.v", "attention.attn.o",
                                         "attention.LayerNorm", "intermediate.dense", "output.dense", "output.LayerNorm"};
const char* const kDistilRoles[kRoles] = {"attention.q_lin", "attention.k_lin", "attention.v_lin", "attention.out_lin",
                                          "sa_layer_norm", "ffn.lin1", "ffn.lin2", "output_layer_norm"};
const char* const kAlbertRoles[kRoles] = {"attention.query", "attention.key", "attention.value", "attention.dense",
                                          "attention.LayerNorm", "ffn", "ffn_output", "full_layer_layer_norm"};
const char* const kGgufRoles[kRoles] = {"attn_q", "attn_k", "attn_v", "attn_output", "attn_output_norm", "ffn_up",
                                        "ffn_down", "layer_output_norm"};

// Running layer i: "<layers><i>.", except ALBERT's, which runs group i / (layers / groups), whose
// `inner` layers run in turn: running layer i·inner + j is albert_layer_groups.{g}.albert_layers.{j}.
std::string layer_prefix(const EncoderConfig& c, const EncoderNames& n, int run) {
  if (c.arch != "albert") return n.layers + std::to_string(run) + ".";
  const int g = (run / c.inner) / (c.layers / c.groups), j = run % c.inner;
  return n.layers + std::to_string(g) + ".albert_layers." + std::to_string(j) + ".";
}

EncoderNames names_for(const EncoderConfig& c, const TensorMap& t) {
  static const struct {
    const char* arch;
    const char* prefix;  // the model class's (probed: a bare Model class saves none)
    const char* layers;
    const char* const* roles;
    bool token_types;
    const char* mlm[4];  // transform, norm, decoder, bias
  } families[] = {
      {"bert", "bert.", "encoder.layer.", kBertRoles, true,
       {"cls.predictions.transform.dense", "cls.predictions.transform.LayerNorm", "cls.predictions.decoder",
        "cls.predictions.bias"}},
      {"roberta", "roberta.", "encoder.layer.", kBertRoles, true,
       {"lm_head.dense", "lm_head.layer_norm", "lm_head.decoder", "lm_head.bias"}},
      {"mpnet", "mpnet.", "encoder.layer.", kMpnetRoles, false,
       {"lm_head.dense", "lm_head.layer_norm", "lm_head.decoder", "lm_head.bias"}},
      {"distilbert", "distilbert.", "transformer.layer.", kDistilRoles, false,
       {"vocab_transform", "vocab_layer_norm", "vocab_projector", "vocab_projector.bias"}},
      {"albert", "albert.", "encoder.albert_layer_groups.", kAlbertRoles, true,
       {"predictions.dense", "predictions.LayerNorm", "predictions.decoder", "predictions.bias"}},
  };
  EncoderNames n;
  for (const auto& f : families) {
    if (c.arch != f.arch) continue;
    const std::string p = t.has(std::string(f.prefix) + "embeddings.word_embeddings.weight") ? f.prefix : "";
    n.word = p + "embeddings.word_embeddings";
    n.position = p + "embeddings.position_embeddings";
    if (f.token_types) n.token_type = p + "embeddings.token_type_embeddings";
    n.embed_norm = p + "embeddings.LayerNorm";
    if (c.arch == "albert") n.embed_projection = p + "encoder.embedding_hidden_mapping_in";
    if (c.arch == "mpnet") n.relative_bias = p + "encoder.relative_attention_bias.weight";
    n.layers = p + f.layers;
    n.roles = f.roles;
    n.mlm_transform = f.mlm[0];
    n.mlm_norm = f.mlm[1];
    n.mlm_decoder = f.mlm[2];
    n.mlm_bias = f.mlm[3];
    // Not run: the pooler (a tanh layer over [CLS] that classification heads use; embeddings and
    // fill-mask do not), the pre-training heads (next sentence, sentence order), the decoders'
    // duplicate of the bias.
    n.unused = {p + "pooler.*", "cls.seq_relationship.*", "sop_classifier.*", n.mlm_decoder + ".bias"};
    return n;
  }
  // GGUF "bert" (llama.cpp): no masked-LM head, no pooler.
  n.word = "token_embd";
  n.position = "position_embd";
  n.token_type = t.has("token_types.weight") ? "token_types" : "";
  n.embed_norm = "token_embd_norm";
  n.layers = "blk.";
  n.roles = kGgufRoles;
  return n;
}

std::unique_ptr<Model> build(const EncoderConfig& c, const TensorMap& tensors, const BuildOptions& o) {
  const EncoderNames n = names_for(c, tensors);
  const int d = c.d, e = c.embedding ? c.embedding : d;
  Weights w(tensors, o.format, o.own_file_bytes);
  EncoderOnlyWeights s;
  s.word = w.table(n.word + ".weight", c.vocab, e);
  s.position = w.table(n.position + ".weight", c.positions, e);
  if (!n.token_type.empty()) s.token_type = w.table(n.token_type + ".weight", c.types, e);
  s.position_offset = c.position_offset;
  s.embed_norm = w.layer_norm(n.embed_norm, e, c.eps);
  if (!n.embed_projection.empty())
    s.embed_projection = w.linear(n.embed_projection + ".weight", n.embed_projection + ".bias", d, e);
  auto linear = [&](const std::string& name, int out, int in) { return w.linear(name + ".weight", name + ".bias", out, in); };
  const int runs = c.layers * c.inner;  // layers run (ALBERT: each group's inner layers per layer)
  for (int i = 0; i < runs; ++i) {
    const std::string prefix = layer_prefix(c, n, i);
    auto name = [&](Role r) { return prefix + n.roles[r]; };
    nn::EncoderLayer& l = s.layers.emplace_back();  // (built in place: no copy of a layer)
    l.placement = nn::NormPlacement::Post;
    l.self_attn.d_model = d;
    l.self_attn.shape = nn::split_heads(d, c.heads, c.heads);
    const std::string fused = prefix + "attn_qkv";
    if (c.arch == "gguf" && tensors.has(fused + ".weight")) {  // llama.cpp may store Q, K, V as one
      l.self_attn.qkv = linear(fused, 3 * d, d);
    } else {
      l.self_attn.q = linear(name(kQ), d, d);
      l.self_attn.k = linear(name(kK), d, d);
      l.self_attn.v = linear(name(kV), d, d);
    }
    l.self_attn.o = linear(name(kO), d, d);
    l.norm1 = w.layer_norm(name(kAttnNorm), d, c.eps);
    l.ffn.up = linear(name(kUp), c.ff, d);
    l.ffn.down = linear(name(kDown), d, c.ff);
    l.ffn.act = c.act;
    l.norm2 = w.layer_norm(name(kOutNorm), d, c.eps);
  }
  if (!n.relative_bias.empty())
    s.relative_bias = RelativeBiasTable{w.f32_table(n.relative_bias, 32, c.heads), 32, 128};
  std::vector<std::string> unused = n.unused;
  if (!n.mlm_transform.empty() && tensors.has(n.mlm_transform + ".weight")) {
    s.mlm_transform = linear(n.mlm_transform, e, d);
    s.mlm_act = c.mlm_act;
    s.mlm_norm = w.layer_norm(n.mlm_norm, e, c.eps);
    const bool tied = !tensors.has(n.mlm_decoder + ".weight");
    s.mlm_decoder.w = w.matrix(tied ? n.word + ".weight" : n.mlm_decoder + ".weight", c.vocab, e, tied);
    s.mlm_decoder.b = w.vector(n.mlm_bias, c.vocab);
  }
  w.check_all_used(unused, c.arch == "gguf" ? "BERT (GGUF)" : c.arch);
  Shape shape{d, runs, c.heads, c.heads, c.ff, c.vocab, c.positions - c.position_offset};
  const ModelInfo info = make_info(c.arch == "gguf" ? "bert" : c.arch, ModelKind::EncoderOnly, shape,
                                   n.relative_bias.empty() ? "learned" : "learned+relative", w);
  return std::make_unique<EncoderOnlyTransformer>(info, std::move(s), w.release());
}

int vocab_of(const ConfigReader& r, const TensorMap& t, const std::string& word) {
  return r.has("vocab_size") ? r.positive_int("vocab_size", limits::kMaxVocab) : leading_dim(t, word, limits::kMaxVocab, r.source());
}

}  // namespace

std::unique_ptr<Model> build_encoder_hf(const std::string& family, const nlohmann::json& config, const TensorMap& tensors,
                                        const BuildOptions& o) {
  ConfigReader r(config, o.source);
  EncoderConfig c;
  c.arch = family;
  if (family == "distilbert") {
    c.d = r.positive_int("dim");
    c.layers = r.positive_int("n_layers", limits::kMaxLayers);
    c.heads = r.positive_int("n_heads", limits::kMaxHeads);
    c.ff = r.positive_int("hidden_dim");
    c.types = 0;
    c.act = nn::parse_activation(r.string("activation", "gelu"));
    c.mlm_act = c.act;
  } else {
    c.d = r.positive_int("hidden_size");
    c.layers = r.positive_int("num_hidden_layers", limits::kMaxLayers);
    c.heads = r.positive_int("num_attention_heads", limits::kMaxHeads);
    c.ff = r.positive_int("intermediate_size");
    c.types = family == "mpnet" ? 0 : r.positive_int("type_vocab_size", 2, 1 << 16);
    c.eps = float(r.number("layer_norm_eps", 1e-12));
    c.act = nn::parse_activation(r.string("hidden_act", "gelu"));
    // BERT's and ALBERT's heads use hidden_act; RoBERTa's and MPNet's lm_head exact GELU.
    c.mlm_act = family == "roberta" || family == "mpnet" ? nn::Activation::GeluErf : c.act;
    AL_CHECK(r.string("position_embedding_type", "absolute") == "absolute", o.source, ": position_embedding_type \"",
             r.string("position_embedding_type"), "\" is not supported (absolute)");
  }
  c.positions = r.positive_int("max_position_embeddings", limits::kMaxContext);
  if (family == "roberta" || family == "mpnet") c.position_offset = r.positive_int("pad_token_id", 1, 1 << 20) + 1;
  if (family == "albert") {
    c.embedding = r.positive_int("embedding_size");
    c.groups = r.positive_int("num_hidden_groups", 1, 4096);
    c.inner = r.positive_int("inner_group_num", 1, 4096);
    AL_CHECK(c.layers % c.groups == 0, o.source, ": num_hidden_layers ", c.layers, " is not a multiple of num_hidden_groups ",
             c.groups);
  }
  AL_CHECK(c.d % c.heads == 0, o.source, ": hidden size ", c.d, " is not divisible by ", c.heads, " attention heads");
  AL_CHECK(c.positions > c.position_offset, o.source, ": max_position_embeddings ", c.positions,
           " leaves no positions after the offset ", c.position_offset);
  const std::string word = names_for(c, tensors).word + ".weight";
  c.vocab = vocab_of(r, tensors, word);
  return build(c, tensors, o);
}

std::unique_ptr<Model> build_bert_hf(const nlohmann::json& config, const TensorMap& tensors, const BuildOptions& o) {
  return build_encoder_hf("bert", config, tensors, o);
}

std::unique_ptr<Model> build_bert_gguf(const nlohmann::json& meta, const TensorMap& tensors, const BuildOptions& o) {
  ConfigReader r(meta, o.source);
  EncoderConfig c;
  c.arch = "gguf";
  c.d = r.positive_int("bert.embedding_length");
  c.layers = r.positive_int("bert.block_count", limits::kMaxLayers);
  c.heads = r.positive_int("bert.attention.head_count", limits::kMaxHeads);
  c.ff = r.positive_int("bert.feed_forward_length");
  c.positions = r.positive_int("bert.context_length", limits::kMaxContext);
  c.eps = float(r.number("bert.attention.layer_norm_epsilon", 1e-12));
  c.types = tensors.has("token_types.weight") ? leading_dim(tensors, "token_types.weight", 1 << 16, o.source) : 0;
  AL_CHECK(!r.boolean("bert.attention.causal", false), o.source, ": bert.attention.causal is true (not a BERT)");
  // GGUF does not say which GELU: BERT's is the exact one (llama.cpp computes the tanh approximation).
  c.act = nn::Activation::GeluErf;
  AL_CHECK(c.d % c.heads == 0, o.source, ": embedding_length ", c.d, " is not divisible by head_count ", c.heads);
  c.vocab = leading_dim(tensors, "token_embd.weight", limits::kMaxVocab, o.source);
  r.number("bert.pooling_type", 0);  // (the runtime reads it: how embed() pools)
  check_gguf_keys_used(r, "bert");
  return build(c, tensors, o);
}

}  // namespace attnlens::models
