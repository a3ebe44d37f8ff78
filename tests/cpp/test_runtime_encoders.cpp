// BERT-family folders loaded by runtime::load_model equal PyTorch (tests/fixtures/make_encoder_fixtures.py):
// RoBERTa, DistilBERT, ALBERT (E→H mapping, shared layers) and MPNet (relative bias) with their masked-LM
// heads; sentence-transformers folders (a MiniLM-style BertModel with mean pooling, an MPNet with CLS
// pooling, both normalised). Every input runs in one padded batch: hidden states within 1e-4,
// masked-LM logits within 1e-4 and attention within 1e-5 on the real tokens, padded keys exactly 0;
// embeddings within 1e-5 (cosine ≥ 0.99999).
#include <cmath>

#include "formats/model_file.h"
#include "models/registry.h"
#include "runtime/embedding.h"
#include "test_runtime_parity.h"

using namespace attnlens;
using namespace parity;
using runtime::load_model;

namespace {

std::string dir(const std::string& name) { return testutil::fixture_path("encoders/" + name); }

std::unique_ptr<runtime::LoadedModel> load_folder(const std::string& name) {
  std::vector<FilePtr> files;
  for (const char* f : {"config.json", "model.safetensors", "tokenizer.json", "modules.json", "sentence_bert_config.json",
                        "1_Pooling/config.json"}) {
    const std::string p = dir(name) + "/" + f;
    if (!testutil::file_exists(p)) continue;
    auto file = std::make_shared<runtime::File>();
    file->name = f;
    file->bytes = testutil::read_bytes(p);
    files.push_back(file);
  }
  return load_model(files);
}

struct Ref {
  explicit Ref(const std::string& name) : fx(dir(name + "_ref.json")) {
    seqs = fx.config().at("sequences").get<std::vector<std::vector<int>>>();
    if (!fx.config().at("token_types").is_null())
      types = fx.config().at("token_types").get<std::vector<std::vector<int>>>();
  }
  testutil::JsonFixture fx;
  std::vector<std::vector<int>> seqs, types;
};

void check_batch(const std::string& name, const std::string& arch, int pad) {
  INFO(name);
  auto m = load_folder(name);
  const Ref ref(name);
  const models::Model& model = m->model();
  CHECK(model.info().architecture == arch);
  CHECK(model.info().kind == models::ModelKind::EncoderOnly);
  const int B = int(ref.seqs.size()), d = model.info().d_model, V = model.info().vocab_size;
  int L = 0;
  for (const auto& s : ref.seqs) L = std::max(L, int(s.size()));
  std::vector<int> tokens(size_t(B) * L, pad), types(size_t(B) * L, 0);
  std::vector<uint8_t> padding(size_t(B) * L, 1);
  for (int b = 0; b < B; ++b)
    for (size_t t = 0; t < ref.seqs[size_t(b)].size(); ++t) {
      tokens[size_t(b) * L + t] = ref.seqs[size_t(b)][t];
      if (!ref.types.empty()) types[size_t(b) * L + t] = ref.types[size_t(b)][t];
      padding[size_t(b) * L + t] = 0;
    }
  auto s = model.new_session();
  nn::AttentionRecorder rec;
  s->recorder = &rec;
  models::EncoderBatch eb{tokens.data(), ref.types.empty() ? nullptr : types.data(), padding.data(), B, L};
  const float* hidden = model.encode_batch(*s, eb);
  const std::vector<float> h(hidden, hidden + size_t(B) * L * d);
  std::vector<float> logits;
  if (model.has_mlm_head()) {
    const float* lg = model.mlm_logits(*s);
    logits.assign(lg, lg + size_t(B) * L * V);
  }
  Worst wh, wa, wl;
  size_t padded_keys = 0, padded_nonzero = 0;
  for (int b = 0; b < B; ++b) {
    const int T = int(ref.seqs[size_t(b)].size());
    const std::vector<float> want_h = ref.fx.get("hidden_" + std::to_string(b));
    const std::vector<float> want_a = ref.fx.get("attention_" + std::to_string(b));  // [layers][heads][T][T]
    for (int t = 0; t < T; ++t)
      for (int c = 0; c < d; ++c) wh.add(h[(size_t(b) * L + t) * d + c], want_h[size_t(t) * d + c], 1e-4);
    const int layers = model.info().n_layers, heads = model.info().n_heads;
    for (int l = 0; l < layers; ++l) {
      const nn::AttentionRecord* r = rec.find(nn::AttentionKind::Encoder, l);
      REQUIRE(r);
      REQUIRE(r->batch == B);
      REQUIRE(r->n_queries == L);
      REQUIRE(r->n_keys == L);
      for (int hh = 0; hh < heads; ++hh)
        for (int q = 0; q < T; ++q) {
          const float* row = r->row(hh, q, b);
          for (int k = 0; k < T; ++k) wa.add(row[k], want_a[((size_t(l) * heads + hh) * T + q) * T + k], 1e-5);
          for (int k = T; k < L; ++k) {
            ++padded_keys;
            padded_nonzero += row[k] != 0.f;
          }
        }
    }
    if (!logits.empty()) {
      const std::vector<float> want_l = ref.fx.get("mlm_logits_" + std::to_string(b));
      for (int t = 0; t < T; ++t)
        for (int v = 0; v < V; ++v) wl.add(logits[(size_t(b) * L + t) * V + v], want_l[size_t(t) * V + v], 1e-4);
    }
  }
  INFO("hidden " << wh.str() << "; attention " << wa.str() << "; mlm logits " << wl.str());
  CHECK(wh.failures == 0);
  CHECK(wa.failures == 0);
  CHECK(wl.failures == 0);
  CHECK(wh.n > 0);
  CHECK(padded_nonzero == 0);
  CHECK(padded_keys > 0);
  CHECK((model.has_mlm_head() == (wl.n > 0)));

  // Each sequence alone (no padding) gives the same rows.
  for (int b = 0; b < B; ++b) {
    auto one = model.new_session();
    const auto& ids = ref.seqs[size_t(b)];
    const float* hb = model.encode(*one, ids.data(), int(ids.size()), ref.types.empty() ? nullptr : ref.types[size_t(b)].data());
    CHECK(testutil::max_abs_diff(hb, h.data() + size_t(b) * L * d, ids.size() * d) <= 1e-5);
  }
}

void check_embeddings(const std::string& name, models::Pooling pooling, bool texts) {
  INFO(name);
  auto m = load_folder(name);
  const Ref ref(name);
  const runtime::EmbeddingConfig& e = m->embedding();
  CHECK(e.from == "sentence-transformers");
  CHECK(e.pooling == pooling);
  CHECK(e.normalize);
  CHECK(e.max_length == 16);
  std::vector<std::vector<int>> ids = ref.seqs;
  if (texts) {  // the tokenizer, with sentence-transformers' truncation to max_seq_length
    const auto in = runtime::tokenize_inputs(m->require_tokenizer(), ref.fx.config().at("texts").get<std::vector<std::string>>(),
                                             e.max_length);
    CHECK(in.ids == ref.seqs);
    CHECK(in.truncated == std::vector<int>{0, 0, 1});
    ids = in.ids;
  }
  auto s = m->model().new_session();
  const auto out = runtime::embed_ids(m->model(), *s, ids, 0, e.pooling, e.normalize);
  REQUIRE(out.vectors.size() == ref.seqs.size());
  for (size_t i = 0; i < out.vectors.size(); ++i) {
    const std::vector<float> want = ref.fx.get("embedding_" + std::to_string(i));
    double dot = 0, na = 0, nb = 0;
    for (size_t c = 0; c < want.size(); ++c) {
      dot += double(out.vectors[i][c]) * want[c];
      na += double(out.vectors[i][c]) * out.vectors[i][c];
      nb += double(want[c]) * want[c];
    }
    CHECK(dot / std::sqrt(na * nb) >= 0.99999);
    CHECK(testutil::max_abs_diff(out.vectors[i], want) <= 1e-5);
    CHECK(std::sqrt(na) == Approx(1.0).margin(1e-6));
  }
}

}  // namespace

