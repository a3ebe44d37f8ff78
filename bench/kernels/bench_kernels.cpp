// Kernel micro-benchmark: GFLOP/s of matmul / matvec (f32 and q8_0) at small-model sizes, and GB/s of
// weights streamed. One JSON line per case on stdout; bench/kernels.mjs runs the native and wasm builds
// and prints the table.
//
// Built three ways (bench/CMakeLists.kernels.cmake):
//   bench_kernels         native (-march=native) or wasm SIMD128: the xsimd kernels, and with --ref the
//                         scalar references compiled with the same flags;
//   bench_kernels_scalar  wasm WITHOUT -msimd128, only the scalar references (ATTNLENS_BENCH_SCALAR):
//                         "wasm scalar" in the table, so SIMD/scalar compares vector code with code that
//                         cannot be vectorised.
//
// Method (the model-level anchors' method, scaled down): per case, untimed warm-up calls for at least
// --warm-ms and 3 calls (V8 runs wasm in its baseline tier first and swaps in the optimised code of
// a hot function only for its next call: there is no on-stack replacement for wasm), then --reps
// timed repetitions of enough calls to last --rep-ms each; the median per-call time is reported, with
// the fastest and slowest repetition. The weights are the same on every call, so a matrix that fits
// in the caches is timed in cache; the "decode" cases walk a whole stories15M-shaped layer stack
// (distinct weights, 15.2M of them) the way one decode step does, the 768×32000 (f32) and 4096×8192
// cases are larger than the 32 MiB L3, and "read" measures the memory read bandwidth of the moment
// (the machine is shared: compare GB/s with it).
//
// "act" cases: the element-wise activations over 64 rows of a stories15M FFN (64×768 floats, in cache),
// each call on a fresh copy of the same N(0, 2²) values (the copy is timed too); "gflops" is then
// G elements/s. Variant "xsimd" (the SIMD build): the same formulas with xsimd::tanh / erf / exp, which
// in wasm convert floats to ints lane by lane (kernels/simd.h) — what the kernels did before simd::tanh
// and simd::erf.
//
// Usage: bench_kernels [--filter SUBSTR] [--ref] [--no-simd] [--quick] [--cpu-time] [--reps N] [--warm-ms MS]
//                      [--rep-ms MS]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#if defined(__EMSCRIPTEN__)
#include <emscripten.h>
#else
#include <time.h>
#endif

#include "core/tensor.h"
#include "kernels/kernels.h"
#ifndef ATTNLENS_BENCH_SCALAR
#include <xsimd/xsimd.hpp>
#endif

namespace k = attnlens::kernels;

