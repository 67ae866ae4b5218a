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

struct GemmCase {
  DType x, w, bias, y;
  bool has_bias;
};

// y = x w^T + bias in double from the stored (rounded) inputs.
std::vector<double> reference(const TensorView& x, const TensorView& w, const TensorView& bias) {
  const int64_t m_rows = x.size(0), n_cols = w.size(0), k = x.size(1);
  std::vector<double> xs = to_doubles(x), ws = to_doubles(w);
  std::vector<double> bs = bias.empty() ? std::vector<double>(n_cols, 0.0) : to_doubles(bias);
  std::vector<double> y(m_rows * n_cols);
  for (int64_t m = 0; m < m_rows; ++m) {
    for (int64_t n = 0; n < n_cols; ++n) {
      double sum = bs[n];
      for (int64_t i = 0; i < k; ++i) sum += xs[m * k + i] * ws[n * k + i];
      y[m * n_cols + n] = sum;
    }
  }
  return y;
}

void check_gemm(Backend& backend, const GemmCase& c, int64_t m_rows, int64_t n_cols, int64_t k,
                std::mt19937& rng) {
  Tensor x = random_tensor(c.x, {m_rows, k}, rng);
  Tensor w = random_tensor(c.w, {n_cols, k}, rng);
  Tensor bias = c.has_bias ? random_tensor(c.bias, {n_cols}, rng) : Tensor();
  Tensor y(cpu_allocator(), c.y, {m_rows, n_cols});
  backend.gemm({x, w, bias.view(), y});
  // Inputs in [-1, 1]: fp32 accumulation error stays below ~k * 2^-24; the output's own
  // rounding is relative to its dtype.
  const double atol = 1e-6 * k;
  std::string what = "gemm M=" + std::to_string(m_rows) + " N=" + std::to_string(n_cols) +
                     " K=" + std::to_string(k) + " x " + testing::dtype_str(c.x) + " w " +
                     testing::dtype_str(c.w) + " y " + testing::dtype_str(c.y) +
                     (c.has_bias ? " bias " + testing::dtype_str(c.bias) : " no bias");
  testing::expect_close(to_doubles(y), reference(x, w, bias.view()), atol,
                        testing::rounding_tolerance(c.y), what);
}

const std::vector<GemmCase> kCases = {
    {DType::kF32, DType::kF32, DType::kF32, DType::kF32, true},
    {DType::kF32, DType::kF32, DType::kF32, DType::kF32, false},
    {DType::kBF16, DType::kBF16, DType::kBF16, DType::kBF16, true},
    {DType::kBF16, DType::kBF16, DType::kBF16, DType::kBF16, false},
    {DType::kF16, DType::kF16, DType::kF16, DType::kF16, true},
    {DType::kF32, DType::kBF16, DType::kBF16, DType::kF32, true},  // CPU activations, bf16 model
    {DType::kF32, DType::kBF16, DType::kF32, DType::kF32, false},  // lm_head -> f32 logits
    {DType::kBF16, DType::kF16, DType::kF32, DType::kF32, true},
    {DType::kF16, DType::kF32, DType::kBF16, DType::kF16, true},
};

TEST(CpuGemm, OddSizesAndDtypeMixesMatchDoubleReference) {
  auto backend = make_cpu_backend();
  std::mt19937 rng(21);
  for (const GemmCase& c : kCases) {
    for (int64_t m_rows : {1, 3, 17}) check_gemm(*backend, c, m_rows, 33, 65, rng);
  }
}

TEST(CpuGemm, ManyColumnBlocksWithAPartialLastBlock) {
  auto backend = make_cpu_backend();
  std::mt19937 rng(22);
  check_gemm(*backend, kCases[0], 5, 301, 1000, rng);
  check_gemm(*backend, kCases[5], 2, 257, 4099, rng);
  check_gemm(*backend, kCases[2], 3, 70, 7, rng);
}

TEST(CpuGemm, StridedRowsOfXAndY) {
  auto backend = make_cpu_backend();
  std::mt19937 rng(23);
  Tensor x_wide = random_tensor(DType::kBF16, {4, 50}, rng);
  TensorView x = x_wide.view().slice(1, 10, 50);  // [4, 40]
  Tensor w = random_tensor(DType::kBF16, {9, 40}, rng);
  Tensor y_wide = testing::make_tensor(DType::kF32, {4, 12}, std::vector<double>(48, 42.0));
  TensorView y = y_wide.view().slice(1, 3, 12);  // [4, 9]
  backend->gemm({x, w, {}, y});
  testing::expect_close(to_doubles(y), reference(x, w, {}), 1e-5, 1e-6, "strided gemm");
  std::vector<double> all = to_doubles(y_wide);
  for (int r = 0; r < 4; ++r) {
    for (int c = 0; c < 3; ++c) EXPECT_EQ(all[r * 12 + c], 42.0) << "y padding was written";
  }
}

