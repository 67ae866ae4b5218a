// Which weight rows and which K range a warp of the W4A16 mma.sync kernel (w4a16_mma.cu) takes.
// Warp w of block (x, y) takes 16 kNTiles consecutive rows from n0 = (4 x + w) 16 kNTiles over K
// split y. With silu_gate it takes 8 kNTiles features from n0 instead: tile nt's first 8 rows
// (h = 0) their gate rows and the other 8 their up rows (+ N / 2), so that each lane holds the
// gate and up sums of the features it stores.
#pragma once

#include <cstdint>

#include "backend/cuda/kernels/launch.h"

namespace brisk::cuda {

inline constexpr int kW4A16MmaWarps = 4;  // a block's
inline constexpr int kW4A16MmaThreads = 32 * kW4A16MmaWarps;

template <int kNTiles, bool kSiluGate>
struct MmaWarpTile {
  int64_t half_n, n0;
  bool active;  // the warp's rows start inside N (uniform per warp)

  __device__ __forceinline__ explicit MmaWarpTile(const W4A16Args& a)
      : half_n(a.n / 2),
        n0((int64_t{blockIdx.x} * kW4A16MmaWarps + threadIdx.x / 32) * (kSiluGate ? 8 : 16) * kNTiles),
        active(n0 < (kSiluGate ? half_n : a.n)) {}

  // The first of the 8 rows g = 0..7 of tile nt, half h.
  __device__ __forceinline__ int64_t first_row(int nt, int h) const {
    return kSiluGate ? h * half_n + n0 + 8 * nt : n0 + 16 * nt + 8 * h;
  }
};

// The block's K range [begin, end), in 32 bits (K < 2^31).
struct MmaKSplit {
  int begin, end;
  __device__ __forceinline__ explicit MmaKSplit(const W4A16Args& a)
      : begin(static_cast<int>(blockIdx.y * a.k_per_split)),
        end(static_cast<int>(min(a.k, int64_t{begin} + a.k_per_split))) {}
};

}  // namespace brisk::cuda
