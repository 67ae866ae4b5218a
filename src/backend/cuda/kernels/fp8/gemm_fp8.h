// gemm_fp8 on CUDA: x quantized to e4m3 with its scales (gemm_fp8.cu), then the product, where
// K % 128 == 0 and N % 16 == 0, by the decode kernel (fp8_mma.cu, M <= kFp8MmaMaxRows) or the
// FP8 wgmma kernel (fp8_wgmma.cu), else by a warp per output on CUDA cores; all keep
// GemmFp8Params' arithmetic (backend/backend.h).
#pragma once

#include <cstdint>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "backend/cuda/kernels/launch.h"

namespace brisk::cuda {

struct GemmFp8Args {
  const void* x = nullptr;  // [m, k]
  int64_t x_stride = 0;
  FloatType x_type = FloatType::kBF16;
  const uint8_t* weight = nullptr;     // e4m3 [n, k], contiguous
  const float* weight_scale = nullptr;  // [n, groups]
  const float* input_scale = nullptr;   // optional [1]
  const void* bias = nullptr;           // optional [n]
  FloatType bias_type = FloatType::kF32;
  void* y = nullptr;  // [m, n]
  int64_t y_stride = 0;
  FloatType y_type = FloatType::kF32;
  uint8_t* x_q = nullptr;    // scratch: e4m3 [m, k]
  float* x_scale = nullptr;  // scratch: [m, groups], or [groups, x_scale_ld] where x_scale_ld > 0
  int64_t x_scale_ld = 0;    // (cuBLASLt's layout of 1 x 128 scales; the kernels here read [m, groups])
  int m = 0;
  int64_t n = 0;
  int64_t k = 0;
  int block_size = 0;  // 0: one group of k
};

// x_q and x_scale from x (one block per row).
void launch_quantize_fp8_rows(const GemmFp8Args& a, cudaStream_t stream);
// cuBLASLt's 128 x 128 weight scales from per-row ones: block_scale[b, g] = weight_scale[128 b, g]
// for b < ceil(n / 128), g < groups.
void launch_fp8_block_scales(const float* weight_scale, int64_t n, int64_t groups, float* block_scale,
                             cudaStream_t stream);
// y from x_q, x_scale and the weights on CUDA cores (any shape).
void launch_gemm_fp8_cuda_cores(const GemmFp8Args& a, cudaStream_t stream);

// The decode kernel: weights streamed into registers, mma.sync over the (up to) 8 tokens. From
// M 9 the stream-K kernel (per-channel scales) or the wgmma kernel is faster (docs/perf/fp8.md).
constexpr int kFp8MmaMaxRows = 8;
inline bool fp8_mma_supports(int m, int64_t n, int64_t k) {
  return m <= kFp8MmaMaxRows && k % 128 == 0 && n % 16 == 0;
}
void launch_fp8_mma(const GemmFp8Args& a, cudaStream_t stream);

// The wgmma kernel's arguments: GemmFp8Args' plus the tile scheduler's and epilogue's fields
// (kernels/w4a16/wgmma_*.cuh; no split over K).
struct Fp8WgmmaArgs : GemmFp8Args {
  int tokens = 0;  // a block's token tile: 64 or 128
  int num_splits = 1;
  int64_t k_per_split = 0;
  int64_t split_from_tile = 0;
  float* partials = nullptr;
  static constexpr bool silu_gate = false;
};
// Whether the wgmma kernel takes these sizes.
inline bool fp8_wgmma_supports(int64_t n, int64_t k) { return k % 128 == 0 && n % 16 == 0; }
// A block's token tile for these sizes.
// (Block-wise scales take 64: at 128 the per-chunk scales no longer fit the registers.)
inline int fp8_wgmma_tokens(int m, int block_size) { return m <= 64 || block_size > 0 ? 64 : 128; }
// y from x_q, x_scale and the weights by the wgmma kernel: w_map over the weights [n, k] in boxes
// of 128 x 128 bytes, x_map over x_q [m, k] in boxes of 128 bytes x a.tokens rows (128-byte
// swizzle, kernels/tensor_map.h).
void launch_fp8_wgmma(const Fp8WgmmaArgs& a, const CUtensorMap& w_map, const CUtensorMap& x_map, cudaStream_t stream);

}  // namespace brisk::cuda
