// gemm_fp8: CUDA against the CPU reference on the same inputs. Both quantize x with the same
// fp32 division and saturating round to nearest even (identical e4m3 codes and scales); the
// sums of exact products differ only in fp32 accumulation order. Tolerance: |cuda - cpu| <=
// 1e-5 * sqrt(K) * (the terms' scale, ~1 here) + one rounding of y's dtype.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "ops_test_util.h"

namespace brisk::testing {
namespace {

struct Fp8Case {
  int64_t m, n, k;
  int block_size;
  bool static_scale, bias, strided_x;
  DType x, y;
};

std::string describe(const Fp8Case& c) {
  return "gemm_fp8 M " + std::to_string(c.m) + " N " + std::to_string(c.n) + " K " + std::to_string(c.k) + " block " +
         std::to_string(c.block_size) + (c.static_scale ? " static" : "") + (c.bias ? " +bias" : "") +
         (c.strided_x ? " strided x" : "") + " x " + dtype_str(c.x) + " y " + dtype_str(c.y);
}

void check_fp8(const Fp8Case& c) {
  std::mt19937 rng(static_cast<unsigned>(c.m * 131 + c.n * 7 + c.k));
  const int64_t x_cols = c.strided_x ? 2 * c.k : c.k;
  Tensor x_full = random_tensor(c.x, {c.m, x_cols}, rng);
  TensorView x = x_full.view().slice(1, 0, c.k);
  Tensor w(cpu_allocator(), DType::kF8E4M3, {c.n, c.k});
  for (int64_t i = 0; i < c.n * c.k; ++i) {
    uint8_t code;
    do code = static_cast<uint8_t>(rng()); while ((code & 0x7f) == 0x7f);
    w.data_as<uint8_t>()[i] = code;
  }
  const int64_t groups = c.block_size > 0 ? (c.k + c.block_size - 1) / c.block_size : 1;
  Tensor w_scale(cpu_allocator(), DType::kF32, {c.n, groups});
  for (int64_t i = 0; i < c.n * groups; ++i) w_scale.data_as<float>()[i] = std::ldexp(1.0f + (rng() % 100) / 100.0f, -9);
  Tensor input_scale = make_tensor(DType::kF32, {1}, {1.0 / 300});
  Tensor bias = random_tensor(DType::kBF16, {c.n}, rng);
  Tensor expected = zeros(DType::kF32, {c.m, c.n});
  cpu_backend().gemm_fp8({x, w, w_scale, c.static_scale ? input_scale.view() : TensorView(), c.block_size,
                          c.bias ? bias.view() : TensorView(), expected});
  Tensor x_d = to_device(x_full), w_d = to_device(w), scale_d = to_device(w_scale), input_d = to_device(input_scale),
         bias_d = to_device(bias);
  Tensor y_d(cuda_backend().allocator(), c.y, {c.m, c.n});
  cuda_backend().gemm_fp8({x_d.view().slice(1, 0, c.k), w_d, scale_d, c.static_scale ? input_d.view() : TensorView(),
                           c.block_size, c.bias ? bias_d.view() : TensorView(), y_d});
  expect_close(host_doubles(y_d), to_doubles(expected), 1e-5 * std::sqrt(static_cast<double>(c.k)), output_rtol(c.y),
               describe(c));
}

TEST(GemmFp8, MatchesCpu) {
  const DType bf16 = DType::kBF16, f16 = DType::kF16, f32 = DType::kF32;
  const Fp8Case cases[] = {
      {1, 64, 128, 0, false, false, false, bf16, bf16},
      {7, 96, 4096, 0, false, true, false, bf16, bf16},   // per token, bias
      {33, 200, 512, 0, true, false, true, f16, f32},     // static scale, strided x
      {16, 384, 1000, 128, false, true, false, bf16, bf16},  // blocks, a partial last group
      {300, 130, 256, 128, false, false, false, f32, f16},
  };
  for (const Fp8Case& c : cases) check_fp8(c);
}

}  // namespace
}  // namespace brisk::testing