namespace {

#if defined(__EMSCRIPTEN__) && defined(__wasm_simd128__)
const char* kPlatform = "wasm";
#elif defined(__EMSCRIPTEN__)
const char* kPlatform = "wasm-scalar";
#else
const char* kPlatform = "native";
#endif

struct Options {
  std::string filter;
  bool ref = false;    // also time the scalar references (the SIMD build)
  bool simd = true;    // time the vector kernels
  int reps = 7;
  double warm_ms = 400;
  double rep_ms = 80;
};

// --cpu-time: time by the process's CPU time instead of the wall clock. On a shared, loaded machine
// (nice'd runs get a few % of a core) wall time mostly measures the other processes; CPU time still
// varies with their cache traffic, but far less.
bool g_cpu_time = false;

#if defined(__EMSCRIPTEN__)
EM_JS(double, process_cpu_ms, (), { const u = process.cpuUsage(); return (u.user + u.system) / 1000; });
#else
double process_cpu_ms() {
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}
#endif

double now_ms() {
  if (g_cpu_time) return process_cpu_ms();
  using namespace std::chrono;
  return duration<double, std::milli>(steady_clock::now().time_since_epoch()).count();
}

// Median per-call time in ms, with the fastest and slowest repetition.
struct Timing {
  double median, min, max;
};

Timing time_it(const Options& o, const std::function<void()>& fn) {
  double t0 = now_ms();
  int calls = 0;
  do {
    fn();
    ++calls;
  } while (now_ms() - t0 < o.warm_ms || calls < 3);  // wasm: a function called once or twice may
                                                      // still run its baseline (Liftoff) code
  // Calls per repetition so one repetition lasts about rep_ms.
  double t1 = now_ms();
  fn();
  double one = std::max(now_ms() - t1, 1e-4);
  int per_rep = std::max(1, int(o.rep_ms / one));
  std::vector<double> t;
  for (int r = 0; r < o.reps; ++r) {
    double s = now_ms();
    for (int i = 0; i < per_rep; ++i) fn();
    t.push_back((now_ms() - s) / per_rep);
  }
  std::sort(t.begin(), t.end());
  return {t[t.size() / 2], t.front(), t.back()};
}

std::vector<float> randn(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.f, 1.f);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// Random weights in block type t: random bytes with every f16 scale (and min) field set to a value
// in [0.005, 0.02] (bytes alone could be NaN); no quantizer needed, so the scalar build only links
// the references. q8_0 keeps its quants in [-127, 127] like real files.
const int* scale_fields(attnlens::DType t) {
  using attnlens::DType;
  static const int d0[] = {0, -1}, dm[] = {0, 2, -1}, q2k[] = {80, 82, -1}, q3k[] = {108, -1}, q6k[] = {208, -1};
  switch (t) {
    case DType::Q4_1: case DType::Q5_1: case DType::Q4_K: case DType::Q5_K: return dm;
    case DType::Q2_K: return q2k;
    case DType::Q3_K: return q3k;
    case DType::Q6_K: return q6k;
    default: return d0;
  }
}

std::vector<uint8_t> rand_blocks(attnlens::DType t, size_t rows, size_t k, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> d(0.005f, 0.02f);
  const size_t be = size_t(attnlens::dtype_block_elems(t)), bb = size_t(attnlens::dtype_block_bytes(t));
  const size_t blocks = rows * k / be;
  std::vector<uint8_t> out(blocks * bb);
  for (auto& v : out) v = uint8_t(byte(rng));
  for (size_t b = 0; b < blocks; ++b) {
    uint8_t* p = out.data() + b * bb;
    for (const int* f = scale_fields(t); *f >= 0; ++f) {
      uint16_t h = attnlens::f32_to_f16(d(rng));
      std::memcpy(p + *f, &h, 2);
    }
    if (t == attnlens::DType::Q8_0)
      for (int i = 0; i < 32; ++i)
        if (p[2 + i] == 0x80) p[2 + i] = 0x81;
  }
  return out;
}

double checksum(const std::vector<float>& y) {
  double s = 0;
  for (float v : y) s += v;
  return s;
}

void print_line(const char* variant, const char* kernel, const char* dtype, int n, int kk, int m, double flops,
                double weight_bytes, const Timing& t, double sum) {
  std::printf(
      "{\"platform\":\"%s\",\"variant\":\"%s\",\"kernel\":\"%s\",\"dtype\":\"%s\",\"n\":%d,\"k\":%d,\"m\":%d,"
      "\"ms\":%.5f,\"ms_min\":%.5f,\"ms_max\":%.5f,\"gflops\":%.3f,\"gbps\":%.3f,\"arch\":\"%s\",\"width\":%d,"
      "\"checksum\":%.6g}\n",
      kPlatform, variant, kernel, dtype, n, kk, m, t.median, t.min, t.max, flops / (t.median * 1e6),
      weight_bytes / (t.median * 1e6),
#ifdef ATTNLENS_BENCH_SCALAR
      "scalar", 1,
#else
      variant[0] == 'r' ? "scalar" : k::simd_arch_name(), variant[0] == 'r' ? 1 : k::simd_width(),
#endif
      sum);
  std::fflush(stdout);
}

bool selected(const Options& o, const std::string& name) {
  return o.filter.empty() || name.find(o.filter) != std::string::npos;
}

struct Shape {
  int n, k, m;
};

// Matrix sizes: stories15M (dim 288, hidden 768, vocab 32000), stories110M (768, 2048), plus a
// 128 MiB f32 matrix for streaming from memory.
const Shape kMatvecShapes[] = {{1, 288, 288},  {1, 288, 768},    {1, 768, 288},  {1, 768, 2048},
                               {1, 288, 32000}, {1, 768, 32000}, {1, 4096, 8192}};
const Shape kMatmulShapes[] = {{4, 288, 288},   {16, 288, 768},  {64, 288, 288},
                               {64, 288, 768}, {64, 768, 288}, {256, 768, 768}, {64, 768, 2048}};

void bench_f32(const Options& o, const Shape& s, bool quick) {
  const bool mv = s.n == 1;
  char name[96];
  std::snprintf(name, sizeof name, "%s_f32 %dx%dx%d", mv ? "matvec" : "matmul", s.n, s.k, s.m);
  if (!selected(o, name)) return;
  if (quick && size_t(s.k) * s.m > (size_t(1) << 24)) return;
  auto x = randn(size_t(s.n) * s.k, 1), w = randn(size_t(s.m) * s.k, 2), b = randn(s.m, 3);
  std::vector<float> y(size_t(s.n) * s.m);
  const double flops = 2.0 * s.n * s.k * s.m, bytes = 4.0 * s.k * s.m;
  const char* kernel = mv ? "matvec" : "matmul";
#ifndef ATTNLENS_BENCH_SCALAR
  if (o.simd) {
    Timing t = time_it(o, [&] {
      if (mv) k::matvec(x.data(), w.data(), b.data(), y.data(), s.k, s.m);
      else k::matmul(x.data(), w.data(), b.data(), y.data(), s.n, s.k, s.m);
    });
    print_line("simd", kernel, "f32", s.n, s.k, s.m, flops, bytes, t, checksum(y));
  }
#endif
  if (o.ref) {
    Timing t = time_it(o, [&] {
      if (mv) k::ref::matvec(x.data(), w.data(), b.data(), y.data(), s.k, s.m);
      else k::ref::matmul(x.data(), w.data(), b.data(), y.data(), s.n, s.k, s.m);
    });
    print_line("ref", kernel, "f32", s.n, s.k, s.m, flops, bytes, t, checksum(y));
  }
}

void bench_quant(const Options& o, attnlens::DType dt, const Shape& s, bool quick) {
  const bool mv = s.n == 1;
  const char* tn = attnlens::dtype_name(dt);
  char name[96];
  std::snprintf(name, sizeof name, "%s_%s %dx%dx%d", mv ? "matvec" : "matmul", tn, s.n, s.k, s.m);
  if (!selected(o, name)) return;
  if (quick && size_t(s.k) * s.m > (size_t(1) << 24)) return;
  if (s.k % attnlens::dtype_block_elems(dt) != 0) return;
  auto x = randn(size_t(s.n) * s.k, 1), b = randn(s.m, 3);
  auto w = rand_blocks(dt, s.m, s.k, 2);
  std::vector<float> y(size_t(s.n) * s.m);
  const double flops = 2.0 * s.n * s.k * s.m, bytes = double(w.size());
  const char* kernel = mv ? "matvec" : "matmul";
#ifndef ATTNLENS_BENCH_SCALAR
  if (o.simd) {
    Timing t = time_it(o, [&] { k::matmul_q(dt, x.data(), w.data(), b.data(), y.data(), s.n, s.k, s.m); });
    print_line("simd", kernel, tn, s.n, s.k, s.m, flops, bytes, t, checksum(y));
  }
#endif
  if (o.ref) {
    Timing t = time_it(o, [&] { k::ref::matmul_q(dt, x.data(), w.data(), b.data(), y.data(), s.n, s.k, s.m); });
    print_line("ref", kernel, tn, s.n, s.k, s.m, flops, bytes, t, checksum(y));
  }
}

// One decode step's linear layers of a stories15M-shaped model (dim 288, hidden 768, 6 layers,
// vocab 32000, untied classifier): per layer wq, wk, wv, wo [288, 288], w1, w3 [768, 288],
// w2 [288, 768], then the classifier [32000, 288]. 15.2M distinct weights, run as matvecs in that
// order; "m" in the output is the number of matvecs. tokens/s of these matvecs alone = 1000 / ms.
// Super-block types (k a multiple of 256) use the stories110M shape instead (dim 768, hidden 2048,
// 12 layers: 117M weights), so their rows are whole super-blocks.
// With rand42M (block-of-32 types only), the shape of the peers' rand42M GGUFs (dim 512, hidden
// 1376, 8 layers, vocab 32000: 41.7M weights, 23 MB in q4_0, 44 MB in q8_0, both more than
// the 32 MiB L3): streamed from memory as in the whole-model decode (bench/models.mjs).
// With block_rows > 0 (kernel "decode_blocks"), each matrix goes through matmul_q_rows (matvec for
// f32) in blocks of that many rows, x quantized once per matrix: how nn::linear split a decode
// before it took one block per thread (32 rows), for comparison with whole matrices.
void bench_decode(const Options& o, attnlens::DType dt, bool rand42m = false, int block_rows = 0) {
  const bool f32 = dt == attnlens::DType::F32;
  const bool sb = !f32 && attnlens::dtype_block_elems(dt) == 256;
  char name[96];
  std::snprintf(name, sizeof name, "decode_%s %s%s", attnlens::dtype_name(dt),
                rand42m ? "rand42M" : sb ? "stories110M" : "stories15M", block_rows ? " blocks" : "");
  if (!selected(o, name)) return;
  const int dim = rand42m ? 512 : sb ? 768 : 288, hidden = rand42m ? 1376 : sb ? 2048 : 768;
  const int layers = rand42m ? 8 : sb ? 12 : 6, vocab = 32000;
  struct Mat {
    int k, m;
    size_t off;  // in floats (f32) or bytes
  };
  std::vector<Mat> mats;
  size_t total = 0, weights = 0;
  auto add = [&](int kk, int m) {
    mats.push_back({kk, m, total});
    total += f32 ? size_t(m) * kk : attnlens::dtype_bytes(dt, size_t(m) * kk);
    weights += size_t(m) * kk;
  };
  for (int l = 0; l < layers; ++l) {
    for (int i = 0; i < 4; ++i) add(dim, dim);
    add(dim, hidden);
    add(dim, hidden);
    add(hidden, dim);
  }
  add(dim, vocab);
  std::vector<float> wf;
  std::vector<uint8_t> wq;
  if (f32) wf = randn(total, 7);
  else wq = rand_blocks(dt, 1, total / attnlens::dtype_block_bytes(dt) * attnlens::dtype_block_elems(dt), 7);
  auto x = randn(hidden, 8);
  std::vector<float> y(vocab);
  const double flops = 2.0 * double(weights), bytes = f32 ? 4.0 * double(total) : double(total);
#ifndef ATTNLENS_BENCH_SCALAR  // (the scalar build has the references only)
  std::vector<uint8_t> xq(f32 ? 0 : k::quantized_rows_bytes(dt, 1, hidden) + 16);
  auto* xq16 = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(xq.data()) + 15) & ~uintptr_t(15));
