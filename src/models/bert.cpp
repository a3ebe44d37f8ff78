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
#include <functional>

#include "core/error.h"
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

// Where each tensor lives: embeddings, layer i's roles (q k v o attn_norm up down out_norm, each
// "<name>" with .weight / .bias), the masked-LM head.
struct EncoderNames {
  std::string word, position, token_type, embed_norm, embed_projection;
  std::function<std::string(int layer, const char* role)> layer;
  std::string mlm_transform, mlm_norm, mlm_decoder, mlm_bias;
  std::string relative_bias;
  std::vector<std::string> unused;  // tensors deliberately not run (see below)
};

std::string at(const std::string& p, int i) { return p + std::to_string(i) + "."; }

// BERT, RoBERTa and MPNet share the layer layout up to the attention block's names.
EncoderNames bert_like(const std::string& p, const std::string& layers, const std::string& attn, bool mpnet) {
  EncoderNames n;
  n.word = p + "embeddings.word_embeddings";
  n.position = p + "embeddings.position_embeddings";
  n.token_type = mpnet ? "" : p + "embeddings.token_type_embeddings";
  n.embed_norm = p + "embeddings.LayerNorm";
  n.layer = [=](int i, const char* role) {
    const std::string r = role, l = at(p + layers, i);
    if (r == "q") return l + attn + (mpnet ? "q" : "query");
    if (r == "k") return l + attn + (mpnet ? "k" : "key");
    if (r == "v") return l + attn + (mpnet ? "v" : "value");
    if (r == "o") return l + (mpnet ? "attention.attn.o" : "attention.output.dense");
    if (r == "attn_norm") return l + (mpnet ? "attention.LayerNorm" : "attention.output.LayerNorm");
    if (r == "up") return l + "intermediate.dense";
    if (r == "down") return l + "output.dense";
    return l + "output.LayerNorm";  // out_norm
  };
  // Not run: the pooler (a tanh layer over [CLS] that classification heads use; embeddings and
  // fill-mask do not), BertForPreTraining's next-sentence head, and the decoders' duplicate bias.
  n.unused = {p + "pooler.*", "cls.seq_relationship.*", "cls.predictions.decoder.bias", "lm_head.decoder.bias"};
  return n;
}

