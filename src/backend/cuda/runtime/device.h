// The GPU a thread works on and its properties, read once per device, that kernels size
// themselves by. A thread works on the process's default device (BRISK_CUDA_DEVICE, else device 0)
// unless bound to another: a tensor-parallel rank's thread is bound to its rank's GPU.
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

// Selects the calling thread's device (cudaSetDevice) and returns its properties; throws
// kBackend naming the problem when there is no usable GPU or BRISK_CUDA_DEVICE is out of range.
const DeviceInfo& select_device();
// The process's default device: BRISK_CUDA_DEVICE, else 0.
int default_device();
int num_devices();
// Makes `ordinal` the calling thread's device from now on (and checks it is a Hopper GPU).
const DeviceInfo& bind_device(int ordinal);
// Free and total device memory right now (cudaMemGetInfo).
void device_memory(size_t* free_bytes, size_t* total_bytes);

}  // namespace brisk::cuda