#endif
  auto run = [&](bool ref) {
    for (const Mat& mt : mats) {
#ifndef ATTNLENS_BENCH_SCALAR
      if (block_rows > 0) {
        if (!f32) k::quantize_rows(dt, x.data(), 1, mt.k, xq16);
        const size_t row_bytes = f32 ? size_t(mt.k) : attnlens::dtype_bytes(dt, size_t(mt.k));
        for (int r = 0; r < mt.m; r += block_rows) {
          const int rows = std::min(block_rows, mt.m - r);
          if (f32) k::matvec(x.data(), wf.data() + mt.off + row_bytes * r, nullptr, y.data() + r, mt.k, rows);
          else k::matmul_q_rows(dt, x.data(), xq16, wq.data() + mt.off + row_bytes * r, nullptr, y.data() + r, 1, mt.k, rows);
        }
        continue;
      }
#endif
      if (!f32) {
        if (ref) k::ref::matmul_q(dt, x.data(), wq.data() + mt.off, nullptr, y.data(), 1, mt.k, mt.m);
        else k::matmul_q(dt, x.data(), wq.data() + mt.off, nullptr, y.data(), 1, mt.k, mt.m);
      } else {
        if (ref) k::ref::matvec(x.data(), wf.data() + mt.off, nullptr, y.data(), mt.k, mt.m);
        else k::matvec(x.data(), wf.data() + mt.off, nullptr, y.data(), mt.k, mt.m);
      }
    }
  };
  (void)run;
