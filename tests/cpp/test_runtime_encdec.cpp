// Encoder–decoder families loaded from Hugging Face folders by runtime::load_model equal PyTorch
// (tests/fixtures/make_encdec_fixtures.py): Flan-T5 (gated GELU, untied head, heads·d_kv ≠ d_model),
// T5 v1.0 (ReLU, tied head scaled by d^-½, 8 buckets), BART (learned positions + 2,
// layernorm_embedding, final_logits_bias), Marian (sinusoids, √d embeddings; shared and separate
// vocabularies, computed and saved position tables). Logits within 1e-4, every attention weight
// (encoder, decoder self, cross) within 1e-5, teacher-forced in one pass and token by token; then
// generation — greedy and beam search with transformers' options — token for token, and the
// attention of the returned beam against a teacher-forced pass over it.
#include <cmath>
#include <functional>
#include <map>
#include <set>

#include "formats/model_file.h"
#include "generate/generator.h"
#include "models/registry.h"
#include "test_runtime_parity.h"

using namespace attnlens;
using namespace parity;
using runtime::load_model;

namespace {

std::string dir(const std::string& name) { return testutil::fixture_path("encdec/" + name); }

std::unique_ptr<runtime::LoadedModel> load_folder(const std::string& name) {
  std::vector<FilePtr> files;
  for (const char* f : {"config.json", "model.safetensors", "generation_config.json", "tokenizer.json"}) {
    const std::string p = dir(name) + "/" + f;
    if (!testutil::file_exists(p)) continue;
    auto file = std::make_shared<runtime::File>();
    file->name = f;
    file->bytes = testutil::read_bytes(p);
    files.push_back(file);
  }
  return load_model(files);
}

struct EncDecRef {
  explicit EncDecRef(const std::string& name) : fx(dir(name + "_ref.json")) {
    source = fx.config().at("source").get<std::vector<int>>();
    target = fx.config().at("target").get<std::vector<int>>();
    logits = fx.get("logits");
    vocab = int(fx.shape("logits")[1]);
    enc = fx.get("encoder_attention");
    self = fx.get("self_attention");
    cross = fx.get("cross_attention");
    auto se = fx.shape("encoder_attention"), sd = fx.shape("self_attention");
    enc_layers = int(se[0]);
    dec_layers = int(sd[0]);
    heads = int(se[1]);
  }
  int S() const { return int(source.size()); }
  int T() const { return int(target.size()); }
  testutil::JsonFixture fx;
  std::vector<int> source, target;
  std::vector<float> logits, enc, self, cross;
  int vocab = 0, enc_layers = 0, dec_layers = 0, heads = 0;
};

// Record (kind, layer) rows q0 … q0+nq against reference [L][H][Tq][Tk] rows.
void compare_record(const nn::AttentionRecorder& rec, nn::AttentionKind kind, const std::vector<float>& want, int layers,
                    int heads, int Tq, int Tk, int q0, int nq, Worst& w) {
  for (int l = 0; l < layers; ++l) {
    const nn::AttentionRecord* r = rec.find(kind, l);
    REQUIRE(r);
    REQUIRE(r->n_heads == heads);
    REQUIRE(r->n_queries == nq);
    REQUIRE(r->q_pos0 == q0);
    const int keys = kind == nn::AttentionKind::Self ? q0 + nq : Tk;
    REQUIRE(r->n_keys == keys);
    for (int h = 0; h < heads; ++h)
      for (int i = 0; i < nq; ++i)
        for (int j = 0; j < keys; ++j)
          w.add(r->row(h, i)[j], want[((size_t(l) * heads + h) * Tq + q0 + i) * Tk + j], 1e-5);
  }
}

void check_teacher_forced(const std::string& name, const std::string& arch) {
  auto m = load_folder(name);
  const EncDecRef ref(name);
  const models::Model& model = m->model();
  INFO(name);
  CHECK(model.info().architecture == arch);
  CHECK(model.info().kind == models::ModelKind::EncoderDecoder);
  CHECK(model.info().vocab_size == ref.vocab);
  CHECK(model.info().n_encoder_layers == ref.enc_layers);
  CHECK(model.info().n_layers == ref.dec_layers);
  const int S = ref.S(), T = ref.T(), V = ref.vocab;
  {  // one pass over the whole target
    auto s = model.new_session();
    nn::AttentionRecorder rec;
    s->recorder = &rec;
    model.encode(*s, ref.source.data(), S);
    const float* lg = model.decode(*s, ref.target.data(), T, true);
    Worst wl, we, ws, wc;
    for (size_t i = 0; i < size_t(T) * V; ++i) wl.add(lg[i], ref.logits[i], 1e-4);
    compare_record(rec, nn::AttentionKind::Encoder, ref.enc, ref.enc_layers, ref.heads, S, S, 0, S, we);
    compare_record(rec, nn::AttentionKind::Self, ref.self, ref.dec_layers, ref.heads, T, T, 0, T, ws);
    compare_record(rec, nn::AttentionKind::Cross, ref.cross, ref.dec_layers, ref.heads, T, S, 0, T, wc);
    INFO("prefill: logits " << wl.str() << "; encoder " << we.str() << "; self " << ws.str() << "; cross " << wc.str());
    CHECK(wl.failures == 0);
    CHECK(we.failures == 0);
    CHECK(ws.failures == 0);
    CHECK(wc.failures == 0);
    CHECK(wl.n == size_t(T) * V);
  }
  {  // one target token at a time through the KV cache
    auto s = model.new_session();
    nn::AttentionRecorder rec;
    s->recorder = &rec;
    model.encode(*s, ref.source.data(), S);
    Worst wl, ws, wc;
    for (int t = 0; t < T; ++t) {
      const float* lg = model.decode(*s, &ref.target[size_t(t)], 1);
      for (int v = 0; v < V; ++v) wl.add(lg[v], ref.logits[size_t(t) * V + v], 1e-4);
      compare_record(rec, nn::AttentionKind::Self, ref.self, ref.dec_layers, ref.heads, T, T, t, 1, ws);
      compare_record(rec, nn::AttentionKind::Cross, ref.cross, ref.dec_layers, ref.heads, T, S, t, 1, wc);
    }
    INFO("step: logits " << wl.str() << "; self " << ws.str() << "; cross " << wc.str());
    CHECK(wl.failures == 0);
    CHECK(ws.failures == 0);
    CHECK(wc.failures == 0);
  }
}

}  // namespace

