// Private to src/kernels: the order in which one token of decode walks the rows of a weight matrix
// (matvec, matvec_half in matmul.cpp; the block formats' walk_rows in quant.cpp).
//
// W is streamed from memory once per token, so how the rows are read decides the speed. The rows
// are cut into kStreams equal parts and pass j takes row j of every part, R parts per kernel call
// (the R rows share each load of x): every part is one long sequential stream through W, and
// kStreams of them are in flight at once.
//   * Long streams: reading adjacent rows side by side instead (short streams that restart at every
//     row) measured 2-3× slower from DRAM on an AMD EPYC, Node 20 and native alike: the hardware
//     prefetcher retrains at every restart, and wasm has no prefetch instruction.
//   * Many of them: one core's read rate grows with the sequential streams it keeps going. On an
//     Intel Xeon (4 KiB pages) a q8_0-like kernel read 5.8 / 8.4 / 11.8 / 12.9 GB/s with 1 / 2 / 4 /
//     8 streams (native SSE4.1), and rand110M's q8_0 decode in wasm went from 52 to 76 tok/s when its
//     2 streams became 8 (bench/README.md, "Decode: eight streams through W").
// Each row's dot product is computed the same way whichever pass, partner or leftover path it
// takes (the callers' single-row functions have the R-row kernels' arithmetic), so the results do
// not depend on the walk: nor on how nn::linear splits the rows over threads.
#pragma once

namespace attnlens::kernels {

constexpr int kStreams = 8;

// group(first, part): rows first + r·part for r < R; single(row): one row. R divides kStreams.
// Matrices of fewer than 8 rows per stream are walked as R streams.
template <class Group, class Single>
inline void walk_streams(int rows, int R, Group&& group, Single&& single) {
  const int streams = rows >= kStreams * 8 ? kStreams : R;
  const int part = rows / streams;
  for (int j = 0; j < part; ++j)
    for (int s = 0; s < streams; s += R) group(j + s * part, part);
  for (int j = streams * part; j < rows; ++j) single(j);
}

}  // namespace attnlens::kernels
