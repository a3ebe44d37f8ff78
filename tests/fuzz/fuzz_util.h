// Shared by the libFuzzer harnesses (tests/fuzz/fuzz_*.cpp): each harness feeds the fuzzer's bytes
// to one reader of the engine; an attnlens::Error is the expected outcome for bad input, anything
// else (another exception, a crash, an ASan or UBSan report, a hang, a huge allocation) is a
// finding. See tests/fuzz/README.md.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/error.h"
#include "runtime/loader.h"

namespace fuzz {

inline attnlens::runtime::FilePtr file(const std::string& name, const uint8_t* data, size_t size) {
  auto f = std::make_shared<attnlens::runtime::File>();
  f->name = name;
  f->bytes.assign(data, data + size);
  return f;
}

// Runs f; attnlens::Error (a clean refusal) is fine, any other exception aborts (a finding).
template <class F>
void expect_clean(F&& f) {
  try {
    f();
  } catch (const attnlens::Error&) {
  }
}

// What a loaded model must survive: a tokenization, a short forward pass, a few generated tokens.
inline void exercise(const attnlens::runtime::LoadedModel& m) {
  const auto& model = m.model();
  auto s = model.new_session(std::min(model.info().context_length, 16));
  const int ids[2] = {0, model.info().vocab_size - 1};
  expect_clean([&] {
    if (model.kind() == attnlens::models::ModelKind::EncoderOnly) model.encode(*s, ids, 2);
    else if (model.kind() == attnlens::models::ModelKind::EncoderDecoder) {
      model.encode(*s, ids, 2);
      model.decode(*s, ids, 1);
    } else {
      model.decode(*s, ids, 2, true);
    }
  });
  if (!m.tokenizer() || model.kind() == attnlens::models::ModelKind::EncoderOnly) return;
  expect_clean([&] {
    attnlens::generate::GenerateOptions o;
    o.max_new_tokens = 3;
    o.sampling.seed = 1;
    auto g = m.model().new_session(std::min(model.info().context_length, 16));
    attnlens::generate::generate(model, *m.tokenizer(), m.prompt_format(), *g, "Hi, the é 日本", o);
  });
}

}  // namespace fuzz