TEST_CASE("Flan-T5 HF folder equals PyTorch (gated GELU, untied head, 6 heads x 8 != d_model 32)", "[runtime][encdec][t5]") {
  check_teacher_forced("flan_t5", "t5");
}

TEST_CASE("T5 v1.0 HF folder equals PyTorch (ReLU, tied head scaled by d^-1/2, clipped buckets)", "[runtime][encdec][t5]") {
  check_teacher_forced("t5", "t5");
}

TEST_CASE("BART HF folder equals PyTorch (learned positions + 2, layernorm_embedding, final_logits_bias)",
          "[runtime][encdec][bart]") {
  check_teacher_forced("bart", "bart");
}

TEST_CASE("Marian HF folder equals PyTorch (sinusoids, scaled embeddings, shared vocabulary)", "[runtime][encdec][marian]") {
  check_teacher_forced("marian", "marian");
}

TEST_CASE("Marian HF folder with separate vocabularies and saved position tables equals PyTorch",
          "[runtime][encdec][marian]") {
  check_teacher_forced("marian_separate", "marian");
  auto m = load_folder("marian_separate");
  CHECK(m->model().info().source_vocab_size == 90);
  CHECK(m->model().info().vocab_size == 70);
}

// --- generation ------------------------------------------------------------------------------------

