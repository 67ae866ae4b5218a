// The W4A16 wgmma kernel's tensor map over the permuted x (w4a16_wgmma.h).
#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>

#include <mutex>

#include "backend/cuda/kernels/w4a16/w4a16_wgmma.h"
#include "core/error.h"

namespace brisk::cuda {
namespace {

PFN_cuTensorMapEncodeTiled_v12000 encode_function() {
  static PFN_cuTensorMapEncodeTiled_v12000 function = nullptr;
  static std::once_flag once;
  std::call_once(once, [] {
    void* entry = nullptr;
    cudaDriverEntryPointQueryResult status{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &entry, 12000, cudaEnableDefault, &status) ==
            cudaSuccess &&
        status == cudaDriverEntryPointSuccess) {
      function = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(entry);
    }
  });
  return function;
}

}  // namespace

CUtensorMap w4a16_x_tensor_map(const void* x, FloatType type, int m, int64_t k, int64_t stride, int tokens) {
  BRISK_CHECK(type == FloatType::kBF16 || type == FloatType::kF16, "gemm_w4a16: the wgmma kernel needs 16-bit x");
  CUtensorMap map{};
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(k), static_cast<cuuint64_t>(m)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(stride) * 2};
  const cuuint32_t box[2] = {64, static_cast<cuuint32_t>(tokens)};
  const cuuint32_t element_strides[2] = {1, 1};
  const auto function = encode_function();
  BRISK_CHECK(function != nullptr, "gemm_w4a16: the CUDA driver offers no cuTensorMapEncodeTiled");
  const CUresult result = function(
      &map, type == FloatType::kBF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16, 2,
      const_cast<void*>(x), dims, strides, box, element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
      CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  BRISK_CHECK(result == CUDA_SUCCESS,
              "gemm_w4a16: cuTensorMapEncodeTiled failed (CUresult {}) for x [{}, {}] (row stride {})",
              static_cast<int>(result), m, k, stride);
  return map;
}

}  // namespace brisk::cuda
