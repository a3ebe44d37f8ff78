// Shared by the libFuzzer harnesses (tests/fuzz/fuzz_*.cpp): each harness feeds the fuzzer's bytes
// to one reader of the engine; an attnlens::Error is the expected outcome for bad input, anything
// else (another exception, a crash, an ASan or UBSan report, a hang, a huge allocation) is a
// finding. See tests/fuzz/README.md.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
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

// A fixed file of the repository that a harness pairs the fuzzer's bytes with (tools/fuzz.mjs runs the
// harnesses from the repository root).
inline attnlens::runtime::FilePtr repo_file(const std::string& path, const std::string& name) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "fuzz: cannot read %s (run from the repository root)\n", path.c_str());
    std::abort();
  }
  auto f = std::make_shared<attnlens::runtime::File>();
  f->name = name;
  const std::vector<char> bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  f->bytes.assign(reinterpret_cast<const uint8_t*>(bytes.data()), reinterpret_cast<const uint8_t*>(bytes.data()) + bytes.size());
  return f;
}

// Texts every tokenizer harness encodes: plain, with special tokens typed in, odd Unicode.
inline const char* const kTexts[] = {"Hello, world! é 日本 🎉", "<s>[INST] hi [/INST]</s><|im_start|>user\n<|im_end|>",
                                     "  two  spaces\ttab\nnewline 123456 >>fra<< ▁x", ""};

// Encodes kTexts with and without special tokens, decodes, asks for pieces and special flags.
inline void exercise_tokenizer(const attnlens::Tokenizer& t, const attnlens::generate::SpecialTokenFlags& flags = {}) {
  for (const char* text : kTexts)
    for (bool add_special : {true, false}) {
      const std::vector<int> ids = attnlens::generate::encode_text(t, flags, text, add_special);
      (void)t.decode(ids);
      for (int id : ids) {
        (void)t.piece(id);
        (void)t.is_special(id);
      }
    }
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
