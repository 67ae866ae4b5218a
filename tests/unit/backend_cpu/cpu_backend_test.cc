// The CpuBackend object itself (identity, memory) and its copy / convert ops.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/make_backend.h"
#include "op_test_util.h"

namespace brisk {
namespace {

using testing::make_tensor;
using testing::random_values;
using testing::to_doubles;

TEST(CpuBackend, Identity) {
  auto backend = make_backend("cpu");
  EXPECT_EQ(backend->name(), "cpu");
  EXPECT_EQ(backend->device(), Device::kCpu);
  EXPECT_TRUE(backend->shares_host_memory());
  EXPECT_EQ(backend->activation_dtype(DType::kBF16), DType::kF32);
  EXPECT_EQ(backend->activation_dtype(DType::kF16), DType::kF32);
  EXPECT_EQ(backend->allocator().device(), Device::kCpu);
  EXPECT_EQ(&backend->allocator(), &cpu_allocator());
  backend->synchronize();
  EXPECT_ERROR_CONTAINS(make_backend("tpu"), "unknown backend 'tpu'");
}

TEST(CpuBackend, CopyIsBytewise) {
  auto backend = make_cpu_backend();
  Tensor src = testing::make_i32({2, 3}, {1, -2, 3, 4, 5, 1 << 30});
  Tensor dst(cpu_allocator(), DType::kI32, {2, 3});
  backend->copy(dst, src);
  EXPECT_EQ(to_doubles(dst), to_doubles(src));
}

TEST(CpuBackend, CopyRejectsMismatches) {
  auto backend = make_cpu_backend();
  Tensor f32(cpu_allocator(), DType::kF32, {2, 3});
  Tensor bf16(cpu_allocator(), DType::kBF16, {2, 3});
  Tensor other_shape(cpu_allocator(), DType::kF32, {3, 2});
  Tensor wide(cpu_allocator(), DType::kF32, {2, 6});
  EXPECT_ERROR_CONTAINS(backend->copy(bf16, f32), "dtypes differ");
  EXPECT_ERROR_CONTAINS(backend->copy(other_shape, f32), "shapes differ");
  EXPECT_ERROR_CONTAINS(backend->copy(f32, wide.view().slice(1, 0, 3)), "contiguous");
  TensorView on_gpu(f32.view().data(), DType::kF32, {2, 3}, Device::kCuda);
  EXPECT_ERROR_CONTAINS(backend->copy(on_gpu, f32), "host memory");
}

TEST(CpuBackend, ConvertRoundsOnceBetweenEveryPairOfFloatDtypes) {
  auto backend = make_cpu_backend();
  std::mt19937 rng(1);
  // More than one conversion chunk (4096), with a partial last one.
  std::vector<double> values = random_values(10007, rng, -300.0, 300.0);
  for (DType from : {DType::kF32, DType::kF16, DType::kBF16}) {
    for (DType to : {DType::kF32, DType::kF16, DType::kBF16}) {
      Tensor src = make_tensor(from, {10007}, values);
      Tensor dst(cpu_allocator(), to, {10007});
      backend->convert(dst, src);
      // The expected value is src's stored value rounded once to dst's dtype.
      Tensor expected = make_tensor(to, {10007}, to_doubles(src));
      EXPECT_EQ(to_doubles(dst), to_doubles(expected))
          << dtype_name(from) << " -> " << dtype_name(to);
    }
  }
}

// The CPU backend widens bf16 with its own vectorisable loop; it must agree with bf16_to_float
// on every bit pattern, NaNs and infinities included.
TEST(CpuBackend, Bf16WideningIsBitExactForEveryValue) {
  auto backend = make_cpu_backend();
  Tensor src(cpu_allocator(), DType::kBF16, {65536});
  Tensor dst(cpu_allocator(), DType::kF32, {65536});
  for (uint32_t bits = 0; bits < 65536; ++bits) {
    src.data_as<BFloat16>()[bits] = BFloat16{static_cast<uint16_t>(bits)};
  }
  backend->convert(dst, src);
  int mismatches = 0;
  for (uint32_t bits = 0; bits < 65536; ++bits) {
    float expected = bf16_to_float(BFloat16{static_cast<uint16_t>(bits)});
    mismatches += std::memcmp(&expected, dst.data_as<float>() + bits, sizeof(float)) != 0;
  }
  EXPECT_EQ(mismatches, 0);
}

TEST(CpuBackend, ConvertRejectsIntegers) {
  auto backend = make_cpu_backend();
  Tensor ints = testing::make_i32({4}, {1, 2, 3, 4});
  Tensor floats(cpu_allocator(), DType::kF32, {4});
  EXPECT_ERROR_CONTAINS(backend->convert(floats, ints), "convert: src is i32[4] (cpu) but must be f32");
}

}  // namespace
}  // namespace brisk