TEST_CASE("RoBERTa (RobertaForMaskedLM, positions from pad + 1) in a padded batch equals PyTorch", "[runtime][encoders]") {
  check_batch("roberta", "roberta", 1);
}

TEST_CASE("DistilBERT (DistilBertForMaskedLM) in a padded batch equals PyTorch", "[runtime][encoders]") {
  check_batch("distilbert", "distilbert", 0);
}

TEST_CASE("ALBERT (E→H mapping, one shared layer run 3 times, sentence pair) equals PyTorch", "[runtime][encoders]") {
  check_batch("albert", "albert", 0);
}

TEST_CASE("MPNet (relative position bias in every layer) with its masked-LM head equals PyTorch", "[runtime][encoders]") {
  check_batch("mpnet", "mpnet", 1);
}

TEST_CASE("sentence-transformers folders: modules.json, pooling and Normalize give PyTorch's embeddings",
          "[runtime][encoders][embed]") {
  check_batch("minilm", "bert", 0);
  check_embeddings("minilm", models::Pooling::Mean, true);
  check_batch("mpnet_st", "mpnet", 1);
  check_embeddings("mpnet_st", models::Pooling::Cls, false);
}

TEST_CASE("BERT inputs over the position limit: an error for explicit ids, truncation reported for texts",
          "[runtime][encoders][errors]") {
  auto m = load_folder("minilm");
  auto s = m->model().new_session();
  std::vector<int> ids(25, 5);  // 24 positions
  CHECK_ERROR(m->model().encode(*s, ids.data(), 25), "25 tokens exceed the 24 positions of bert");
  const auto in = runtime::tokenize_inputs(m->require_tokenizer(), {"the cat sat on the mat the cat sat on the mat the cat"}, 8);
  REQUIRE(in.ids.size() == 1);
  CHECK(in.ids[0].size() == 8);
  CHECK(in.ids[0].back() == 3);  // [SEP] kept
  CHECK(in.truncated[0] == 8);  // [CLS] + 14 words + [SEP] = 16 tokens
  // a Pooling module without its config, a module AttnLens does not run
  auto with = [&](const std::string& modules) {
    return load_model({file("../encoders/minilm/config.json"), file("../encoders/minilm/model.safetensors"),
                       text_file("modules.json", modules)});
  };
  CHECK_ERROR(with(R"([{"idx":0,"name":"0","path":"","type":"sentence_transformers.models.Transformer"},
                       {"idx":1,"name":"1","path":"1_Pooling","type":"sentence_transformers.models.Pooling"}])"),
              "needs 1_Pooling/config.json, which was not given");
  CHECK_ERROR(with(R"([{"idx":0,"name":"0","path":"","type":"sentence_transformers.models.Transformer"},
                       {"idx":1,"name":"1","path":"2_Dense","type":"sentence_transformers.models.Dense"}])"),
              "sentence_transformers.models.Dense, which AttnLens does not run");
}

