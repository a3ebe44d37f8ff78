// Reading hyper-parameters from config.json / GGUF metadata with errors that name the file and key.
#pragma once
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "core/tensor.h"

namespace attnlens::models {

class ConfigReader {
 public:
  ConfigReader(const nlohmann::json& j, std::string source) : j_(j), source_(std::move(source)) {}

  bool has(const std::string& key) const { return j_.is_object() && j_.contains(key) && !j_.at(key).is_null(); }
  // A positive integer (≤ limit); errors name the key, the value and the file.
  int positive_int(const std::string& key, int limit = 1 << 24) const;
  int positive_int(const std::string& key, int fallback, int limit) const;  // fallback when absent
  double number(const std::string& key) const;
  double number(const std::string& key, double fallback) const;
  bool boolean(const std::string& key, bool fallback) const;
  std::string string(const std::string& key) const;
  std::string string(const std::string& key, const std::string& fallback) const;
  const nlohmann::json& json() const { return j_; }
  const std::string& source() const { return source_; }
  // Keys read so far (by the getters above, or marked): what a builder applied.
  bool was_read(const std::string& key) const { return read_.count(key) != 0; }
  void mark_read(const std::string& key) const { read_.insert(key); }

 private:
  const nlohmann::json& get(const std::string& key) const;
  const nlohmann::json& j_;
  std::string source_;
  mutable std::set<std::string> read_;
};

// The first dimension of tensor `name` as a count within [1, limit] (a vocabulary size read from the
// embedding's rows when the config does not give it); errors name the file and the tensor.
int leading_dim(const TensorMap& tensors, const std::string& name, int limit, const std::string& source);

}  // namespace attnlens::models
