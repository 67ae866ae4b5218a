// Launchers of the W4A16 prefill kernel (w4a16_wgmma.cu): wgmma with the int4 weights
// dequantized into the A registers, for M past the mma.sync kernel's range. Arguments are
// launch.h's W4A16Args.
#pragma once

#include <cstdint>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "backend/cuda/kernels/launch.h"

namespace brisk::cuda {

// A block's weight rows (two consumer warpgroups of 64, the wgmma's M) and the K values of one
// pipeline stage (a chunk).
inline constexpr int kW4A16WgmmaBlockRows = 128;
inline constexpr int kW4A16WgmmaChunkK = 128;
// The (N, M) tiles of a block each at `tokens` tokens a block, N tile fastest: tile i covers
// rows 128 (i % N tiles) .. and tokens tokens * (i / N tiles) ...
// (Args: W4A16Args or another kernel's arguments with the same m and n.)
template <class Args>
__host__ __device__ inline int64_t w4a16_wgmma_n_tiles(const Args& a) {
  return (a.n + kW4A16WgmmaBlockRows - 1) / kW4A16WgmmaBlockRows;
}
template <class Args>
__host__ __device__ inline int64_t w4a16_wgmma_tiles(const Args& a, int tokens) {
  return w4a16_wgmma_n_tiles(a) * ((a.m + tokens - 1) / tokens);
}

// y (or the fp32 partials) = x * dequant(w)^T as w4a16_wgmma_plan (w4a16_plan.h) planned it: x f16
// or bf16 with rows 16-byte aligned, qweight in Int4Layout::kTiles16 (n % 16 == 0), k % 128 == 0,
// group_size a multiple of 32, scales and y of any float type. x_perm: for configurations with
// permuted_x (w4a16_configs.h), scratch of m * k elements of x's dtype, 16-byte aligned (x with
// each 128-K chunk permuted into the weights' K order); unused (may be null) otherwise.
void launch_w4a16_wgmma(const W4A16Args& a, void* x_perm, cudaStream_t stream);
// The kernel's tensor map over x [m, k] (16-bit, rows `stride` elements apart, 16-byte aligned):
// boxes of 64 columns x `tokens` rows, 128-byte swizzle, rows past m read as zeros
// (w4a16_x_tensor_map.cc: host code).
CUtensorMap w4a16_x_tensor_map(const void* x, FloatType type, int m, int64_t k, int64_t stride, int tokens);

}  // namespace brisk::cuda
