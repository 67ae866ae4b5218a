// gemm_fp8: FP8 weights, x quantized to e4m3 on the fly (GemmFp8Params): x's e4m3 values and
// scales in scratch, then the product by the decode kernel (M <= 8), the stream-K kernel
// (per-channel scales, M 9-16), cuBLASLt's scaled FP8 matmul
// (larger M: per-row scales, in whole tiles where y has room, or 128 x 128 weight blocks where
// row_blocks, M % 4 == 0 and K % 512 == 0), or the FP8 wgmma kernel (K % 128 == 0, N % 16 == 0:
// M 17-64 with per-row scales, and wherever cuBLASLt has no algorithm), else on CUDA cores
// (kernels/fp8/gemm_fp8.h).
#include "backend/common/op_params.h"
#include "backend/cuda/kernels/fp8/gemm_fp8.h"
#include "backend/cuda/kernels/tensor_map.h"
#include "backend/cuda/ops/cuda_ops.h"
#include "backend/cuda/ops/gemm_runner.h"
#include "backend/cuda/ops/op_checks.h"
#include "core/error.h"

namespace brisk::cuda {
namespace {

// Per-row scales run cuBLASLt from M 65: below, the wgmma kernel is faster on each of Llama-8B's
// projections (M 16: 12.5 against 17.9 us on o_proj, 35.8 against 52.3 on down), above, cuBLASLt is
// 1.5-1.7x (gate_up at M 256: 66.7 against 100.5 us). Block-scaled ones run it past the decode
// kernel's M 8 (1.2-3.7x the wgmma kernel from M 16 on). H100, docs/perf/fp8.md.
constexpr int64_t kPerRowCublasLtMinRows = 65;

// cuBLASLt's per-row FP8 matmul has one configuration (128 x 128 tiles), and past the first tile of
// rows a partial tile costs more than a whole one: gate_up 84.7 us at M 136 against 62.0 at M 256,
// 115.5 at M 264 against 80.1 at M 384 (H100, docs/perf/fp8.md). Where y has room it runs whole tiles.
constexpr int64_t kPerRowTileRows = 128;

// Per-channel scales at M 9-16 run the stream-K kernel (every SM streams an equal share of the
// weights, where the wgmma kernel's 128-row tiles leave most SMs idle on the short projections);
// up to M 8 the decode kernel is faster: FP8's short GEMMs (8-12 us) do not carry stream-K's
// fixed cost of a few us; past M 16 the wgmma kernel and cuBLASLt are (docs/perf/fp8.md).
bool streamk_routed(int64_t m) { return m > kFp8MmaMaxRows && m <= gemm_streamk_max_m(StreamKOperands::kE4M3); }

// The FP8 kernels' tensor map over an e4m3 [rows, k] matrix: boxes of 128 bytes x box_rows.
CUtensorMap panel_map(const uint8_t* base, int64_t rows, int64_t k, int box_rows, const char* what) {
  return panel_tensor_map_8bit(base, rows, k, k, box_rows, "gemm_fp8", what);
}

}  // namespace

int64_t gemm_fp8_rows(int64_t m) {
  return m > kPerRowTileRows ? (m + kPerRowTileRows - 1) / kPerRowTileRows * kPerRowTileRows : m;
}

void gemm_fp8(const OpContext& ctx, GemmRunner& dense, const GemmFp8Params& p, GemmRunner::Path path) {
  check_op_params(p, Device::kCuda);
  const int64_t m = p.x.size(0), n = p.weight.size(0), k = p.weight.size(1);
  if (m == 0 || n == 0) return;
  BRISK_CHECK(m <= 65535, "gemm_fp8: x is {}; at most 65535 rows a call", p.x.describe());
  BRISK_CHECK(path == GemmRunner::Path::kAuto || path == GemmRunner::Path::kStreamK ||
                  path == GemmRunner::Path::kCublasLt,
              "gemm_fp8: no such path for FP8 weights");
  const int64_t groups = p.weight_scale.size(1);
  // Block scales: cuBLASLt reads x's 1 x 128 scales group-major ([groups, M]) and the weights'
  // 128 x 128 ones row-major ([ceil(N / 128), groups]). Whether it pads M and groups to 4 in those
  // layouts is not measured yet, so the block-scaled path takes only multiples of 4 (where either
  // reading agrees) and leaves other M to the wgmma kernel.
  const bool blocks = p.block_size > 0;
  const GemmRunner::Fp8Scales scales = blocks ? GemmRunner::Fp8Scales::kBlocks128 : GemmRunner::Fp8Scales::kPerRow;
  const bool streamk_fits = !blocks && groups == 1 && k % 16 == 0 && m <= gemm_streamk_max_m(StreamKOperands::kE4M3);
  BRISK_CHECK(path != GemmRunner::Path::kStreamK || streamk_fits,
              "gemm_fp8: the stream-K kernel cannot take x {} * w {}^T (block scales {})", p.x.describe(),
              p.weight.describe(), p.block_size);
  const bool streamk = streamk_fits && (path == GemmRunner::Path::kStreamK ||
                                        (path == GemmRunner::Path::kAuto && streamk_routed(m)));
  // The rows cuBLASLt's per-row matmul runs: x_q's and x_scale's past m are left unset, their
  // products land in y's room.
  const int64_t rows = blocks || streamk ? m : std::min(p.y.size(0), gemm_fp8_rows(m));
  const TensorView y = p.y.slice(0, 0, rows);
  Tensor x_q(*ctx.allocator, DType::kF8E4M3, {rows, k});  // freed on return: reuse is stream-ordered
  const bool lt = !streamk &&
                  (path == GemmRunner::Path::kCublasLt ||
                   (!fp8_mma_supports(static_cast<int>(m), n, k) && (blocks || m >= kPerRowCublasLtMinRows))) &&
                  k % 16 == 0 && n % 16 == 0 && (!blocks || (p.row_blocks && k % 512 == 0 && m % 4 == 0)) &&
                  dense.fp8_supported(x_q, p.weight, scales, p.bias, y);
  BRISK_CHECK(path != GemmRunner::Path::kCublasLt || lt, "gemm_fp8: cuBLASLt cannot take x {} * w {}^T",
              p.x.describe(), p.weight.describe());
  Tensor x_scale(*ctx.allocator, DType::kF32, {rows * groups});  // [m, groups], or [groups, m] for cuBLASLt's blocks
  GemmFp8Args a;
  a.x = p.x.data();
  a.x_stride = p.x.stride(0);
  a.x_type = float_type(p.x.dtype());
  a.weight = p.weight.data_as<const uint8_t>();
  a.weight_scale = p.weight_scale.data_as<const float>();
  a.input_scale = p.input_scale.empty() ? nullptr : p.input_scale.data_as<const float>();
  a.bias = p.bias.empty() ? nullptr : p.bias.data();
  a.bias_type = p.bias.empty() ? FloatType::kF32 : float_type(p.bias.dtype());
  a.y = p.y.data();
  a.y_stride = p.y.stride(0);
  a.y_type = float_type(p.y.dtype());
  a.x_q = x_q.data_as<uint8_t>();
  a.x_scale = x_scale.data_as<float>();
  a.x_scale_ld = lt && blocks ? m : 0;
  a.m = static_cast<int>(m);
  a.n = n;
  a.k = k;
  a.block_size = p.block_size;
  launch_quantize_fp8_rows(a, ctx.stream);
  if (streamk) {
    StreamKArgs s;
    s.m = m;
    s.n = n;
    s.k = k;
    s.operands = StreamKOperands::kE4M3;
    s.x_scale = a.x_scale;
    s.w_scale = a.weight_scale;
    s.bias = a.bias;
    s.bias_type = a.bias_type;
    s.y = a.y;
    s.y_stride = a.y_stride;
    s.y_type = a.y_type;
    dense.launch_streamk(ctx, s, panel_map(a.weight, n, k, kStreamKTileRows, "weight"),
                         panel_map(a.x_q, m, k, gemm_streamk_tokens(m, StreamKOperands::kE4M3), "x"));
    return;
  }
  if (lt) {
    Tensor w_blocks;
    const float* w_scale = a.weight_scale;
    if (blocks) {
      w_blocks = Tensor(*ctx.allocator, DType::kF32, {(n + 127) / 128, groups});
      launch_fp8_block_scales(a.weight_scale, n, groups, w_blocks.data_as<float>(), ctx.stream);
      w_scale = w_blocks.data_as<float>();
    }
    dense.run_fp8(ctx, x_q, a.x_scale, p.weight, w_scale, scales, p.bias, y);
    return;
  }
  if (fp8_mma_supports(a.m, n, k)) {
    launch_fp8_mma(a, ctx.stream);
    return;
  }
  if (!fp8_wgmma_supports(n, k)) {
    launch_gemm_fp8_cuda_cores(a, ctx.stream);
    return;
  }
  Fp8WgmmaArgs w;
  static_cast<GemmFp8Args&>(w) = a;
  w.tokens = fp8_wgmma_tokens(a.m, a.block_size);
  launch_fp8_wgmma(w, panel_map(a.weight, n, k, 128, "weight"), panel_map(a.x_q, m, k, w.tokens, "x"), ctx.stream);
}

void gemm_fp8(const OpContext& ctx, GemmRunner& dense, const GemmFp8Params& p) {
  gemm_fp8(ctx, dense, p, GemmRunner::Path::kAuto);
}

}  // namespace brisk::cuda
