// Lending a caller's CUDA stream to the CUDA backend for a scope: the Python module runs brisk's
// ops on PyTorch's current stream this way (CudaBackend::begin_caller_stream says how the order
// of brisk's work is kept). Declared at the backend layer so that front ends need no header of
// backend/cuda/, and defined by the CUDA backend (backend/cuda/caller_stream.cc): only builds with
// CUDA (BRISK_WITH_CUDA) have it. No CUDA header: the stream travels as an integer (a
// cudaStream_t's value; 0 is the legacy default stream).
#pragma once

#include <cstdint>

#include "backend/backend.h"

namespace brisk {

class CudaBackend;

namespace cuda {

// While alive, `backend` (a CUDA backend, make_backend("cuda")) queues its work on `stream`, and
// brisk's GPU is the calling thread's current device; the caller's current device (PyTorch's,
// say) is restored at the end.
class CallerStreamScope {
 public:
  CallerStreamScope(Backend& backend, uintptr_t stream);
  ~CallerStreamScope();
  CallerStreamScope(const CallerStreamScope&) = delete;
  CallerStreamScope& operator=(const CallerStreamScope&) = delete;

 private:
  CudaBackend* backend_;
  int previous_device_ = 0;
};

// The ordinal of the GPU the CUDA backend runs on (BRISK_CUDA_DEVICE, else 0); leaves the calling
// thread's current device as it was.
int device_ordinal();

}  // namespace cuda
}  // namespace brisk
