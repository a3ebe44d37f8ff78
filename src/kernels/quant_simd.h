// Private to src/kernels: what the vector kernels of the block formats share (quant.cpp: blocks of
// 32; quant_k.cpp: super-blocks of 256). SSE4.1 intrinsics: natively real SSE4.1, in wasm
// emscripten's SSE→SIMD128 headers; where a SIMD128 instruction does in one what the SSE mapping
// does in two, it is called directly under __wasm_simd128__ (the high-half widenings, the byte
// table lookup). Every intrinsic here is one or two SIMD128 instructions (checked with
// wasm-objdump: i16x8.extend_*_i8x16_*, i32x4.dot_i16x8_s, i8x16.swizzle, i32x4.mul,
// f32x4.convert_i32x4_s, v128.load8x8_s).
//
// The activation rows: quant_scalar.h's formats, with the int8 values kept as int16 so they feed
// i32x4.dot_i16x8_s (_mm_madd_epi16, 8 products per instruction, exact in int32) directly.
#pragma once
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "core/tensor.h"
#include "kernels/quant_blocks.h"
#include "kernels/quant_scalar.h"

#if defined(__SSE4_1__)
#include <smmintrin.h>
#if defined(__wasm_simd128__)
#include <wasm_simd128.h>
#endif
#if defined(__F16C__)
#include <immintrin.h>
#endif
#define ATTNLENS_QUANT_SIMD 1
#endif

