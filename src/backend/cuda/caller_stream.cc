#include "backend/caller_stream.h"

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/runtime/cuda_check.h"
#include "backend/cuda/runtime/device.h"
#include "core/error.h"

namespace brisk::cuda {

CallerStreamScope::CallerStreamScope(Backend& backend, uintptr_t stream)
    : backend_(dynamic_cast<CudaBackend*>(&backend)) {
  BRISK_CHECK(backend_ != nullptr, "a caller's CUDA stream was given to the {} backend", backend.name());
  BRISK_CUDA_CHECK(cudaGetDevice(&previous_device_));
  try {
    select_device();
    backend_->begin_caller_stream(reinterpret_cast<cudaStream_t>(stream));
  } catch (...) {
    cudaSetDevice(previous_device_);
    throw;
  }
}

CallerStreamScope::~CallerStreamScope() {
  // Destructors must not throw; a failed CUDA call leaves a sticky error that the next call reports.
  try {
    backend_->end_caller_stream();
  } catch (...) {
  }
  cudaSetDevice(previous_device_);
}

int device_ordinal() {
  int previous = 0;
  BRISK_CUDA_CHECK(cudaGetDevice(&previous));
  const int ordinal = select_device().ordinal;
  BRISK_CUDA_CHECK(cudaSetDevice(previous));
  return ordinal;
}

}  // namespace brisk::cuda
