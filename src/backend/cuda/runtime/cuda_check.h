// Turns a failed CUDA runtime or cuBLAS call into brisk::Error(kBackend) that names the call,
// the file and line, and CUDA's own description of the error. Every CUDA call in brisk goes
// through BRISK_CUDA_CHECK; kernel launches are followed by BRISK_CUDA_CHECK_LAUNCH().
//
// This header is included by .cu files too, so it must not pull in fmt (nvcc cannot compile
// fmt's consteval format strings): the throwing functions live in cuda_check.cc.
#pragma once

#include <cublas_api.h>
#include <cuda_runtime_api.h>

namespace brisk::cuda {

[[noreturn]] void throw_cuda_error(cudaError_t error, const char* call, const char* file, int line);
[[noreturn]] void throw_cublas_error(cublasStatus_t status, const char* call, const char* file,
                                     int line);

inline void check(cudaError_t error, const char* call, const char* file, int line) {
  if (error != cudaSuccess) throw_cuda_error(error, call, file, line);
}
inline void check(cublasStatus_t status, const char* call, const char* file, int line) {
  if (status != CUBLAS_STATUS_SUCCESS) throw_cublas_error(status, call, file, line);
}

}  // namespace brisk::cuda

#define BRISK_CUDA_CHECK(call) ::brisk::cuda::check((call), #call, __FILE__, __LINE__)
// After a <<<...>>> launch: reports bad launch configurations at once (asynchronous faults
// surface at the next synchronising call, which is checked too).
#define BRISK_CUDA_CHECK_LAUNCH() \
  ::brisk::cuda::check(cudaGetLastError(), "kernel launch", __FILE__, __LINE__)