// Each output row must be the same bits whether its row of x ran alone or in a batch (the
// engine's batch-invariance guarantee on CPU).
TEST(CpuGemm, RowsDoNotDependOnTheBatch) {
  auto backend = make_cpu_backend();
  std::mt19937 rng(24);
  Tensor x = random_tensor(DType::kF32, {17, 300}, rng);
  Tensor w = random_tensor(DType::kBF16, {129, 300}, rng);
  Tensor y(cpu_allocator(), DType::kF32, {17, 129});
  backend->gemm({x, w, {}, y});
  std::vector<double> batched = to_doubles(y);
  for (int64_t m = 0; m < 17; ++m) {
    Tensor y_row(cpu_allocator(), DType::kF32, {1, 129});
    backend->gemm({x.view().slice(0, m, m + 1), w, {}, y_row});
    std::vector<double> alone = to_doubles(y_row);
    EXPECT_TRUE(std::equal(alone.begin(), alone.end(), batched.begin() + m * 129)) << "row " << m;
  }
}

TEST(CpuGemm, RejectsBadShapes) {
  auto backend = make_cpu_backend();
  Tensor x(cpu_allocator(), DType::kF32, {3, 64});
  Tensor w(cpu_allocator(), DType::kBF16, {128, 32});
  Tensor w_ok(cpu_allocator(), DType::kBF16, {128, 64});
  Tensor y(cpu_allocator(), DType::kF32, {3, 128});
  Tensor y_bad(cpu_allocator(), DType::kF32, {3, 100});
  Tensor bias_bad(cpu_allocator(), DType::kF32, {127});
  EXPECT_ERROR_CONTAINS(backend->gemm({x, w, {}, y}),
                        "gemm: x is f32[3, 64] (cpu) but w is bf16[128, 32] (cpu): K differs");
  EXPECT_ERROR_CONTAINS(backend->gemm({x, w_ok, {}, y_bad}), "N differs");
  EXPECT_ERROR_CONTAINS(backend->gemm({x, w_ok, bias_bad, y}), "bias is f32[127] (cpu): N differs");
  Tensor ints(cpu_allocator(), DType::kI32, {128, 64});
  EXPECT_ERROR_CONTAINS(backend->gemm({x, ints, {}, y}), "gemm: w is i32[128, 64] (cpu) but must be");
  EXPECT_ERROR_CONTAINS(backend->gemm({x, w_ok, {}, {}}), "gemm: y is required");
}

// A row-parallel layer (tensor parallelism) splits K over 2 or 4 ranks and adds their products in
// pairs (cpu/thread_communicator.h): that sum is the whole product bit for bit, for every dtype.
TEST(CpuGemm, ProductsOverHalvesOfKAddUpExactly) {
  auto backend = make_cpu_backend();
  std::mt19937 rng(21);
  for (int64_t k : {128, 256, 448, 14336 / 16}) {
    for (DType w_dtype : {DType::kF32, DType::kBF16}) {
      Tensor x = random_tensor(DType::kF32, {3, k}, rng);
      Tensor w = random_tensor(w_dtype, {5, k}, rng);
      Tensor whole(cpu_allocator(), DType::kF32, {3, 5});
      backend->gemm({x, w, {}, whole});
      auto part = [&](int index, int parts) {
        Tensor y(cpu_allocator(), DType::kF32, {3, 5});
        const int64_t begin = k * index / parts, end = k * (index + 1) / parts;
        backend->gemm({copy_columns(x, begin, end - begin), copy_columns(w, begin, end - begin), {}, y});
        return y;
      };
      const Tensor h0 = part(0, 2), h1 = part(1, 2);
      const Tensor q0 = part(0, 4), q1 = part(1, 4), q2 = part(2, 4), q3 = part(3, 4);
      for (int64_t i = 0; i < 15; ++i) {
        const float expected = whole.data_as<float>()[i];
        EXPECT_EQ(h0.data_as<float>()[i] + h1.data_as<float>()[i], expected) << "K " << k << " element " << i;
        EXPECT_EQ((q0.data_as<float>()[i] + q1.data_as<float>()[i]) + (q2.data_as<float>()[i] + q3.data_as<float>()[i]),
                  expected)
            << "K " << k << " element " << i;
      }
    }
  }
}

}  // namespace
}  // namespace brisk
