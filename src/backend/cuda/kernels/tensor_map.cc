// Tensor map encoding through the runtime's driver entry point (tensor_map.h).
#include "backend/cuda/kernels/tensor_map.h"

#include <cudaTypedefs.h>
#include <cuda_runtime_api.h>

#include <mutex>

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

bool tensor_map_encoding_available() { return encode_function() != nullptr; }

namespace {

CUresult encode(CUtensorMap& map, CUtensorMapDataType type, int rank, const void* base, const cuuint64_t* dims,
                const cuuint64_t* strides, const cuuint32_t* box, const char* op) {
  const auto function = encode_function();
  BRISK_CHECK(function != nullptr, "{}: the CUDA driver offers no cuTensorMapEncodeTiled", op);
  const cuuint32_t element_strides[5] = {1, 1, 1, 1, 1};
  return function(&map, type, static_cast<cuuint32_t>(rank), const_cast<void*>(base), dims, strides, box,
                  element_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                  CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
}

}  // namespace

CUresult encode_tensor_map_16bit(CUtensorMap& map, FloatType type, int rank, const void* base,
                                 const cuuint64_t* dims, const cuuint64_t* strides, const cuuint32_t* box,
                                 const char* op) {
  BRISK_CHECK(type == FloatType::kBF16 || type == FloatType::kF16, "{}: tensor maps here take 16-bit elements", op);
  return encode(map, type == FloatType::kBF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
                rank, base, dims, strides, box, op);
}

namespace {

// A [rows, k] matrix of elements of `bytes` bytes in boxes of one 128-byte panel row x box_rows.
CUtensorMap panel_tensor_map(CUtensorMapDataType type, int bytes, const void* base, int64_t rows, int64_t k,
                             int64_t stride, int box_rows, const char* op, const char* what) {
  CUtensorMap map{};
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(k), static_cast<cuuint64_t>(rows)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(stride) * bytes};
  const cuuint32_t box[2] = {static_cast<cuuint32_t>(128 / bytes), static_cast<cuuint32_t>(box_rows)};
  const CUresult result = encode(map, type, 2, base, dims, strides, box, op);
  BRISK_CHECK(result == CUDA_SUCCESS, "{}: cuTensorMapEncodeTiled failed (CUresult {}) for {} [{}, {}] (row stride {})",
              op, static_cast<int>(result), what, rows, k, stride);
  return map;
}

}  // namespace

CUtensorMap panel_tensor_map_16bit(const void* base, FloatType type, int64_t rows, int64_t k, int64_t stride,
                                   int box_rows, const char* op, const char* what) {
  BRISK_CHECK(type == FloatType::kBF16 || type == FloatType::kF16, "{}: tensor maps here take 16-bit elements", op);
  return panel_tensor_map(type == FloatType::kBF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
                          2, base, rows, k, stride, box_rows, op, what);
}

CUtensorMap panel_tensor_map_8bit(const void* base, int64_t rows, int64_t k, int64_t stride, int box_rows,
                                  const char* op, const char* what) {
  return panel_tensor_map(CU_TENSOR_MAP_DATA_TYPE_UINT8, 1, base, rows, k, stride, box_rows, op, what);
}

}  // namespace brisk::cuda