TEST_CASE("BERT GGUF (llama.cpp's bert names and keys): PyTorch's hidden states, llama.cpp's embeddings",
          "[runtime][encoders][gguf]") {
  // The model of the file, built without its "bert" (phantom-space WordPiece) vocabulary, which the
  // tokenizer work reads; tests/fixtures/make_gguf_encdec_fixtures.py wrote it from encoders/minilm.
  const std::vector<uint8_t> bytes = testutil::read_bytes(dir("minilm.gguf"));
  const ModelFile g = read_gguf(Bytes{bytes.data(), bytes.size(), "minilm.gguf"});
  auto model = models::build_from_gguf(g.config, g.tensors, {});
  CHECK(model->info().architecture == "bert");
  CHECK(g.config.at("bert.pooling_type") == 1);  // mean
  const Ref ref("minilm");
  const testutil::JsonFixture lc(dir("minilm_gguf_llamacpp.json"));
  const std::vector<float> lc_hidden = lc.get("hidden"), lc_mean = lc.get("mean");
  const int d = model->info().d_model;
  auto s = model->new_session();
  const auto emb = runtime::embed_ids(*model, *s, ref.seqs, 0, models::Pooling::Mean, false);
  Worst torch, llama;
  size_t row = 0;
  for (size_t i = 0; i < ref.seqs.size(); ++i) {
    auto one = model->new_session();
    const float* h = model->encode(*one, ref.seqs[i].data(), int(ref.seqs[i].size()), nullptr);
    const std::vector<float> want = ref.fx.get("hidden_" + std::to_string(i));
    for (size_t k = 0; k < want.size(); ++k) {
      torch.add(h[k], want[k], 1e-4);
      // llama.cpp computes GELU as ggml's tanh approximation from an f16 table: its token outputs are
      // 1.2e-3 from PyTorch's exact-GELU ones at most here; 3e-3 is the tolerance.
      llama.add(h[k], lc_hidden[row * d + k], 3e-3);
    }
    row += ref.seqs[i].size();
    double dot = 0, na = 0, nb = 0;
    for (int c = 0; c < d; ++c) {
      dot += double(emb.vectors[i][size_t(c)]) * lc_mean[i * d + c];
      na += double(emb.vectors[i][size_t(c)]) * emb.vectors[i][size_t(c)];
      nb += double(lc_mean[i * d + c]) * lc_mean[i * d + c];
    }
    INFO("input " << i);
    CHECK(dot / std::sqrt(na * nb) >= 0.99999);
  }
  INFO("against PyTorch: " << torch.str() << "; against llama.cpp: " << llama.str());
  CHECK(torch.failures == 0);
  CHECK(llama.failures == 0);
}
