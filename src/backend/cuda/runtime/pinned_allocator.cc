#include "backend/cuda/runtime/pinned_allocator.h"

#include <cuda_runtime_api.h>

#include "backend/cuda/runtime/cuda_check.h"

namespace brisk::cuda {

void* PinnedAllocator::allocate(size_t num_bytes) {
  if (num_bytes == 0) return nullptr;
  void* ptr = nullptr;
  BRISK_CUDA_CHECK(cudaMallocHost(&ptr, num_bytes));
  return ptr;
}

void PinnedAllocator::deallocate(void* ptr, size_t) {
  if (ptr != nullptr) cudaFreeHost(ptr);  // no throwing from deallocation: errors are ignored
}

}  // namespace brisk::cuda
