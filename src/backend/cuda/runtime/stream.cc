#include "backend/cuda/runtime/stream.h"

#include "backend/cuda/runtime/cuda_check.h"

namespace brisk::cuda {

Stream::Stream() { BRISK_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking)); }

Stream::~Stream() {
  // Destructors must not throw; a failure here means the context is already gone.
  if (stream_ != nullptr) {
    cudaStreamSynchronize(stream_);
    cudaStreamDestroy(stream_);
  }
}

void Stream::synchronize() const { BRISK_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

}  // namespace brisk::cuda