namespace {

// A fixture case's options (Hugging Face names, as generate() takes them) → GenerateOptions.
generate::GenerateOptions options_of(const nlohmann::json& base, const nlohmann::json& opts) {
  generate::GenerateOptions o;
  o.sampling.temperature = 0.f;
  o.max_new_tokens = base.at("max_new_tokens");
  nlohmann::json all = base;
  for (auto it = opts.begin(); it != opts.end(); ++it) all[it.key()] = it.value();
  o.beams.num_beams = all.value("num_beams", 1);
  o.beams.length_penalty = all.value("length_penalty", 1.0f);
  if (all.contains("early_stopping")) {
    const auto& e = all.at("early_stopping");
    o.beams.early_stopping = e == "never" ? generate::EarlyStopping::Never
                             : e == true  ? generate::EarlyStopping::Done
                                          : generate::EarlyStopping::Heuristic;
  }
  o.processors.no_repeat_ngram_size = all.value("no_repeat_ngram_size", 0);
  o.processors.min_new_tokens = std::max(0, all.value("min_length", 0) - 1);  // min_length counts the start token
  if (all.contains("bad_words_ids")) o.processors.bad_words = all.at("bad_words_ids").get<std::vector<std::vector<int>>>();
  o.processors.forced_bos_token = all.value("forced_bos_token_id", -1);
  o.processors.forced_eos_token = all.value("forced_eos_token_id", -1);
  o.sampling.repetition_penalty = all.value("repetition_penalty", 1.0f);
  return o;
}

void check_generation(const std::string& name) {
  auto m = load_folder(name);
  const EncDecRef ref(name);
  const nlohmann::json& cfg = ref.fx.config();
  const nlohmann::json& gens = cfg.at("generation");
  // The base options every case shares are recorded with the first case's name in the script; the
  // start and end tokens come from the folder's config, as generation uses them.
  const generate::PromptFormat& pf = m->prompt_format();
  const models::Model& model = m->model();
  for (const auto& g : gens) {
    const std::string label = name + "/" + g.at("name").get<std::string>();
    INFO(label);
    const std::vector<int> want = g.at("tokens").get<std::vector<int>>();
    CHECK(pf.decoder_start_token == want[0]);
    nlohmann::json base = {{"max_new_tokens", cfg.at("max_new_tokens")}};
    for (const char* k : {"bad_words_ids", "forced_bos_token_id", "forced_eos_token_id"})
      if (cfg.at("base").contains(k)) base[k] = cfg.at("base").at(k);
    const generate::GenerateOptions o = options_of(base, g.at("options"));
    auto s = model.new_session();
    nn::AttentionRecorder rec;
    s->recorder = &rec;
    const bool beam_case = g.at("name") == cfg.at("beam_case");
    Worst ws, wc;
    int seen = 0;
    std::set<int> passes;
    const int S = ref.S(), Tf = int(want.size()) - 1;
    std::vector<float> bself, bcross;
    if (beam_case) {
      bself = ref.fx.get("beam_self_attention");
      bcross = ref.fx.get("beam_cross_attention");
    }
    const auto r = generate::generate_from_tokens(
        model, m->require_tokenizer(), pf, *s, ref.source, o, [&](const generate::TokenEvent& ev) {
          if (beam_case) {
            // As after a greedy step, the recorder holds the pass that ran this token (the next
            // token's chooser), or, after the last token, the pass that chose it: either way a
            // pass of the returned beam, whose rows must equal the teacher-forced reference.
            const nn::AttentionRecord* r0 = rec.find(nn::AttentionKind::Self, 0);
            REQUIRE(r0);
            const int q = r0->q_pos0;
            CHECK((q == ev.position || q == ev.position - 1));
            passes.insert(q);
            compare_record(rec, nn::AttentionKind::Self, bself, ref.dec_layers, ref.heads, Tf, Tf, q, 1, ws);
            compare_record(rec, nn::AttentionKind::Cross, bcross, ref.dec_layers, ref.heads, Tf, S, q, 1, wc);
          }
          ++seen;
          return true;
        });
    CHECK(r.tokens == want);
    CHECK(seen == int(want.size()) - 1);
    CHECK(r.finish_reason == (want.back() == pf.eos_token ? "eos" : "length"));
    if (o.beams.num_beams > 1) {
      CHECK(r.score == Approx(g.at("score").get<double>()).margin(1e-4));
      const auto& hyps = g.at("hypotheses");
      REQUIRE(r.hypotheses.size() == hyps.size());
      for (size_t i = 0; i < hyps.size(); ++i) {
        CHECK(r.hypotheses[i].tokens == hyps[i].at("tokens").get<std::vector<int>>());
        CHECK(r.hypotheses[i].score == Approx(hyps[i].at("score").get<double>()).margin(1e-4));
      }
    }
    if (beam_case) {
      INFO("returned beam's attention: self " << ws.str() << "; cross " << wc.str());
      CHECK(ws.failures == 0);
      CHECK(wc.failures == 0);
      CHECK(ws.n > 0);
      // queries 1 … Tf−1, and Tf−1 again after the last token (query 0 chose the first token, before any callback)
      CHECK(int(passes.size()) == std::max(1, Tf - 1));
    }
  }
}

}  // namespace

