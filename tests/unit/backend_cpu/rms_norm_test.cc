#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#include "op_test_util.h"

namespace brisk {
namespace {

using testing::random_tensor;
using testing::to_doubles;

// out = x / sqrt(mean(x^2) + eps) * weight, row by row, in double.
std::vector<double> reference(const std::vector<double>& x, const std::vector<double>& weight,
                              int64_t dim, double eps) {
  std::vector<double> out(x.size());
  for (size_t r = 0; r < x.size() / dim; ++r) {
    double sum = 0;
    for (int64_t i = 0; i < dim; ++i) sum += x[r * dim + i] * x[r * dim + i];
    double inv = 1.0 / std::sqrt(sum / dim + eps);
    for (int64_t i = 0; i < dim; ++i) out[r * dim + i] = x[r * dim + i] * inv * weight[i];
  }
  return out;
}

TEST(CpuRmsNorm, MatchesDoubleReference) {
  auto backend = make_cpu_backend();
  std::mt19937 rng(11);
  const int64_t num_rows = 9, dim = 96;
  for (DType dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
    for (DType weight_dtype : {DType::kF32, DType::kBF16}) {
      Tensor x = random_tensor(dtype, {num_rows, dim}, rng, -3.0, 3.0);
      Tensor weight = random_tensor(weight_dtype, {dim}, rng, 0.5, 1.5);
      Tensor out(cpu_allocator(), dtype, {num_rows, dim});
      backend->rms_norm({.x = x, .weight = weight, .out = out, .eps = 1e-5f});
      testing::expect_close(to_doubles(out), reference(to_doubles(x), to_doubles(weight), dim, 1e-5),
                            1e-6, testing::rounding_tolerance(dtype),
                            "rms_norm " + testing::dtype_str(dtype));
    }
  }
}

TEST(CpuRmsNorm, ResidualIsUpdatedThenNormalised) {
  auto backend = make_cpu_backend();
  std::mt19937 rng(12);
  const int64_t num_rows = 5, dim = 64;
  for (DType dtype : {DType::kF32, DType::kBF16}) {
    for (DType residual_dtype : {DType::kF32, DType::kBF16}) {
      Tensor x = random_tensor(dtype, {num_rows, dim}, rng, -2.0, 2.0);
      Tensor residual = random_tensor(residual_dtype, {num_rows, dim}, rng, -2.0, 2.0);
      Tensor weight = random_tensor(DType::kF32, {dim}, rng, 0.5, 1.5);
      Tensor out(cpu_allocator(), dtype, {num_rows, dim});
      std::vector<double> expected_residual = to_doubles(x);
      std::vector<double> old_residual = to_doubles(residual);
      for (size_t i = 0; i < expected_residual.size(); ++i) expected_residual[i] += old_residual[i];
      backend->rms_norm({.x = x, .residual = residual, .weight = weight, .out = out});
      std::string what = "add & norm " + testing::dtype_str(dtype) + " residual " +
                         testing::dtype_str(residual_dtype);
      testing::expect_close(to_doubles(residual), expected_residual, 1e-6,
                            testing::rounding_tolerance(residual_dtype), what + " (residual)");
      // The norm reads the residual as stored, rounding included.
      testing::expect_close(to_doubles(out),
                            reference(to_doubles(residual), to_doubles(weight), dim, 1e-6), 1e-6,
                            testing::rounding_tolerance(dtype), what + " (out)");
    }
  }
}

// bf16 holds 1 + 2^-9 as 1: the norm must see the rounded residual [1, 1], whose normalised
// value is exactly [1, 1], not the fp32 sum (which would give [1.00098, 0.99902]).
TEST(CpuRmsNorm, NormalisesTheResidualAsStored) {
  auto backend = make_cpu_backend();
  Tensor x = testing::make_tensor(DType::kF32, {1, 2}, {1.0 / 512, 0.0});
  Tensor residual = testing::make_tensor(DType::kBF16, {1, 2}, {1.0, 1.0});
  Tensor weight = testing::make_tensor(DType::kF32, {2}, {1.0, 1.0});
  Tensor out(cpu_allocator(), DType::kF32, {1, 2});
  backend->rms_norm({.x = x, .residual = residual, .weight = weight, .out = out, .eps = 0.0f});
  EXPECT_EQ(to_doubles(residual), (std::vector<double>{1.0, 1.0}));
  EXPECT_EQ(to_doubles(out), (std::vector<double>{1.0, 1.0}));
}

TEST(CpuRmsNorm, OutMayAliasXAndRowsMayBeStrided) {
  auto backend = make_cpu_backend();
  std::mt19937 rng(13);
  const int64_t dim = 32;
  Tensor wide = random_tensor(DType::kBF16, {4, dim + 8}, rng);
  TensorView x = wide.view().slice(1, 4, 4 + dim);
  Tensor weight = random_tensor(DType::kBF16, {dim}, rng, 0.5, 1.5);
  std::vector<double> expected = reference(to_doubles(x), to_doubles(weight), dim, 1e-6);
  std::vector<double> untouched = to_doubles(wide.view().slice(1, 0, 4));
  backend->rms_norm({.x = x, .weight = weight, .out = x});
  testing::expect_close(to_doubles(x), expected, 1e-6, testing::rounding_tolerance(DType::kBF16),
                        "in-place strided rms_norm");
  EXPECT_EQ(to_doubles(wide.view().slice(1, 0, 4)), untouched);
}

TEST(CpuRmsNorm, RejectsBadParams) {
  auto backend = make_cpu_backend();
  Tensor x(cpu_allocator(), DType::kF32, {2, 8});
  Tensor out(cpu_allocator(), DType::kF32, {2, 8});
  Tensor weight(cpu_allocator(), DType::kF32, {8});
  Tensor short_weight(cpu_allocator(), DType::kF32, {7});
  Tensor bad_residual(cpu_allocator(), DType::kF32, {3, 8});
  EXPECT_ERROR_CONTAINS(backend->rms_norm({.x = x, .weight = short_weight, .out = out}),
                        "rms_norm: x is f32[2, 8] (cpu) but weight is f32[7] (cpu): dim differs");
  EXPECT_ERROR_CONTAINS(
      backend->rms_norm({.x = x, .residual = bad_residual, .weight = weight, .out = out}),
      "residual is f32[3, 8] (cpu) but x is f32[2, 8] (cpu)");
  EXPECT_ERROR_CONTAINS(backend->rms_norm({.x = x, .out = out}), "weight is required");
  TensorView gpu_x(x.view().data(), DType::kF32, {2, 8}, Device::kCuda);
  EXPECT_ERROR_CONTAINS(backend->rms_norm({.x = gpu_x, .weight = weight, .out = out}),
                        "rms_norm: x is f32[2, 8] (cuda) but the cpu backend needs host memory");
}

}  // namespace
}  // namespace brisk
