// The SentencePiece fixtures of tests/fixtures/spm (make_spm_fixtures.py): the trained .model files
// and cases.json (what python's sentencepiece and protobuf read from them), shared by
// test_formats_spm.cpp and test_runtime_spm.cpp.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_util.h"

namespace spm_fixtures {

inline const nlohmann::json& cases() {
  static const nlohmann::json doc = nlohmann::json::parse(testutil::read_text(testutil::fixture_path("spm/cases.json")));
  return doc;
}

inline std::vector<uint8_t> model_bytes(const std::string& name) {
  return testutil::read_bytes(testutil::fixture_path("spm/" + name + ".model"));
}

}  // namespace spm_fixtures