EncoderNames names_for(const EncoderConfig& c, const TensorMap& t) {
  auto prefixed = [&](const std::string& p, const std::string& probe) { return t.has(p + probe) ? p : std::string(); };
  if (c.arch == "bert") {
    EncoderNames n = bert_like(prefixed("bert.", "embeddings.word_embeddings.weight"), "encoder.layer.", "attention.self.", false);
    n.mlm_transform = "cls.predictions.transform.dense";
    n.mlm_norm = "cls.predictions.transform.LayerNorm";
    n.mlm_decoder = "cls.predictions.decoder";
    n.mlm_bias = "cls.predictions.bias";
    return n;
  }
  if (c.arch == "roberta") {
    EncoderNames n = bert_like(prefixed("roberta.", "embeddings.word_embeddings.weight"), "encoder.layer.", "attention.self.", false);
    n.mlm_transform = "lm_head.dense";
    n.mlm_norm = "lm_head.layer_norm";
    n.mlm_decoder = "lm_head.decoder";
    n.mlm_bias = "lm_head.bias";
    return n;
  }
  if (c.arch == "mpnet") {
    const std::string p = prefixed("mpnet.", "embeddings.word_embeddings.weight");
    EncoderNames n = bert_like(p, "encoder.layer.", "attention.attn.", true);
    n.relative_bias = p + "encoder.relative_attention_bias.weight";
    n.mlm_transform = "lm_head.dense";
    n.mlm_norm = "lm_head.layer_norm";
    n.mlm_decoder = "lm_head.decoder";
    n.mlm_bias = "lm_head.bias";
    return n;
  }
  if (c.arch == "distilbert") {
    const std::string p = prefixed("distilbert.", "embeddings.word_embeddings.weight");
    EncoderNames n;
    n.word = p + "embeddings.word_embeddings";
    n.position = p + "embeddings.position_embeddings";
    n.embed_norm = p + "embeddings.LayerNorm";
    n.layer = [=](int i, const char* role) {
      static const std::pair<const char*, const char*> map[] = {
          {"q", "attention.q_lin"}, {"k", "attention.k_lin"}, {"v", "attention.v_lin"}, {"o", "attention.out_lin"},
          {"attn_norm", "sa_layer_norm"}, {"up", "ffn.lin1"}, {"down", "ffn.lin2"}, {"out_norm", "output_layer_norm"}};
      for (auto [r, name] : map)
        if (std::string(role) == r) return at(p + "transformer.layer.", i) + name;
      return std::string(role);
    };
    n.mlm_transform = "vocab_transform";
    n.mlm_norm = "vocab_layer_norm";
    n.mlm_decoder = "vocab_projector";
    n.mlm_bias = "vocab_projector.bias";
    return n;
  }
  if (c.arch == "albert") {
    const std::string p = prefixed("albert.", "embeddings.word_embeddings.weight");
    EncoderNames n;
    n.word = p + "embeddings.word_embeddings";
    n.position = p + "embeddings.position_embeddings";
    n.token_type = p + "embeddings.token_type_embeddings";
    n.embed_norm = p + "embeddings.LayerNorm";
    n.embed_projection = p + "encoder.embedding_hidden_mapping_in";
    // Layer i runs group i / (layers / groups), whose `inner` layers run in turn: running layer
    // i·inner + j is albert_layer_groups.{g}.albert_layers.{j}.
    const int per_group = c.layers / c.groups, inner = c.inner;
    n.layer = [=](int run, const char* role) {
      const int g = (run / inner) / per_group, j = run % inner;
      const std::string l = p + "encoder.albert_layer_groups." + std::to_string(g) + ".albert_layers." + std::to_string(j) + ".";
      static const std::pair<const char*, const char*> map[] = {
          {"q", "attention.query"}, {"k", "attention.key"}, {"v", "attention.value"}, {"o", "attention.dense"},
          {"attn_norm", "attention.LayerNorm"}, {"up", "ffn"}, {"down", "ffn_output"}, {"out_norm", "full_layer_layer_norm"}};
      for (auto [r, name] : map)
        if (std::string(role) == r) return l + name;
      return std::string(role);
    };
    n.mlm_transform = "predictions.dense";
    n.mlm_norm = "predictions.LayerNorm";
    n.mlm_decoder = "predictions.decoder";
    n.mlm_bias = "predictions.bias";
    n.unused = {p + "pooler.*", "sop_classifier.*", "predictions.decoder.bias"};
    return n;
  }
  // GGUF "bert" (llama.cpp): no masked-LM head, no pooler.
  EncoderNames n;
  n.word = "token_embd";
  n.position = "position_embd";
  n.token_type = t.has("token_types.weight") ? "token_types" : "";
  n.embed_norm = "token_embd_norm";
  n.layer = [](int i, const char* role) {
    static const std::pair<const char*, const char*> map[] = {
        {"q", "attn_q"}, {"k", "attn_k"}, {"v", "attn_v"}, {"o", "attn_output"}, {"attn_norm", "attn_output_norm"},
        {"up", "ffn_up"}, {"down", "ffn_down"}, {"out_norm", "layer_output_norm"}};
    for (auto [r, name] : map)
      if (std::string(role) == r) return "blk." + std::to_string(i) + "." + name;
    return std::string(role);
  };
  return n;
}

