// int4 weight conversions on hand-made words whose nibble order is worked out from the
// documented packings (int4_weight.h), round trips, RTN error bounds, and the CPU gemm_w4a16 op
// against a dense gemm of the dequantized weight (bit-exact: the dequantized values are exact in
// fp32 and both ops sum in the same order).
#include "model/int4_weight.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#include "brisk/status.h"
#include "core/host_convert.h"
#include "test_util.h"
#include "unit/backend_cpu/op_test_util.h"

namespace brisk {
namespace {

using testing::make_i32;
using testing::make_tensor;

TEST(Int4Weight, AwqWordUnpacksInAwqOrder) {
  // K = 8, N = 8, one group. Row k of the weight holds q[n, k] = (n + k) % 16. Nibble i of
  // an AutoAWQ word holds column {0, 2, 4, 6, 1, 3, 5, 7}[i], so for k = 0 the nibbles from
  // bit 0 up are 0, 2, 4, 6, 1, 3, 5, 7: the word 0x75316420.
  std::vector<int32_t> words(8);
  for (int k = 0; k < 8; ++k) {
    uint32_t word = 0;
    const int order[8] = {0, 2, 4, 6, 1, 3, 5, 7};
    for (int i = 0; i < 8; ++i) word |= static_cast<uint32_t>((order[i] + k) % 16) << (4 * i);
    words[k] = static_cast<int32_t>(word);
  }
  EXPECT_EQ(static_cast<uint32_t>(words[0]), 0x75316420u);
  Tensor qweight = make_i32({8, 1}, words);
  // Zero points: column n has zero n (word built the same way), scales 0.5 for every column.
  Tensor qzeros = make_i32({1, 1}, {static_cast<int32_t>(0x75316420u)});
  Tensor scales = make_tensor(DType::kF16, {1, 8}, std::vector<double>(8, 0.5));
  Int4Weight w = from_awq({qweight, qzeros, scales}, 8, "layer");
  ASSERT_EQ(w.qweight.shape(), Shape({8, 8}));
  for (int n = 0; n < 8; ++n) {
    EXPECT_EQ(w.zero(n, 0), n);
    for (int k = 0; k < 8; ++k) EXPECT_EQ(w.quant(n, k), (n + k) % 16) << n << " " << k;
  }
  Tensor dense = dequantize(w);
  EXPECT_EQ(dense.data_as<float>()[3 * 8 + 5], ((3 + 5) - 3) * 0.5f);  // [n 3, k 5]

  AwqPacked back = to_awq(w);
  for (int k = 0; k < 8; ++k) EXPECT_EQ(back.qweight.data_as<int32_t>()[k], words[k]);
  EXPECT_EQ(static_cast<uint32_t>(back.qzeros.data_as<int32_t>()[0]), 0x75316420u);
}

TEST(Int4Weight, GptqPacksAlongKWithZeroMinusOne) {
  // K = 16, N = 8, group 8. Word [r, n] holds rows 8r..8r+7 in nibbles 0..7: 0x76543210 gives
  // q[n, k] = k % 8. Version 1 stores zero - 1, sequential along N: stored 3 -> zero 4.
  std::vector<int32_t> words(2 * 8, static_cast<int32_t>(0x76543210u));
  Tensor qweight = make_i32({2, 8}, words);
  Tensor qzeros = make_i32({2, 1}, {0x00000003, static_cast<int32_t>(0x70000000u)});
  Tensor scales = make_tensor(DType::kF16, {2, 8}, std::vector<double>(16, 0.25));
  Int4Weight w = from_gptq({qweight, qzeros, scales, {}}, 8, {/*symmetric=*/false, /*zero_offset=*/1}, "l");
  for (int k = 0; k < 16; ++k) EXPECT_EQ(w.quant(5, k), k % 8);
  EXPECT_EQ(w.zero(0, 0), 4);
  EXPECT_EQ(w.zero(1, 0), 1);
  EXPECT_EQ(w.zero(7, 8), 8);   // group 1, column 7: stored 7
  EXPECT_EQ(w.zero(0, 8), 1);
  // gptq_v2 stores the zero itself.
  Int4Weight v2 = from_gptq({qweight, qzeros, scales, {}}, 8, {false, 0}, "l");
  EXPECT_EQ(v2.zero(0, 0), 3);
}

TEST(Int4Weight, GptqSymmetricNeedsZeroEight) {
  Tensor qweight = make_i32({1, 8}, std::vector<int32_t>(8, 0));
  Tensor scales = make_tensor(DType::kF16, {1, 8}, std::vector<double>(8, 1.0));
  Tensor sevens = make_i32({1, 1}, {0x77777777});
  Int4Weight w = from_gptq({qweight, sevens, scales, {}}, 8, {true, 1}, "l");
  EXPECT_TRUE(w.zeros.empty());
  EXPECT_EQ(w.zero(3, 3), 8);
  Tensor sixes = make_i32({1, 1}, {0x66666666});
  testing::expect_error([&] { from_gptq({qweight, sixes, scales, {}}, 8, {true, 1}, "l"); },
                        ErrorCode::kInvalidArgument, {"l.qzeros", "symmetric"});
}

TEST(Int4Weight, GptqRejectsActOrder) {
  Tensor qweight = make_i32({2, 8}, std::vector<int32_t>(16, 0));
  Tensor qzeros = make_i32({2, 1}, {0x77777777, 0x77777777});
  Tensor scales = make_tensor(DType::kF16, {2, 8}, std::vector<double>(16, 1.0));
  std::vector<int32_t> g_idx(16);
  for (int k = 0; k < 16; ++k) g_idx[k] = k / 8;
  Tensor trivial = make_i32({16}, g_idx);
  EXPECT_NO_THROW(from_gptq({qweight, qzeros, scales, trivial}, 8, {true, 1}, "l"));
  std::swap(g_idx[0], g_idx[15]);
  Tensor shuffled = make_i32({16}, g_idx);
  testing::expect_error([&] { from_gptq({qweight, qzeros, scales, shuffled}, 8, {true, 1}, "l"); },
                        ErrorCode::kUnsupported, {"l.g_idx", "desc_act"});
}

TEST(Int4Weight, RejectsBadShapes) {
  Tensor qweight = make_i32({8, 1}, std::vector<int32_t>(8, 0));
  Tensor qzeros = make_i32({2, 1}, {0, 0});
  Tensor scales = make_tensor(DType::kF16, {1, 8}, std::vector<double>(8, 1.0));
  testing::expect_error([&] { from_awq({qweight, qzeros, scales}, 8, "model.layers.0.mlp.up_proj"); },
                        ErrorCode::kInvalidArgument, {"model.layers.0.mlp.up_proj.qzeros", "[1, 1]"});
  testing::expect_error([&] { from_awq({qweight, qzeros, scales}, 3, "up"); }, ErrorCode::kInvalidArgument,
                        {"group size 3"});
}

TEST(Int4Weight, RtnRoundTripAndErrorBound) {
  std::mt19937 rng(7);
  const int64_t n = 24, k = 128;
  for (int64_t group : {32, 64, 128}) {
    Tensor dense = testing::random_tensor(DType::kBF16, {n, k}, rng);
    Int4Weight w = quantize_rtn(dense, group, DType::kF16);
    Tensor deq = dequantize(w);
    std::vector<double> original = testing::to_doubles(dense);
    for (int64_t r = 0; r < n; ++r) {
      for (int64_t i = 0; i < k; ++i) {
        const double scale = load_float(w.scales, r * (k / group) + i / group);
        // Half a step from rounding, plus up to half a step where the rounded zero point pushes
        // the group's extreme past 0 or 15 and it is clamped.
        EXPECT_LE(std::abs(deq.data_as<float>()[r * k + i] - original[r * k + i]), scale + 1e-6)
            << "group " << group << " [" << r << ", " << i << "]";
      }
    }
    AwqPacked packed = to_awq(w);
    Int4Weight back = from_awq({packed.qweight, packed.qzeros, packed.scales}, group, "rt");
    Tensor deq_back = dequantize(back);
    EXPECT_EQ(std::memcmp(deq.view().data(), deq_back.view().data(), deq.view().num_bytes()), 0);
  }
}

TEST(Int4Weight, ConcatRowsFusesAlongN) {
  std::mt19937 rng(3);
  Int4Weight a = quantize_rtn(testing::random_tensor(DType::kF32, {16, 64}, rng), 32, DType::kF16);
  Int4Weight b = quantize_rtn(testing::random_tensor(DType::kF32, {8, 64}, rng), 32, DType::kF16);
  Int4Weight fused = concat_rows({{&a, 8, 8}, {&b, 0, 8}, {&a, 0, 8}});
  ASSERT_EQ(fused.out_features(), 24);
  for (int64_t i = 0; i < 64; ++i) {
    EXPECT_EQ(fused.quant(0, i), a.quant(8, i));
    EXPECT_EQ(fused.quant(9, i), b.quant(1, i));
    EXPECT_EQ(fused.quant(23, i), a.quant(7, i));
    EXPECT_EQ(fused.zero(10, i), b.zero(2, i));
  }
}

// The CPU gemm_w4a16 equals the dense gemm of the dequantized weight exactly, for odd M, with
// and without zero points and bias, for every group size.
TEST(Int4Weight, CpuGemmW4A16MatchesDequantizedGemm) {
  std::unique_ptr<Backend> cpu = make_cpu_backend();
  std::mt19937 rng(11);
  for (int64_t m : {1, 3, 17}) {
    for (int64_t group : {32, 64, 128}) {
      for (bool symmetric : {false, true}) {
        const int64_t n = 40, k = 256;
        Int4Weight w = quantize_rtn(testing::random_tensor(DType::kF32, {n, k}, rng), group, DType::kF16);
        if (symmetric) w.zeros = Tensor();
        Tensor x = testing::random_tensor(DType::kBF16, {m, k}, rng);
        Tensor bias = testing::random_tensor(DType::kF32, {n}, rng);
        Tensor expected(cpu_allocator(), DType::kF32, {m, n}), actual(cpu_allocator(), DType::kF32, {m, n});
        cpu->gemm({x, dequantize(w), bias, expected});
        cpu->gemm_w4a16({x, w.qweight, w.scales, w.zeros, static_cast<int>(group), bias, actual});
        EXPECT_EQ(testing::to_doubles(actual), testing::to_doubles(expected))
            << "M " << m << " group " << group << (symmetric ? " symmetric" : "");
      }
    }
  }
}

// silu_gate: the fp32 product's gate and up halves, silu(gate) * up, computed in double here.
TEST(Int4Weight, CpuGemmW4A16SiluGate) {
  std::unique_ptr<Backend> cpu = make_cpu_backend();
  std::mt19937 rng(12);
  const int64_t m = 3, n = 48, k = 256;
  Int4Weight w = quantize_rtn(testing::random_tensor(DType::kF32, {n, k}, rng), 64, DType::kF16);
  Tensor x = testing::random_tensor(DType::kBF16, {m, k}, rng);
  Tensor bias = testing::random_tensor(DType::kF32, {n}, rng);
  Tensor product(cpu_allocator(), DType::kF32, {m, n}), actual(cpu_allocator(), DType::kF32, {m, n / 2});
  cpu->gemm_w4a16({x, w.qweight, w.scales, w.zeros, 64, bias, product});
  GemmW4A16Params p{x, w.qweight, w.scales, w.zeros, 64, bias, actual};
  p.silu_gate = true;
  cpu->gemm_w4a16(p);
  const std::vector<double> full = testing::to_doubles(product), fused = testing::to_doubles(actual);
  for (int64_t r = 0; r < m; ++r) {
    for (int64_t f = 0; f < n / 2; ++f) {
      const double gate = full[r * n + f], up = full[r * n + n / 2 + f];
      EXPECT_NEAR(fused[r * n / 2 + f], gate / (1.0 + std::exp(-gate)) * up, 1e-5 * (1.0 + std::abs(gate * up)))
          << "token " << r << " feature " << f;
    }
  }
  Tensor y_bad(cpu_allocator(), DType::kF32, {m, n});
  p.y = y_bad;
  EXPECT_ERROR_CONTAINS(cpu->gemm_w4a16(p), "with silu_gate, N must be even and y [M, N / 2]");
}

TEST(Int4Weight, CpuGemmW4A16ChecksParams) {
  std::unique_ptr<Backend> cpu = make_cpu_backend();
  Tensor qweight(cpu_allocator(), DType::kI4, {8, 64});
  Tensor scales(cpu_allocator(), DType::kF16, {8, 2});
  Tensor x(cpu_allocator(), DType::kF32, {2, 64}), y(cpu_allocator(), DType::kF32, {2, 8});
  EXPECT_ERROR_CONTAINS(cpu->gemm_w4a16({x, qweight, scales, {}, 64, {}, y}), "scales is f16[8, 2]");
  EXPECT_ERROR_CONTAINS(cpu->gemm_w4a16({x, qweight, scales, {}, 48, {}, y}), "group_size is 48");
  Tensor x_bad(cpu_allocator(), DType::kF32, {2, 32});
  EXPECT_ERROR_CONTAINS(cpu->gemm_w4a16({x_bad, qweight, scales, {}, 32, {}, y}), "K differs");
  Tensor zeros(cpu_allocator(), DType::kI32, {8, 2});
  EXPECT_ERROR_CONTAINS(cpu->gemm_w4a16({x, qweight, scales, zeros, 32, {}, y}), "zeros is i32");
}

}  // namespace
}  // namespace brisk