#ifndef ATTNLENS_BENCH_SCALAR
  if (o.simd) {
    Timing t = time_it(o, [&] { run(false); });
    print_line("simd", block_rows ? "decode_blocks" : "decode", attnlens::dtype_name(dt), 1, int(weights),
               int(mats.size()), flops, bytes, t, checksum(y));
  }
#endif
  if (o.ref && !block_rows) {
    Timing t = time_it(o, [&] { run(true); });
    print_line("ref", "decode", attnlens::dtype_name(dt), 1, int(weights), int(mats.size()), flops, bytes, t,
               checksum(y));
  }
}

// The machine's read bandwidth right now, for context: dot(a, a) over 128 MiB reads each byte
// once (the second load hits L1). Both builds use it; wasm scalar uses the scalar reference.
void bench_read(const Options& o) {
  if (!selected(o, "read stream")) return;
  const int n = 32 << 20;
  std::vector<float> a(size_t(n), 1.f);
  float sink = 0;
  Timing t = time_it(o, [&] {
#ifdef ATTNLENS_BENCH_SCALAR
    sink += k::ref::dot(a.data(), a.data(), n);
#else
    sink += k::dot(a.data(), a.data(), n);
#endif
  });
  print_line(
#ifdef ATTNLENS_BENCH_SCALAR
      "ref",
#else
      "simd",
#endif
      "read", "f32", 1, n, 1, 2.0 * n, 4.0 * n, t, sink);
}

