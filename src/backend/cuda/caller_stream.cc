#include "backend/cuda/caller_stream.h"

#include "backend/cuda/cuda_backend.h"
#include "backend/cuda/runtime/device.h"
#include "core/error.h"

namespace brisk::cuda {

CallerStreamScope::CallerStreamScope(Backend& backend, uintptr_t stream)
    : backend_(dynamic_cast<CudaBackend*>(&backend)) {
  BRISK_CHECK(backend_ != nullptr, "a caller's CUDA stream was given to the {} backend", backend.name());
  backend_->begin_caller_stream(reinterpret_cast<cudaStream_t>(stream));
}

CallerStreamScope::~CallerStreamScope() {
  // Destructors must not throw; a failed CUDA call leaves a sticky error that the next call reports.
  try {
    backend_->end_caller_stream();
  } catch (...) {
  }
}

int device_ordinal() { return select_device().ordinal; }

}  // namespace brisk::cuda
