#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#include "op_test_util.h"

namespace brisk {
namespace {

using testing::to_doubles;

TEST(CpuSiluMul, MatchesDoubleReference) {
  auto backend = make_cpu_backend();
  std::mt19937 rng(3);
  const int64_t num_tokens = 7, dim = 45;
  for (DType x_dtype : {DType::kF32, DType::kF16, DType::kBF16}) {
    for (DType out_dtype : {DType::kF32, DType::kBF16}) {
      // Rows strided by 2 * dim + 3 to check that only the last dimension must be contiguous.
      Tensor wide = testing::random_tensor(x_dtype, {num_tokens, 2 * dim + 3}, rng, -8.0, 8.0);
      TensorView x = wide.view().slice(1, 0, 2 * dim);
      Tensor out(cpu_allocator(), out_dtype, {num_tokens, dim});
      backend->silu_mul({x, out});
      std::vector<double> xs = to_doubles(x);
      std::vector<double> expected;
      for (int64_t t = 0; t < num_tokens; ++t) {
        for (int64_t i = 0; i < dim; ++i) {
          double g = xs[t * 2 * dim + i];
          double u = xs[t * 2 * dim + dim + i];
          expected.push_back(g / (1.0 + std::exp(-g)) * u);
        }
      }
      testing::expect_close(to_doubles(out), expected, 1e-6,
                            testing::rounding_tolerance(out_dtype),
                            "silu_mul " + testing::dtype_str(x_dtype) + " -> " +
                                testing::dtype_str(out_dtype));
    }
  }
}

TEST(CpuSiluMul, RejectsMismatchedWidth) {
  auto backend = make_cpu_backend();
  Tensor x(cpu_allocator(), DType::kF32, {2, 10});
  Tensor out(cpu_allocator(), DType::kF32, {2, 4});
  EXPECT_ERROR_CONTAINS(backend->silu_mul({x, out}), "x must be [num_tokens, 2 * dim]");
  Tensor ints(cpu_allocator(), DType::kI32, {2, 8});
  EXPECT_ERROR_CONTAINS(backend->silu_mul({ints, out}), "silu_mul: x is i32[2, 8] (cpu) but must be f32");
}

}  // namespace
}  // namespace brisk