#ifndef ATTNLENS_BENCH_SCALAR
namespace xs {
using V = xsimd::batch<float>;
template <class F>
void map(float* x, int n, F f) {  // n: a multiple of the width here
  for (int i = 0; i + int(V::size) <= n; i += int(V::size)) f(V::load_unaligned(x + i)).store_unaligned(x + i);
}
void gelu_tanh(float* x, int n) noexcept {
  const V c(0.7978845608028654f), k(0.044715f), half(0.5f), one(1.f);
  map(x, n, [&](V v) { return half * v * (one + xsimd::tanh(c * (v + k * v * v * v))); });
}
void gelu_erf(float* x, int n) noexcept {
  const V r(0.7071067811865476f), half(0.5f), one(1.f);
  map(x, n, [&](V v) { return half * v * (one + xsimd::erf(v * r)); });
}
void silu(float* x, int n) noexcept {
  const V one(1.f);
  map(x, n, [&](V v) { return v / (one + xsimd::exp(-v)); });
}
void softcap(float* x, int n) noexcept {
  const V c(30.f), inv(1.f / 30.f);
  map(x, n, [&](V v) { return c * xsimd::tanh(v * inv); });
}
}  // namespace xs
#endif

void softcap30(float* x, int n) noexcept { k::softcap(x, n, 30.f); }
void ref_softcap30(float* x, int n) noexcept { k::ref::softcap(x, n, 30.f); }

