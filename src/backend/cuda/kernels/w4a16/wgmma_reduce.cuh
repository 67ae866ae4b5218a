// The second kernel of a wgmma split-K launch (w4a16_wgmma.cu; templated on the arguments, for
// any kernel whose arguments carry the same fields): y from the fp32 partials of the split tiles
// (wgmma_epilogue.cuh's store_partials).
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "backend/cuda/kernels/float_io.cuh"
#include "backend/cuda/kernels/launch.h"
#include "backend/cuda/kernels/pdl.cuh"
#include "backend/cuda/kernels/silu.cuh"
#include "backend/cuda/kernels/w4a16/w4a16_launch.h"
#include "backend/cuda/kernels/w4a16/w4a16_wgmma.h"
#include "backend/cuda/runtime/cuda_check.h"

namespace brisk::cuda {

// y from the partials of the split tiles (block_work): sum of the splits, + bias, silu_gate's
// silu(gate) * up. Block (x, y) takes 256 of split tile y's outputs (a tile's row or silu_gate's
// feature, and token), thread by thread along the rows: one division for the tile's place, a
// thread's within it in 32 bits by constants (64-bit divisions by runtime values for every
// output made this kernel instruction-bound).
inline constexpr int kWgmmaReduceThreads = 256;
__host__ __device__ constexpr int wgmma_reduce_cols(bool silu_gate) { return silu_gate ? kW4A16WgmmaBlockRows / 2 : kW4A16WgmmaBlockRows; }
template <bool kSiluGate, class Args>
__global__ void __launch_bounds__(kWgmmaReduceThreads) w4a16_wgmma_reduce_kernel(const Args a, int tokens) {
  // The partials of the kernel before; then the next kernel may launch at once (sooner than
  // released after the loop, docs/perf/w4a16.md).
  pdl_wait();
  pdl_release();
  constexpr int kCols = wgmma_reduce_cols(kSiluGate);
  const int64_t n_tiles = w4a16_wgmma_n_tiles(a), slot = blockIdx.y, tile = a.split_from_tile + slot;
  const int index = static_cast<int>(blockIdx.x) * kWgmmaReduceThreads + static_cast<int>(threadIdx.x);
  const int col = index % kCols, local = index / kCols;
  const int64_t token = tile / n_tiles * tokens + local, out = tile % n_tiles * kCols + col;
  if (local >= tokens || token >= a.m || out >= w4a16_y_cols(a)) return;
  const int64_t tile_floats = int64_t{tokens} * kW4A16WgmmaBlockRows;
  const int64_t split_floats = int64_t{gridDim.y} * tile_floats;  // one split of every split tile
  const float* p = a.partials + slot * tile_floats + local * kW4A16WgmmaBlockRows;
  auto sum = [&](int r, int64_t bias_row) {
    float v = a.bias != nullptr ? load_one(a.bias, a.bias_type, bias_row) : 0.0f;
    for (int s = 0; s < a.num_splits; ++s) v += p[s * split_floats + r];
    return v;
  };
  float v;
  if constexpr (kSiluGate) {  // feature col: gate row 64 wg + 16 warp + g, up 8 past it (store_partials)
    const int r = 64 * (col / 32) + 16 * (col % 32 / 8) + col % 8;
    v = silu_times(sum(r, out), sum(r + 8, a.n / 2 + out));
  } else {
    v = sum(col, out);
  }
  store_one(row_ptr(a.y, a.y_type, token, a.y_stride), a.y_type, out, v);
}

// The reduction of a launch with a.num_splits > 1 at `tokens` tokens a tile.
template <class Args>
void launch_wgmma_reduce(const Args& a, int tokens, cudaStream_t stream) {
  const int64_t split_tiles = w4a16_wgmma_tiles(a, tokens) - a.split_from_tile;
  const dim3 grid((tokens * wgmma_reduce_cols(a.silu_gate) + kWgmmaReduceThreads - 1) / kWgmmaReduceThreads,
                  static_cast<unsigned>(split_tiles));
  if (a.silu_gate) {
    launch_pdl(w4a16_wgmma_reduce_kernel<true, Args>, grid, dim3(kWgmmaReduceThreads), 0, stream, a, tokens);
  } else {
    launch_pdl(w4a16_wgmma_reduce_kernel<false, Args>, grid, dim3(kWgmmaReduceThreads), 0, stream, a, tokens);
  }
  BRISK_CUDA_CHECK(cudaGetLastError());
}

}  // namespace brisk::cuda
