// Kernels that take more than the default 48 KB of dynamic shared memory must say so first.
#pragma once

#include <atomic>
#include <cstdint>

#include "backend/cuda/runtime/cuda_check.h"

namespace brisk::cuda {

// Lets kKernel launch with `bytes` of dynamic shared memory on the calling thread's device: asked
// of the driver once per kernel and device (one instantiation per kernel, so its static is the
// kernel's own; a bit per device ordinal below 64), free afterwards.
template <auto kKernel>
void allow_dynamic_shared_memory(int bytes) {
  static std::atomic<uint64_t> allowed_devices{0};
  int device = 0;
  BRISK_CUDA_CHECK(cudaGetDevice(&device));
  const uint64_t bit = uint64_t{1} << (device & 63);
  if (allowed_devices.load(std::memory_order_acquire) & bit) return;
  BRISK_CUDA_CHECK(cudaFuncSetAttribute(kKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
  allowed_devices.fetch_or(bit, std::memory_order_release);
}

}  // namespace brisk::cuda
