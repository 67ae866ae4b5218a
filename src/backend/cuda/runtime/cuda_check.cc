#include "backend/cuda/runtime/cuda_check.h"

#include <cublasLt.h>

#include "core/error.h"

namespace brisk::cuda {

void throw_cuda_error(cudaError_t error, const char* call, const char* file, int line) {
  throw_error(ErrorCode::kBackend, "CUDA call {} failed at {}:{}: {} ({})", call, file, line,
              cudaGetErrorString(error), cudaGetErrorName(error));
}

void throw_cublas_error(cublasStatus_t status, const char* call, const char* file, int line) {
  throw_error(ErrorCode::kBackend, "cuBLAS call {} failed at {}:{}: {} ({})", call, file, line,
              cublasLtGetStatusString(status), static_cast<int>(status));
}

}  // namespace brisk::cuda
