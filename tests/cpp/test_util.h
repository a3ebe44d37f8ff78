// Helpers shared by the Catch2 tests: locating fixtures and ../shared, reading files, comparing arrays.
#pragma once
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace testutil {

inline std::string source_dir() { return ATTNLENS_SOURCE_DIR; }
inline std::string fixture_path(const std::string& rel) { return source_dir() + "/tests/fixtures/" + rel; }
// ../shared next to the repository (read at test time, never copied into the repo).
inline std::string shared_path(const std::string& rel) { return source_dir() + "/../shared/" + rel; }

inline bool file_exists(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return f.good();
}

inline std::vector<uint8_t> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) FAIL("cannot open " << path);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

inline std::string read_text(const std::string& path) {
  auto b = read_bytes(path);
  return std::string(b.begin(), b.end());
}

inline std::vector<float> read_f32(const std::string& path) {
  auto b = read_bytes(path);
  std::vector<float> out(b.size() / 4);
  std::memcpy(out.data(), b.data(), out.size() * 4);
  return out;
}

// Largest |a[i] - b[i]|; sizes must match.
inline double max_abs_diff(const float* a, const float* b, size_t n) {
  double m = 0;
  for (size_t i = 0; i < n; ++i) {
    double d = std::fabs(double(a[i]) - double(b[i]));
    if (std::isnan(d)) return INFINITY;
    if (d > m) m = d;
  }
  return m;
}
// n normally distributed floats (mean 0, standard deviation sd), reproducible from the seed.
inline std::vector<float> randn(size_t n, uint32_t seed, float sd = 1.f) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.f, sd);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

inline double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  REQUIRE(a.size() == b.size());
  return max_abs_diff(a.data(), b.data(), a.size());
}

}  // namespace testutil

// Skips the rest of a test case, visibly, when a file from ../shared (or another optional input) is
// absent, as on a user's clone. Catch2 v2 has no SKIP: the reason is printed with WARN, and the case
// is recorded so that tests/cpp/main.cpp counts it apart from the passes.
namespace testutil {
// Records that the current test case is skipped (tests/cpp/main.cpp prints and counts them).
void note_skip(const std::string& reason);
}  // namespace testutil

#define SKIP_UNLESS_FILE(path)                                                             \
  do {                                                                                     \
    if (!testutil::file_exists(path)) {                                                    \
      const std::string why_ = std::string(path) + " is absent (../shared is not next to this clone)"; \
      WARN("SKIPPED: " << why_);                                                           \
      testutil::note_skip(why_);                                                           \
      return;                                                                              \
    }                                                                                      \
  } while (0)
