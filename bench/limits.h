// What the machine gives the engine, measured by `bench_models --limits` in the same process as the
// model's figures (bench/README.md, "machine limits"): memory read bandwidth and the SIMD peaks that
// the kernels' inner steps can reach. Measurement code, which writes its SIMD itself (SSE intrinsics,
// mapped onto SIMD128 by emscripten as the kernels' are) to time the instructions alone.
//
// The two peaks time the step every matmul tile repeats, with nothing else in the loop: one 16-byte
// load from L1 at an address that moves with the loop (so the compiler cannot hoist it), its product
// with a vector held in a register, added into one of 6 independent accumulators (the add is the only
// chain: enough in flight to keep the multiply ports busy).
//   f32   f32x4.mul + f32x4.add (SIMD128 has no FMA): 4 multiply-adds = 8 flops per step;
//   int   i32x4.dot_i16x8_s + i32x4.add (int16 pairs into int32: the integer prefill tiles' and
//         decode kernels' dot, kernels/quant_simd.h): 8 multiply-adds = 16 ops per step.
// Natively these are SSE's mulps / pmaddwd on 128 bits; the native build's kernels may use wider
// vectors (AVX2, AVX-512), so there the peaks say what 128-bit code gets, not the core's limit.
#pragma once

#include <smmintrin.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "bench_util.h"
#include "core/parallel.h"
#include "kernels/kernels.h"

namespace attnlens::bench {

// GB/s reading a 128 MiB array as 24 f32 matrices of 1024 columns, one kernels::matvec each (as a
// decode reads its weights: several sequential streams per task, kernels/row_walk.h; one stream, as
// kernels::dot reads, gets a fraction of that on some machines), over the current threads; best of 5.
inline double read_gbs() {
  const size_t n = size_t(32) << 20;
  const int tasks = 24, k = 1024;
  const int rows = int(n / tasks / k);
  std::vector<float> a(n, 1.f), x(size_t(k), 1.f), y(size_t(tasks) * rows);
  double best = 1e30;
  for (int rep = 0; rep < 6; ++rep) {
    const double t0 = now_ms();
    parallel::for_each(tasks, [&](int t) noexcept {
      kernels::matvec(x.data(), a.data() + size_t(t) * rows * k, nullptr, y.data() + size_t(t) * rows, k, rows);
    });
    const double ms = now_ms() - t0;
    if (rep > 0) best = std::min(best, ms);  // rep 0 touches the pages
  }
  volatile float keep = y[0];
  (void)keep;
  return double(size_t(tasks) * rows * k) * 4 / (best / 1000) / 1e9;
}

namespace limits_detail {

// 6 chains: enough in flight for the multiply ports (2 per cycle), and few enough that V8 keeps the
// accumulators, the loaded vectors and the register operand in the 15 xmm registers it allocates
// (with 8, TurboFan loads a pass's 8 vectors first and spills accumulators: `--print-wasm-code`).
constexpr int kChains = 6;
constexpr int kVectors = 42 * kChains;  // 4032 bytes of operands: in L1
constexpr long kPasses = long(1) << 16;  // over the kVectors per task
constexpr double kSteps = double(kPasses) * kVectors;

// kSteps per task; `step(acc, operand_pointer, j)` does one step into acc[j]; `data`: kVectors
// 16-byte vectors, 16-byte aligned. Returns the best time of 3 timed runs of 8 tasks per thread, in
// ms (after one warm-up run: V8's optimising tier).
template <class Acc, class Step, class Fold>
double best_ms(int threads, const void* data, Step step, Fold fold) {
  const int tasks = 8 * threads;
  std::vector<float> sink(size_t(tasks), 0.f);
  auto body = [&](int t) noexcept {
    Acc acc[kChains];
    for (auto& a : acc) a = Acc{};
    for (long pass = 0; pass < kPasses; ++pass) {
      const __m128i* p = static_cast<const __m128i*>(data);
      const __m128i* const end = p + kVectors;
#if defined(__clang__)
#pragma clang loop unroll(disable)
#endif
      for (; p != end; p += kChains)
        for (int j = 0; j < kChains; ++j) step(acc, p + j, j);
    }
    sink[size_t(t)] = fold(acc);
  };
  parallel::for_each(threads, body);
  double best = 1e30;
  for (int rep = 0; rep < 3; ++rep) {
    const double t0 = now_ms();
    parallel::for_each(tasks, body);
    best = std::min(best, now_ms() - t0);
  }
  volatile float keep = sink[0];
  (void)keep;
  return best;
}

}  // namespace limits_detail

// GFLOP/s of the f32 step (f32x4.mul of a loaded vector by a register, f32x4.add into an accumulator),
// over the current threads.
inline double peak_gflops(int threads) {
  using namespace limits_detail;
  alignas(16) float data[kVectors * 4];
  for (int i = 0; i < kVectors * 4; ++i) data[i] = 1.f + 1e-3f * float(i % 97);  // normal numbers only
  const __m128 w = _mm_set_ps(0.999f, 1.001f, 0.998f, 1.002f);
  const double ms = best_ms<__m128>(
      threads, data,
      [w](__m128* acc, const __m128i* p, int j) {
        acc[j] = _mm_add_ps(acc[j], _mm_mul_ps(_mm_load_ps(reinterpret_cast<const float*>(p)), w));
      },
      [](const __m128* acc) {
        __m128 s = acc[0];
        for (int j = 1; j < kChains; ++j) s = _mm_add_ps(s, acc[j]);
        return _mm_cvtss_f32(s);
      });
  return double(8 * threads) * kSteps * 8 / (ms / 1000) / 1e9;
}

// G op/s of the integer step (i32x4.dot_i16x8_s of a loaded vector with a register, i32x4.add into
// an accumulator; 2 ops per multiply-add, as the prefill rows count them), over the current threads.
inline double peak_int_gops(int threads) {
  using namespace limits_detail;
  alignas(16) int16_t data[kVectors * 8];
  for (int i = 0; i < kVectors * 8; ++i) data[i] = int16_t((i * 37) % 601 - 300);
  const __m128i w = _mm_set_epi16(7, -3, 11, -5, 2, 9, -13, 4);
  const double ms = best_ms<__m128i>(
      threads, data,
      [w](__m128i* acc, const __m128i* p, int j) { acc[j] = _mm_add_epi32(acc[j], _mm_madd_epi16(_mm_load_si128(p), w)); },
      [](const __m128i* acc) {
        __m128i s = acc[0];
        for (int j = 1; j < kChains; ++j) s = _mm_add_epi32(s, acc[j]);
        return float(_mm_cvtsi128_si32(s));
      });
  return double(8 * threads) * kSteps * 16 / (ms / 1000) / 1e9;
}

}  // namespace attnlens::bench
