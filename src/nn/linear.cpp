#include "nn/linear.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <new>
#include <vector>

#include "core/error.h"
#include "core/parallel.h"
#include "kernels/kernels.h"

namespace attnlens::nn {

namespace {

// y[n, count] = x[n, in] · W[first … first + count)ᵀ + b[first …], in W's dtype (a row block of a
// block-quantized matrix is whole rows of blocks).
void linear_rows(const Linear& l, int first, int count, const float* x, int n, float* y) {
  const Matrix w = first == 0 && count == l.w.rows ? l.w : row_block(l.w, first, count);
  const float* b = l.b ? l.b + first : nullptr;
  const int in = w.cols;
  switch (w.dtype) {
    case DType::F32: {
      const auto* f = static_cast<const float*>(w.data);
      if (n == 1) kernels::matvec(x, f, b, y, in, count);
      else kernels::matmul(x, f, b, y, n, in, count);
      return;
    }
    case DType::F16: kernels::matmul_f16(x, static_cast<const uint16_t*>(w.data), b, y, n, in, count); return;
    case DType::BF16: kernels::matmul_bf16(x, static_cast<const uint16_t*>(w.data), b, y, n, in, count); return;
    default: kernels::matmul_q(w.dtype, x, static_cast<const uint8_t*>(w.data), b, y, n, in, count); return;
  }
}

}  // namespace

RowSplit row_split(int rows, int n, int threads) {
  // Prefill: up to 24 tasks (a balanced share for 1, 2, 3, 4, 6 or 8 threads, and spare ones for a
  // thread that another process slows down), each at least 64 rows (every task packs x again).
  // Decode: one task per thread, at least 32 rows: each task's walk through W (8 sequential streams,
  // kernels/row_walk.h) is then as long as it can be. Blocks of 32 rows took 1.2-2.4x the time
  // of whole matrices (bench_kernels --filter decode_, one thread: bench/README.md), as the hardware
  // prefetcher restarts with every block. A multiple of 4 rows (the kernels' 4-row passes).
  // Each row of a decode comes out with the same bits whatever block it is in (test_nn_threads).
  constexpr int kMaxTasks = 24;
  const int t = std::max(threads, 1);
  int r = n == 1 ? std::max((rows + t - 1) / t, 32) : std::max((rows + kMaxTasks - 1) / kMaxTasks, 64);
  r = (r + 3) / 4 * 4;
  return RowSplit{r, rows > 0 ? (rows + r - 1) / r : 0};
}

namespace {

// One token (decode) through several layers of the same input: their row blocks are the tasks of one
// parallel region, so the threads meet once for Q, K and V (or gate and up) instead of once per matrix.
// One task computes the same rows the same way as linear() alone would: the bits do not change.
// For block-quantized weights x is quantized once before the region (per weight type among the
// parts), not again in every task (kernels::quantize_rows with n = 1: the values matmul_q makes).
struct DecodePart {
  const Linear* layer;
  float* y;
  RowSplit split;
  int first_task;
  const void* xq;  // x quantized for the layer's weight type; null (as callers pass it) for other types
};

void decode_parts(DecodePart* parts, int count, int tasks, const float* x) {
  // The quantized rows live in the calling thread's shared scratch (kernels.h shared_scratch: a few
  // KiB per row of x, kept between tokens, given back by kernels::release_scratch()); 16-byte
  // aligned offsets for the kernels' aligned loads.
  size_t offset[4] = {}, bytes[4] = {}, total = 0;
  for (int p = 0; p < count; ++p) {
    const Matrix& w = parts[p].layer->w;
    offset[p] = total;
    if (dtype_is_block(w.dtype)) bytes[p] = kernels::quantized_rows_bytes(w.dtype, 1, w.cols);
    total += (bytes[p] + 15) / 16 * 16;
  }
  if (total) {  // (f32, f16 and bf16 weights have nothing to share)
    auto* space = static_cast<unsigned char*>(kernels::shared_scratch(total));
    if (!space) throw std::bad_alloc();
    for (int p = 0; p < count; ++p) {
      if (!bytes[p]) continue;
      int same = 0;  // an earlier part of the same type shares its row
      while (same < p && parts[same].layer->w.dtype != parts[p].layer->w.dtype) ++same;
      if (same == p) kernels::quantize_rows(parts[p].layer->w.dtype, x, 1, parts[p].layer->w.cols, space + offset[p]);
      parts[p].xq = same < p ? parts[same].xq : space + offset[p];
    }
  }
  parallel::for_each(tasks, [&](int t) noexcept {
    int p = count - 1;
    while (t < parts[p].first_task) --p;
    const DecodePart& part = parts[p];
    const int first = (t - part.first_task) * part.split.rows, out = part.layer->out();
    const int rows = std::min(part.split.rows, out - first);
    if (!part.xq) return linear_rows(*part.layer, first, rows, x, 1, part.y + first);
    const Linear& l = *part.layer;
    const Matrix w = row_block(l.w, first, rows);
    kernels::matmul_q_rows(w.dtype, x, part.xq, static_cast<const uint8_t*>(w.data), l.b ? l.b + first : nullptr,
                           part.y + first, 1, w.cols, rows);
  });
}

// Prefill's quantized rows live in vectors of 16-byte units: the kernels' loads are aligned.
struct alignas(16) Unit {
  unsigned char b[16];
};

}  // namespace

void linear(const Linear& l, const float* x, int n, float* y) {
  const int out = l.w.rows;
  const RowSplit split = row_split(out, n, parallel::current_threads());
  if (split.tasks <= 1) return linear_rows(l, 0, out, x, n, y);
  if (n == 1) {
    DecodePart part{&l, y, split, 0, nullptr};
    return decode_parts(&part, 1, split.tasks, x);
  }
  // The kernels write rows of `count` outputs. Each task owns one block of W's rows and passes every
  // row of x over it, a chunk of rows at a time into its thread's part of a scratch buffer
  // ([rows][count]), whose columns then go to y: W is read once per chunk of up to kSlotFloats /
  // count rows (196 rows of a 32000-column output projection split 24 ways), not once per chunk of
  // the whole output's width. Chunks depend on n and W only, never on the threads (same results).
  constexpr int kSlotFloats = 1 << 18;  // 1 MiB of scratch per thread
  const int max_chunk = std::max(1, kSlotFloats / split.rows);
  const int chunks = (n + max_chunk - 1) / max_chunk;
  const int chunk = (n + chunks - 1) / chunks;  // balanced chunks
  // per call, not kept per thread: a high-water buffer would keep a large model's size for good
  std::vector<float> scratch(size_t(parallel::slots()) * chunk * split.rows);
  const int in = l.w.cols;
  // Block-quantized W: the n rows of x quantized once here, not again by every task (kernels.h
  // quantize_rows; the same values matmul_q makes, so the same bits).
  const size_t xq_row = dtype_is_block(l.w.dtype) ? kernels::quantized_rows_bytes(l.w.dtype, 1, in) : 0;
  std::vector<Unit> xq((xq_row * size_t(n) + 15) / 16);
  if (xq_row) kernels::quantize_rows(l.w.dtype, x, n, in, xq.data());
  parallel::for_each_slot(split.tasks, [&](int t, int slot) noexcept {
    const int first = t * split.rows, count = std::min(split.rows, out - first);
    float* block = scratch.data() + size_t(slot) * chunk * split.rows;
    for (int i0 = 0; i0 < n; i0 += chunk) {
      const int rows = std::min(chunk, n - i0);
      if (xq_row) {
        const Matrix w = row_block(l.w, first, count);
        kernels::matmul_q_rows(w.dtype, x + size_t(i0) * in, reinterpret_cast<const unsigned char*>(xq.data()) + xq_row * i0,
                               static_cast<const uint8_t*>(w.data), l.b ? l.b + first : nullptr, block, rows, in, count);
      } else {
        linear_rows(l, first, count, x + size_t(i0) * in, rows, block);
      }
      for (int i = 0; i < rows; ++i)
        std::memcpy(y + size_t(i0 + i) * out + first, block + size_t(i) * count, sizeof(float) * count);
    }
  });
}

void linears(std::initializer_list<LinearOutput> outputs, const float* x, int n) {
  if (n != 1 || outputs.size() > 4) {  // prefill: each matrix is a long region of its own
    for (const LinearOutput& o : outputs) linear(*o.layer, x, n, o.y);
    return;
  }
  DecodePart parts[4];
  int count = 0, tasks = 0;
  for (const LinearOutput& o : outputs) {
    parts[count] = DecodePart{o.layer, o.y, row_split(o.layer->out(), 1, parallel::current_threads()), tasks, nullptr};
    tasks += parts[count].split.tasks;
    ++count;
  }
  decode_parts(parts, count, tasks, x);
}

Matrix row_block(const Matrix& m, int first, int count) {
  AL_CHECK(first >= 0 && count >= 0 && first + count <= m.rows, "rows ", first, "..", first + count, " of a matrix with ",
           m.rows, " rows");
  const size_t row_bytes = dtype_bytes(m.dtype, size_t(m.cols));
  return Matrix{m.dtype, count, m.cols, static_cast<const uint8_t*>(m.data) + row_bytes * first};
}

void embedding_row(const Matrix& table, int index, float* out) {
  AL_CHECK(index >= 0 && index < table.rows, "token id ", index, " is out of range [0, ", table.rows, ")");
  const size_t row_bytes = dtype_bytes(table.dtype, size_t(table.cols));
  kernels::dequantize_row(table.dtype, static_cast<const uint8_t*>(table.data) + row_bytes * size_t(index), out,
                          table.cols);
}

void check_linear(const Linear& l, int in, int out, const std::string& what) {
  AL_CHECK(!l.empty(), what, ": weight is missing");
  AL_CHECK(l.w.cols == in && l.w.rows == out, what, ": weight is [", l.w.rows, ", ", l.w.cols, "], expected [", out,
           ", ", in, "]");
  const int block = dtype_block_elems(l.w.dtype);
  AL_CHECK(in % block == 0, what, ": a ", dtype_name(l.w.dtype), " weight needs an input size divisible by ", block,
           ", got ", in);
}

void check_finite(const float* x, size_t n, const std::string& what) {
  for (size_t i = 0; i < n; ++i)
    if (!std::isfinite(x[i])) fail(what, " contains ", std::isnan(x[i]) ? "NaN" : "infinity", " at index ", i);
}

}  // namespace attnlens::nn
