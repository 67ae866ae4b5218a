// Stream-K GEMM for decode batches: y = x w^T (+ bias) for M <= gemm_streamk_max_m rows of x and w
// both bf16, both f16, or both e4m3 (then y = sum * x_scale[token] * w_scale[row] + bias, with each
// 128-K chunk's tensor-core sum promoted to fp32 as GemmFp8Params asks). The weights are the
// wgmma's A (128 rows a tile, two consumer warpgroups of 64), the batch's tokens its N (one token
// tile holding all of M: 16-64 tokens with 16-bit operands, 16 with e4m3), both copied by TMA in
// 128-byte panels (64 16-bit or 128 e4m3 K values). One block per SM walks an equal share of the
// (tile, 128-byte K chunk) units, crossing tile boundaries, so every SM streams the same number of
// weight bytes however few tiles N makes (qkv and o_proj at 48 and 32 tiles of 128 rows leave most
// SMs idle in a tile-per-block kernel). A tile shared by several blocks is finished by the block
// holding its first chunks (it reaches that tile last): the others write their fp32 sums to
// `partials` and raise their flag, the finisher adds them in block order (deterministic for a given
// M, N, K and grid) and stores y.
#pragma once

#include <cstdint>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "backend/cuda/kernels/launch.h"

namespace brisk::cuda {

inline constexpr int kStreamKTileRows = 128;   // weight rows of a tile
inline constexpr int kStreamKChunkBytes = 128;  // a unit's K: one 128-byte panel row

enum class StreamKOperands : int32_t { kBF16, kF16, kE4M3 };  // x's and w's
// K values of a unit.
__host__ __device__ constexpr int streamk_chunk_k(StreamKOperands operands) {
  return operands == StreamKOperands::kE4M3 ? kStreamKChunkBytes : kStreamKChunkBytes / 2;
}

struct StreamKArgs {
  int64_t m = 0, n = 0, k = 0;
  StreamKOperands operands = StreamKOperands::kBF16;
  const float* x_scale = nullptr;     // e4m3: [m], a token's
  const float* w_scale = nullptr;     // e4m3: [n], a weight row's
  const void* bias = nullptr;         // optional [n]
  FloatType bias_type = FloatType::kF32;
  void* y = nullptr;                  // [m, n]
  int64_t y_stride = 0;
  FloatType y_type = FloatType::kBF16;
  float* partials = nullptr;          // [grid, gemm_streamk_partial_floats(tokens)]
  int* flags = nullptr;               // [grid], zero between launches: finishers reset what they read
  int grid = 0;                       // blocks: at most one per SM (they wait on each other)
  int tokens = 0;                     // gemm_streamk_tokens(m, operands)
};

// The largest M the kernel takes with these operands.
int64_t gemm_streamk_max_m(StreamKOperands operands);
// The token tile (the wgmma's N) for m rows: the smallest instance holding them; 0 past the largest.
int gemm_streamk_tokens(int64_t m, StreamKOperands operands);
// fp32 values of one block's partial tile.
__host__ __device__ inline int64_t gemm_streamk_partial_floats(int tokens) {
  return int64_t{kStreamKTileRows} * tokens;
}
// Blocks for a problem on num_sms SMs: one per SM, fewer when there are fewer units.
int gemm_streamk_grid(int64_t n, int64_t k, StreamKOperands operands, int num_sms);

// w_map: over w [n, k] in boxes of one 128-byte K panel x kStreamKTileRows rows; x_map: over x
// [m, k] in boxes of one panel x tokens rows (kernels/tensor_map.h's 128-byte swizzle, rows past
// the tensor read as zeros).
void launch_gemm_streamk(const StreamKArgs& a, const CUtensorMap& w_map, const CUtensorMap& x_map,
                         cudaStream_t stream);

}  // namespace brisk::cuda
