// gemm (GemmRunner::route: the gemv for M <= 2 and the stream-K kernel up to 16 rows with 16-bit
// operands, cuBLASLt otherwise): CUDA against the CPU reference on the same rounded inputs, the
// CPU writing f32. Both accumulate in fp32 in different orders; inputs are uniform in [-1, 1], so
// the accumulated difference stays below 1e-4 * sqrt(K). Tolerance: |cuda - cpu| <= atol + rtol *
// |cpu| with atol = 2e-4 * sqrt(K) and rtol = one rounding of y's dtype (bf16 1/128, f16 1/1024,
// f32 1e-5).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "ops_test_util.h"

namespace brisk::testing {
namespace {

struct GemmCase {
  int64_t m, n, k;
  DType x, w, y;
  bool bias;
  bool strided_x;  // x is every other column block of a wider tensor
};

std::string describe(const GemmCase& c) {
  return "gemm M " + std::to_string(c.m) + " N " + std::to_string(c.n) + " K " + std::to_string(c.k) +
         " x " + dtype_str(c.x) + " w " + dtype_str(c.w) + " y " + dtype_str(c.y) +
         (c.bias ? " +bias" : "") + (c.strided_x ? " strided x" : "");
}

void check_gemm(const GemmCase& c) {
  std::mt19937 rng(static_cast<unsigned>(c.m * 31 + c.n * 7 + c.k));
  const int64_t x_cols = c.strided_x ? 2 * c.k : c.k;
  Tensor x_full = random_tensor(c.x, {c.m, x_cols}, rng);
  Tensor w = random_tensor(c.w, {c.n, c.k}, rng);
  Tensor bias = random_tensor(c.y == DType::kF32 ? DType::kF32 : c.y, {c.n}, rng);
  TensorView x = x_full.view().slice(1, 0, c.k);
  Tensor expected = zeros(DType::kF32, {c.m, c.n});
  cpu_backend().gemm({x, w, c.bias ? bias.view() : TensorView(), expected});

  Tensor x_d = to_device(x_full), w_d = to_device(w), bias_d = to_device(bias);
  Tensor y_d(cuda_backend().allocator(), c.y, {c.m, c.n});
  cuda_backend().gemm({x_d.view().slice(1, 0, c.k), w_d, c.bias ? bias_d.view() : TensorView(), y_d});
  double atol = 2e-4 * std::sqrt(static_cast<double>(c.k));
  // f32 activations with 16-bit weights are rounded to the weights' dtype first (gemm_runner.h):
  // one bf16 rounding per product, about 2^-9 * sqrt(K) / 4 in the sum.
  if (c.x == DType::kF32 && c.w != DType::kF32) atol *= 16;
  expect_close(host_doubles(y_d), to_doubles(expected), atol, output_rtol(c.y), describe(c));
}

TEST(Gemm, MatchesCpu) {
  const DType bf16 = DType::kBF16, f16 = DType::kF16, f32 = DType::kF32;
  const GemmCase cases[] = {
      {1, 64, 32, bf16, bf16, bf16, false, false},
      {7, 96, 128, bf16, bf16, bf16, true, false},     // qkv with bias (Qwen2)
      {5, 512, 256, bf16, bf16, f32, false, false},    // logits: f32 out from bf16
      {33, 200, 4096, bf16, bf16, bf16, false, false},
      {64, 1024, 512, f16, f16, f16, true, false},
      {3, 48, 64, f16, f16, f32, false, false},
      {9, 80, 64, bf16, f32, bf16, true, false},       // f32 checkpoint, bf16 activations
      {9, 80, 64, bf16, bf16, f16, true, false},       // bias f16 (y's dtype), y via f32 scratch
      {2, 40, 72, bf16, f32, f32, false, false},
      {4, 64, 64, f32, bf16, bf16, false, false},      // f32 activations, bf16 weights
      {6, 56, 128, bf16, bf16, bf16, false, true},     // strided x (attention's q-like slice)
      {3, 33, 100, bf16, bf16, bf16, true, false},     // odd N and K (unaligned rows)
      {128, 4096, 512, bf16, bf16, bf16, false, false},
      // gemv: M <= 2, both two-step and single-step k tails, odd N, f32 / 16-bit outputs.
      {2, 6144, 4096, bf16, bf16, bf16, false, false},
      {1, 4096, 14336, f16, f16, f16, true, false},
      {2, 257, 520, bf16, bf16, f32, true, false},
      {2, 1001, 8, f16, f16, f32, false, true},
      {2, 3, 264, bf16, bf16, bf16, true, false},
      // Decode batches just above gemv's (the stream-K kernel).
      {3, 6144, 4096, bf16, bf16, bf16, true, false},
      {8, 1001, 8, f16, f16, f32, false, true},
  };
  for (const GemmCase& c : cases) check_gemm(c);
}

TEST(Gemm, RejectsShapeMismatch) {
  Tensor x_d(cuda_backend().allocator(), DType::kBF16, {2, 8});
  Tensor w_d(cuda_backend().allocator(), DType::kBF16, {3, 9});
  Tensor y_d(cuda_backend().allocator(), DType::kBF16, {2, 3});
  EXPECT_ERROR_CONTAINS(cuda_backend().gemm({x_d, w_d, {}, y_d}), "K differs");
}

// Llama-3-8B's projections over the decode batch sizes and a prefill chunk; each call reads
// another copy of the weight (256 MB of copies), so reads come from DRAM as in a model's step,
// not from L2. bench/w4a16_peers.py times cuBLAS (through PyTorch) on the same shapes.
TEST(GemmPerf, Llama8B) {
  if (!perf_enabled()) GTEST_SKIP() << "set BRISK_OPS_PERF=1";
  Allocator& alloc = cuda_backend().allocator();
  struct Shape3 { const char* name; int64_t n, k; DType y; };
  const Shape3 shapes[] = {{"qkv", 6144, 4096, DType::kBF16}, {"o_proj", 4096, 4096, DType::kBF16},
                           {"gate_up", 28672, 4096, DType::kBF16}, {"down", 4096, 14336, DType::kBF16},
                           {"lm_head", 128256, 4096, DType::kF32}};
  for (const Shape3& s : shapes) {
    const std::vector<Tensor> w = random_weight_copies(s.n, s.k);
    const int copies = static_cast<int>(w.size());
    for (int64_t m : {1, 2, 4, 8, 16, 32, 64, 128, 168, 192, 256, 4096}) {
      Tensor x(alloc, DType::kBF16, {m, s.k}), y(alloc, s.y, {m, s.n});
      fill_random(x, 1);
      const double bytes = 2.0 * (m * s.k + s.n * s.k) + dtype_bytes(s.y, m * s.n);
      int next = 0;
      report_perf(std::string("gemm ") + s.name,
                  "M " + std::to_string(m) + " N " + std::to_string(s.n) + " K " + std::to_string(s.k),
                  bytes, 2.0 * m * s.n * s.k, [&] { cuda_backend().gemm({x, w[next++ % copies], {}, y}); }, 20);
    }
  }
}

}  // namespace
}  // namespace brisk::testing
