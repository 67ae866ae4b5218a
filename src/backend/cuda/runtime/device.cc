#include "backend/cuda/runtime/device.h"

#include <cstdlib>
#include <mutex>
#include <string>

#include <cuda_runtime_api.h>

#include "backend/cuda/runtime/cuda_check.h"
#include "core/error.h"

namespace brisk::cuda {
namespace {

int requested_ordinal(int num_devices) {
  const char* env = std::getenv("BRISK_CUDA_DEVICE");
  if (env == nullptr || *env == '\0') return 0;
  char* end = nullptr;
  long value = std::strtol(env, &end, 10);
  BRISK_CHECK(*end == '\0' && value >= 0 && value < num_devices,
              "BRISK_CUDA_DEVICE is '{}' but must be a device index in [0, {})", env, num_devices);
  return static_cast<int>(value);
}

DeviceInfo read_device() {
  int num_devices = 0;
  cudaError_t error = cudaGetDeviceCount(&num_devices);
  if (error != cudaSuccess || num_devices == 0)
    throw_error(ErrorCode::kBackend, "no usable CUDA device: cudaGetDeviceCount says {} ({} devices)",
                cudaGetErrorString(error), num_devices);
  DeviceInfo info;
  info.ordinal = requested_ordinal(num_devices);
  BRISK_CUDA_CHECK(cudaSetDevice(info.ordinal));
  cudaDeviceProp prop{};
  BRISK_CUDA_CHECK(cudaGetDeviceProperties(&prop, info.ordinal));
  info.name = prop.name;
  info.num_sms = prop.multiProcessorCount;
  info.compute_major = prop.major;
  info.compute_minor = prop.minor;
  info.total_memory = prop.totalGlobalMem;
  info.max_shared_per_block = prop.sharedMemPerBlockOptin;
  info.l2_bytes = static_cast<size_t>(prop.l2CacheSize);
  // The kernels are built for sm_90a only; anything else would fail at the first launch with
  // "no kernel image", so say so up front.
  if (info.compute_major != 9)
    throw_error(ErrorCode::kUnsupported,
                "CUDA device {} ({}) has compute capability {}.{}; this brisk was built for sm_90a "
                "(Hopper) only", info.ordinal, info.name, info.compute_major, info.compute_minor);
  return info;
}

}  // namespace

const DeviceInfo& select_device() {
  static std::once_flag once;
  static DeviceInfo info;
  std::call_once(once, [] { info = read_device(); });
  BRISK_CUDA_CHECK(cudaSetDevice(info.ordinal));  // this thread may be new
  return info;
}

void device_memory(size_t* free_bytes, size_t* total_bytes) {
  BRISK_CUDA_CHECK(cudaMemGetInfo(free_bytes, total_bytes));
}

}  // namespace brisk::cuda
