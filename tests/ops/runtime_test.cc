// The CUDA backend's runtime pieces: copies in every direction (the caller's host memory is
// reusable at once), the caching allocator's reuse, convert against the CPU reference.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>

#include "backend/cuda/runtime/caching_allocator.h"
#include "backend/cuda/runtime/device.h"
#include "ops_test_util.h"

namespace brisk::testing {
namespace {

TEST(CudaRuntime, BackendBasics) {
  Backend& gpu = cuda_backend();
  EXPECT_EQ(gpu.name(), "cuda");
  EXPECT_EQ(gpu.device(), Device::kCuda);
  EXPECT_FALSE(gpu.shares_host_memory());
  EXPECT_EQ(gpu.activation_dtype(DType::kBF16), DType::kBF16);
  EXPECT_EQ(gpu.activation_dtype(DType::kF32), DType::kBF16);
  EXPECT_EQ(gpu.activation_dtype(DType::kF16), DType::kF16);
  EXPECT_EQ(gpu.allocator().device(), Device::kCuda);
}

TEST(CudaRuntime, CopyRoundTripsAndHostMemoryIsReusableAtOnce) {
  // Small copies go through pinned staging, the large one (> 8 MiB) synchronises.
  for (int64_t count : {int64_t{1}, int64_t{1000}, int64_t{3} << 20}) {
    std::vector<int32_t> host(count);
    std::iota(host.begin(), host.end(), 7);
    Tensor device(cuda_backend().allocator(), DType::kI32, {count});
    cuda_backend().copy(device, TensorView(host.data(), DType::kI32, {count}));
    std::fill(host.begin(), host.end(), -1);  // must not reach the device copy
    Tensor device2(cuda_backend().allocator(), DType::kI32, {count});
    cuda_backend().copy(device2, device);  // device to device
    Tensor back = to_host(device2);
    for (int64_t i = 0; i < count; ++i) ASSERT_EQ(back.data_as<int32_t>()[i], i + 7) << i;
  }
}

TEST(CudaRuntime, ManySmallCopiesInFlight) {
  // More staged copies than the pool's chunks: each must land intact.
  std::vector<Tensor> devices;
  for (int i = 0; i < 200; ++i) {
    int32_t values[3] = {i, 2 * i, 3 * i};
    devices.emplace_back(cuda_backend().allocator(), DType::kI32, Shape{3});
    cuda_backend().copy(devices.back(), TensorView(values, DType::kI32, {3}));
  }
  for (int i = 0; i < 200; ++i) {
    Tensor back = to_host(devices[i]);
    EXPECT_EQ(back.data_as<int32_t>()[2], 3 * i);
  }
}

TEST(CudaRuntime, CopyRejectsMismatches) {
  Tensor a(cuda_backend().allocator(), DType::kF32, {4});
  Tensor b(cpu_allocator(), DType::kF16, {4});
  EXPECT_ERROR_CONTAINS(cuda_backend().copy(a, b), "dtypes differ");
}

TEST(CudaRuntime, CachingAllocatorReusesBlocks) {
  cuda::CachingAllocator allocator(cuda::default_device());
  void* first = allocator.allocate(1000);
  allocator.deallocate(first, 1000);
  EXPECT_EQ(allocator.free_bytes(), cuda::CachingAllocator::round_size(1000));
  void* second = allocator.allocate(900);  // same 1024-byte class
  EXPECT_EQ(first, second);
  EXPECT_EQ(allocator.free_bytes(), 0u);
  allocator.deallocate(second, 900);
  allocator.release_cached();
  EXPECT_EQ(allocator.free_bytes(), 0u);
  EXPECT_EQ(cuda::CachingAllocator::round_size(1), 512u);
  EXPECT_EQ(cuda::CachingAllocator::round_size((size_t{1} << 20) + 1), (size_t{5} << 20) / 4);
  EXPECT_EQ(cuda::CachingAllocator::round_size(size_t{1} << 30), size_t{1} << 30);
  EXPECT_EQ(cuda::CachingAllocator::round_size(18746064896), size_t{8939} << 21);  // 2 MiB steps past 1 GiB
  EXPECT_EQ(reinterpret_cast<uintptr_t>(first) % 256, 0u);
}

TEST(CudaRuntime, ConvertMatchesCpu) {
  std::mt19937 rng(1);
  const std::pair<DType, DType> pairs[] = {{DType::kF32, DType::kBF16}, {DType::kBF16, DType::kF32},
                                           {DType::kF32, DType::kF16},  {DType::kF16, DType::kBF16},
                                           {DType::kBF16, DType::kBF16}};
  for (auto [from, to] : pairs) {
    for (int64_t count : {int64_t{1}, int64_t{13}, int64_t{4096 + 5}}) {
      Tensor src = random_tensor(from, {count}, rng, -100, 100);
      Tensor expected = zeros(to, {count});
      cpu_backend().convert(expected, src);
      Tensor src_d = to_device(src);
      Tensor dst_d(cuda_backend().allocator(), to, {count});
      cuda_backend().convert(dst_d, src_d);
      Tensor actual = to_host(dst_d);
      EXPECT_EQ(std::memcmp(actual.view().data(), expected.view().data(), expected.view().num_bytes()), 0)
          << dtype_str(from) << " -> " << dtype_str(to) << " count " << count;
    }
  }
}

TEST(CudaRuntime, OpsRejectHostViews) {
  Tensor table = zeros(DType::kBF16, {4, 8});
  Tensor ids = make_i32({1}, {0});
  Tensor out = zeros(DType::kBF16, {1, 8});
  EXPECT_ERROR_CONTAINS(cuda_backend().embedding({table, ids, out}), "needs device memory");
}

TEST(CudaRuntimePerf, Convert) {
  if (!perf_enabled()) GTEST_SKIP() << "set BRISK_OPS_PERF=1";
  const int64_t count = int64_t{4096} * 14336;
  Tensor src(cuda_backend().allocator(), DType::kF32, {count});
  Tensor dst(cuda_backend().allocator(), DType::kBF16, {count});
  report_perf("convert", "f32->bf16 [4096*14336]", count * 6.0, 0,
              [&] { cuda_backend().convert(dst, src); });
}

}  // namespace
}  // namespace brisk::testing