TEST_CASE("encoder-decoder generation equals transformers' generate(): greedy and beam search, token for token",
          "[runtime][encdec][generate]") {
  for (const char* name : {"flan_t5", "t5", "bart", "marian", "marian_separate"}) check_generation(name);
}

// --- GGUF "t5" as llama.cpp writes and runs it (tests/fixtures/make_gguf_encdec_fixtures.py) -------------

namespace {

// The model of a GGUF file, built without its tokenizer (the "t5" Unigram vocabulary belongs to the
// tokenizer work; the weights and keys are what is checked here).
std::unique_ptr<models::Model> gguf_model(const std::string& name, std::vector<uint8_t>& bytes) {
  bytes = testutil::read_bytes(dir(name + ".gguf"));
  const ModelFile g = read_gguf(Bytes{bytes.data(), bytes.size(), name + ".gguf"});
  return models::build_from_gguf(g.config, g.tensors, {});
}

std::vector<float> teacher_forced(const models::Model& m, const EncDecRef& ref) {
  auto s = m.new_session();
  m.encode(*s, ref.source.data(), ref.S());
  const float* lg = m.decode(*s, ref.target.data(), ref.T(), true);
  return std::vector<float>(lg, lg + size_t(ref.T()) * ref.vocab);
}

}  // namespace

TEST_CASE("T5 GGUF (llama.cpp's t5 names and keys) equals the HF folder's PyTorch reference and llama.cpp",
          "[runtime][encdec][t5][gguf]") {
  for (const char* name : {"flan_t5", "t5"}) {
    INFO(name);
    std::vector<uint8_t> bytes;
    auto m = gguf_model(name, bytes);
    const EncDecRef ref(name);
    CHECK(m->info().architecture == "t5");
    CHECK(m->info().head_dim == 8);
    const std::vector<float> ours = teacher_forced(*m, ref);
    Worst torch, llama;
    for (size_t i = 0; i < ours.size(); ++i) torch.add(ours[i], ref.logits[i], 1e-4);
    INFO("against PyTorch: " << torch.str());
    CHECK(torch.failures == 0);
    // llama.cpp on the same file. Tied head (t5): llama.cpp applies no d_model^-1/2 (src/models/t5.cpp),
    // so its logits are ours · √d_model. Flan-T5: llama.cpp's GELU is ggml's tanh approximation read
    // from an f16 table, 7.6e-3 off PyTorch's at most on these logits (the ReLU t5 file agrees to 2e-6
    // once scaled): the tolerance for it is 1e-2 of a logit range of 17.
    const testutil::JsonFixture lc(dir(std::string(name) + "_gguf_llamacpp.json"));
    const std::vector<float> theirs = lc.get("logits");
    REQUIRE(theirs.size() == ours.size());
    const bool tied = std::string(name) == "t5";
    const double scale = tied ? std::sqrt(double(m->info().d_model)) : 1.0;
    for (size_t i = 0; i < ours.size(); ++i) llama.add(ours[i] * scale, theirs[i], tied ? 1e-4 * scale : 1e-2);
    INFO("against llama.cpp: " << llama.str());
    CHECK(llama.failures == 0);
    CHECK(lc.config().at("decoder_start") == 0);
  }
}

