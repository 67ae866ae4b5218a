// The W4A16 wgmma kernel's tensor map over x (w4a16_wgmma.h).
#include "backend/cuda/kernels/tensor_map.h"
#include "backend/cuda/kernels/w4a16/w4a16_wgmma.h"
#include "core/error.h"

namespace brisk::cuda {

CUtensorMap w4a16_x_tensor_map(const void* x, FloatType type, int m, int64_t k, int64_t stride, int tokens) {
  CUtensorMap map{};
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(k), static_cast<cuuint64_t>(m)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(stride) * 2};
  const cuuint32_t box[2] = {64, static_cast<cuuint32_t>(tokens)};
  const CUresult result = encode_tensor_map_16bit(map, type, 2, x, dims, strides, box, "gemm_w4a16");
  BRISK_CHECK(result == CUDA_SUCCESS,
              "gemm_w4a16: cuTensorMapEncodeTiled failed (CUresult {}) for x [{}, {}] (row stride {})",
              static_cast<int>(result), m, k, stride);
  return map;
}

}  // namespace brisk::cuda
