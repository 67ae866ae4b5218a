// Which (N, M) tile, K chunks and weight rows a block and its warps of the W4A16 wgmma kernel
// (w4a16_wgmma.cu) take, as w4a16_wgmma_plan laid them out; the FP8 kernel (fp8/fp8_wgmma.cu)
// takes its tiles the same way, without K splits.
#pragma once

#include <cstdint>

#include "backend/cuda/kernels/launch.h"
#include "backend/cuda/kernels/w4a16/w4a16_wgmma.h"

namespace brisk::cuda {

inline constexpr int kWgmmaTilesPerBlock = kW4A16WgmmaBlockRows / 16;  // 16-row weight tiles

// The block's work: blocks before a.split_from_tile take that tile over all of K, the rest one
// K split of a tile from it on (split s of the i-th such tile: block split_from_tile + s * count
// + i). Tile i: N tile i % n_tiles, token tile i / n_tiles.
struct BlockWork {
  int64_t tile, n_tile, split_slot;  // split_slot: the tile's place in the partials, -1 when whole
  int m_tile, split;
};
template <class Args>
__device__ __forceinline__ BlockWork block_work(const Args& a, int tokens) {
  const int64_t n_tiles = w4a16_wgmma_n_tiles(a), b = blockIdx.x;
  const int64_t tiles = w4a16_wgmma_tiles(a, tokens), first = a.split_from_tile;
  BlockWork w{b, 0, -1, 0, 0};
  if (a.num_splits > 1 && b >= first) {
    const int64_t count = tiles - first, u = b - first;
    w.split = static_cast<int>(u / count);
    w.tile = first + u % count;
    w.split_slot = u;  // split * count + (tile - first)
  }
  w.n_tile = w.tile % n_tiles;
  w.m_tile = static_cast<int>(w.tile / n_tiles);
  return w;
}

// The block's tile and its chunks of kChunkK K values. Blocks start at different chunks (rotated by their N
// tile), so that the blocks running side by side read different x tiles rather than all the
// same lines of L2.
template <int kTokens, int kChunkK = kW4A16WgmmaChunkK>
struct WgmmaTile {
  BlockWork work;
  bool split;      // a K split of the tile (fp32 partials), not all of K
  int64_t tile0;   // the block's first 16-row weight tile
  int m0;          // its first token
  int c_begin, num_chunks, rotation;

  template <class Args>
  __device__ __forceinline__ explicit WgmmaTile(const Args& a)
      : work(block_work(a, kTokens)),
        split(work.split_slot >= 0),
        tile0(work.n_tile * kWgmmaTilesPerBlock),
        m0(work.m_tile * kTokens) {
    const int num_chunks_total = static_cast<int>(a.k / kChunkK);
    const int chunks_per_split = split ? static_cast<int>(a.k_per_split / kChunkK) : num_chunks_total;
    c_begin = work.split * chunks_per_split;
    num_chunks = min(num_chunks_total - c_begin, chunks_per_split);
    rotation = num_chunks > 0 ? static_cast<int>(work.n_tile % num_chunks) : 0;
  }
  // The block's i-th chunk.
  __device__ __forceinline__ int chunk_of(int i) const {
    const int r = i + rotation;
    return c_begin + (r >= num_chunks ? r - num_chunks : r);
  }
};

// A consumer warp's weight rows: rows g and g + 8 (h = 0, 1) of the block's 16-row tile 4 wg +
// warp, at warp_offset and kRow8Offset past it in a stage's weights. With kSiluGate, features
// f0 + g: rows f0 + g (gate: half tile tile_in_block of the block's 4 gate tiles) and N / 2 +
// f0 + g (up: the same in the 4 up tiles).
template <bool kSiluGate>
struct WgmmaWarpRows {
  static constexpr int kRow8Offset = kSiluGate ? kWgmmaTilesPerBlock * 1024 / 2 : 512;
  int wg, warp, lane, g, t;
  bool valid;       // the warp's rows lie inside N (uniform per warp; a warp past N stores nothing)
  int64_t row[2];   // clamped into N
  int warp_offset;  // bytes into a stage's weights

  template <class Args>
  __device__ __forceinline__ WgmmaWarpRows(const Args& a, int64_t tile0) {
    const int ctid = threadIdx.x;
    wg = ctid / 128, warp = (ctid / 32) % 4, lane = ctid % 32, g = lane / 4, t = lane % 4;
    const int tile_in_block = 4 * wg + warp;
    const int64_t tile = tile0 + tile_in_block, half_n = a.n / 2, f0 = tile0 * 8 + 8 * tile_in_block;
    valid = kSiluGate ? f0 < half_n : tile * 16 < a.n;
    row[0] = min(kSiluGate ? f0 + g : tile * 16 + g, a.n - 1);
    row[1] = min(kSiluGate ? half_n + f0 + g : tile * 16 + 8 + g, a.n - 1);
    warp_offset = kSiluGate ? tile_in_block * 512 : tile_in_block * 1024;
  }
};

}  // namespace brisk::cuda
