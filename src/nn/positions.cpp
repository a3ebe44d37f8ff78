#include "nn/positions.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "kernels/kernels.h"

namespace attnlens::nn {

void sinusoidal_encoding(int pos, int d_model, float* out) {
  for (int i = 0; 2 * i < d_model; ++i) {
    const double angle = pos / std::pow(10000.0, 2.0 * i / d_model);
    out[2 * i] = float(std::sin(angle));
    if (2 * i + 1 < d_model) out[2 * i + 1] = float(std::cos(angle));
  }
}

void sinusoidal_encoding_halves(int pos, int d_model, float* out) {
  const int half = (d_model + 1) / 2;
  for (int i = 0; 2 * i < d_model; ++i) {
    const double angle = pos / std::pow(10000.0, 2.0 * i / d_model);
    out[i] = float(std::sin(angle));
    if (2 * i + 1 < d_model) out[half + i] = float(std::cos(angle));
  }
}

Rope::Rope(const RopeParams& params, int positions) : p_(params), positions_(positions) {
  if (p_.rot_dims == 0) p_.rot_dims = p_.head_dim;
  AL_CHECK(p_.head_dim > 0 && p_.rot_dims > 0 && p_.rot_dims % 2 == 0 && p_.rot_dims <= p_.head_dim,
           "RoPE needs an even number of rotated dimensions ≤ the head dimension, got ", p_.rot_dims, " of ",
           p_.head_dim);
  AL_CHECK(p_.base > 0 && std::isfinite(p_.base), "RoPE base must be positive, got ", p_.base);
  AL_CHECK(p_.freq_scale > 0 && std::isfinite(p_.freq_scale), "RoPE frequency scale must be positive, got ",
           p_.freq_scale);
  AL_CHECK(std::isfinite(p_.attn_factor) && p_.attn_factor > 0, "RoPE attention factor must be positive, got ",
           p_.attn_factor);
  AL_CHECK(p_.freq_factors.empty() || p_.freq_factors.size() == size_t(p_.rot_dims / 2), "RoPE frequency factors: ",
           p_.freq_factors.size(), " values for ", p_.rot_dims / 2, " rotated pairs");
  for (size_t i = 0; i < p_.freq_factors.size(); ++i)
    AL_CHECK(std::isfinite(p_.freq_factors[i]) && p_.freq_factors[i] > 0, "RoPE frequency factor ", i, " is ",
             p_.freq_factors[i], ", expected a positive number");
  AL_CHECK(positions > 0, "RoPE table needs at least one position, got ", positions);
  // The table covers the first kMaxTableFloats / rot_dims positions at most (a long context's later
  // positions are computed on the spot), so its size never depends on a file's context length alone.
  constexpr int64_t kMaxTableFloats = int64_t(1) << 20;  // 4 MiB of cos + sin
  positions_ = int(std::min<int64_t>(positions, std::max<int64_t>(1, kMaxTableFloats / p_.rot_dims)));
  positions = positions_;
  const int half = p_.rot_dims / 2;
  cos_.resize(size_t(positions) * half);
  sin_.resize(size_t(positions) * half);
  for (int p = 0; p < positions; ++p) angles(p, cos_.data() + size_t(p) * half, sin_.data() + size_t(p) * half);
}

static RopeParams plain_rope(RopeStyle style, int head_dim, float base) {
  RopeParams p;
  p.style = style;
  p.head_dim = head_dim;
  p.base = base;
  return p;
}

Rope::Rope(RopeStyle style, int head_dim, float base, int positions)
    : Rope(plain_rope(style, head_dim, base), positions) {}

void Rope::angles(int pos, float* cos, float* sin) const {
  for (int i = 0; i < p_.rot_dims / 2; ++i) {
    // In float, exactly as llama2.c's run.c and Hugging Face's inv_freq compute it.
    float freq = 1.0f / std::pow(p_.base, float(2 * i) / float(p_.rot_dims));
    if (!p_.freq_factors.empty()) freq /= p_.freq_factors[i];
    const float angle = float(pos) * p_.freq_scale * freq;
    cos[i] = std::cos(angle) * p_.attn_factor;
    sin[i] = std::sin(angle) * p_.attn_factor;
  }
}

void Rope::apply(float* x, int n_heads, int pos) const {
  AL_CHECK(pos >= 0, "RoPE position ", pos, " is negative");
  const int half = p_.rot_dims / 2;
  const float* c;
  const float* s;
  std::vector<float> local;
  if (pos < positions_) {
    c = cos_.data() + size_t(pos) * half;
    s = sin_.data() + size_t(pos) * half;
  } else {
    local.resize(2 * size_t(half));
    angles(pos, local.data(), local.data() + half);
    c = local.data();
    s = local.data() + half;
  }
  if (p_.style == RopeStyle::Adjacent) kernels::rope_adjacent(x, c, s, n_heads, p_.head_dim, p_.rot_dims);
  else kernels::rope_half(x, c, s, n_heads, p_.head_dim, p_.rot_dims);
}

// Slopes for a power-of-two head count n: start = 2^(−8/n), slope_h = start^(h+1).
static std::vector<float> alibi_power_of_two(int n) {
  std::vector<float> s(n);
  const double start = std::pow(2.0, -8.0 / n);
  for (int h = 0; h < n; ++h) s[h] = float(std::pow(start, h + 1));
  return s;
}

AlibiBias::AlibiBias(int n_heads) {
  AL_CHECK(n_heads > 0, "ALiBi needs at least one head");
  int p2 = 1;
  while (p2 * 2 <= n_heads) p2 *= 2;
  slopes_ = alibi_power_of_two(p2);
  if (p2 != n_heads) {  // the paper's recipe: take every other slope of the next power of two
    std::vector<float> extra = alibi_power_of_two(2 * p2);
    for (int i = 0; int(slopes_.size()) < n_heads; i += 2) slopes_.push_back(extra[i]);
  }
}

void AlibiBias::add(int head, int q_pos, float* scores, int m) const {
  const float s = slopes_[head];
  for (int j = 0; j < m; ++j) scores[j] -= s * float(q_pos - j);
}

int t5_relative_bucket(int relative_position, bool bidirectional, int num_buckets, int max_distance) {
  int bucket = 0;
  int n = num_buckets;
  if (bidirectional) {
    n /= 2;
    if (relative_position > 0) bucket += n;
    relative_position = std::abs(relative_position);
  } else {
    relative_position = relative_position < 0 ? -relative_position : 0;
  }
  const int max_exact = n / 2;
  if (relative_position < max_exact) return bucket + relative_position;
  // float32 arithmetic and truncation toward zero, as T5's PyTorch code (to(torch.long)) does.
  const float scaled = std::log(float(relative_position) / float(max_exact)) /
                       std::log(float(max_distance) / float(max_exact)) * float(n - max_exact);
  int large = max_exact + int(scaled);
  if (large > n - 1) large = n - 1;
  return bucket + large;
}

T5RelativeBias::T5RelativeBias(const float* table, int num_buckets, int n_heads, bool bidirectional, int max_distance)
    : table_(table), num_buckets_(num_buckets), n_heads_(n_heads), max_distance_(max_distance), bidirectional_(bidirectional) {
  AL_CHECK(table != nullptr, "T5 relative bias: table is missing");
  AL_CHECK(num_buckets >= 2 && max_distance > num_buckets / 4, "T5 relative bias: bad num_buckets ", num_buckets,
           " / max_distance ", max_distance);
}

void T5RelativeBias::add(int head, int q_pos, float* scores, int m) const {
  for (int j = 0; j < m; ++j) {
    const int bucket = t5_relative_bucket(j - q_pos, bidirectional_, num_buckets_, max_distance_);
    scores[j] += table_[size_t(bucket) * n_heads_ + head];
  }
}

}  // namespace attnlens::nn
