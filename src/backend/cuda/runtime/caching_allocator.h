// Device memory for tensors without a cudaMalloc per tensor: freed blocks go to a free list of
// their size class and are handed out again, so a warm step loop never calls cudaMalloc (which
// synchronises the device) or cudaFree.
//
// Size classes: requests round up to a multiple of 512 B below 1 MiB; above, to one of four
// classes per power of two (1, 1.25, 1.5, 1.75 x 2^k), wasting at most 25%; past 1 GiB (buffers
// allocated once: weights, KV cache layers) to a multiple of 2 MiB. Reuse is by exact
// class. Blocks are 256-byte aligned (cudaMalloc's guarantee), which cuBLASLt and the vectorised
// kernels rely on.
//
// Stream ordering: a block freed on the host may still be read by queued kernels. Reusing it at
// once is safe because all of brisk's device work runs on the backend's single stream, in order
// (like PyTorch's per-stream caching allocator). Thread-safe: one mutex around the lists.
//
// CUDA graphs: blocks allocated while the graph pool is on belong to that pool for good. Freed,
// they return to the pool's own lists, never to the general ones, so memory a recorded graph
// uses as temporaries is never handed to other work that could run between its replays.
// Graphs share the pool: they replay one at a time on the one stream.
#pragma once

#include <cstddef>
#include <mutex>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/tensor.h"

namespace brisk::cuda {

class CachingAllocator final : public Allocator {
 public:
  explicit CachingAllocator(int ordinal) : ordinal_(ordinal) {}
  ~CachingAllocator() override;
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  void* allocate(size_t num_bytes) override;
  void deallocate(void* ptr, size_t num_bytes) override;
  Device device() const override { return Device::kCuda; }

  // Bytes held in the free lists (allocated from CUDA, not in use).
  size_t free_bytes() const;
  // Bytes in use by live buffers.
  size_t used_bytes() const;
  // Returns every cached block to CUDA (waits for the device first).
  void release_cached();

  // The size class a request of num_bytes is served from.
  static size_t round_size(size_t num_bytes);

  // While on, allocations come from (and grow) the graph pool.
  void set_graph_pool(bool on);
  size_t graph_pool_bytes() const;

 private:
  void release_cached_locked();
  void* cuda_malloc_locked(size_t size, size_t num_bytes);

  const int ordinal_;  // the device its blocks are on
  mutable std::mutex mutex_;
  std::unordered_map<size_t, std::vector<void*>> free_lists_;  // size class -> blocks
  size_t free_bytes_ = 0;
  size_t used_bytes_ = 0;
  bool graph_pool_on_ = false;
  std::unordered_map<size_t, std::vector<void*>> graph_free_lists_;
  std::unordered_set<void*> graph_blocks_;
  size_t graph_pool_bytes_ = 0;
};

// The process-wide allocator of one device. Never destroyed, so tensors that outlive a backend
// object can still be freed safely.
CachingAllocator& device_allocator(int ordinal);

}  // namespace brisk::cuda
