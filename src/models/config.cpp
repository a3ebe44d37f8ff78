#include "models/config.h"

#include <cmath>

#include "core/error.h"
#include "core/json.h"

namespace attnlens::models {

const nlohmann::json& ConfigReader::get(const std::string& key) const {
  AL_CHECK(has(key), source_, ": missing \"", key, "\"");
  read_.insert(key);
  return j_.at(key);
}

int ConfigReader::positive_int(const std::string& key, int limit) const {
  const auto& v = get(key);
  AL_CHECK(v.is_number_integer() || (v.is_number_float() && std::floor(v.get<double>()) == v.get<double>()), source_,
           ": \"", key, "\" must be an integer, got ", json_brief(v));
  const double x = v.get<double>();
  AL_CHECK(x > 0 && x <= limit, source_, ": \"", key, "\" = ", json_brief(v), " is out of range [1, ", limit, "]");
  return int(x);
}

int ConfigReader::positive_int(const std::string& key, int fallback, int limit) const {
  return has(key) ? positive_int(key, limit) : fallback;
}

double ConfigReader::number(const std::string& key) const {
  const auto& v = get(key);
  AL_CHECK(v.is_number(), source_, ": \"", key, "\" must be a number, got ", json_brief(v));
  const double x = v.get<double>();
  AL_CHECK(std::isfinite(x), source_, ": \"", key, "\" is not finite");
  return x;
}

double ConfigReader::number(const std::string& key, double fallback) const { return has(key) ? number(key) : fallback; }

bool ConfigReader::boolean(const std::string& key, bool fallback) const {
  if (!has(key)) return fallback;
  const auto& v = get(key);
  AL_CHECK(v.is_boolean(), source_, ": \"", key, "\" must be true or false, got ", json_brief(v));
  return v.get<bool>();
}

std::string ConfigReader::string(const std::string& key) const {
  const auto& v = get(key);
  AL_CHECK(v.is_string(), source_, ": \"", key, "\" must be a string, got ", json_brief(v));
  return v.get<std::string>();
}

std::string ConfigReader::string(const std::string& key, const std::string& fallback) const {
  return has(key) ? string(key) : fallback;
}

int leading_dim(const TensorMap& tensors, const std::string& name, int limit, const std::string& source) {
  const TensorView& t = tensors.get(name);
  AL_CHECK(!t.shape.empty() && t.shape[0] >= 1 && t.shape[0] <= limit, source, ": tensor ", name, " has shape ",
           t.shape_str(), ": its first dimension must be in [1, ", limit, "]");
  return int(t.shape[0]);
}

}  // namespace attnlens::models