std::unique_ptr<Model> build(const EncoderConfig& c, const TensorMap& tensors, const BuildOptions& o) {
  const EncoderNames n = names_for(c, tensors);
  const int d = c.d, e = c.embedding ? c.embedding : d;
  Weights w(tensors, o.format);
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
    auto name = [&](const char* role) { return n.layer(i, role); };
    nn::EncoderLayer l;
    l.placement = nn::NormPlacement::Post;
    l.self_attn.d_model = d;
    l.self_attn.shape = nn::split_heads(d, c.heads, c.heads);
    const std::string fused = "blk." + std::to_string(i) + ".attn_qkv";
    if (c.arch == "gguf" && tensors.has(fused + ".weight")) {  // llama.cpp may store Q, K, V as one
      l.self_attn.qkv = linear(fused, 3 * d, d);
    } else {
      l.self_attn.q = linear(name("q"), d, d);
      l.self_attn.k = linear(name("k"), d, d);
      l.self_attn.v = linear(name("v"), d, d);
    }
    l.self_attn.o = linear(name("o"), d, d);
    l.norm1 = w.layer_norm(name("attn_norm"), d, c.eps);
    l.ffn.up = linear(name("up"), c.ff, d);
    l.ffn.down = linear(name("down"), d, c.ff);
    l.ffn.act = c.act;
    l.norm2 = w.layer_norm(name("out_norm"), d, c.eps);
    s.layers.push_back(l);
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
  return r.has("vocab_size") ? r.positive_int("vocab_size") : int(t.get(word).dim(0));
}

}  // namespace

std::unique_ptr<Model> build_encoder_hf(const std::string& family, const nlohmann::json& config, const TensorMap& tensors,
                                        const BuildOptions& o) {
  ConfigReader r(config, o.source);
  EncoderConfig c;
  c.arch = family;
  if (family == "distilbert") {
    c.d = r.positive_int("dim");
    c.layers = r.positive_int("n_layers", 4096);
    c.heads = r.positive_int("n_heads", 4096);
    c.ff = r.positive_int("hidden_dim");
    c.types = 0;
    c.act = nn::parse_activation(r.string("activation", "gelu"));
    c.mlm_act = c.act;
  } else {
    c.d = r.positive_int("hidden_size");
    c.layers = r.positive_int("num_hidden_layers", 4096);
    c.heads = r.positive_int("num_attention_heads", 4096);
    c.ff = r.positive_int("intermediate_size");
    c.types = family == "mpnet" ? 0 : r.positive_int("type_vocab_size", 2, 1 << 16);
    c.eps = float(r.number("layer_norm_eps", 1e-12));
    c.act = nn::parse_activation(r.string("hidden_act", "gelu"));
    // BERT's and ALBERT's heads use hidden_act; RoBERTa's and MPNet's lm_head exact GELU.
    c.mlm_act = family == "roberta" || family == "mpnet" ? nn::Activation::GeluErf : c.act;
    AL_CHECK(r.string("position_embedding_type", "absolute") == "absolute", o.source, ": position_embedding_type \"",
             r.string("position_embedding_type"), "\" is not supported (absolute)");
  }
  c.positions = r.positive_int("max_position_embeddings", 1 << 20);
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
  c.layers = r.positive_int("bert.block_count", 4096);
  c.heads = r.positive_int("bert.attention.head_count", 4096);
  c.ff = r.positive_int("bert.feed_forward_length");
  c.positions = r.positive_int("bert.context_length", 1 << 20);
  c.eps = float(r.number("bert.attention.layer_norm_epsilon", 1e-12));
  c.types = tensors.has("token_types.weight") ? int(tensors.get("token_types.weight").dim(0)) : 0;
  AL_CHECK(!r.boolean("bert.attention.causal", false), o.source, ": bert.attention.causal is true (not a BERT)");
  // GGUF does not say which GELU: BERT's is the exact one (llama.cpp computes the tanh approximation).
  c.act = nn::Activation::GeluErf;
  AL_CHECK(c.d % c.heads == 0, o.source, ": embedding_length ", c.d, " is not divisible by head_count ", c.heads);
  c.vocab = int(tensors.get("token_embd.weight").dim(0));
  r.number("bert.pooling_type", 0);  // (the runtime reads it: how embed() pools)
  check_gguf_keys_used(r, "bert");
  return build(c, tensors, o);
}

}  // namespace attnlens::models
