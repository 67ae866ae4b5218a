// gemm_w4a16: CUDA against the CPU reference (which equals x times the fp32 dequantized weight
// exactly) on random int4 weights, scales in [0.005, 0.02], zero points in [0, 15] or symmetric,
// x uniform in [-1, 1]. The CPU writes f32.
// Tolerance: |cuda - cpu| <= atol + rtol * |cpu|, rtol = one rounding of y's dtype and, by the
// path gemm_w4a16 takes (kernels/w4a16/w4a16_plan.h):
// - 16-bit x, K % 128 == 0, M <= tuning.mma_multi_pass_max_rows (tensor-core kernel, passes of
//   up to 64 rows; the wgmma kernel below from tuning.wgmma_min_rows on the tile layout): with group % 128
//   != 0 each weight is dequantized to x's dtype, the scale rounded to it first: two roundings
//   of every weight (2^-9 relative each for bf16, |w| <= 0.3, rms ~0.1) add up to ~1e-4 *
//   sqrt(K) rms; with group % 128 == 0 the scale is applied to fp32 sums (more accurate):
//   atol = 1e-3 * sqrt(K) for both;
// - otherwise M <= 16 (CUDA-core kernel, fp32 dequantization and accumulation in another order,
//   plus the zero-point folding's cancellation): atol = 2e-4 * sqrt(K);
// - otherwise (16-bit x: the wgmma kernel for the tile layout in its M range, which rounds the
//   scale to x's dtype and then each weight, as the tensor-core kernel's small groups; else
//   dequantized to x's dtype, then cuBLASLt: one rounding of every weight): atol = 1e-3 *
//   sqrt(K) for 16-bit x, exact for f32 x (atol = 2e-4 * sqrt(K)).
#include <gtest/gtest.h>

#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "backend/cuda/kernels/w4a16/w4a16_plan.h"
#include "backend/cuda/runtime/device.h"
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
  DType scales = DType::kF16;
};

std::string describe(const W4Case& c) {
  return "gemm_w4a16 M " + std::to_string(c.m) + " N " + std::to_string(c.n) + " K " + std::to_string(c.k) +
         " group " + std::to_string(c.group) + (c.zeros ? " zeros" : " symmetric") + " x " + dtype_str(c.x) +
         " y " + dtype_str(c.y) + " scales " + dtype_str(c.scales) + (c.bias ? " +bias" : "") +
         (c.strided_x ? " strided x" : "");
}

// Random int4 weights in brisk's layout with their scales and zero points.
struct Int4Host {
  Tensor qweight, scales, zeros;
};
Int4Host random_int4(int64_t n, int64_t k, int group, bool with_zeros, std::mt19937& rng,
                     DType scale_dtype = DType::kF16) {
  Int4Host w;
  w.qweight = Tensor(cpu_allocator(), DType::kI4, {n, k});
  std::uniform_int_distribution<int> byte(0, 255), nibble(0, 15);
  for (size_t i = 0; i < w.qweight.view().num_bytes(); ++i) w.qweight.data_as<uint8_t>()[i] = static_cast<uint8_t>(byte(rng));
  w.scales = random_tensor(scale_dtype, {n, k / group}, rng, 0.005, 0.02);
  if (with_zeros) {
    w.zeros = Tensor(cpu_allocator(), DType::kU8, {n, k / group});
    for (int64_t i = 0; i < n * (k / group); ++i) w.zeros.data_as<uint8_t>()[i] = static_cast<uint8_t>(nibble(rng));
  }
  return w;
}

// A case's random inputs (weights, x with its row padding when strided, bias) on the host and
// on the device, and the two backends' parameters for them with output y.
struct W4Inputs {
  Int4Host w;
  Tensor x_full, bias;
  Tensor x_d, q_d, s_d, b_d, z_d;
  W4Inputs(const W4Case& c, unsigned seed) : c_(c) {
    std::mt19937 rng(seed);
    w = random_int4(c.n, c.k, c.group, c.zeros, rng, c.scales);
    x_full = random_tensor(c.x, {c.m, c.strided_x ? c.k + 8 : c.k}, rng);
    bias = random_tensor(DType::kF32, {c.n}, rng);
    x_d = to_device(x_full), q_d = to_device(w.qweight), s_d = to_device(w.scales), b_d = to_device(bias);
    if (c.zeros) z_d = to_device(w.zeros);
  }
  GemmW4A16Params cpu(TensorView y) const {
    return {x_full.view().slice(1, 0, c_.k), w.qweight, w.scales, w.zeros, c_.group,
            c_.bias ? bias.view() : TensorView(), y};
  }
  GemmW4A16Params device(TensorView y) const {
    return {x_d.view().slice(1, 0, c_.k), q_d, s_d, z_d, c_.group, c_.bias ? b_d.view() : TensorView(), y};
  }

