// gemm_w4a16: CUDA against the CPU reference (which equals x times the fp32 dequantized weight
// exactly) on random int4 weights, scales in [0.005, 0.02], zero points in [0, 15] or symmetric,
// x uniform in [-1, 1]. The CPU writes f32.
// Tolerance: |cuda - cpu| <= atol + rtol * |cpu|, rtol = one rounding of y's dtype and
// - M <= 16 (the int4 kernel, fp32 dequantization and accumulation in another order, plus the
//   zero-point folding's cancellation): atol = 2e-4 * sqrt(K);
// - M > 16 with 16-bit x (dequantized to x's dtype, then cuBLASLt): one bf16 rounding of every
//   weight (2^-9 relative, |w| <= 0.3) adds up to ~1e-4 * sqrt(K): atol = 1e-3 * sqrt(K).
#include <gtest/gtest.h>

#include <cmath>

#include "ops_test_util.h"

namespace brisk::testing {
namespace {

struct W4Case {
  int64_t m, n, k;
  int group;
  bool zeros;  // false: symmetric
  DType x, y;
  bool bias;
  bool strided_x;
};

std::string describe(const W4Case& c) {
  return "gemm_w4a16 M " + std::to_string(c.m) + " N " + std::to_string(c.n) + " K " + std::to_string(c.k) +
         " group " + std::to_string(c.group) + (c.zeros ? " zeros" : " symmetric") + " x " + dtype_str(c.x) +
         " y " + dtype_str(c.y) + (c.bias ? " +bias" : "") + (c.strided_x ? " strided x" : "");
}

// Random int4 weights in brisk's layout with their scales and zero points.
struct Int4Host {
  Tensor qweight, scales, zeros;
};
Int4Host random_int4(int64_t n, int64_t k, int group, bool with_zeros, std::mt19937& rng) {
  Int4Host w;
  w.qweight = Tensor(cpu_allocator(), DType::kI4, {n, k});
  std::uniform_int_distribution<int> byte(0, 255), nibble(0, 15);
  for (size_t i = 0; i < w.qweight.view().num_bytes(); ++i) w.qweight.data_as<uint8_t>()[i] = static_cast<uint8_t>(byte(rng));
  w.scales = random_tensor(DType::kF16, {n, k / group}, rng, 0.005, 0.02);
  if (with_zeros) {
    w.zeros = Tensor(cpu_allocator(), DType::kU8, {n, k / group});
    for (int64_t i = 0; i < n * (k / group); ++i) w.zeros.data_as<uint8_t>()[i] = static_cast<uint8_t>(nibble(rng));
  }
  return w;
}

void check_w4a16(const W4Case& c) {
  std::mt19937 rng(static_cast<unsigned>(c.m * 131 + c.n * 7 + c.k + c.group));
  Int4Host w = random_int4(c.n, c.k, c.group, c.zeros, rng);
  const int64_t x_cols = c.strided_x ? c.k + 8 : c.k;
  Tensor x_full = random_tensor(c.x, {c.m, x_cols}, rng);
  Tensor bias = random_tensor(DType::kF32, {c.n}, rng);
  TensorView x = x_full.view().slice(1, 0, c.k);
  Tensor expected = zeros(DType::kF32, {c.m, c.n});
  cpu_backend().gemm_w4a16({x, w.qweight, w.scales, w.zeros, c.group, c.bias ? bias.view() : TensorView(), expected});

  Tensor x_d = to_device(x_full), q_d = to_device(w.qweight), s_d = to_device(w.scales), b_d = to_device(bias);
  Tensor z_d = c.zeros ? to_device(w.zeros) : Tensor();
  Tensor y_d(cuda_backend().allocator(), c.y, {c.m, c.n});
  cuda_backend().gemm_w4a16({x_d.view().slice(1, 0, c.k), q_d, s_d, z_d, c.group,
                             c.bias ? b_d.view() : TensorView(), y_d});
  const bool dense_path = c.m > 16 && c.x != DType::kF32;
  const double atol = (dense_path ? 1e-3 : 2e-4) * std::sqrt(static_cast<double>(c.k));
  expect_close(host_doubles(y_d), to_doubles(expected), atol, output_rtol(c.y), describe(c));
}

TEST(GemmW4A16, MatchesCpuSmallM) {
  const DType bf16 = DType::kBF16, f16 = DType::kF16, f32 = DType::kF32;
  for (int64_t m = 1; m <= 16; ++m) {
    check_w4a16({m, 104, 512, 128, true, bf16, bf16, false, false});
    check_w4a16({m, 37, 1056, 32, m % 2 == 0, bf16, f32, m % 3 == 0, false});  // K not a multiple of 1024
  }
  const W4Case cases[] = {
      {1, 8, 128, 128, true, bf16, bf16, false, false},     // one group, one warp of rows
      {1, 4096, 4096, 128, true, bf16, bf16, false, false},
      {3, 4096, 4096, 64, false, f16, f16, true, false},
      {1, 64, 8192, 128, true, bf16, bf16, true, false},    // small N, long K: split-K
      {5, 72, 14336, 64, true, bf16, f32, false, false},    // split-K with odd M
      {2, 6144, 4096, 128, true, f32, f32, true, false},    // f32 activations
      {7, 96, 256, 32, true, bf16, bf16, true, true},       // strided x (copied to aligned rows)
      {16, 101, 384, 128, false, bf16, bf16, false, false}, // N not a multiple of the warp's rows
  };
  for (const W4Case& c : cases) check_w4a16(c);
}

TEST(GemmW4A16, MatchesCpuLargeM) {
  const DType bf16 = DType::kBF16, f16 = DType::kF16, f32 = DType::kF32;
  const W4Case cases[] = {
      {17, 104, 512, 128, true, bf16, bf16, false, false},
      {33, 256, 1024, 64, false, f16, f16, true, false},
      {64, 512, 2048, 32, true, bf16, f32, true, false},
      {19, 96, 256, 128, true, f32, f32, false, false},  // f32: exact dequantization, fp32 GEMM
  };
  for (const W4Case& c : cases) check_w4a16(c);
}

TEST(GemmW4A16, RejectsUnsupportedGroup) {
  std::mt19937 rng(1);
  Int4Host w = random_int4(8, 64, 16, false, rng);
  Tensor q_d = to_device(w.qweight), s_d = to_device(w.scales);
  Tensor x_d(cuda_backend().allocator(), DType::kBF16, {1, 64}), y_d(cuda_backend().allocator(), DType::kBF16, {1, 8});
  EXPECT_ERROR_CONTAINS(cuda_backend().gemm_w4a16({x_d, q_d, s_d, {}, 16, {}, y_d}), "multiple of 32");
}

// Weights of several copies rotate so that the timed reads come from DRAM, not the 50 MB L2.
TEST(GemmW4A16Perf, DecodeShapes) {
  if (!perf_enabled()) GTEST_SKIP() << "set BRISK_OPS_PERF=1";
  Allocator& alloc = cuda_backend().allocator();
  struct Shape3 { const char* name; int64_t n, k; };
  const Shape3 shapes[] = {{"gate_up", 28672, 4096}, {"qkv", 6144, 4096}, {"o_proj", 4096, 4096},
                           {"down", 4096, 14336}};
  const int group = 128;
  for (const Shape3& s : shapes) {
    const double weight_bytes = s.n * s.k / 2.0 + s.n * (s.k / group) * 3.0;
    const int copies = static_cast<int>(std::ceil(256e6 / weight_bytes));
    std::vector<Tensor> q, sc, z;
    for (int i = 0; i < copies; ++i) {
      std::mt19937 rng(i);
      Int4Host h = random_int4(s.n, s.k, group, true, rng);
      q.push_back(to_device(h.qweight));
      sc.push_back(to_device(h.scales));
      z.push_back(to_device(h.zeros));
    }
    for (int64_t m : {int64_t{1}, int64_t{4}, int64_t{16}}) {
      Tensor x(alloc, DType::kBF16, {m, s.k}), y(alloc, DType::kBF16, {m, s.n});
      fill_random(x, 1);
      int next = 0;
      const double bytes = weight_bytes + 2.0 * (m * s.k + m * s.n);
      const std::string shape = "M " + std::to_string(m) + " N " + std::to_string(s.n) + " K " + std::to_string(s.k);
      report_perf(std::string("w4a16 ") + s.name, shape + " g128", bytes, 2.0 * m * s.n * s.k, [&] {
        const int i = next++ % copies;
        cuda_backend().gemm_w4a16({x, q[i], sc[i], z[i], group, {}, y});
      });
      if (m == 1) {  // the peer in the same run: cuBLASLt on the dense bf16 weight
        Tensor w(alloc, DType::kBF16, {s.n, s.k});
        fill_random(w, 2);
        report_perf(std::string("dense ") + s.name, shape + " bf16", 2.0 * s.n * s.k + 2.0 * (s.k + s.n),
                    2.0 * s.n * s.k, [&] { cuda_backend().gemm({x, w, {}, y}); }, 20);
      }
    }
  }
}

}  // namespace
}  // namespace brisk::testing
