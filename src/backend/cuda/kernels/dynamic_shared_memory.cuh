// Kernels that take more than the default 48 KB of dynamic shared memory must say so first.
#pragma once

#include "backend/cuda/runtime/cuda_check.h"

namespace brisk::cuda {

// Lets kKernel launch with `bytes` of dynamic shared memory: asked of the driver once per kernel
// (one instantiation per kernel, so its static is the kernel's own), free afterwards.
template <auto kKernel>
void allow_dynamic_shared_memory(int bytes) {
  static const bool allowed = [bytes] {
    BRISK_CUDA_CHECK(cudaFuncSetAttribute(kKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes));
    return true;
  }();
  (void)allowed;
}

}  // namespace brisk::cuda