TEST_CASE("encoder-decoder bad input: no decoder start token, a source past the positions, SentencePiece files",
          "[runtime][encdec][errors]") {
  auto with_config = [&](const std::string& name, const std::function<void(nlohmann::json&)>& edit) {
    nlohmann::json c = nlohmann::json::parse(testutil::read_text(dir(name) + "/config.json"));
    edit(c);
    auto weights = std::make_shared<runtime::File>();
    weights->name = "model.safetensors";
    weights->bytes = testutil::read_bytes(dir(name) + "/model.safetensors");
    auto tok = std::make_shared<runtime::File>();
    tok->name = "tokenizer.json";
    tok->bytes = testutil::read_bytes(dir(name) + "/tokenizer.json");
    return load_model({text_file("config.json", c.dump()), weights, tok});
  };
  auto m = with_config("bart", [](nlohmann::json& c) {
    c.erase("decoder_start_token_id");
    c.erase("bos_token_id");
  });
  CHECK(m->prompt_format().decoder_start_token == -1);
  auto s = m->model().new_session();
  generate::GenerateOptions o;
  CHECK_ERROR(generate::generate_from_tokens(m->model(), m->require_tokenizer(), m->prompt_format(), *s, {5, 6, 2}, o),
              "no decoder start token: its config.json (or generation_config.json) gives no decoder_start_token_id");

  auto marian = load_folder("marian");  // 40 positions
  std::vector<int> long_source(41, 5);
  auto ms = marian->model().new_session();
  CHECK_ERROR(marian->model().encode(*ms, long_source.data(), 41, nullptr),
              "the source has 41 tokens, more than the 40 positions of marian's encoder");
  CHECK_ERROR(generate::generate_from_tokens(marian->model(), marian->require_tokenizer(), marian->prompt_format(), *ms,
                                             long_source, o),
              "more than the 40 positions");
  // Token ids of the source vocabulary only (separate vocabularies: 90 source ids, 70 target ids)
  auto sep = load_folder("marian_separate");
  auto ss = sep->model().new_session();
  const std::vector<int> src = {80, 85, 0};
  CHECK_NOTHROW(sep->model().encode(*ss, src.data(), 3, nullptr));
  const int start = 80;
  CHECK_ERROR(sep->model().decode(*ss, &start, 1), "token id 80 at index 0 is out of range [0, 70)");

  CHECK_ERROR(load_model({file("../encdec/marian/config.json"), file("../encdec/marian/model.safetensors"),
                          bytes_file("source.spm", {0x0a, 0x0b, 0x0a, 0x05})}),
              "source.spm: byte 0: pieces[0] needs 11 bytes");  // (the SentencePiece reader's words)
  // a tensor the family does not run is refused by name
  CHECK_ERROR(with_config("t5", [](nlohmann::json& c) { c["num_decoder_layers"] = 1; }),
              "tensor decoder.block.1.");
}

// --- Marian's two SentencePiece models -------------------------------------------------------------

TEST_CASE("Marian with source.spm, target.spm and vocab.json (+ target_vocab.json): the source is read by source.spm, "
          "target text and the decoder's tokens by target.spm, as MarianTokenizer does",
          "[runtime][encdec][marian][spm]") {
  // tests/fixtures/spm/make_marian_pair_fixture.py: source.spm = unigram_nfkc.model (dummy prefix,
  // extra spaces removed), target.spm = unigram_raw.model (spaces kept), ids computed with sentencepiece
  const nlohmann::json ref = nlohmann::json::parse(testutil::read_text(testutil::fixture_path("spm/marian_pair_cases.json")));
  const auto spm_file = [](const std::string& fixture, const std::string& name) {
    return bytes_file(name, testutil::read_bytes(testutil::fixture_path("spm/" + fixture)));
  };
  for (const std::string layout : {"shared", "separate"}) {
    INFO(layout << " vocabularies");
    const std::string folder = layout == "shared" ? "../encdec/marian/" : "../encdec/marian_separate/";
    std::vector<FilePtr> files = {file(folder + "config.json"), file(folder + "model.safetensors"),
                                  file(folder + "generation_config.json"), spm_file("unigram_nfkc.model", "source.spm"),
                                  spm_file("unigram_raw.model", "target.spm"), spm_file("marian_pair_vocab.json", "vocab.json")};
    if (layout == "separate") files.push_back(spm_file("marian_pair_target_vocab.json", "target_vocab.json"));
    auto m = load_model(files);
    REQUIRE(m->tokenizer());
    REQUIRE(m->output_tokenizer() != m->tokenizer());
    const Tokenizer& source = *m->tokenizer();
    const Tokenizer& target = *m->output_tokenizer();
    // the target side of the text (model.tokenize(text, { target: true }), pieces, detokenize, target
    // text of forward/patch inputs: bindings/model.cpp) is target.spm's
    CHECK(&m->require_target_tokenizer() == &target);
    CHECK(m->has_separate_target_tokenizer());
    CHECK(target.kind() == "marian-unigram");
    CHECK(target.vocab_size() == (layout == "shared" ? 90 : 70));
    int differ = 0;
    for (const nlohmann::json& c : ref.at(layout)) {
      const std::string text = c.at("text").get<std::string>();
      INFO("text " << nlohmann::json(text).dump());
      const std::vector<int> target_ids = c.at("target_ids").get<std::vector<int>>();
      CHECK(generate::encode_prompt(source, m->prompt_format(), text) == c.at("source_ids").get<std::vector<int>>());
      CHECK(target.encode(text, true) == target_ids);
      CHECK(target.decode(target_ids) == c.at("target_decoded").get<std::string>());
      // the pieces shown for the decoder's tokens are the target vocabulary's entries (separate:
      // target_vocab.json), "▁" shown as a space
      const nlohmann::json vocab = nlohmann::json::parse(testutil::read_text(testutil::fixture_path(
          layout == "shared" ? "spm/marian_pair_vocab.json" : "spm/marian_pair_target_vocab.json")));
      std::map<std::string, int> shown;
      for (const auto& [key, id] : vocab.items()) {
        std::string k = key;
        for (size_t at; (at = k.find("\u2581")) != std::string::npos;) k.replace(at, 3, " ");
        shown[k] = id.get<int>();
      }
      for (int id : target_ids)
        if (id != vocab.at("<unk>").get<int>()) CHECK(shown[target.piece(id)] == id);
      differ += c.at("source_decoded") != c.at("target_decoded");
    }
    CHECK(differ >= 2);  // the fixture tells the two models' decoding apart

    // generation from the source's ids: the tokens are read by target.spm (the bindings decode with
    // output_tokenizer(), session.cpp)
    const std::vector<int> src = ref.at(layout).at(3).at("source_ids").get<std::vector<int>>();
    auto s = m->model().new_session();
    generate::GenerateOptions o;
    o.max_new_tokens = 8;
    const auto r = generate::generate_from_tokens(m->model(), target, m->prompt_format(), *s, src, o);
    CHECK(r.source == src);
    REQUIRE(r.tokens.size() > size_t(r.prompt_tokens));
    const std::vector<int> out(r.tokens.begin() + r.prompt_tokens, r.tokens.end());
    CHECK(r.text == target.decode(out));
  }
}

