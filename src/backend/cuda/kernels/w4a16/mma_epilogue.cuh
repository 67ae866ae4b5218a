// The outputs of the W4A16 mma.sync kernel (w4a16_mma.cu): each lane stores its own
// accumulators, c0, c1 of row g and c2, c3 of row g + 8 (silu_gate: the up row), for tokens
// 2t, 2t + 1 of each 8-token tile. With split-K they go to the fp32 partials [split, M, N] that
// launch_w4a16_reduce sums; otherwise to y, + bias, and with silu_gate as silu(gate) * up.
#pragma once

#include <cstdint>

#include "backend/cuda/kernels/float_io.cuh"
#include "backend/cuda/kernels/launch.h"
#include "backend/cuda/kernels/silu.cuh"
#include "backend/cuda/kernels/w4a16/mma_tile_scheduler.cuh"

namespace brisk::cuda {

template <int kMTiles, int kNTiles, bool kSiluGate>
__device__ __forceinline__ void mma_store(const W4A16Args& a, const float (&acc)[kMTiles][kNTiles][4],
                                          const MmaWarpTile<kNTiles, kSiluGate>& tile, int g, int t) {
  auto bias_of = [&](int64_t n) { return a.bias != nullptr ? load_one(a.bias, a.bias_type, n) : 0.0f; };
#pragma unroll
  for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
    for (int nt = 0; nt < kNTiles; ++nt)
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const int token = 8 * mt + 2 * t + (i & 1);
        const int64_t n = tile.first_row(nt, i >> 1) + g;
        if (token >= a.m || (kSiluGate ? tile.n0 + 8 * nt + g >= tile.half_n : n >= a.n)) continue;
        if (a.num_splits > 1) {
          a.partials[(int64_t{blockIdx.y} * a.m + token) * a.n + n] = acc[mt][nt][i];
        } else if constexpr (!kSiluGate) {
          store_one(row_ptr(a.y, a.y_type, token, a.y_stride), a.y_type, n, acc[mt][nt][i] + bias_of(n));
        } else if (i < 2) {  // feature n: gate here, up in c2 / c3
          const float v = silu_times(acc[mt][nt][i] + bias_of(n), acc[mt][nt][i + 2] + bias_of(tile.half_n + n));
          store_one(row_ptr(a.y, a.y_type, token, a.y_stride), a.y_type, n, v);
        }
      }
}

}  // namespace brisk::cuda
