// The stream-K GEMM's tensor maps (gemm_streamk.h): host code.
#include "backend/cuda/kernels/streamk/gemm_streamk.h"
#include "backend/cuda/kernels/tensor_map.h"
#include "core/error.h"

namespace brisk::cuda {

CUtensorMap gemm_streamk_tensor_map(const void* base, FloatType type, int64_t rows, int64_t k, int64_t stride,
                                    int box_rows) {
  CUtensorMap map{};
  const cuuint64_t dims[2] = {static_cast<cuuint64_t>(k), static_cast<cuuint64_t>(rows)};
  const cuuint64_t strides[1] = {static_cast<cuuint64_t>(stride) * 2};
  const cuuint32_t box[2] = {streamk_chunk_k(StreamKOperands::kBF16), static_cast<cuuint32_t>(box_rows)};
  const CUresult result = encode_tensor_map_16bit(map, type, 2, base, dims, strides, box, "gemm");
  BRISK_CHECK(result == CUDA_SUCCESS, "gemm: cuTensorMapEncodeTiled failed (CUresult {}) for [{}, {}] (row stride {})",
              static_cast<int>(result), rows, k, stride);
  return map;
}

}  // namespace brisk::cuda