TEST_CASE("T5 with spiece.model instead of tokenizer.json: the source ends with </s> as T5Tokenizer appends it",
          "[runtime][encdec][t5][spm]") {
  // tests/fixtures/spm/make_t5_spiece_fixture.py: sentencepiece's ids + </s> (tokenization_t5.py)
  const nlohmann::json ref = nlohmann::json::parse(testutil::read_text(testutil::fixture_path("spm/t5_spiece_cases.json")));
  std::vector<FilePtr> files{file("../encdec/t5/config.json"), file("../encdec/t5/model.safetensors"), file("../encdec/t5/generation_config.json"),
                             bytes_file("spiece.model", testutil::read_bytes(testutil::fixture_path("spm/t5_spiece.model")))};
  // T5Tokenizer adds 100 sentinels by default: 171 ids for this 96-id model; tokenizer_config.json's
  // extra_ids says how many (20 here: ids 90 down to 71)
  CHECK_ERROR(load_model(files), "the tokenizer has 171 tokens but the model only 96");
  const std::string tc = R"({"extra_ids": 20})";
  files.push_back(bytes_file("tokenizer_config.json", std::vector<uint8_t>(tc.begin(), tc.end())));
  auto m = load_model(files);
  const Tokenizer& t = m->require_tokenizer();
  CHECK(t.kind() == "sentencepiece-unigram");
  CHECK(t.eos_id() == 1);
  CHECK(t.token_id("<extra_id_0>") == 90);
  CHECK(!m->prompt_format().source_suffix_eos);  // the tokenizer closes the source: no second </s>
  for (const nlohmann::json& c : ref.at("cases")) {
    const std::string text = c.at("text").get<std::string>();
    INFO("text " << nlohmann::json(text).dump());
    const std::vector<int> ids = c.at("ids").get<std::vector<int>>();
    CHECK(generate::encode_prompt(t, m->prompt_format(), text) == ids);
    CHECK(t.encode(text, true) == ids);
    CHECK(t.encode(text, false) == std::vector<int>(ids.begin(), ids.end() - 1));
    CHECK(t.decode(ids) == c.at("decoded").get<std::string>());
  }
  // the same .model read alone (loadTokenizer) or for another family keeps sentencepiece's own rules
  auto llama_like = runtime::load_tokenizer_files({bytes_file("spiece.model", testutil::read_bytes(testutil::fixture_path("spm/t5_spiece.model")))}, 0);
  const std::vector<int> first = ref.at("cases").at(1).at("ids").get<std::vector<int>>();
  CHECK(llama_like.tokenizer->encode(ref.at("cases").at(1).at("text").get<std::string>(), true) ==
        std::vector<int>(first.begin(), first.end() - 1));
  // generation from the text runs on the encoder with that source
  auto s = m->model().new_session();
  generate::GenerateOptions o;
  o.max_new_tokens = 4;
  const auto r = generate::generate(m->model(), t, m->prompt_format(), *s, ref.at("cases").at(0).at("text").get<std::string>(), o);
  CHECK(r.source == ref.at("cases").at(0).at("ids").get<std::vector<int>>());
}

