// gemm_fp8: CUDA against the CPU reference on the same inputs. Both quantize x with the same
// fp32 division and saturating round to nearest even (identical e4m3 codes and scales). The CPU
// sums the exact products in fp32; Hopper's FP8 tensor cores keep fewer bits while they sum
// (about 14, truncating; brisk's kernels and cuBLASLt without fast accumulation promote partial
// sums to fp32 every 128 K), so the tolerance scales with the sum of the products' magnitudes:
// |cuda - cpu| <= 2^-11 * sum_k |q s w s_w| + one rounding of y's dtype * |cpu| + 1e-6. A 128-K
// chunk is four k32 MMAs, each truncating its sum to about 13 fraction bits: up to 4 x 2^-13 of
// the magnitude (observed: mostly under 2^-15, at most 2^-12 in one output of the cases below).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "backend/cpu/cpu_ops.h"
#include "ops_test_util.h"

namespace brisk::testing {
namespace {

struct Fp8Case {
  int64_t m, n, k;
  int block_size;
  bool static_scale, bias, strided_x;
  DType x, y;
  bool row_blocks = false;  // block scales repeat per 128 rows (GemmFp8Params::row_blocks)
  bool room = false;        // y with the rows the backend may use (Backend::gemm_fp8_rows)
};

std::string describe(const Fp8Case& c) {
  return "gemm_fp8 M " + std::to_string(c.m) + " N " + std::to_string(c.n) + " K " + std::to_string(c.k) + " block " +
         std::to_string(c.block_size) + (c.static_scale ? " static" : "") + (c.bias ? " +bias" : "") +
         (c.strided_x ? " strided x" : "") + (c.row_blocks ? " row blocks" : "") + (c.room ? " room" : "") + " x " + dtype_str(c.x) + " y " +
         dtype_str(c.y);
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
  if (c.row_blocks)  // row n takes row 128 (n / 128)'s scales
    for (int64_t i = 0; i < c.n * groups; ++i)
      w_scale.data_as<float>()[i] = w_scale.data_as<float>()[(i / groups / 128 * 128) * groups + i % groups];
  Tensor input_scale = make_tensor(DType::kF32, {1}, {1.0 / 300});
  Tensor bias = random_tensor(DType::kBF16, {c.n}, rng);
  Tensor expected = zeros(DType::kF32, {c.m, c.n});
  cpu_backend().gemm_fp8({x, w, w_scale, c.static_scale ? input_scale.view() : TensorView(), c.block_size,
                          c.bias ? bias.view() : TensorView(), expected, c.row_blocks});
  Tensor x_d = to_device(x_full), w_d = to_device(w), scale_d = to_device(w_scale), input_d = to_device(input_scale),
         bias_d = to_device(bias);
  Tensor y_d(cuda_backend().allocator(), c.y, {c.room ? cuda_backend().gemm_fp8_rows(c.m) : c.m, c.n});
  cuda_backend().gemm_fp8({x_d.view().slice(1, 0, c.k), w_d, scale_d, c.static_scale ? input_d.view() : TensorView(),
                           c.block_size, c.bias ? bias_d.view() : TensorView(), y_d, c.row_blocks});
  const cpu::Fp8QuantizedRows q = cpu::quantize_fp8_activations(x, c.block_size, c.static_scale ? input_scale.view() : TensorView());
  const std::vector<double> got = host_doubles(y_d), want = to_doubles(expected);
  int misses = 0;
  for (int64_t m = 0; m < c.m; ++m)
    for (int64_t n = 0; n < c.n; ++n) {
      double magnitude = 0;
      for (int64_t k = 0; k < c.k; ++k) {
        const int64_t g = c.block_size > 0 ? k / c.block_size : 0;
        magnitude += std::fabs(q.q[m * c.k + k] * q.scales[m * q.groups + g] *
                               e4m3_to_float(w.data_as<uint8_t>()[n * c.k + k]) * w_scale.data_as<float>()[n * groups + g]);
      }
      const double e = want[m * c.n + n], bound = std::ldexp(magnitude, -11) + output_rtol(c.y) * std::fabs(e) + 1e-6;
      if (!(std::fabs(got[m * c.n + n] - e) <= bound) && ++misses <= 5)
        ADD_FAILURE() << describe(c) << ": [" << m << ", " << n << "] is " << got[m * c.n + n] << ", expected " << e
                      << " (bound " << bound << ")";
    }
  EXPECT_EQ(misses, 0) << describe(c);
}

TEST(GemmFp8, MatchesCpu) {
  const DType bf16 = DType::kBF16, f16 = DType::kF16, f32 = DType::kF32;
  const Fp8Case cases[] = {
      {1, 64, 128, 0, false, false, false, bf16, bf16},
      {7, 96, 4096, 0, false, true, false, bf16, bf16},   // per token, bias
      {33, 200, 512, 0, true, false, true, f16, f32},     // static scale, strided x
      {16, 384, 1000, 128, false, true, false, bf16, bf16},  // blocks, a partial last group
      {300, 130, 256, 128, false, false, false, f32, f16},
      // cuBLASLt (K and N % 16 == 0; per-row scales from M 65, 128 x 128 blocks from M 12 where M %
      // 4 == 0 and K % 512 == 0): bias epilogues, static scales, strided x, a partial last 128-row
      // block, f16 and f32 y. The wgmma kernel (K % 128 == 0, N % 16 == 0) for the rest: each token
      // tile, several token tiles, blocks of per-row scales or of other M and K.
      {150, 256, 1024, 0, false, true, false, bf16, bf16},
      {513, 1040, 768, 0, true, false, true, bf16, bf16},
      {100, 384, 512, 128, false, true, false, bf16, bf16, true},
      {64, 4096, 4096, 128, false, false, false, bf16, bf16, true},
      {200, 272, 1024, 128, false, false, false, bf16, f32, true},
      {12, 256, 1536, 128, false, false, false, bf16, bf16, true},
      {13, 256, 1024, 128, false, false, false, bf16, bf16, true},
      {200, 272, 384, 128, false, false, false, bf16, f32, true},
      {300, 512, 2048, 0, false, false, false, f16, f16},
      {100, 384, 512, 128, false, true, false, bf16, bf16},
      {200, 272, 384, 128, false, false, false, bf16, f32},
      {64, 1024, 4096, 0, false, true, false, bf16, bf16},
      // Whole 128-row tiles into y's room: a partial second and third tile, bias, static scale.
      {150, 256, 1024, 0, false, true, false, bf16, bf16, false, true},
      {300, 512, 2048, 0, true, false, true, f16, f32, false, true},
      {200, 272, 1024, 128, false, false, false, bf16, bf16, true, true},
      // The stream-K kernel (per-channel scales, M 9-16): tiles split over blocks, N tails, a K
      // tail past the last 128-K chunk.
      {12, 200, 1040, 0, false, true, false, bf16, bf16},
      {16, 128, 14336, 0, false, false, false, bf16, f32},
      {9, 272, 1152, 0, true, true, true, f16, f16},
      // The decode kernel (M <= 8, same sizes): a full and partial token tile, K of fewer
      // groups than warps and of a partial round of groups, every scale form.
      {1, 4096, 4096, 0, false, false, false, bf16, bf16},
      {1, 48, 128, 0, true, true, false, bf16, f32},
      {3, 1024, 14336, 128, false, true, false, bf16, bf16},
      {8, 272, 1152, 0, false, true, true, f16, f16},
      {5, 160, 3200, 128, false, false, false, bf16, f32},
      // Just above it.
      {9, 160, 3200, 128, false, false, false, bf16, f32},
      {9, 160, 3200, 128, false, false, false, bf16, f32, true},
      {16, 2048, 4096, 0, true, false, false, bf16, bf16},
  };
  for (const Fp8Case& c : cases) check_fp8(c);
}

// Llama-3-8B's gate_up and a prefill chunk (issue #33's shape: M 8192), per-channel and
// block-wise scales; the activation quantization is included in the time.
TEST(GemmFp8Perf, Llama8B) {
  if (!perf_enabled()) GTEST_SKIP() << "set BRISK_OPS_PERF=1";
  Allocator& alloc = cuda_backend().allocator();
  const int64_t n = 28672, k = 4096;
  const Tensor w8 = std::move(fp8_weight_copies(n, k, 0).front());  // one copy
  for (int block_size : {0, 128}) {
    const int64_t groups = block_size > 0 ? k / block_size : 1;
    Tensor scale = to_device(make_tensor(DType::kF32, {n, groups}, std::vector<double>(n * groups, 1e-3)));
    for (int64_t m : {int64_t{16}, int64_t{256}, int64_t{2048}, int64_t{8192}}) {
      Tensor x(alloc, DType::kBF16, {m, k}), y(alloc, DType::kBF16, {m, n});
      fill_random(x, 1);
      report_perf(block_size > 0 ? "gemm_fp8 block" : "gemm_fp8 channel",
                  "M " + std::to_string(m) + " N " + std::to_string(n) + " K " + std::to_string(k),
                  double(n) * k + 2.0 * m * (k + n), 2.0 * m * n * k,
                  [&] { cuda_backend().gemm_fp8({x, w8, scale, {}, block_size, {}, y, block_size > 0}); },
                  m >= 2048 ? 10 : 50,
                  kPeakFp8FlopsPerSecond);
    }
  }
}

// Decode: Llama-3-8B's layer shapes at M 1-256 with FP8 weights, per-channel and block-wise
// scales, weights rotating over 256 MB of copies (reads from DRAM, not the 50 MB L2); the
// activation quantization is included in the time. The rate that counts is the weights' bytes.
// Timed launched one by one and replayed from a graph (" graph": as decode steps run).
TEST(GemmFp8Perf, Decode) {
  if (!perf_enabled()) GTEST_SKIP() << "set BRISK_OPS_PERF=1";
  Allocator& alloc = cuda_backend().allocator();
  const std::pair<const char*, std::pair<int64_t, int64_t>> shapes[] = {
      {"gate_up", {28672, 4096}}, {"qkv", {6144, 4096}}, {"o_proj", {4096, 4096}}, {"down", {4096, 14336}}};
  for (const auto& [name, nk] : shapes) {
    const auto [n, k] = nk;
    const std::vector<Tensor> copies = fp8_weight_copies(n, k);
    for (int block_size : {0, 128}) {
      const int64_t groups = block_size > 0 ? k / block_size : 1;
      Tensor scale = to_device(make_tensor(DType::kF32, {n, groups}, std::vector<double>(n * groups, 1e-3)));
      for (int64_t m : {1, 2, 4, 8, 16, 32, 64, 96, 128, 136, 168, 200, 256, 264}) {
        // y with room, as the model gives it (whole tiles past 128 rows on cuBLASLt's per-row path).
        Tensor x(alloc, DType::kBF16, {m, k}), y(alloc, DType::kBF16, {cuda_backend().gemm_fp8_rows(m), n});
        fill_random(x, 1);
        int next = 0;
        const auto call = [&] {
          cuda_backend().gemm_fp8({x, copies[next++ % copies.size()], scale, {}, block_size, {}, y, block_size > 0});
        };
        const std::string op = std::string(block_size > 0 ? "fp8 block " : "fp8 channel ") + name;
        const std::string shape = "M " + std::to_string(m) + " N " + std::to_string(n) + " K " + std::to_string(k);
        const double bytes = double(n) * k + 2.0 * m * (k + n), flops = 2.0 * m * n * k;
        report_perf(op, shape, bytes, flops, call);
        report_perf_graph(op + " graph", shape, bytes, flops, call);
      }
    }
  }
}

}  // namespace
}  // namespace brisk::testing
