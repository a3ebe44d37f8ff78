// Reads the JSON fixtures written by tests/fixtures/*.py: {name: {"shape": [...], "data": [...]}, "config": {...}}.
#pragma once
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "test_util.h"

namespace testutil {

class JsonFixture {
 public:
  explicit JsonFixture(const std::string& path) : doc_(nlohmann::json::parse(read_text(path))) {}

  std::vector<float> get(const std::string& name) const {
    if (!doc_.contains(name)) FAIL("fixture has no array " << name);
    return doc_.at(name).at("data").get<std::vector<float>>();
  }
  std::vector<int64_t> shape(const std::string& name) const { return doc_.at(name).at("shape").get<std::vector<int64_t>>(); }
  const nlohmann::json& config() const { return doc_.at("config"); }
  bool has(const std::string& name) const { return doc_.contains(name); }

 private:
  nlohmann::json doc_;
};

}  // namespace testutil