void bench_activations(const Options& o) {
  using Fn = void (*)(float*, int) noexcept;
  struct Case {
    const char* name;
    Fn simd, ref, xsimd;
  };
  const Case cases[] = {
#ifndef ATTNLENS_BENCH_SCALAR
      {"gelu_tanh", k::gelu_tanh, k::ref::gelu_tanh, xs::gelu_tanh}, {"gelu_erf", k::gelu_erf, k::ref::gelu_erf, xs::gelu_erf},
      {"silu", k::silu, k::ref::silu, xs::silu}, {"softcap", softcap30, ref_softcap30, xs::softcap},
#else
      {"gelu_tanh", nullptr, k::ref::gelu_tanh, nullptr}, {"gelu_erf", nullptr, k::ref::gelu_erf, nullptr},
      {"silu", nullptr, k::ref::silu, nullptr}, {"softcap", nullptr, ref_softcap30, nullptr},
#endif
  };
  const int n = 64 * 768;
  auto x0 = randn(size_t(n), 11);
  for (auto& v : x0) v *= 2.f;
  std::vector<float> x(x0.size());
  for (const Case& c : cases) {
    if (!selected(o, std::string("act ") + c.name)) continue;
    auto run = [&](const char* variant, Fn f) {
      Timing t = time_it(o, [&] {
        std::memcpy(x.data(), x0.data(), x.size() * 4);
        f(x.data(), n);
      });
      print_line(variant, c.name, "f32", 1, n, 1, double(n), 8.0 * n, t, checksum(x));
    };
    if (o.simd && c.simd) run("simd", c.simd);
    if (o.simd && c.xsimd) run("xsimd", c.xsimd);
    if (o.ref) run("ref", c.ref);
  }
}

// "attention rows": the two inner loops of one decode step's attention (kernels/attention.cpp, and
// kernels/attention_q8.cpp over a q8_0 KV cache) at the 110M shape: 12 heads × 2048 keys × head_dim 64,
// each head's keys and values distinct (f32 12.6 MB, q8_0 3.3 MB: in L3, not memory). "gflops" counts
// 2 operations per multiply-add (G op/s for the integer kernels); one call = the 12 heads. Not in
// bench_kernels_scalar: these scalar twins live beside their vector code, in files that build does not
// compile (--ref times them in the SIMD build).
#ifndef ATTNLENS_BENCH_SCALAR
void bench_attention_rows(const Options& o) {
  const int heads = 12, m = 2048, hd = 64;
  const size_t per_head = size_t(m) * hd;
  auto kf = randn(per_head * heads, 21), vf = randn(per_head * heads, 22), q = randn(size_t(hd), 23);
  std::vector<int8_t> k8(kf.size()), v8(vf.size());
  std::vector<uint16_t> kd(size_t(heads) * m * (hd / 32)), vd(kd.size());
  for (int h = 0; h < heads; ++h)
    for (int j = 0; j < m; ++j) {  // per head: rows [m][hd], scales [hd/32][m] (nn/kv_cache.h's layout)
      const size_t r = h * per_head + size_t(j) * hd, sd = size_t(h) * m * (hd / 32) + j;
      k::quantize_kv_q8_0(&kf[r], hd, &k8[r], &kd[sd], m);
      k::quantize_kv_q8_0(&vf[r], hd, &v8[r], &vd[sd], m);
    }
  std::vector<float> p(static_cast<size_t>(m)), out(static_cast<size_t>(hd) * heads);
  for (int j = 0; j < m; ++j) p[size_t(j)] = 1.f / m;
  const double ops = 2.0 * heads * m * hd;
  auto q8 = [&](const std::vector<int8_t>& x, const std::vector<uint16_t>& d, int h) {
    return k::Q8Rows{x.data() + h * per_head, d.data() + size_t(h) * m * (hd / 32), size_t(m)};
  };
  struct Case {
    const char *kernel, *dtype;
    double bytes;
    std::function<void(bool)> call;  // ref?
  };
  const Case cases[] = {
      {"attn_scores", "f32", 4.0 * per_head * heads,
       [&](bool ref) {
         for (int h = 0; h < heads; ++h)
           (ref ? k::ref::attention_scores : k::attention_scores)(q.data(), &kf[h * per_head], hd, hd, m, 0.125f, p.data());
       }},
      {"attn_values", "f32", 4.0 * per_head * heads,
       [&](bool ref) {
         for (int h = 0; h < heads; ++h)
           (ref ? k::ref::attention_values : k::attention_values)(p.data(), &vf[h * per_head], hd, hd, m, &out[size_t(h) * hd]);
       }},
      {"attn_scores", "q8_0", 34.0 / 32 * per_head * heads,
       [&](bool ref) {
         for (int h = 0; h < heads; ++h)
           (ref ? k::ref::attention_scores_q8 : k::attention_scores_q8)(q.data(), q8(k8, kd, h), hd, m, 0.125f, p.data());
       }},
      {"attn_values", "q8_0", 34.0 / 32 * per_head * heads,
       [&](bool ref) {
         for (int h = 0; h < heads; ++h)
           (ref ? k::ref::attention_values_q8 : k::attention_values_q8)(p.data(), q8(v8, vd, h), hd, m, &out[size_t(h) * hd]);
       }},
  };
  for (const Case& c : cases) {
    if (!selected(o, std::string(c.kernel) + "_" + c.dtype)) continue;
    for (bool ref : {false, true}) {
      if (ref ? !o.ref : !o.simd) continue;
      for (int j = 0; j < m; ++j) p[size_t(j)] = 1.f / m;  // the scores kernels overwrite p
      Timing t = time_it(o, [&] { c.call(ref); });
      print_line(ref ? "ref" : "simd", c.kernel, c.dtype, heads, m, hd, ops, c.bytes, t, checksum(out) + checksum(p));
    }
  }
}
#endif

}  // namespace

