// Positional schemes (sinusoidal: Vaswani et al. 2017, §3.5; RoPE: Su et al. 2021, RoFormer; ALiBi: Press
// et al. 2022; T5 buckets: Raffel et al. 2020):
//   learned absolute embeddings  — a table row added to the token embedding (see models; embedding_row)
//   sinusoidal encodings         — PE(pos, 2i) = sin(pos / 10000^(2i/d)), PE(pos, 2i+1) = cos(same)
//   RoPE                         — rotate pairs of q/k dims by pos·θ_i, θ_i = base^(-2i/head_dim)
//   ALiBi                        — bias −slope_h·(q_pos − k_pos) added to the attention scores
//   T5 relative position bias    — a learned per-head scalar per bucket of (k_pos − q_pos)
#pragma once
#include <memory>
#include <vector>

namespace attnlens::nn {

// out[d] = PE(pos), i is the *pair* index: dims 2i and 2i+1 share the frequency 10000^(-2i/d).
void sinusoidal_encoding(int pos, int d_model, float* out);
// The same frequencies in Marian's layout (Hugging Face MarianSinusoidalPositionalEmbedding): the
// sines in dims [0, ⌈d/2⌉), the cosines after them.
void sinusoidal_encoding_halves(int pos, int d_model, float* out);

// ---- RoPE ---------------------------------------------------------------------------------------
enum class RopeStyle {
  Adjacent,  // pairs (2i, 2i+1): llama2.c, GGUF / llama.cpp, the RoFormer paper
  Half,      // pairs (i, i + head_dim/2): Hugging Face Llama / GPT-NeoX "rotate_half"
};

// Everything that fixes the rotation angles.
struct RopeParams {
  RopeStyle style = RopeStyle::Adjacent;
  int head_dim = 0;
  int rot_dims = 0;        // dimensions rotated, the first ones of each head (0 = all): partial rotary
  float base = 10000.f;    // θ_i = base^(−2i/rot_dims)
  float freq_scale = 1.f;  // linear position interpolation: angles pos·freq_scale·θ_i
  // Per-pair divisors of θ_i ([rot_dims/2], empty = none): Llama 3's rope_scaling (GGUF rope_freqs),
  // Phi-3's LongRoPE short/long factors.
  std::vector<float> freq_factors;
  float attn_factor = 1.f;  // cos and sin multiplied by it (LongRoPE's scaling of q·k)
};

// cos/sin of every pair's angle for positions 0 … positions−1, computed once at construction and
// shared by every layer and session (read-only afterwards, so sessions may run on several threads).
class Rope {
 public:
  Rope(const RopeParams& params, int positions);
  Rope(RopeStyle style, int head_dim, float base = 10000.f, int positions = 2048);
  // Rotates x[n_heads, head_dim] in place as the vector at position `pos` (positions past the table
  // are computed on the spot).
  void apply(float* x, int n_heads, int pos) const;
  RopeStyle style() const { return p_.style; }
  int head_dim() const { return p_.head_dim; }
  const RopeParams& params() const { return p_; }
  size_t table_bytes() const { return (cos_.capacity() + sin_.capacity()) * sizeof(float); }

 private:
  void angles(int pos, float* cos, float* sin) const;
  RopeParams p_;
  int positions_;
  std::vector<float> cos_, sin_;  // [positions][rot_dims/2]
};

// ---- additive position biases ---------------------------------------------------------------
// Adds the bias of every key 0..m-1 for the query at position q_pos to scores[m].
class PositionBias {
 public:
  virtual ~PositionBias() = default;
  virtual void add(int head, int q_pos, float* scores, int m) const = 0;
};

// ALiBi (Press et al. 2022): bias = −slope_h · (q_pos − k_pos); slopes are the geometric sequence
// 2^(−8/n), 2^(−16/n), … for n heads (n a power of two), interleaved as in the paper otherwise.
class AlibiBias : public PositionBias {
 public:
  explicit AlibiBias(int n_heads);
  void add(int head, int q_pos, float* scores, int m) const override;
  const std::vector<float>& slopes() const { return slopes_; }

 private:
  std::vector<float> slopes_;
};

// T5's bucket of a relative position (k_pos − q_pos): exact buckets for small distances, then
// logarithmic up to max_distance; bidirectional splits the buckets between the two signs.
int t5_relative_bucket(int relative_position, bool bidirectional, int num_buckets, int max_distance);

// T5 relative attention bias: table[bucket][head] (the layout of T5's relative_attention_bias.weight).
class T5RelativeBias : public PositionBias {
 public:
  T5RelativeBias(const float* table, int num_buckets, int n_heads, bool bidirectional, int max_distance);
  void add(int head, int q_pos, float* scores, int m) const override;

 private:
  const float* table_;
  int num_buckets_, n_heads_, max_distance_;
  bool bidirectional_;
};

}  // namespace attnlens::nn
