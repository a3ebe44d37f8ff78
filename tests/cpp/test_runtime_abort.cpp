// Abort reaches a running prefill: the forward pass polls Session::should_stop before each layer,
// and generation can feed a long prompt in chunks (one per step) so that its caller can stop between
// them. Chunked or not, the prefill computes the same thing. On our kjv-gpt2 (models/, always here).
#include "core/error.h"
#include "runtime/loader.h"
#include "test_util.h"

using namespace attnlens;
using namespace attnlens::runtime;

namespace {

std::unique_ptr<LoadedModel> kjv() {
  std::vector<FilePtr> files;
  for (const char* name : {"config.json", "model.safetensors", "tokenizer.json"}) {
    auto f = std::make_shared<File>();
    f->name = name;
    f->bytes = testutil::read_bytes(testutil::source_dir() + "/models/kjv-gpt2/" + name);
    files.push_back(f);
  }
  return load_model(files);
}

const char* kPrompt =
    "In the beginning God created the heaven and the earth. And the earth was without form, and void; and "
    "darkness was upon the face of the deep. And the Spirit of God moved upon the face of the waters. And God "
    "said, Let there be light: and there was light.";

}  // namespace

TEST_CASE("prefill in chunks computes what one pass computes: the same tokens, the same logits", "[runtime][abort]") {
  auto m = kjv();
  const std::vector<int> prompt = generate::encode_prompt(m->require_tokenizer(), m->prompt_format(), kPrompt);
  REQUIRE(prompt.size() > 40);
  generate::GenerateOptions o;
  o.sampling.temperature = 0.9f;
  o.sampling.seed = 7;
  o.max_new_tokens = 20;
  auto s = m->model().new_session();
  const auto whole = generate::generate_from_tokens(m->model(), m->require_tokenizer(), m->prompt_format(), *s, prompt, o);
  for (int chunk : {2, 5, 16, 64}) {
    o.prefill_chunk = chunk;
    int steps = 0;
    generate::Generation g(m->model(), m->require_tokenizer(), m->prompt_format(), *s, prompt, o);
    generate::TokenEvent ev;
    while (g.step(ev) && ev.token < 0) ++steps;
    // ceil(n / chunk) passes, the last one taking the remainder (never a lone token)
    const int n = int(prompt.size());
    const int want = chunk >= n ? 1 : (n % chunk == 1 ? n / chunk : (n + chunk - 1) / chunk);
    CHECK(steps == want);
    while (g.step(ev)) {}
    INFO("chunk " << chunk);
    CHECK(g.result().tokens == whole.tokens);
    CHECK(g.result().prefilled == n);
  }
  // Logits of the last prompt position, bit for bit (the kernels treat rows independently).
  auto one = m->model().new_session();
  const float* a = m->model().decode(*one, prompt.data(), int(prompt.size()));
  const std::vector<float> la(a, a + m->model().info().vocab_size);
  auto chunked = m->model().new_session();
  const float* b = nullptr;
  for (size_t i = 0; i < prompt.size();) {
    const int take = int(std::min<size_t>(7, prompt.size() - i));
    b = m->model().decode(*chunked, prompt.data() + i, take);
    i += size_t(take);
  }
  CHECK(std::equal(la.begin(), la.end(), b));
}

TEST_CASE("should_stop stops a running pass between layers; generation ends \"aborted\" and the session lives on", "[runtime][abort]") {
  auto m = kjv();
  const int layers = m->model().info().n_layers;
  REQUIRE(layers >= 2);
  const std::vector<int> prompt = generate::encode_prompt(m->require_tokenizer(), m->prompt_format(), kPrompt);
  auto s = m->model().new_session();
  int polls = 0;
  s->should_stop = [&] { return ++polls > 1; };  // stop before the second layer of the first pass
  generate::GenerateOptions o;
  o.max_new_tokens = 10;
  const auto r = generate::generate_from_tokens(m->model(), m->require_tokenizer(), m->prompt_format(), *s, prompt, o);
  CHECK(r.finish_reason == "aborted");
  CHECK(polls == 2);               // one layer ran, then the pass stopped
  CHECK(r.prefilled == 0);         // the prompt's pass did not complete
  CHECK(r.tokens.size() == prompt.size());  // no token generated
  CHECK(s->position() == 0);       // nothing half-written counts as cached

  // A plain decode() throws Cancelled, leaving the cache as it was.
  s->should_stop = nullptr;
  m->model().decode(*s, prompt.data(), 5);
  polls = 0;
  s->should_stop = [&] { return ++polls > layers - 1; };  // stop before the last layer
  CHECK_THROWS_AS(m->model().decode(*s, prompt.data() + 5, 3), Cancelled);
  CHECK(s->position() == 5);
  s->should_stop = nullptr;
  const float* logits = m->model().decode(*s, prompt.data() + 5, 3);  // the same pass again, now whole
  auto fresh = m->model().new_session();
  const float* want = m->model().decode(*fresh, prompt.data(), 8);
  CHECK(std::equal(want, want + m->model().info().vocab_size, logits));

  // Stopped during decoding: the token of that step is kept, no further token.
  auto d = m->model().new_session();
  int passes = 0;
  d->should_stop = [&] { return passes >= 4; };
  o.max_new_tokens = 50;
  generate::Generation g(m->model(), m->require_tokenizer(), m->prompt_format(), *d, prompt, o);
  generate::TokenEvent ev;
  int tokens = 0;
  while (g.step(ev)) {
    if (ev.token >= 0) ++tokens;
    ++passes;
  }
  // Steps: the prefill, then tokens 1-3 each with its pass; the 5th step samples token 4, whose
  // pass is stopped: token 4 is kept, nothing after it.
  CHECK(g.result().finish_reason == "aborted");
  CHECK(tokens == 4);
  CHECK(g.result().tokens.size() == prompt.size() + 4);
  CHECK(g.result().decoded == 3);
}
