// gemm_fp8 on the CPU against a double-precision reference written from GemmFp8Params' definition
// (backend.h): x quantized per token, per 128-column group or by a static scale, then the sum of
// the dequantized products. The quantized values must agree exactly (same fp32 division and
// rounding); the sums differ only by fp32 accumulation: |error| <= 1e-5 * sqrt(K) * scale of y.
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

struct Fp8Case {
  int64_t m, n, k;
  int block_size;
  bool static_scale, bias;
  DType x, y;
};

// Random e4m3 codes (finite) and positive scales.
Tensor random_fp8(int64_t n, int64_t k, std::mt19937& rng) {
  Tensor w(cpu_allocator(), DType::kF8E4M3, {n, k});
  for (int64_t i = 0; i < n * k; ++i) {
    uint8_t code;
    do code = static_cast<uint8_t>(rng()); while ((code & 0x7f) == 0x7f);
    w.data_as<uint8_t>()[i] = code;
  }
  return w;
}

std::vector<double> reference(const TensorView& x, const TensorView& w, const TensorView& w_scale, float input_scale,
                              int block_size, const TensorView& bias) {
  const int64_t m_rows = x.size(0), n_cols = w.size(0), k = x.size(1);
  const int64_t group = block_size > 0 ? block_size : k;
  const std::vector<double> xs = to_doubles(x), ws = to_doubles(w_scale);
  std::vector<double> q(m_rows * k), s(m_rows * k);
  for (int64_t m = 0; m < m_rows; ++m) {
    for (int64_t k0 = 0; k0 < k; k0 += group) {
      const int64_t k1 = std::min(k, k0 + group);
      float scale = input_scale;
      if (input_scale == 0.0f) {
        float amax = 0.0f;
        for (int64_t i = k0; i < k1; ++i) amax = std::max(amax, std::fabs(static_cast<float>(xs[m * k + i])));
        scale = amax > 0.0f ? amax / 448.0f : 1.0f;
      }
      for (int64_t i = k0; i < k1; ++i) {
        q[m * k + i] = e4m3_to_float(float_to_e4m3(static_cast<float>(xs[m * k + i]) / scale));
        s[m * k + i] = scale;
      }
    }
  }
  const int64_t groups = w_scale.size(1);
  std::vector<double> y(m_rows * n_cols);
  for (int64_t m = 0; m < m_rows; ++m)
    for (int64_t n = 0; n < n_cols; ++n) {
      double sum = bias.empty() ? 0.0 : to_doubles(bias)[n];
      for (int64_t i = 0; i < k; ++i)
        sum += q[m * k + i] * s[m * k + i] * e4m3_to_float(w.data_as<const uint8_t>()[n * k + i]) *
               ws[n * groups + (groups > 1 ? i / block_size : 0)];
      y[m * n_cols + n] = sum;
    }
  return y;
}

void check(Backend& backend, const Fp8Case& c, std::mt19937& rng) {
  Tensor x = random_tensor(c.x, {c.m, c.k}, rng);
  Tensor w = random_fp8(c.n, c.k, rng);
  const int64_t groups = c.block_size > 0 ? (c.k + c.block_size - 1) / c.block_size : 1;
  Tensor w_scale(cpu_allocator(), DType::kF32, {c.n, groups});
  for (int64_t i = 0; i < c.n * groups; ++i) w_scale.data_as<float>()[i] = std::ldexp(1.0f + (rng() % 100) / 100.0f, -9);
  Tensor input_scale(cpu_allocator(), DType::kF32, {1});
  input_scale.data_as<float>()[0] = 1.0f / 300.0f;  // |x| <= 1: codes up to 300, none saturate
  Tensor bias = c.bias ? random_tensor(DType::kBF16, {c.n}, rng) : Tensor();
  Tensor y(cpu_allocator(), c.y, {c.m, c.n});
  GemmFp8Params p{x, w, w_scale, c.static_scale ? input_scale.view() : TensorView(), c.block_size, bias.view(), y};
  backend.gemm_fp8(p);
  const std::vector<double> expected =
      reference(x, w, w_scale, c.static_scale ? input_scale.data_as<float>()[0] : 0.0f, c.block_size, bias.view());
  // |q x w| <= 448 * 448 per product, times scales of ~2^-9 * 2^-9 / 448: terms of ~2^-9 at most.
  const double atol = 1e-6 * std::sqrt(static_cast<double>(c.k));
  testing::expect_close(to_doubles(y), expected, atol, testing::rounding_tolerance(c.y),
                        "gemm_fp8 M " + std::to_string(c.m) + " N " + std::to_string(c.n) + " K " +
                            std::to_string(c.k) + " block " + std::to_string(c.block_size));
}

