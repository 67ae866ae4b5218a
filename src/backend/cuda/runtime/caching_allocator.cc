#include "backend/cuda/runtime/caching_allocator.h"

#include <map>

#include <bit>

#include <cuda_runtime_api.h>

#include "backend/cuda/runtime/cuda_check.h"
#include "backend/cuda/runtime/device.h"
#include "core/error.h"

namespace brisk::cuda {
namespace {

constexpr size_t kSmallAlignment = 512;
constexpr size_t kSmallLimit = size_t{1} << 20;
// Past 1 GiB the buffers are the model's own (weights, a layer's KV cache), allocated once: they
// take cudaMalloc's 2 MiB granularity instead of a size class, whose rounding would waste up to a
// quarter of them (a 18.7 GB cache layer took 20 GiB and the last layers no longer fit on an 80 GB
// card). Step temporaries stay below it.
constexpr size_t kLargeLimit = size_t{1} << 30;
constexpr size_t kLargeAlignment = size_t{2} << 20;

size_t round_up(size_t num_bytes, size_t step) { return (num_bytes + step - 1) / step * step; }

}  // namespace

size_t CachingAllocator::round_size(size_t num_bytes) {
  if (num_bytes <= kSmallLimit) return round_up(num_bytes, kSmallAlignment);
  if (num_bytes > kLargeLimit) return round_up(num_bytes, kLargeAlignment);
  // Four classes per octave: the step is a quarter of the largest power of two <= num_bytes.
  return round_up(num_bytes, std::bit_floor(num_bytes) / 4);
}

CachingAllocator::~CachingAllocator() {
  // device_allocator() is never destroyed; a locally constructed allocator (tests) frees its
  // cache, ignoring errors because destructors must not throw.
  for (auto& [size, blocks] : free_lists_)
    for (void* block : blocks) cudaFree(block);
}

void* CachingAllocator::allocate(size_t num_bytes) {
  if (num_bytes == 0) return nullptr;
  const size_t size = round_size(num_bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  auto& lists = graph_pool_on_ ? graph_free_lists_ : free_lists_;
  auto it = lists.find(size);
  if (it != lists.end() && !it->second.empty()) {
    void* block = it->second.back();
    it->second.pop_back();
    if (!graph_pool_on_) free_bytes_ -= size;
    used_bytes_ += size;
    return block;
  }
  void* block = cuda_malloc_locked(size, num_bytes);
  if (graph_pool_on_) {
    graph_blocks_.insert(block);
    graph_pool_bytes_ += size;
  }
  used_bytes_ += size;
  return block;
}

void* CachingAllocator::cuda_malloc_locked(size_t size, size_t num_bytes) {
  BRISK_CUDA_CHECK(cudaSetDevice(ordinal_));  // the caller works on this device (its rank's)
  void* block = nullptr;
  cudaError_t error = cudaMalloc(&block, size);
  if (error == cudaErrorMemoryAllocation) {
    cudaGetLastError();  // clear the sticky-free error state before retrying
    release_cached_locked();
    error = cudaMalloc(&block, size);
  }
  if (error == cudaErrorMemoryAllocation) {
    cudaGetLastError();
    size_t free_now = 0, total = 0;
    cudaMemGetInfo(&free_now, &total);
    throw_error(ErrorCode::kOutOfMemory,
                "CUDA out of memory: cannot allocate {} bytes ({} requested); {} of {} bytes free, "
                "{} in use by brisk", size, num_bytes, free_now, total, used_bytes_);
  }
  BRISK_CUDA_CHECK(error);
  return block;
}

void CachingAllocator::deallocate(void* ptr, size_t num_bytes) {
  if (ptr == nullptr) return;
  const size_t size = round_size(num_bytes);
  std::lock_guard<std::mutex> lock(mutex_);
  used_bytes_ -= size;
  if (graph_blocks_.count(ptr) != 0) {
    graph_free_lists_[size].push_back(ptr);
    return;
  }
  free_lists_[size].push_back(ptr);
  free_bytes_ += size;
}

void CachingAllocator::set_graph_pool(bool on) {
  std::lock_guard<std::mutex> lock(mutex_);
  graph_pool_on_ = on;
}

size_t CachingAllocator::graph_pool_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return graph_pool_bytes_;
}

size_t CachingAllocator::free_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return free_bytes_;
}

size_t CachingAllocator::used_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return used_bytes_;
}

void CachingAllocator::release_cached() {
  std::lock_guard<std::mutex> lock(mutex_);
  release_cached_locked();
}

void CachingAllocator::release_cached_locked() {
  if (free_bytes_ == 0) return;
  // Queued kernels may still read freed blocks (see the header); wait for them.
  BRISK_CUDA_CHECK(cudaSetDevice(ordinal_));
  BRISK_CUDA_CHECK(cudaDeviceSynchronize());
  for (auto& [size, blocks] : free_lists_) {
    for (void* block : blocks) BRISK_CUDA_CHECK(cudaFree(block));
    blocks.clear();
  }
  free_bytes_ = 0;
}

CachingAllocator& device_allocator(int ordinal) {
  static std::mutex mutex;
  static std::map<int, CachingAllocator*> allocators;  // intentionally leaked
  std::lock_guard<std::mutex> lock(mutex);
  CachingAllocator*& allocator = allocators[ordinal];
  if (allocator == nullptr) allocator = new CachingAllocator(ordinal);
  return *allocator;
}

}  // namespace brisk::cuda
