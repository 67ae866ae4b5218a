#include "backend/cuda/runtime/device.h"

#include <cstdlib>
#include <map>
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

DeviceInfo read_device(int ordinal) {
  DeviceInfo info;
  info.ordinal = ordinal;
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

thread_local int t_bound_device = -1;

// Properties of every device read so far (read once each; never moved once read).
const DeviceInfo& device_info(int ordinal) {
  static std::mutex mutex;
  static std::map<int, DeviceInfo> infos;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = infos.find(ordinal);
  if (it == infos.end()) it = infos.emplace(ordinal, read_device(ordinal)).first;
  return it->second;
}

}  // namespace

int num_devices() {
  static const int count = [] {
    int n = 0;
    cudaError_t error = cudaGetDeviceCount(&n);
    if (error != cudaSuccess || n == 0)
      throw_error(ErrorCode::kBackend, "no usable CUDA device: cudaGetDeviceCount says {} ({} devices)",
                  cudaGetErrorString(error), n);
    return n;
  }();
  return count;
}

int default_device() {
  static const int ordinal = requested_ordinal(num_devices());
  return ordinal;
}

const DeviceInfo& bind_device(int ordinal) {
  BRISK_CHECK(ordinal >= 0 && ordinal < num_devices(), "CUDA device {} does not exist ({} visible)", ordinal,
              num_devices());
  const DeviceInfo& info = device_info(ordinal);
  BRISK_CUDA_CHECK(cudaSetDevice(ordinal));
  t_bound_device = ordinal;
  return info;
}

const DeviceInfo& select_device() {
  const int ordinal = t_bound_device >= 0 ? t_bound_device : default_device();
  const DeviceInfo& info = device_info(ordinal);
  BRISK_CUDA_CHECK(cudaSetDevice(ordinal));  // this thread may be new
  return info;
}

void device_memory(size_t* free_bytes, size_t* total_bytes) {
  BRISK_CUDA_CHECK(cudaMemGetInfo(free_bytes, total_bytes));
}

}  // namespace brisk::cuda