TEST(CpuGemmFp8, MatchesDoubleReference) {
  auto backend = make_cpu_backend();
  std::mt19937 rng(31);
  const Fp8Case cases[] = {
      {3, 33, 65, 0, false, false, DType::kF32, DType::kF32},       // per token
      {5, 70, 128, 0, true, true, DType::kBF16, DType::kBF16},      // static scale, bias
      {4, 130, 300, 128, false, true, DType::kBF16, DType::kF32},   // blocks, a partial last group
      {2, 257, 1000, 128, false, false, DType::kF16, DType::kF16},  // many column blocks
      {1, 8, 64, 128, false, false, DType::kF32, DType::kBF16},     // K below one block
  };
  for (const Fp8Case& c : cases) check(*backend, c, rng);
}

TEST(CpuGemmFp8, ZeroRowsAndSaturation) {
  auto backend = make_cpu_backend();
  Tensor x = testing::make_tensor(DType::kF32, {2, 4}, {0, 0, 0, 0, 1, -2, 4, 1000});
  Tensor w(cpu_allocator(), DType::kF8E4M3, {1, 4});
  for (int i = 0; i < 4; ++i) w.data_as<uint8_t>()[i] = float_to_e4m3(1.0f);
  Tensor w_scale = testing::make_tensor(DType::kF32, {1, 1}, {1.0});
  Tensor y(cpu_allocator(), DType::kF32, {2, 1});
  backend->gemm_fp8({x, w, w_scale, {}, 0, {}, y});
  EXPECT_EQ(y.data_as<float>()[0], 0.0f);  // an all-zero row: scale 1, products 0
  // Row 1 scale 1000 / 448: 1000 maps to 448 exactly; 1, -2, 4 round to e4m3 steps of x / scale.
  const float scale = 1000.0f / 448.0f;
  double expected = 0;
  for (float v : {1.0f, -2.0f, 4.0f, 1000.0f}) expected += e4m3_to_float(float_to_e4m3(v / scale)) * scale;
  EXPECT_NEAR(y.data_as<float>()[1], expected, 1e-3);
  Tensor static_scale = testing::make_tensor(DType::kF32, {1}, {1.0 / 64});  // 1000 * 64 saturates at 448
  backend->gemm_fp8({x, w, w_scale, static_scale, 0, {}, y});
  EXPECT_NEAR(y.data_as<float>()[1], (64 - 128 + 256 + 448) / 64.0, 1e-6);
}

// y with room past x's rows (GemmFp8Params::y): the first rows as with a y of x's rows, the room
// NaN (the CPU poisons it so that a caller reading it fails its tests), no room refused.
TEST(CpuGemmFp8, RoomPastXsRows) {
  auto backend = make_cpu_backend();
  std::mt19937 rng(7);
  Tensor x = random_tensor(DType::kF32, {3, 64}, rng, -2, 2);
  Tensor w = random_fp8(5, 64, rng);
  Tensor w_scale = random_tensor(DType::kF32, {5, 1}, rng, 0.01, 0.1);
  EXPECT_EQ(backend->gemm_fp8_rows(3), 8);
  EXPECT_EQ(backend->gemm_fp8_rows(16), 16);
  Tensor exact(cpu_allocator(), DType::kF32, {3, 5}), room(cpu_allocator(), DType::kF32, {8, 5});
  backend->gemm_fp8({x, w, w_scale, {}, 0, {}, exact});
  backend->gemm_fp8({x, w, w_scale, {}, 0, {}, room});
  for (int64_t i = 0; i < 15; ++i) EXPECT_EQ(room.data_as<float>()[i], exact.data_as<float>()[i]) << i;
  for (int64_t i = 15; i < 40; ++i) EXPECT_TRUE(std::isnan(room.data_as<float>()[i])) << i;
  Tensor short_y(cpu_allocator(), DType::kF32, {2, 5});
  EXPECT_ERROR_CONTAINS(backend->gemm_fp8({x, w, w_scale, {}, 0, {}, short_y}), "but y is");
}

TEST(CpuGemmFp8, RejectsBadParams) {
  auto backend = make_cpu_backend();
  Tensor x(cpu_allocator(), DType::kBF16, {2, 256});
  Tensor w(cpu_allocator(), DType::kF8E4M3, {4, 256});
  Tensor y(cpu_allocator(), DType::kF32, {2, 4});
  Tensor per_row(cpu_allocator(), DType::kF32, {4, 1}), per_block(cpu_allocator(), DType::kF32, {4, 2});
  Tensor one(cpu_allocator(), DType::kF32, {1});
  EXPECT_ERROR_CONTAINS(backend->gemm_fp8({x, w, per_block, {}, 0, {}, y}), "needs [4, 1]");
  EXPECT_ERROR_CONTAINS(backend->gemm_fp8({x, w, per_row, {}, 128, {}, y}), "needs [4, 2]");
  EXPECT_ERROR_CONTAINS(backend->gemm_fp8({x, w, per_row, {}, 64, {}, y}), "block_size is 64");
  EXPECT_ERROR_CONTAINS(backend->gemm_fp8({x, w, per_block, one, 128, {}, y}), "without block_size");
  Tensor w_bf16(cpu_allocator(), DType::kBF16, {4, 256});
  EXPECT_ERROR_CONTAINS(backend->gemm_fp8({x, w_bf16, per_row, {}, 0, {}, y}), "must be f8e4m3");
}

}  // namespace
}  // namespace brisk
