// Pinned (page-locked) host buffers for small host-to-device copies of per-step inputs (token
// ids, positions, block tables, sampling rows). copy() returns as soon as the bytes are in a
// pinned buffer, so the caller may free or reuse its own memory at once, while the DMA runs
// asynchronously on the stream. A buffer is reused only after the event recorded behind its
// copy has completed.
#pragma once

#include <cstddef>
#include <mutex>
#include <vector>

#include <cuda_runtime_api.h>

namespace brisk::cuda {

class PinnedStaging {
 public:
  // Copies larger than this go straight from pageable memory and synchronise instead (weights).
  static constexpr size_t kMaxStagedBytes = size_t{8} << 20;

  PinnedStaging() = default;
  ~PinnedStaging();
  PinnedStaging(const PinnedStaging&) = delete;
  PinnedStaging& operator=(const PinnedStaging&) = delete;

  // Queues a copy of num_bytes from host memory src to device memory dst on stream.
  void copy_to_device(void* dst, const void* src, size_t num_bytes, cudaStream_t stream);

 private:
  struct Chunk {
    void* host = nullptr;
    size_t capacity = 0;
    cudaEvent_t done = nullptr;
    bool pending = false;  // done was recorded and may not have completed yet
  };
  Chunk& acquire(size_t num_bytes, cudaStream_t stream);

  std::mutex mutex_;
  std::vector<Chunk> chunks_;
  size_t next_ = 0;  // round-robin start, so chunks are reused oldest first
};

}  // namespace brisk::cuda
