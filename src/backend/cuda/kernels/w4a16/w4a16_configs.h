// The configurations the W4A16 kernels are compiled in (one instantiation each). Which one runs
// for a call is the plan's choice (w4a16_plan.h), from the GPU's tuning table
// (backend/cuda/tuning/w4a16_tuning.h). Host and device code include it.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

namespace brisk::cuda {

// --- The mma.sync kernel (w4a16_mma.cu): decode and short prefills -------------------------------

// Where the mma.sync kernel's lanes get x (its B fragments) from: a copy a first small kernel
// writes in fragment order (kPermuted: a warp's loads are 512 contiguous bytes), or shared memory
// that each block fills once with its rows and K range (kShared: fewer instructions a step; the
// fill costs more with M, and the K range is split further where it would not fit).
enum class W4A16XSource { kPermuted, kShared };

// One instantiation of the mma.sync kernel: m_tiles fragments of 8 tokens, n_tiles tiles of 16
// weight rows per warp, chunks 16-byte weight loads per lane and row in a pipeline step (128 K
// values each), stages steps in the register ring (stages - 1 in flight), where x comes from,
// and the blocks of 4 warps per SM the register budget must allow.
struct W4A16MmaConfig {
  int m_tiles;
  int n_tiles;
  int chunks;
  int stages;
  W4A16XSource x;
  int min_blocks;
};
inline constexpr W4A16XSource kXPermuted = W4A16XSource::kPermuted, kXShared = W4A16XSource::kShared;
inline constexpr W4A16MmaConfig kW4A16MmaConfigs[] = {
    {1, 1, 1, 4, kXShared, 5},    // 0
    {1, 1, 1, 6, kXPermuted, 4},  // 1
    {2, 1, 1, 5, kXPermuted, 4},  // 2
    {4, 1, 1, 3, kXPermuted, 4},  // 3
    {8, 1, 1, 4, kXPermuted, 2},  // 4
};
inline constexpr int kW4A16MmaNumConfigs = sizeof(kW4A16MmaConfigs) / sizeof(kW4A16MmaConfigs[0]);
// The most rows one pass of the mma.sync kernel takes: its largest configuration's tokens.
inline constexpr int kW4A16MmaMaxRows = 64;
static_assert(kW4A16MmaConfigs[kW4A16MmaNumConfigs - 1].m_tiles * 8 == kW4A16MmaMaxRows);
// A block's shared x (kXShared) may take up to this many bytes (5 blocks an SM); past it the plan
// takes the permuted-x configuration that holds M instead.
inline constexpr int64_t kW4A16MmaMaxSharedX = 44 << 10;

// The bytes of a block's shared x (kXShared) for m tokens and k_len K values: the rows in pair
// order, each padded by 16 bytes (spreads the tokens' reads over the banks), then each token's
// sum over each 128-K chunk.
__host__ __device__ constexpr int64_t w4a16_shared_x_units(int64_t k_len) { return k_len / 8 + 1; }
__host__ __device__ constexpr int64_t w4a16_shared_x_bytes(int64_t m, int64_t k_len) {
  return m * w4a16_shared_x_units(k_len) * 16 + m * (k_len / 128) * 4;
}

// --- The wgmma kernel (w4a16_wgmma.cu): prefill ----------------------------------------------------

// One instantiation: tokens per block (the wgmma's N), stages of the shared-memory ring (128 K
// values each: tokens x 256 bytes of x plus 8 KiB of weights), and whether x is first permuted
// into the weights' K order (w4a16_wgmma.cu says why; otherwise TMA reads x itself and each lane
// gathers its weights from the tile's shared-memory copy).
struct W4A16WgmmaConfig {
  int tokens;
  int stages;
  bool permuted_x;
};
inline constexpr W4A16WgmmaConfig kW4A16WgmmaConfigs[] = {
    {128, 5, true},   // 0
    {256, 3, true},   // 1
    {128, 5, false},  // 2
    {256, 3, false},  // 3
    {64, 8, false},   // 4
    {64, 8, true},    // 5
};
inline constexpr int kW4A16WgmmaNumConfigs = sizeof(kW4A16WgmmaConfigs) / sizeof(kW4A16WgmmaConfigs[0]);

// --- The CUDA-core kernel (w4a16_small_m.cu): f32 x or K % 128 != 0, M <= kW4A16MaxRows ----------

// K values per warp and step: 32 lanes of one 16-byte load (32 K values) per row.
inline constexpr int kW4A16SmallMWarpK = 32 * 32;
// Weight rows per warp for `rows` rows of x (a power of two up to 16): more rows share each x
// load and (for M <= 2) each x sum; fewer keep the accumulators of larger M in registers
// (rows * cols <= 32 so one lane writes each output).
__host__ __device__ constexpr int w4a16_small_m_cols(int rows) { return rows <= 2 ? 4 : (rows <= 8 ? 2 : 1); }

}  // namespace brisk::cuda
