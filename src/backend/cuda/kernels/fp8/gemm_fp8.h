// gemm_fp8 on CUDA cores (gemm_fp8.cu): the exact semantics of GemmFp8Params (backend/backend.h),
// a warp per output, for correctness on every shape. The Hopper FP8 tensor-core kernels
// (issue #33) take the shapes they support ahead of it.
#pragma once

#include <cstdint>

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
  float* x_scale = nullptr;  // scratch: [m, groups]
  int m = 0;
  int64_t n = 0;
  int64_t k = 0;
  int block_size = 0;  // 0: one group of k
};

void launch_gemm_fp8(const GemmFp8Args& a, cudaStream_t stream);

}  // namespace brisk::cuda