TEST_CASE("Marian target.spm bad input: without source.spm / vocab.json, target_vocab.json alone, an encoder-only model",
          "[runtime][encdec][marian][spm][errors]") {
  const auto spm_file = [](const std::string& fixture, const std::string& name) {
    return bytes_file(name, testutil::read_bytes(testutil::fixture_path("spm/" + fixture)));
  };
  const std::vector<FilePtr> marian = {file("../encdec/marian/config.json"), file("../encdec/marian/model.safetensors")};
  auto with = [&](std::vector<FilePtr> extra, std::vector<FilePtr> base) {
    for (auto& f : extra) base.push_back(f);
    return base;
  };
  CHECK_ERROR(load_model(with({spm_file("unigram_raw.model", "target.spm"), spm_file("marian_pair_vocab.json", "vocab.json")}, marian)),
              "target.spm: Marian's target.spm is read together with source.spm and vocab.json (source.spm was not given)");
  CHECK_ERROR(load_model(with({spm_file("unigram_nfkc.model", "source.spm"), spm_file("unigram_raw.model", "target.spm")}, marian)),
              "(vocab.json was not given)");
  CHECK_ERROR(load_model(with({spm_file("unigram_nfkc.model", "source.spm"), spm_file("marian_pair_vocab.json", "vocab.json"),
                               spm_file("marian_pair_target_vocab.json", "target_vocab.json")}, marian)),
              "target_vocab.json: target_vocab.json is read with Marian's target.spm, which was not given");
  // a target vocabulary larger than the decoder's is refused
  CHECK_ERROR(load_model(with({spm_file("unigram_nfkc.model", "source.spm"), spm_file("unigram_raw.model", "target.spm"),
                               spm_file("marian_pair_vocab.json", "vocab.json"), spm_file("marian_pair_vocab.json", "target_vocab.json")},
                              {file("../encdec/marian_separate/config.json"), file("../encdec/marian_separate/model.safetensors")})),
              "the target tokenizer has 90 tokens but the decoder only 70");
  CHECK_ERROR(load_model(with({spm_file("unigram_nfkc.model", "source.spm"), spm_file("unigram_raw.model", "target.spm"),
                               spm_file("marian_pair_vocab.json", "vocab.json")},
                              {file("../encoders/bert_mlm/config.json"), file("../encoders/bert_mlm/model.safetensors")})),
              "target.spm: a target tokenizer (Marian's target.spm) reads an encoder-decoder's output, but bert is encoder-only");
}

TEST_CASE("the target side of the text: the one tokenizer of an encoder-decoder without target.spm, an error for other models",
          "[runtime][encdec][errors]") {
  // transformers' text_target on T5/BART/Marian with one vocabulary: the same tokenizer
  auto marian = load_folder("marian");
  REQUIRE(marian->tokenizer());
  CHECK(!marian->has_separate_target_tokenizer());
  CHECK(&marian->require_target_tokenizer() == marian->tokenizer());
  auto bert = load_model({file("../encoders/bert_mlm/config.json"), file("../encoders/bert_mlm/model.safetensors"),
                          file("../encoders/bert_mlm/tokenizer.json")});
  CHECK_ERROR(bert->require_target_tokenizer(),
              "the target side of the text (the decoder's text) is for encoder-decoder models; bert is encoder-only: its one "
              "tokenizer reads all its text");
  // an encoder-decoder loaded without a tokenizer (read as ids)
  auto ids_only = load_model({file("../encdec/marian/config.json"), file("../encdec/marian/model.safetensors")});
  CHECK_ERROR(ids_only->require_target_tokenizer(), "no tokenizer was loaded with this model");
}
