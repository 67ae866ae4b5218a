// The W4A16 wgmma kernel's tensor map over x (w4a16_wgmma.h).
#include "backend/cuda/kernels/tensor_map.h"
#include "backend/cuda/kernels/w4a16/w4a16_wgmma.h"

namespace brisk::cuda {

CUtensorMap w4a16_x_tensor_map(const void* x, FloatType type, int m, int64_t k, int64_t stride, int tokens) {
  return panel_tensor_map_16bit(x, type, m, k, stride, tokens, "gemm_w4a16", "x");
}

}  // namespace brisk::cuda
