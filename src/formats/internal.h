// Pieces shared between the readers and detect_file_kind (not part of the public API).
#pragma once
#include <cstdint>
#include <string>

namespace attnlens {
namespace formats_internal {

constexpr size_t kLlama2cHeaderBytes = 7 * 4;

// The llama2.c header, validated.
struct Llama2cConfig {
  int64_t dim = 0, hidden_dim = 0, n_layers = 0, n_heads = 0, n_kv_heads = 0, vocab_size = 0, seq_len = 0;
  bool shared_classifier = true;  // vocab_size was positive in the file
  int64_t head_size() const { return dim / n_heads; }
  int64_t kv_dim() const { return dim * n_kv_heads / n_heads; }
};

// Checks the 7 int32 at `header` (kLlama2cHeaderBytes readable) and that they imply exactly
// `file_size` bytes. Returns "" and fills *out when valid, else describes the first problem
// ("header says dim=-3 (must be positive)"). Never throws, so detection can use it.
std::string llama2c_check(const uint8_t* header, uint64_t file_size, Llama2cConfig* out);

}  // namespace formats_internal
}  // namespace attnlens
