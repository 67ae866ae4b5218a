#include "backend/cuda/runtime/pinned_staging.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "backend/cuda/runtime/cuda_check.h"

namespace brisk::cuda {
namespace {

constexpr size_t kMinChunkBytes = size_t{64} << 10;
constexpr size_t kMaxChunks = 64;

}  // namespace

PinnedStaging::~PinnedStaging() {
  for (Chunk& chunk : chunks_) {  // no throwing in destructors: errors are ignored
    if (chunk.pending) cudaEventSynchronize(chunk.done);
    cudaEventDestroy(chunk.done);
    cudaFreeHost(chunk.host);
  }
}

PinnedStaging::Chunk& PinnedStaging::acquire(size_t num_bytes, cudaStream_t stream) {
  // A chunk that is big enough and idle, oldest first.
  for (size_t i = 0; i < chunks_.size(); ++i) {
    Chunk& chunk = chunks_[(next_ + i) % chunks_.size()];
    if (chunk.capacity < num_bytes) continue;
    if (chunk.pending) {
      cudaError_t state = cudaEventQuery(chunk.done);
      if (state == cudaErrorNotReady) continue;
      BRISK_CUDA_CHECK(state);
      chunk.pending = false;
    }
    next_ = (next_ + i + 1) % chunks_.size();
    return chunk;
  }
  if (chunks_.size() >= kMaxChunks) {
    // Too many copies in flight: wait for the stream, then everything is idle.
    BRISK_CUDA_CHECK(cudaStreamSynchronize(stream));
    for (Chunk& chunk : chunks_) chunk.pending = false;
    for (Chunk& chunk : chunks_) {
      if (chunk.capacity >= num_bytes) return chunk;
    }
    // None is big enough: replace the smallest.
    Chunk& smallest = *std::min_element(
        chunks_.begin(), chunks_.end(),
        [](const Chunk& a, const Chunk& b) { return a.capacity < b.capacity; });
    BRISK_CUDA_CHECK(cudaFreeHost(smallest.host));
    smallest.host = nullptr;
    smallest.capacity = std::bit_ceil(std::max(num_bytes, kMinChunkBytes));
    BRISK_CUDA_CHECK(cudaMallocHost(&smallest.host, smallest.capacity));
    return smallest;
  }
  Chunk chunk;
  chunk.capacity = std::bit_ceil(std::max(num_bytes, kMinChunkBytes));
  BRISK_CUDA_CHECK(cudaMallocHost(&chunk.host, chunk.capacity));
  BRISK_CUDA_CHECK(cudaEventCreateWithFlags(&chunk.done, cudaEventDisableTiming));
  chunks_.push_back(chunk);
  return chunks_.back();
}

void PinnedStaging::copy_to_device(void* dst, const void* src, size_t num_bytes,
                                   cudaStream_t stream) {
  if (num_bytes == 0) return;
  if (num_bytes > kMaxStagedBytes) {
    // Pageable source: the caller may free it when we return, so wait for the copy.
    BRISK_CUDA_CHECK(cudaMemcpyAsync(dst, src, num_bytes, cudaMemcpyHostToDevice, stream));
    BRISK_CUDA_CHECK(cudaStreamSynchronize(stream));
    return;
  }
  std::lock_guard<std::mutex> lock(mutex_);
  Chunk& chunk = acquire(num_bytes, stream);
  std::memcpy(chunk.host, src, num_bytes);
  BRISK_CUDA_CHECK(cudaMemcpyAsync(dst, chunk.host, num_bytes, cudaMemcpyHostToDevice, stream));
  BRISK_CUDA_CHECK(cudaEventRecord(chunk.done, stream));
  chunk.pending = true;
}

}  // namespace brisk::cuda
