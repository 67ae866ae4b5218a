// Page-locked host memory (cudaMallocHost) for tensors that device-to-host copies fill while the
// host goes on: the sampled tokens of a step in flight. Views of it are host views (Device::kCpu).
// Meant for a few long-lived buffers: every allocation is a cudaMallocHost call.
#pragma once

#include "core/tensor.h"

namespace brisk::cuda {

class PinnedAllocator final : public Allocator {
 public:
  void* allocate(size_t num_bytes) override;
  void deallocate(void* ptr, size_t num_bytes) override;
  Device device() const override { return Device::kCpu; }
};

}  // namespace brisk::cuda