 private:
  W4Case c_;
};

// forced: the CUDA backend's kernel configuration pinned (GemmW4A16Params::forced).
void check_w4a16(const W4Case& c, const GemmW4A16Forced& forced = {}) {
  W4Inputs in(c, static_cast<unsigned>(c.m * 131 + c.n * 7 + c.k + c.group));
  Tensor expected = zeros(DType::kF32, {c.m, c.n});
  cpu_backend().gemm_w4a16(in.cpu(expected));

  Tensor y_d(cuda_backend().allocator(), c.y, {c.m, c.n});
  const bool x16 = c.x != DType::kF32;
  const bool tensor_core = x16 && c.k % 128 == 0 && c.m <= cuda::w4a16_tuning().mma_multi_pass_max_rows;
  const bool dequantized = !tensor_core && c.m > 16 && x16;
  const double atol = (tensor_core || dequantized ? 1e-3 : 2e-4) * std::sqrt(static_cast<double>(c.k));
  GemmW4A16Params params = in.device(y_d);
  params.forced = forced;
  cuda_backend().gemm_w4a16(params);
  expect_close(host_doubles(y_d), to_doubles(expected), atol, output_rtol(c.y), describe(c));
  // The same weight in the backend's load-time layout (tiles where N % 16 == 0, K % 128 == 0;
  // f32 x then takes the dequantizing path: exact dequantization, atol as above).
  GemmW4A16Params repacked = params;
  repacked.layout = cuda_backend().repack_int4(in.q_d);
  EXPECT_EQ(repacked.layout, c.n % 16 == 0 && c.k % 128 == 0 ? Int4Layout::kTiles16 : Int4Layout::kRows) << describe(c);
  if (repacked.layout == Int4Layout::kRows) return;
  cuda_backend().gemm_w4a16(repacked);
  const std::vector<double> tiled = host_doubles(y_d);
  expect_close(tiled, to_doubles(expected), atol, output_rtol(c.y), describe(c) + " tiles");
  // Again into an output of other values: the same bits (split-K partials add in a fixed order).
  fill_random(y_d, 3);
  cuda_backend().gemm_w4a16(repacked);
  EXPECT_EQ(host_doubles(y_d), tiled) << describe(c) << " tiles, second run";
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

// The tensor-core kernel: every M up to 64 (one to eight 8-token fragments, direct and permuted
// x), N not a multiple of its 16 or 32 rows, groups 32 / 64 / 128, symmetric and asymmetric,
// f16 and bf16 x, y of every dtype, scales of every dtype, bias, split-K.
TEST(GemmW4A16, MatchesCpuTensorCore) {
  const DType bf16 = DType::kBF16, f16 = DType::kF16, f32 = DType::kF32;
  for (int64_t m = 1; m <= 64; m += (m < 16 ? 1 : 3)) {
    const int group = m % 3 == 0 ? 32 : (m % 3 == 1 ? 64 : 128);
    const DType x = m % 4 < 2 ? bf16 : f16;
    check_w4a16({m, 72 + 8 * (m % 5), 640, group, m % 2 == 1, x, m % 3 == 0 ? f32 : x, m % 5 == 0, m % 7 == 0});
  }
  const W4Case cases[] = {
      {1, 8, 128, 128, true, bf16, bf16, false, false},       // one group, half a warp's tile
      {1, 4099, 4096, 128, true, bf16, bf16, true, false},    // N not a multiple of 16
      {64, 4096, 1024, 128, true, bf16, bf16, true, false},   // the largest M
      {16, 33, 8192, 64, false, f16, f16, true, false},       // small N, long K: split-K
      {3, 24, 14336, 128, true, bf16, f32, false, false},     // split-K, K not a multiple of the split step
      {33, 40, 4608, 32, true, bf16, bf16, true, false},      // split-K, 5 fragments
      {8, 512, 1024, 128, true, bf16, bf16, false, false, f32},
      {12, 256, 1024, 64, false, bf16, f16, true, false, bf16},
      {40, 100, 384, 128, true, f16, f16, false, true, f32},  // strided x
  };
  for (const W4Case& c : cases) check_w4a16(c);
}

// Decode M (1 to 16) on the tensor-core kernel as the rules pick its configuration (x in shared
// memory, or permuted where a block's share would not fit): tiny weights split over K into many
// blocks, long K (stages that end inside a split), groups 128 / 256 / 512, symmetric and
// asymmetric, f16 and bf16 x, y of every dtype, scales of every dtype, bias, strided x.
TEST(GemmW4A16, MatchesCpuDecodeRows) {
  const DType bf16 = DType::kBF16, f16 = DType::kF16, f32 = DType::kF32;
  std::vector<W4Case> cases;
  for (int64_t m = 1; m <= 16; ++m) {
    const DType x = m % 4 < 2 ? bf16 : f16;
    cases.push_back({m, 48, 768, m % 3 == 0 ? 256 : 128, m % 2 == 1, x, m % 3 == 0 ? f32 : x, m % 5 == 0, m % 7 == 0,
                     m % 4 == 0 ? DType::kF32 : (m % 4 == 1 ? DType::kBF16 : DType::kF16)});
  }
  for (const W4Case& c : std::initializer_list<W4Case>{
           {1, 16, 128, 128, true, bf16, bf16, true, false},         // one chunk: one block
           {1, 4096, 4096, 128, true, bf16, bf16, false, false},     // o_proj
           {9, 4096, 4096, 128, false, f16, f16, true, false, f32},  // two 8-token fragments
           {16, 6144, 4096, 128, true, bf16, bf16, true, true},      // qkv, strided x
           {3, 272, 14336, 128, true, bf16, f32, false, false},      // long K: stages end inside splits
           {2, 1040, 2560, 512, true, f16, bf16, true, false, bf16},
           {5, 64, 1536, 384, true, bf16, bf16, false, false},  // 3 chunks a group: scales on the weights
           {1, 48, 1536, 384, false, f16, f16, true, false, f32},
       }) {
    cases.push_back(c);
  }
  for (const W4Case& c : cases) check_w4a16(c);
}

// Every configuration of the tensor-core kernel (the tuning benchmark forces each), with the
// scale applied to the weights (group 64) and after the MMA (group 128, 256); the wgmma kernel
// is kept out so that the tile layout reaches every configuration too.
TEST(GemmW4A16, MatchesCpuEveryMmaConfig) {
  const DType bf16 = DType::kBF16, f16 = DType::kF16;
  for (int c = 0; c < cuda::kW4A16MmaNumConfigs; ++c) {
    const GemmW4A16Forced forced{.mma_config = c, .no_wgmma = true};
    const int64_t max_m = 8 * cuda::kW4A16MmaConfigs[c].m_tiles;
    for (const W4Case& w : {W4Case{max_m, 40, 1536, 128, true, bf16, bf16, true, false},
                            W4Case{max_m - 5 > 0 ? max_m - 5 : 1, 24, 768, 64, false, f16, f16, false, false},
                            W4Case{1, 16, 2048, 256, true, f16, bf16, true, false}}) {
      check_w4a16(w, forced);
    }
    // Shared x: enough rows for no split by N alone, and a K whose x outgrows a block's share
    // (the permuted configuration instead), strided x.
    if (cuda::kW4A16MmaConfigs[c].x == cuda::W4A16XSource::kShared) {
      check_w4a16({max_m - 1, 17024, 6144, 128, true, bf16, bf16, false, true}, forced);
    }
  }
}

TEST(GemmW4A16, MatchesCpuLargeM) {
  const DType bf16 = DType::kBF16, f16 = DType::kF16, f32 = DType::kF32;
  const W4Case cases[] = {
      {17, 104, 512, 128, true, bf16, bf16, false, false},
      {33, 256, 1024, 64, false, f16, f16, true, false},
      {64, 512, 2048, 32, true, bf16, f32, true, false},
      {19, 96, 256, 128, true, f32, f32, false, false},  // f32: exact dequantization, fp32 GEMM
      {65, 136, 512, 64, true, bf16, bf16, true, false},  // just past one tensor-core pass
      {128, 48, 1024, 128, true, f16, bf16, true, true},
      {130, 64, 1024, 128, false, f16, f32, false, false},
      {20, 48, 1056, 32, true, bf16, bf16, true, false},  // K not a multiple of 128
  };
  for (const W4Case& c : cases) check_w4a16(c);
}

// The wgmma kernel (M from the tuning table's wgmma_min_rows, tile layout; check_w4a16's second half): odd
// and even M across one to several token tiles, N not a multiple of the block's 128 rows,
// groups 32 to 256, symmetric and asymmetric, f16 and bf16 x, y and scales of every dtype,
// bias, strided x, split-K (few tiles, long K), Llama-3-8B's K with reduced N, every
// configuration (tokens per block, x permuted or read as it is) forced.
TEST(GemmW4A16, MatchesCpuWgmma) {
  const DType bf16 = DType::kBF16, f16 = DType::kF16, f32 = DType::kF32;
  const int groups[] = {32, 64, 128, 256};
  int i = 0;
  for (int64_t m : {33, 40, 64, 65, 67, 96, 127, 128, 129, 200, 255, 256, 257, 333, 511, 640, 1001}) {
    const DType x = i % 2 == 0 ? bf16 : f16;
    const DType y = i % 3 == 0 ? f32 : x;
    const DType scales = i % 4 == 0 ? f16 : (i % 4 == 1 ? bf16 : (i % 4 == 2 ? f32 : f16));
    // Every third M with x first permuted (configurations 0 and 1), the others as the rules pick.
    const GemmW4A16Forced forced{.wgmma_config = i % 3 == 2 ? (m <= 128 ? 0 : 1) : -1};
    check_w4a16({m, 144 + 64 * (i % 3), 1024, groups[i % 4], i % 2 == 1, x, y, i % 5 == 0, i % 7 == 3, scales}, forced);
    ++i;
  }
  const int wgmma_max_rows = cuda::w4a16_tuning().wgmma_max_rows;
  const W4Case cases[] = {
      {300, 768, 4096, 128, true, bf16, bf16, true, false},     // qkv / o_proj / gate_up K
      {130, 256, 14336, 128, true, bf16, bf16, false, false},   // down's K: split-K
      {77, 16, 8192, 64, false, f16, f16, true, false},         // one 16-row tile: many splits
      {1000, 400, 2048, 128, true, bf16, f32, true, true},      // strided x, tokens past the tiles
      {520, 4096, 512, 64, false, bf16, bf16, false, false, bf16},
      {2050, 200, 512, 128, true, bf16, bf16, true, false},     // past 1024 tokens
      {wgmma_max_rows, 136, 256, 64, false, f16, f16, false, false},  // the last M it takes
      {wgmma_max_rows + 4, 72, 256, 128, true, bf16, bf16, false, false},  // past it: dequantize + cuBLASLt
  };
  for (const W4Case& c : cases) check_w4a16(c);
  // The bottom of its M range, and one to two 128-K chunks (small models: hidden size 128).
  for (int64_t m : {17, 29, 32}) {
    for (int64_t k : {128, 256}) {
      check_w4a16({m, 128, k, 64, false, bf16, bf16, false, false});
      check_w4a16({m, 256, k, 128, true, bf16, bf16, false, false, bf16});
      check_w4a16({m, 256, k, 32, true, f16, f16, false, false});
    }
  }
  for (int c = 0; c < cuda::kW4A16WgmmaNumConfigs; ++c) {
    const GemmW4A16Forced forced{.wgmma_config = c};
    check_w4a16({97, 272, 1536, 128, true, bf16, bf16, true, false}, forced);
    check_w4a16({300, 160, 768, 64, false, f16, f16, false, true, f32}, forced);
  }
  // Two tiles past a whole wave on this GPU, those two split over K (forced: the estimate takes
  // it only for long tiles): 64 tokens a tile with the last N tile partial, and 256 (forced)
  // with x direct or permuted, every token tile but the last whole. (64 tokens forced too, with
  // x permuted: configuration 5.)
  const int64_t sms = cuda::select_device().num_sms;
  check_w4a16({40, 128 * (sms + 2) - 48, 2048, 128, true, bf16, bf16, true, false},
              {.wgmma_config = cuda::kW4A16WgmmaNumConfigs - 1, .split_last_wave = 1});
  check_w4a16({300, 128 * ((sms + 1) / 2 + 1) - 16, 1024, 128, false, bf16, f32, true, false},
              {.wgmma_config = 3, .split_last_wave = 1});
  check_w4a16({300, 128 * ((sms + 1) / 2 + 1), 1024, 64, true, f16, f16, false, true, bf16},
              {.wgmma_config = 1, .split_last_wave = 1});
}

// silu_gate (a SwiGLU gate_up with the activation fused): c.n is the product's N (gate and up
// rows), y [M, N / 2]. Two checks per layout: against silu(gate) * up of the CPU's fp32 product,
// with the product's tolerance carried through (d(silu(g) u) <= 1.1 |u| dg + max(|g|, 0.3) du),
// and against the same of this backend's own unfused product in f32: the same fp32 sums, so only
// y's rounding differs where the epilogue fuses it. Where the product is first stored in y's
// dtype (unfused paths) g and u are rounded too: relative error up to (2 + |g|) roundings.
void check_w4a16_silu(const W4Case& c, const GemmW4A16Forced& forced = {}) {
  W4Inputs in(c, static_cast<unsigned>(c.m * 131 + c.n * 7 + c.k + c.group + 1));
  const int64_t half = c.n / 2;
  Tensor product = zeros(DType::kF32, {c.m, c.n});
  cpu_backend().gemm_w4a16(in.cpu(product));
  const std::vector<double> cpu = to_doubles(product);
  auto silu = [&](const std::vector<double>& p, int64_t r, int64_t f) {
    const double g = p[r * c.n + f], u = p[r * c.n + half + f];
    return g / (1.0 + std::exp(-g)) * u;
  };
  const double atol = 1e-3 * std::sqrt(static_cast<double>(c.k)), rtol = output_rtol(c.y);

  Tensor y_d(cuda_backend().allocator(), c.y, {c.m, half}), product_d(cuda_backend().allocator(), DType::kF32, {c.m, c.n});
  GemmW4A16Params p = in.device(y_d);
  p.forced = forced;
  for (const bool repack : {false, true}) {
    const std::string what = describe(c) + " silu_gate" + (repack ? " tiles" : "");
    if (repack) p.layout = cuda_backend().repack_int4(in.q_d);
    GemmW4A16Params full = p;
    full.y = product_d;
    cuda_backend().gemm_w4a16(full);
    p.silu_gate = true;
    cuda_backend().gemm_w4a16(p);
    p.silu_gate = false;
    const std::vector<double> fused = host_doubles(y_d), own = host_doubles(product_d);
    int bad = 0;
    for (int64_t r = 0; r < c.m; ++r) {
      for (int64_t f = 0; f < half; ++f) {
        const double y = fused[r * half + f], g = cpu[r * c.n + f], u = cpu[r * c.n + half + f];
        const double from_cpu = silu(cpu, r, f), from_own = silu(own, r, f);
        const double tol_cpu = atol * (1.1 * std::abs(u) + std::max(std::abs(g), 0.3) + atol) +
                               rtol * (std::abs(from_cpu) + 2.1 * std::abs(g * u));
        const double tol_own = 1e-5 + rtol * (3 + std::abs(g)) * std::abs(from_own);
        if ((std::abs(y - from_cpu) > tol_cpu || std::abs(y - from_own) > tol_own) && ++bad <= 5) {
          ADD_FAILURE() << what << ": token " << r << " feature " << f << ": " << y << " against " << from_cpu
                        << " (cpu) and " << from_own << " (own product)";
        }
      }
    }
    EXPECT_EQ(bad, 0) << what;
  }
}

// The fused path of each kernel (tensor-core kernel: decode M, every configuration, both
// layouts, split-K; wgmma kernel: its M range, every direct-x configuration, a last block of
// fewer than 64 features, split-K) and the unfused ones (groups of 64 on the tensor-core kernel,
// permuted x or N / 2 % 16 != 0 on the wgmma kernel, f32 x, K not a multiple of 128, M past the
// wgmma range).
TEST(GemmW4A16, MatchesCpuSiluGate) {
  const DType bf16 = DType::kBF16, f16 = DType::kF16, f32 = DType::kF32;
  const W4Case cases[] = {
      {1, 2 * 1024, 4096, 128, true, bf16, bf16, false, false},    // shared x
      {5, 2 * 40, 640, 64, false, f16, f16, true, false, bf16},    // group 64: not fused here
      {16, 2 * 48, 8192, 128, true, bf16, f32, true, true},        // permuted x, split-K
      {2, 2 * 64, 1056, 32, true, bf16, bf16, false, false},       // K % 128 != 0: CUDA-core kernel
      {3, 2 * 64, 512, 128, true, f32, f32, true, false},          // f32 x
      {17, 2 * 208, 1024, 128, true, bf16, bf16, true, false},     // wgmma, last block 16 features
      {64, 2 * 40, 1024, 128, true, bf16, bf16, false, false},     // wgmma, N / 2 % 16 != 0
      {100, 2 * 64, 8192, 64, false, f16, f16, true, false, f32},  // wgmma split-K
      {300, 2 * 192, 1024, 128, true, bf16, f32, false, true},
      {1100, 2 * 96, 256, 128, true, bf16, bf16, true, false},     // past the wgmma range
  };
  for (const W4Case& c : cases) check_w4a16_silu(c);
  for (int c = 0; c < cuda::kW4A16MmaNumConfigs; ++c) {
    check_w4a16_silu({8 * cuda::kW4A16MmaConfigs[c].m_tiles - 1, 2 * 72, 1536, 128, true, bf16, bf16, true, false},
                     {.mma_config = c, .no_wgmma = true});
  }
  for (int c = 0; c < cuda::kW4A16WgmmaNumConfigs; ++c) {
    check_w4a16_silu({97, 2 * 144, 1536, c % 2 == 0 ? 128 : 64, true, bf16, bf16, c % 3 == 0, false},
                     {.wgmma_config = c});
  }
  // Two tiles past a whole wave, split over K (forced), the last one 32 features.
  check_w4a16_silu({40, 128 * (cuda::select_device().num_sms + 2) - 64, 2048, 128, true, bf16, bf16, true, false},
                   {.split_last_wave = 1});
}

TEST(GemmW4A16, RejectsUnsupportedGroup) {
  std::mt19937 rng(1);
  Int4Host w = random_int4(8, 64, 16, false, rng);
  Tensor q_d = to_device(w.qweight), s_d = to_device(w.scales);
  Tensor x_d(cuda_backend().allocator(), DType::kBF16, {1, 64}), y_d(cuda_backend().allocator(), DType::kBF16, {1, 8});
  EXPECT_ERROR_CONTAINS(cuda_backend().gemm_w4a16({x_d, q_d, s_d, {}, 16, {}, y_d}), "multiple of 32");
}

TEST(GemmW4A16, TileLayoutChecks) {
  std::mt19937 rng(2);
  Int4Host w = random_int4(16, 256, 128, false, rng);
  Tensor x(cpu_allocator(), DType::kF32, {1, 256}), y(cpu_allocator(), DType::kF32, {1, 16});
  GemmW4A16Params p{x, w.qweight, w.scales, {}, 128, {}, y};
  p.layout = Int4Layout::kTiles16;
  EXPECT_ERROR_CONTAINS(cpu_backend().gemm_w4a16(p), "only the cuda backend");
  EXPECT_EQ(cpu_backend().repack_int4(w.qweight), Int4Layout::kRows);
  Int4Host odd = random_int4(24, 256, 128, false, rng);
  Tensor q_d = to_device(odd.qweight), s_d = to_device(odd.scales);
  Tensor x_d(cuda_backend().allocator(), DType::kBF16, {1, 256});
  Tensor y_d(cuda_backend().allocator(), DType::kBF16, {1, 24});
  GemmW4A16Params bad{x_d, q_d, s_d, {}, 128, {}, y_d};
  bad.layout = Int4Layout::kTiles16;
  EXPECT_ERROR_CONTAINS(cuda_backend().gemm_w4a16(bad), "N % 16 == 0");
  EXPECT_EQ(cuda_backend().repack_int4(q_d), Int4Layout::kRows);  // N = 24: stays in rows
}

// Perf: Llama-3-8B's layer shapes over an M sweep (the table bench/w4a16_peers.py joins with
// its PyTorch peers), each kernel's configurations (the sweeps bench/retune_w4a16.py turns into
// the GPU's tuning table, backend/cuda/tuning/), the large square GEMM, and one shape
// the environment names. Weights of several device copies
// rotate so that the timed reads come from DRAM, not the 50 MB L2.
struct PerfShape {
  const char* name;
  int64_t n, k;
};
constexpr PerfShape kLlamaShapes[] = {{"gate_up", 28672, 4096}, {"qkv", 6144, 4096}, {"o_proj", 4096, 4096},
                                      {"down", 4096, 14336}};
constexpr int kPerfGroup = 128;

struct PerfWeights {
  std::vector<Tensor> q, sc, z;
  double bytes = 0;  // of one copy: int4 values, f16 scales, u8 zero points
  Int4Layout layout = Int4Layout::kRows;
};
PerfWeights perf_weights(int64_t n, int64_t k, bool tiles = true) {
  PerfWeights w;
  w.bytes = n * k / 2.0 + n * (k / kPerfGroup) * 3.0;
  const int copies = static_cast<int>(std::ceil(256e6 / w.bytes));
  std::mt19937 rng(1);
  Int4Host h = random_int4(n, k, kPerfGroup, true, rng);
  for (int i = 0; i < copies; ++i) {
    w.q.push_back(to_device(h.qweight));
    w.sc.push_back(to_device(h.scales));
    w.z.push_back(to_device(h.zeros));
    w.layout = tiles ? cuda_backend().repack_int4(w.q.back()) : Int4Layout::kRows;
  }
  return w;
}

// kSiluMul: the product, then silu_mul into [M, N / 2]; kSiluGate: the two fused (silu_gate).
enum class Activation { kNone, kSiluMul, kSiluGate };

void time_w4a16(const std::string& op, PerfWeights& w, int64_t m, int64_t n, int64_t k, int iterations = 50,
                Activation act = Activation::kNone, const GemmW4A16Forced& forced = {}) {
  Allocator& alloc = cuda_backend().allocator();
  Tensor x(alloc, DType::kBF16, {m, k}), y(alloc, DType::kBF16, {m, n}), out(alloc, DType::kBF16, {m, n / 2});
  fill_random(x, 1);
  int next = 0;
  const int copies = static_cast<int>(w.q.size());
  const std::string shape = "M " + std::to_string(m) + " N " + std::to_string(n) + " K " + std::to_string(k) + " g128";
  const double y_bytes = act == Activation::kNone ? 2.0 * m * n : m * n;
  report_perf(op, shape, w.bytes + 2.0 * m * k + y_bytes, 2.0 * m * n * k, [&] {
    const int i = next++ % copies;
    GemmW4A16Params p{x, w.q[i], w.sc[i], w.z[i], kPerfGroup, {}, act == Activation::kSiluGate ? out.view() : y.view()};
    p.layout = w.layout;
    p.silu_gate = act == Activation::kSiluGate;
    p.forced = forced;
    cuda_backend().gemm_w4a16(p);
    if (act == Activation::kSiluMul) cuda_backend().silu_mul({y, out});
  }, iterations);
}

TEST(GemmW4A16Perf, LlamaShapes) {
  if (!perf_enabled()) GTEST_SKIP() << "set BRISK_OPS_PERF=1";
  Allocator& alloc = cuda_backend().allocator();
  for (const PerfShape& s : kLlamaShapes) {
    PerfWeights w = perf_weights(s.n, s.k);
    for (int64_t m : {1, 2, 4, 8, 16, 32, 64, 128, 256, 384, 512, 768, 1024, 2048, 4096, 8192}) {
      time_w4a16(std::string("w4a16 ") + s.name, w, m, s.n, s.k, m >= 2048 ? 10 : 50);
      if (m == 1 || m == 16) {  // brisk's own dense path (cuBLASLt) in the same run
        Tensor x(alloc, DType::kBF16, {m, s.k}), y(alloc, DType::kBF16, {m, s.n}), wd(alloc, DType::kBF16, {s.n, s.k});
        fill_random(x, 1);
        fill_random(wd, 2);
        report_perf(std::string("dense ") + s.name,
                    "M " + std::to_string(m) + " N " + std::to_string(s.n) + " K " + std::to_string(s.k) + " bf16",
                    2.0 * s.n * s.k + 2.0 * m * (s.k + s.n), 2.0 * m * s.n * s.k,
                    [&] { cuda_backend().gemm({x, wd, {}, y}); }, 20);
      }
    }
  }
}

// gate_up with SwiGLU's activation: silu_mul after the GEMM against the fused epilogue.
TEST(GemmW4A16Perf, SiluGate) {
  if (!perf_enabled()) GTEST_SKIP() << "set BRISK_OPS_PERF=1";
  const PerfShape& s = kLlamaShapes[0];
  PerfWeights w = perf_weights(s.n, s.k);
  for (int64_t m : {1, 8, 16, 32, 64, 256, 1024}) {
    time_w4a16(std::string("w4a16+silu_mul ") + s.name, w, m, s.n, s.k, 50, Activation::kSiluMul);
    time_w4a16(std::string("w4a16 silu-fused ") + s.name, w, m, s.n, s.k, 50, Activation::kSiluGate);
  }
}

// The tensor-core kernel on brisk's row layout (no load-time repack), beside the tiled numbers.
TEST(GemmW4A16Perf, RowLayout) {
  if (!perf_enabled()) GTEST_SKIP() << "set BRISK_OPS_PERF=1";
  PerfWeights w = perf_weights(kLlamaShapes[0].n, kLlamaShapes[0].k, false);
  for (int64_t m : {1, 16}) time_w4a16("w4a16-rows gate_up", w, m, kLlamaShapes[0].n, kLlamaShapes[0].k);
}

// Each configuration of the tensor-core kernel forced ("w4a16 cfgC name"; w4a16_mma_plan still
// swaps a shared-x one whose share would not fit for the permuted one): the sweep
// bench/retune_w4a16.py sets the mma.sync rules of the tuning table from.
TEST(GemmW4A16Perf, MmaConfigs) {
  if (!perf_enabled()) GTEST_SKIP() << "set BRISK_OPS_PERF=1";
  for (const PerfShape& s : kLlamaShapes) {
    PerfWeights w = perf_weights(s.n, s.k);
    for (int64_t m : {1, 4, 8, 16, 32, 64}) {
      for (int c = 0; c < cuda::kW4A16MmaNumConfigs; ++c) {
        const int tokens = cuda::kW4A16MmaConfigs[c].m_tiles * 8;
        if (tokens < m || tokens > std::max<int64_t>(8, 2 * m)) continue;  // (padded 4x: far behind)
        time_w4a16("w4a16 cfg" + std::to_string(c) + " " + s.name, w, m, s.n, s.k, 50, Activation::kNone,
                   {.mma_config = c, .no_wgmma = true});
      }
    }
  }
}

// The prefill range: the wgmma kernel in each configuration ("w4a16-tN cfgC": N tokens per block,
// "p" x permuted, configuration C) against the kernels without it ("w4a16-deq": dequantize +
// cuBLASLt, or mma.sync up to 64 rows) and dense cuBLASLt on a bf16 weight ("dense"): the sweep
// bench/retune_w4a16.py sets the wgmma rules and M range of the tuning table from.
TEST(GemmW4A16Perf, Prefill) {
  if (!perf_enabled()) GTEST_SKIP() << "set BRISK_OPS_PERF=1";
  Allocator& alloc = cuda_backend().allocator();
  for (const PerfShape& s : kLlamaShapes) {
    PerfWeights w = perf_weights(s.n, s.k);
    Tensor wd(alloc, DType::kBF16, {s.n, s.k});
    fill_random(wd, 2);
    for (int64_t m : {17, 24, 32, 33, 48, 64, 65, 96, 128, 192, 256, 384, 512, 1024, 2048, 4096, 8192}) {
      const int iterations = m >= 2048 ? 10 : 30;
      for (int c = 0; c < cuda::kW4A16WgmmaNumConfigs; ++c) {
        const cuda::W4A16WgmmaConfig& cfg = cuda::kW4A16WgmmaConfigs[c];
        time_w4a16("w4a16-t" + std::to_string(cfg.tokens) + (cfg.permuted_x ? "p" : "") + " cfg" + std::to_string(c) +
                       " " + s.name,
                   w, m, s.n, s.k, iterations, Activation::kNone, {.wgmma_config = c});
      }
      time_w4a16(std::string("w4a16-deq ") + s.name, w, m, s.n, s.k, iterations, Activation::kNone,
                 {.no_wgmma = true});
      Tensor x(alloc, DType::kBF16, {m, s.k}), y(alloc, DType::kBF16, {m, s.n});
      fill_random(x, 1);
      report_perf(std::string("dense ") + s.name,
                  "M " + std::to_string(m) + " N " + std::to_string(s.n) + " K " + std::to_string(s.k) + " bf16",
                  2.0 * s.n * s.k + 2.0 * m * (s.k + s.n), 2.0 * m * s.n * s.k,
                  [&] { cuda_backend().gemm({x, wd, {}, y}); }, iterations);
    }
  }
}

TEST(GemmW4A16Perf, LargeSquare) {
  if (!perf_enabled()) GTEST_SKIP() << "set BRISK_OPS_PERF=1";
  const int64_t m = 16384, n = 16384, k = 16384;
  PerfWeights w = perf_weights(n, k);
  time_w4a16("w4a16 square", w, m, n, k, 5);
}

// One shape for tuning and profiling (ncu): BRISK_W4A16_SHAPE="N K M [wgmma configuration [last
// wave split]]": the configuration forced (-1: the rules, -2: no wgmma kernel), the last wave
// split as GemmW4A16Forced::split_last_wave takes it.
TEST(GemmW4A16Perf, OneShape) {
  const char* shape = std::getenv("BRISK_W4A16_SHAPE");
  if (!perf_enabled() || shape == nullptr) GTEST_SKIP() << "set BRISK_OPS_PERF=1 and BRISK_W4A16_SHAPE";
  int64_t n = 0, k = 0, m = 0;
  int config = -1, last_wave_split = 0;
  const int fields =
      std::sscanf(shape, "%" SCNd64 " %" SCNd64 " %" SCNd64 " %d %d", &n, &k, &m, &config, &last_wave_split);
  ASSERT_GE(fields, 3) << "BRISK_W4A16_SHAPE: " << shape;
  PerfWeights w = perf_weights(n, k);
  const GemmW4A16Forced forced{.wgmma_config = config >= 0 ? config : -1, .no_wgmma = config == -2,
                               .split_last_wave = last_wave_split};
  time_w4a16("w4a16 shape", w, m, n, k, 20, Activation::kNone, forced);
}

}  // namespace
}  // namespace brisk::testing
