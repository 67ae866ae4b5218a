// The GPU brisk runs on: chosen once per process (BRISK_CUDA_DEVICE, else device 0) and its
// properties, read once, that kernels size themselves by.
#pragma once

#include <cstddef>
#include <string>

namespace brisk::cuda {

struct DeviceInfo {
  int ordinal = 0;
  std::string name;
  int num_sms = 0;
  int compute_major = 0;
  int compute_minor = 0;
  size_t total_memory = 0;           // bytes
  size_t max_shared_per_block = 0;   // bytes, after opting in (cudaFuncSetAttribute)
  size_t l2_bytes = 0;
};

// Selects the device on the calling thread (cudaSetDevice) and returns its properties. The
// first call picks the ordinal; throws kBackend naming the problem when there is no usable GPU
// or BRISK_CUDA_DEVICE is out of range.
const DeviceInfo& select_device();
// Free and total device memory right now (cudaMemGetInfo).
void device_memory(size_t* free_bytes, size_t* total_bytes);

}  // namespace brisk::cuda
