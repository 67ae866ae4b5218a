// Programmatic dependent launch (Hopper): a kernel launched with launch_pdl may be scheduled
// while the kernel before it in the stream is still finishing, hiding the launch latency and
// the ramp-up between the many short kernels of a decode step. Such a kernel must call
// pdl_wait() before touching memory the previous kernel writes (it returns once that grid has
// completed and its writes are visible), and then pdl_release() lets the next dependent kernel
// launch early in turn. Waiting before releasing keeps the look-ahead to one kernel, so waiting
// blocks never pile up on the SMs ahead of real work.
#pragma once

#include <cuda_runtime_api.h>

#include "backend/cuda/runtime/cuda_check.h"

namespace brisk::cuda {

__device__ __forceinline__ void pdl_wait() { asm volatile("griddepcontrol.wait;\n" ::: "memory"); }
__device__ __forceinline__ void pdl_release() { asm volatile("griddepcontrol.launch_dependents;\n" ::); }

template <typename... Params, typename... Args>
void launch_pdl(void (*kernel)(Params...), dim3 grid, dim3 block, size_t shared_bytes, cudaStream_t stream,
                const Args&... args) {
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = shared_bytes;
  config.stream = stream;
  cudaLaunchAttribute attribute[1];
  attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute[0].val.programmaticStreamSerializationAllowed = 1;
  config.attrs = attribute;
  config.numAttrs = 1;
  BRISK_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, args...));
}

}  // namespace brisk::cuda