int main(int argc, char** argv) {
  Options o;
  bool quick = false;
#ifdef ATTNLENS_BENCH_SCALAR
  o.ref = true;
  o.simd = false;
#endif
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--filter") o.filter = next();
    else if (a == "--ref") o.ref = true;
    else if (a == "--no-simd") o.simd = false;
    else if (a == "--quick") quick = true;
    else if (a == "--cpu-time") g_cpu_time = true;
    else if (a == "--reps") o.reps = std::max(1, std::atoi(next()));
    else if (a == "--warm-ms") o.warm_ms = std::atof(next());
    else if (a == "--rep-ms") o.rep_ms = std::atof(next());
    else {
      std::fprintf(stderr,
                   "usage: bench_kernels [--filter SUBSTR] [--ref] [--no-simd] [--quick] [--cpu-time] [--reps N] "
                   "[--warm-ms MS] [--rep-ms MS]\n");
      return 2;
    }
  }
  if (quick) {
    o.reps = std::min(o.reps, 3);
    o.warm_ms = std::min(o.warm_ms, 100.0);
    o.rep_ms = std::min(o.rep_ms, 30.0);
  }
  if (!quick) bench_read(o);
  bench_activations(o);
#ifndef ATTNLENS_BENCH_SCALAR
  bench_attention_rows(o);
#endif
  for (const Shape& s : kMatvecShapes) bench_f32(o, s, quick);
  for (const Shape& s : kMatmulShapes) bench_f32(o, s, quick);
  using attnlens::DType;
  const DType quant[] = {DType::Q8_0, DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::IQ4_NL,
                         DType::Q2_K, DType::Q3_K, DType::Q4_K, DType::Q5_K, DType::Q6_K, DType::IQ4_XS};
  for (DType dt : quant) {
    for (const Shape& s : kMatvecShapes) bench_quant(o, dt, s, quick);
    for (const Shape& s : kMatmulShapes) bench_quant(o, dt, s, quick);
  }
  bench_decode(o, DType::F32);
  for (DType dt : quant) bench_decode(o, dt);
#ifndef ATTNLENS_BENCH_SCALAR
  for (DType dt : {DType::F32, DType::Q8_0, DType::Q4_0, DType::Q4_K, DType::Q6_K}) bench_decode(o, dt, false, 32);
#endif
  if (!quick)
    for (DType dt : {DType::Q8_0, DType::Q4_0}) bench_decode(o, dt, true);
  return 0;
}
