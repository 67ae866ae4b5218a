// Where the W4A16 mma.sync kernel (w4a16_mma.cu) reads x, its B fragments, from
// (W4A16XSource): a copy a small kernel first writes in fragment order (permute_x: the 16 bytes
// lane l needs for tile mt, chunk and word w are unit ((mt * K / 128 + chunk) * 4 + w) * 32 + l,
// so a warp's x loads are 512 contiguous bytes, with the chunk sums xsum [K / 128, 8 m_tiles]);
// or shared memory that each block fills once with its tokens' x over its K range, already in
// pair order, with each token's sums per chunk (no first kernel, and fewer instructions a step).
// Both give the same values: fragment() word w (8 x values as pairs (i, i + 4)) of a token tile,
// sums() the chunk's x sums of the lane's tokens 2t, 2t + 1.
#pragma once

#include <cstdint>

#include "backend/cuda/kernels/float_io.cuh"
#include "backend/cuda/kernels/launch.h"
#include "backend/cuda/kernels/w4a16/int4_pairs.cuh"
#include "backend/cuda/kernels/w4a16/w4a16_configs.h"

namespace brisk::cuda {

// The sum of the 8 16-bit x values of v (one lane's share of a chunk sum).
__device__ __forceinline__ float sum8(const uint4& v, FloatType type) {
  float f[8];
  load8(&v, type, 0, f);
  return ((f[0] + f[1]) + (f[2] + f[3])) + ((f[4] + f[5]) + (f[6] + f[7]));
}

// x over a block's K range [k_begin, k_end) in shared memory (w4a16_shared_x_bytes): the rows
// in pair order (pair_halves), then each token's sum over each 128-K chunk.
struct MmaSharedXLayout {
  int units, chunks_local, row_units;
  uint4* x;
  float* sums;
  __device__ __forceinline__ MmaSharedXLayout(const W4A16Args& a, uint4* shared, int k_begin, int k_end)
      : units((k_end - k_begin) / 8),
        chunks_local((k_end - k_begin) / 128),
        row_units(static_cast<int>(w4a16_shared_x_units(k_end - k_begin))),
        x(shared),
        sums(reinterpret_cast<float*>(shared + a.m * row_units)) {}

  // Every thread of the block (kThreads) takes part: row by row, each token's sums on 16
  // consecutive lanes (16 consecutive units). kFillLoads loads a thread are in flight at once:
  // every block reads the same x at the start, and one at a time each would wait out that
  // contention in turn.
  template <int kThreads>
  __device__ __forceinline__ void fill(const W4A16Args& a, int k_begin) const {
    constexpr int kFillLoads = 4;
    const int total = a.m * units;
    for (int base = 0; base < total; base += kFillLoads * kThreads) {  // uniform: every lane shuffles
      uint4 v[kFillLoads];
      int token[kFillLoads], j[kFillLoads];
#pragma unroll
      for (int b = 0; b < kFillLoads; ++b) {
        const int u = base + b * kThreads + static_cast<int>(threadIdx.x);
        token[b] = u < total ? u / units : a.m;
        j[b] = u - token[b] * units;
        v[b] = make_uint4(0, 0, 0, 0);
        if (token[b] < a.m) {
          v[b] = __ldg(reinterpret_cast<const uint4*>(static_cast<const uint16_t*>(a.x) + token[b] * a.x_stride +
                                                      k_begin + 8 * j[b]));
        }
      }
#pragma unroll
      for (int b = 0; b < kFillLoads; ++b) {
        float sum = sum8(v[b], a.x_type);
#pragma unroll
        for (int o = 1; o < 16; o *= 2) sum += __shfl_xor_sync(0xFFFFFFFFu, sum, o);
        if (token[b] < a.m) {
          x[token[b] * row_units + j[b]] = pair_halves(v[b]);
          if (j[b] % 16 == 0) sums[token[b] * chunks_local + j[b] / 16] = sum;
        }
      }
    }
  }
};

// A lane's reads of the block's shared x. Tokens past M read the last token's x: their MMA
// columns are never stored.
template <int kMTiles, int kChunks>
struct MmaSharedX {
  const uint4* x;
  const float* sums_;
  int k_begin;
  int x_row[kMTiles], sum_row[kMTiles][2];

  __device__ __forceinline__ MmaSharedX(const W4A16Args& a, const MmaSharedXLayout& l, int k_begin_, int g, int t)
      : x(l.x), sums_(l.sums), k_begin(k_begin_) {
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt) {
      x_row[mt] = min(8 * mt + g, a.m - 1) * l.row_units + 4 * t;
      sum_row[mt][0] = min(8 * mt + 2 * t, a.m - 1) * l.chunks_local;
      sum_row[mt][1] = min(8 * mt + 2 * t + 1, a.m - 1) * l.chunks_local;
    }
  }
  // Word w of chunk c of the step at k0 (chunk: its index in K), token tile mt; zeros for a chunk
  // past the split (valid false) in a step of several.
  __device__ __forceinline__ uint4 fragment(int mt, int k0, int c, int chunk, int w, bool valid) const {
    uint4 xv = make_uint4(0, 0, 0, 0);
    if (kChunks == 1 || valid) xv = x[x_row[mt] + ((k0 - k_begin) >> 3) + 16 * c + w];
    return xv;
  }
  __device__ __forceinline__ void sums(int mt, int k0, int c, int chunk, float& x0, float& x1) const {
    const int cl = ((k0 - k_begin) >> 7) + c;
    x0 = sums_[sum_row[mt][0] + cl];
    x1 = sums_[sum_row[mt][1] + cl];
  }
};

// A lane's reads of the fragment-order copy of x (tokens past M are zeros there).
template <int kMTiles>
struct MmaPermutedX {
  const uint4* xp;
  const float* xsum;
  int64_t chunks_per_row;
  int lane, t;

  __device__ __forceinline__ uint4 fragment(int mt, int k0, int c, int chunk, int w, bool valid) const {
    uint4 xv = make_uint4(0, 0, 0, 0);
    if (valid) xv = __ldg(xp + ((mt * chunks_per_row + chunk) * 4 + w) * 32 + lane);
    return xv;
  }
  __device__ __forceinline__ void sums(int mt, int k0, int c, int chunk, float& x0, float& x1) const {
    const int token = 8 * mt + 2 * t;
    const float2 v = *reinterpret_cast<const float2*>(xsum + chunk * (8 * kMTiles) + token);
    x0 = v.x;
    x1 = v.y;
  }
};

}  // namespace brisk::cuda