namespace attnlens::kernels::qsimd {

// One quantized row of x: int16 values [k], scales d [k/32 or k/256], q8_1's s [k/32], q8_K's
// Σ per 16 [k/16], for Layout::Nib4 a correction per block of 32 (4 int32 lanes), and in the
// relaxed-SIMD variant the same values as int8 [k] in the order bytes_of(type) gives (else null).
struct ActRow {
  const int16_t* q;
  const float* d;
  const float* s;
  const int16_t* bsums;
  const int32_t* corr;
  const int8_t* q8;
};

// How the int16 values of a row are laid out, chosen by the weight type so that its kernel needs
// the fewest operations to bring the weights next to them (the values and the sums are those of
// quant_scalar.h in every layout; only their order and a power-of-two factor differ):
//   Natural    element order.
//   EvenOddDiff  per 16 elements, the 8 even ones e[i] = x[2i], then o[i] − 256·e[i] with
//              o[i] = x[2i+1] (|·| ≤ 127 + 256·127 = 32639 fits int16). A 16-byte vector of byte weights
//              read as 8 int16 lanes holds element 2i in the low byte of lane i and 2i + 1 in the
//              high byte, v = w[2i] + 256·w[2i+1] (w < 128 here), so
//                v·e[i] + (v >> 8)·(o[i] − 256·e[i]) = w[2i]·x[2i] + w[2i+1]·x[2i+1],
//              exactly, in two i32x4.dot_i16x8_s (dot_eo, quant_k.cpp): the low byte needs no mask
//              and no byte widening, one shift per 16 weights (q2_K, q3_K, and q4_K / q5_K in the
//              portable builds; int32 lane j sums elements 4j … 4j + 3 of each 16). The prefill tiles
//              multiply each half by its sub-block scale first and need o itself: pack_tile undoes
//              the difference.
//   Nib4       q4_0: per block of 32, four vectors of 8 lanes, 256·x[2i], x[2i+1], 16·x[16+2i],
//              256·x[17+2i]. The 16 nibble bytes read as int16 lanes hold nibbles 2i, 16+2i, 2i+1,
//              17+2i at bits 0, 4, 8, 12: `v & 0x000F`, `v & 0x00F0`, `v & 0x0F00` and `v >> 12`
//              against those four vectors give every product times 256 (|256·x| ≤ 32512 fits
//              int16), one operation per 8 weights. corr (lane j: −2048·Σ of the 8 x of lane j)
//              adds q4_0's −8; d is stored ×2^-8, so (d_w·d_x)·Σ comes out bitwise as in Natural
//              (power-of-two factors are exact in the conversions and products).
enum class Layout { Natural, EvenOddDiff, Nib4 };

// The int8 copy of a row's values (ActRow::q8) that the relaxed-SIMD variant's decode kernels and
// prefill tiles (Tile8) read with i16x8.relaxed_dot_i8x16_i7x16_s (quant.cpp, quant_k.cpp: 16
// products of an int8 and a 7-bit weight in one instruction, summed in pairs to int16 lanes; one x86
// pmaddubsw). The kernels keep the int32 lanes of their portable twins — lane j of a block sums the
// same elements, exactly — so both variants, decode and prefill, give the same bits:
//   None     no copy (the portable builds; the types without such a kernel).
//   Natural  element order (q4_0, q4_K, q5_K).
//   Pairs8   per 16 elements the order 0 1 8 9 2 3 10 11 4 5 12 13 6 7 14 15 (q6_K: its portable lane
//            j holds elements 2j, 2j + 1, 8 + 2j, 9 + 2j of each 16; the weights get the same order by
//            one byte shuffle per 16).
enum class Bytes { None, Natural, Pairs8 };
// 1 where rows carry the int8 copy (the relaxed-SIMD variant), else 0: the kernels advance their
// pointer into it by kBytesStep × the elements (0 keeps a null pointer null).
#if defined(ATTNLENS_RELAXED_SIMD)
constexpr int kBytesStep = 1;
#else
constexpr int kBytesStep = 0;
#endif

#if ATTNLENS_QUANT_SIMD

// The layout the kernels of weight type t read, and the order of its int8 copy.
Layout layout_of(DType t);
Bytes bytes_of(DType t);

// Where quantize_row writes one row (the fields of ActRow; q8 only with Bytes other than None).
struct ActOut {
  int16_t* q;
  float* d;
  float* s;
  int16_t* bsums;
  int32_t* corr;
  int8_t* q8;
};

// Quantizes one row of x (k a multiple of the activation block) in the format `act` (quant_scalar.h),
// the layout `lay` and the int8 order `by`.
void quantize_row(qs::Act act, Layout lay, Bytes by, const float* x, int k, const ActOut& out);

// The f16 block scale as f32. Natively with F16C one instruction; otherwise (wasm) a 256 KiB table
// built on first use: one scalar load per block instead of ~12 integer ops, and the entries a
// matrix uses (its scales span a few binades) stay in L1.
#if defined(__F16C__)
struct F16 {
  float operator()(const uint8_t* p) const { return _cvtsh_ss(qb::u16(p)); }
};
#else
const float* f16_table();
struct F16 {
  const float* table = f16_table();
  float operator()(const uint8_t* p) const { return table[qb::u16(p)]; }
};
#endif

// An ordering point for V8's TurboFan, which keeps a basic block's loads in program order but places
// the arithmetic as late as it can: an unrolled loop body then loads everything first and spills the
// loaded vectors to the stack. A volatile store of v is an effect that the later loads must follow, and
// it needs v, so the work that makes v is done before the next loads (one store to the stack).
inline void order_point(__m128i v) {
  [[maybe_unused]] volatile __m128i sink = v;
}
inline __m128i load16(const uint8_t* p) { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); }
inline __m128i load8_s16(const uint8_t* p) {  // 8 int8 → int16 (v128.load8x8_s)
  return _mm_cvtepi8_epi16(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
}
inline __m128i bytes(int v) { return _mm_set1_epi8(char(v)); }

// Widening of the low / high 8 bytes to 8 int16 lanes, unsigned and signed.
inline __m128i lo_u16(__m128i v) { return _mm_cvtepu8_epi16(v); }
inline __m128i lo_s16(__m128i v) { return _mm_cvtepi8_epi16(v); }
inline __m128i hi_u16(__m128i v) {
#if defined(__wasm_simd128__)
  return wasm_u16x8_extend_high_u8x16(v);
#else
  return _mm_unpackhi_epi8(v, _mm_setzero_si128());
#endif
}
inline __m128i hi_s16(__m128i v) {
#if defined(__wasm_simd128__)
  return wasm_i16x8_extend_high_i8x16(v);
#else
  return _mm_cvtepi8_epi16(_mm_srli_si128(v, 8));
#endif
}

// Byte table lookup: out[i] = table[idx[i]] for idx[i] in 0..15.
inline __m128i lookup16(__m128i table, __m128i idx) {
#if defined(__wasm_simd128__)
  return wasm_i8x16_swizzle(table, idx);
#else
  return _mm_shuffle_epi8(table, idx);
#endif
}
// 16 bytes put in Bytes::Pairs8's order: lookup16(v, pairs8_order()).
inline __m128i pairs8_order() { return _mm_setr_epi8(0, 1, 8, 9, 2, 3, 10, 11, 4, 5, 12, 13, 6, 7, 14, 15); }

// Low and high nibbles of 16 bytes, as bytes 0..15.
inline __m128i nib_lo(__m128i v) { return _mm_and_si128(v, bytes(0x0F)); }
inline __m128i nib_hi(__m128i v) { return _mm_and_si128(_mm_srli_epi16(v, 4), bytes(0x0F)); }

// Σ over 16 byte-valued weights (unsigned or signed) × 16 int16 activations at x → int32x4 partial sums.
inline __m128i dot16_u8(__m128i w, const int16_t* x) {
  const __m128i* xv = reinterpret_cast<const __m128i*>(x);
  return _mm_add_epi32(_mm_madd_epi16(lo_u16(w), _mm_load_si128(xv)), _mm_madd_epi16(hi_u16(w), _mm_load_si128(xv + 1)));
}
inline __m128i dot16_s8(__m128i w, const int16_t* x) {
  const __m128i* xv = reinterpret_cast<const __m128i*>(x);
  return _mm_add_epi32(_mm_madd_epi16(lo_s16(w), _mm_load_si128(xv)), _mm_madd_epi16(hi_s16(w), _mm_load_si128(xv + 1)));
}

#if defined(ATTNLENS_RELAXED_SIMD)
// 16 int8 x against 16 bytes w in 0..127: lane i = x[2i]·w[2i] + x[2i+1]·w[2i+1] as int16
// (i16x8.relaxed_dot_i8x16_i7x16_s; its result is the same everywhere while w < 128 and the pair
// sums fit int16, which every caller's bounds keep).
inline __m128i relaxed_dot16(const void* x, __m128i w) {
  return (__m128i)wasm_i16x8_relaxed_dot_i8x16_i7x16(wasm_v128_load(x), (v128_t)w);
}
inline __m128i relaxed_dot16(__m128i x, __m128i w) {
  return (__m128i)wasm_i16x8_relaxed_dot_i8x16_i7x16((v128_t)x, (v128_t)w);
}
// 32 int8 x against w0 (for x[0..16)) and w1 (for x[16..32)), bytes in 0..127: int16 lane i =
// x[2i]·w0[2i] + x[2i+1]·w0[2i+1] + x[16+2i]·w1[2i] + x[17+2i]·w1[2i+1] (the callers keep
// 4·max w·127 < 2^15).
inline __m128i relaxed_dot32(const int8_t* x, __m128i w0, __m128i w1) {
  return _mm_add_epi16(relaxed_dot16(x, w0), relaxed_dot16(x + 16, w1));
}
// int32 lane j = int16 lanes 2j + 2j+1 (i32x4.extadd_pairwise_i16x8_s).
inline __m128i pair_sums(__m128i p) { return (__m128i)wasm_i32x4_extadd_pairwise_i16x8((v128_t)p); }
#endif

inline float lanes_sum(__m128 a) {  // (a0 + a1) + (a2 + a3)
  const __m128 t = _mm_add_ps(a, _mm_shuffle_ps(a, a, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm_cvtss_f32(_mm_add_ss(t, _mm_movehl_ps(t, t)));
}
inline int32_t lanes_sum_i32(__m128i a) {
  a = _mm_add_epi32(a, _mm_shuffle_epi32(a, _MM_SHUFFLE(1, 0, 3, 2)));
  a = _mm_add_epi32(a, _mm_shuffle_epi32(a, _MM_SHUFFLE(2, 3, 0, 1)));
  return _mm_cvtsi128_si32(a);
}

// acc += float(s) · scale, lane-wise.
inline __m128 scale_add(__m128 acc, __m128i s, float scale) {
  return _mm_add_ps(acc, _mm_mul_ps(_mm_cvtepi32_ps(s), _mm_set1_ps(scale)));
}

// Σ_j c[j]·bsums[j] over the 16 sub-sums of one q8_K block, c given as 16 int16 (two vectors):
// the min / offset terms of the K-quants, as int32x4 partial sums.
inline __m128i bsum_dot(__m128i c_lo, __m128i c_hi, const int16_t* bsums) {
  const __m128i* b = reinterpret_cast<const __m128i*>(bsums);
  return _mm_add_epi32(_mm_madd_epi16(c_lo, _mm_loadu_si128(b)), _mm_madd_epi16(c_hi, _mm_loadu_si128(b + 1)));
}

// out[r] = W_r·x for R rows of W (r = 0..R-1 at w + r·stride) over nb blocks (of 32 or 256), x one
// quantized activation row. Two rows per call let the rows share every activation load.
using RowsDot = void (*)(const uint8_t* w, size_t stride, const ActRow& a, int nb, float* out);
// Rows per call of a block type T's decode kernel: T::kRows (4) where the type says so, else 2
// (quant.cpp walk_rows says why); the callers' pick() offers that R and 1.
template <class T, class = void>
struct RowsPerCall : std::integral_constant<int, 2> {};
template <class T>
struct RowsPerCall<T, std::void_t<decltype(T::kRows)>> : std::integral_constant<int, T::kRows> {};
RowsDot rows_dot_32(DType t, int R);          // quant.cpp: q8_0 q4_0 q4_1 q5_0 q5_1 iq4_nl
RowsDot rows_dot_superblock(DType t, int R);  // quant_k.cpp: q2_K … q6_K, iq4_xs

// Prefill tile: one row of W against kTileTokens activation rows, out[t·out_stride] = W·x_t. Each
// block of W is decoded once and used for every token of the tile; per token the integer lanes and
// the float operations are those of RowsDot, in the same order, so the results are bitwise those of
// RowsDot (test_kernels_quant). The tile's activations are packed (pack_tile in quant.cpp) block by
// block, the kTileTokens tokens side by side, so that every load in the inner loop is at a constant
// offset from one pointer that moves once per block (wasm's load offset immediate: no address
// arithmetic per token; with rows apart, each token's address cost adds and its pointer a register).
// Per activation block (32 or 256 elements), with QB bytes per token and 32 values (64: the int16
// values; 32: the int8 copy, in the relaxed-SIMD variant for the types that have one, bytes_of):
//   32:  q [32 el / QB B per token], corr [16 B per token] (Layout::Nib4), d [float ×4 per token]
//   256: q chunk j of 32 elements (j = 0..7): [token] QB B each, bsums [16 int16 per token], d [float].
// The 32-element tiles' d is stored 4 times (16 bytes): they multiply d_w by it as a vector, which
// saves the splat of d_w·d_x per token and block (the same product in every lane: same bits). The
// super-block tiles use d once per token and 256 elements, as a scalar.
constexpr int kTileTokens = 8;  // 4-9% faster than 4 in wasm (bench_kernels --cpu-time, 64x768x2048)
template <int QB>
struct TileAt {
  static constexpr int kQ = QB;
  static constexpr int kCorr32 = kTileTokens * QB, kD32 = kCorr32 + kTileTokens * 16, kBlock32 = kD32 + kTileTokens * 16;
  static constexpr int kBsums256 = kTileTokens * 8 * QB, kD256 = kBsums256 + kTileTokens * 32,
                       kBlock256 = kD256 + kTileTokens * 4;
};
using Tile16 = TileAt<64>;
using Tile8 = TileAt<32>;
using TileDot = void (*)(const uint8_t* w, const uint8_t* xp, int nb, float* out, size_t out_stride);
// The tile of t reads Tile8 where bytes_of(t) is not Bytes::None (the int8 copy), else Tile16.
TileDot tile_dot_32(DType t);          // nullptr: no tile kernel for t (the driver uses RowsDot)
TileDot tile_dot_superblock(DType t);

#endif  // ATTNLENS_QUANT_SIMD

}  // namespace attnlens::kernels::qsimd
