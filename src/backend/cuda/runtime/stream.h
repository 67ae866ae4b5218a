// An owned, non-blocking CUDA stream. All of a backend's work runs on one stream, in order;
// the caching allocator relies on this (a freed block may be reused by the next op at once).
#pragma once

#include <cuda_runtime_api.h>

namespace brisk::cuda {

class Stream {
 public:
  Stream();
  ~Stream();
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;

  cudaStream_t get() const { return stream_; }
  void synchronize() const;

 private:
  cudaStream_t stream_ = nullptr;
};

}  // namespace brisk::cuda
