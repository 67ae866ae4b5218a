// gemm_w4a16: int4 weights times 16-bit or f32 activations. The kernel is chosen by M
// (kernels/w4a16/w4a16_plan.h, from the GPU's tuning table):
// - 16-bit x, K % 128 == 0, M up to tuning.mma_multi_pass_max_rows: the mma.sync kernel
//   (w4a16_mma.cu) in passes of up to kW4A16MmaMaxRows rows, every weight byte read once per
//   pass, split over K when N alone cannot fill the GPU (fp32 partials in scratch, summed by a
//   second kernel); x from a fragment-order copy or, for the smallest M, from shared memory
//   each block fills itself (w4a16_mma_plan). With group_size % 128 == 0 the scale and zero
//   point are applied to fp32 chunk sums after the MMA; otherwise each weight is dequantized to
//   x's dtype first (one rounding of (q - z) * s). It reads both layouts; the tile layout
//   (Int4Layout::kTiles16, made once at load time by repack_int4 below) is the fast one: warps
//   side by side stream one contiguous run.
// - otherwise M <= kW4A16MaxRows with the row layout: the CUDA-core kernel (w4a16_small_m.cu; f32
//   x, or K not a multiple of 128), fp32 dequantization.
// - 16-bit x, K % 128 == 0, the tile layout and M in the wgmma kernel's range (w4a16_wgmma_enabled,
//   ahead of the mma.sync kernel): the wgmma kernel (w4a16_wgmma.cu), each weight dequantized
//   into registers in x's dtype (the scale rounded to it, then (q - z) * s rounded), x read by
//   TMA as it is (groups of 128) or first permuted into the weights' K order in scratch (smaller
//   groups), split over K when the tiles leave SMs idle.
// - otherwise (f32 x, the row layout, K % 128 != 0, M past the wgmma range): the weight is
//   dequantized into scratch in x's dtype and multiplied by cuBLASLt. This costs a write and a
//   read of the dense weight per call. With f32 activations the dequantized weight is exact;
//   bf16 rounds each (q - z) * s once.
// silu_gate is fused into the tensor-core kernels (and their split-K reduction): the mma.sync
// kernel's instantiations with the scales after the MMA (groups of 128, 256, ...), the wgmma
// kernel's reading x directly (groups of 128, ...) where N / 2 % 16 == 0. Elsewhere the product
// goes to scratch in y's dtype, then silu_mul.
#include <algorithm>
#include <cstdint>

#include "backend/common/op_params.h"
#include "backend/cuda/kernels/launch.h"
#include "backend/cuda/kernels/w4a16/w4a16_configs.h"
#include "backend/cuda/kernels/w4a16/w4a16_launch.h"
#include "backend/cuda/kernels/w4a16/w4a16_plan.h"
#include "backend/cuda/kernels/w4a16/w4a16_wgmma.h"
#include "backend/cuda/ops/cuda_ops.h"
#include "backend/cuda/ops/gemm_runner.h"
#include "backend/cuda/ops/op_checks.h"
#include "backend/cuda/runtime/cuda_check.h"
#include "core/error.h"

namespace brisk::cuda {

namespace {

// The kernels' arguments for x [M, K] -> y [M, N] (a one-row view may carry any stride: its
// rows are then packed).
W4A16Args kernel_args(const GemmW4A16Params& p, TensorView x, TensorView y) {
  const int64_t m = x.size(0), n = p.qweight.size(0), k = p.qweight.size(1);
  W4A16Args a;
  a.x = x.data();
  a.x_stride = m > 1 ? x.stride(0) : k;
  a.x_type = float_type(x.dtype());
  a.qweight = p.qweight.data_as<const uint8_t>();
  a.scales = p.scales.data();
  a.scale_type = float_type(p.scales.dtype());
  a.zeros = p.zeros.empty() ? nullptr : p.zeros.data_as<const uint8_t>();
  a.bias = p.bias.empty() ? nullptr : p.bias.data();
  a.bias_type = p.bias.empty() ? FloatType::kF32 : float_type(p.bias.dtype());
  a.y = y.data();
  a.y_stride = m > 1 ? y.stride(0) : y.size(1);
  a.y_type = float_type(y.dtype());
  a.m = static_cast<int>(m);
  a.n = n;
  a.k = k;
  a.group_size = p.group_size;
  a.silu_gate = p.silu_gate;
  return a;
}

// Rows x [rows, K] -> y [rows, N] by the tensor-core kernel (mma; rows <= kW4A16MmaMaxRows) or
// the CUDA-core kernel (rows <= kW4A16MaxRows, row layout); x rows 16-byte aligned.
void run_small_m(const OpContext& ctx, const W4A16PlanContext& plan, const GemmW4A16Params& p, TensorView x,
                 TensorView y, bool mma, bool tiles) {
  const int64_t m = x.size(0), n = p.qweight.size(0);
  W4A16Args a = kernel_args(p, x, y);
  if (mma) {
    w4a16_mma_plan(a, plan);
  } else {
    w4a16_plan_splits(a, ctx.num_sms);
  }
  Tensor partials;  // freed on return: reuse is stream-ordered
  if (a.num_splits > 1) {
    partials = Tensor(*ctx.allocator, DType::kF32, {a.num_splits, m, n});
    a.partials = partials.data_as<float>();
  }
  if (!mma) {
    launch_w4a16_small_m(a, ctx.stream);
    return;
  }
  Tensor x_frag;
  if (const int64_t bytes = w4a16_mma_x_frag_bytes(a); bytes > 0) x_frag = Tensor(*ctx.allocator, DType::kU8, {bytes});
  launch_w4a16_mma(a, tiles, x_frag.empty() ? nullptr : x_frag.view().data(), ctx.stream);
}

// y = x * dequant(w)^T by the wgmma kernel (tile layout, 16-bit x rows 16-byte aligned).
void run_wgmma(const OpContext& ctx, const W4A16PlanContext& plan, const GemmW4A16Params& p, TensorView x) {
  const int64_t m = x.size(0), k = p.qweight.size(1);
  W4A16Args a = kernel_args(p, x, p.y);
  w4a16_wgmma_plan(a, plan);
  Tensor partials, x_perm;  // freed on return: reuse is stream-ordered
  if (kW4A16WgmmaConfigs[a.wgmma_config].permuted_x) x_perm = Tensor(*ctx.allocator, x.dtype(), {m, k});
  if (const int64_t floats = w4a16_wgmma_partial_floats(a); floats > 0) {
    partials = Tensor(*ctx.allocator, DType::kF32, {floats});
    a.partials = partials.data_as<float>();
  }
  launch_w4a16_wgmma(a, x_perm.empty() ? nullptr : x_perm.view().data(), ctx.stream);
}

}  // namespace

void gemm_w4a16(const OpContext& ctx, GemmRunner& dense, const GemmW4A16Params& p) {
  check_op_params(p, Device::kCuda);
  BRISK_CHECK(p.group_size % 32 == 0,
              "gemm_w4a16: group_size is {} but the cuda backend needs a multiple of 32 (32, 64, 128, ...)",
              p.group_size);
  BRISK_CHECK(reinterpret_cast<uintptr_t>(p.qweight.data()) % 16 == 0,
              "gemm_w4a16: qweight {} must be 16-byte aligned", p.qweight.describe());
  const int64_t m = p.x.size(0), n = p.qweight.size(0), k = p.qweight.size(1);
  if (m == 0 || n == 0) return;
  const bool tiles = p.layout == Int4Layout::kTiles16;
  const W4A16PlanContext plan{w4a16_tuning(), ctx.num_sms, p.forced};
  // (The tensor-core kernels index scales and zero points in 32 bits.)
  const bool tensor_cores = p.x.dtype() != DType::kF32 && k % 128 == 0 && n * (k / p.group_size) <= int64_t{UINT32_MAX};
  const bool mma = tensor_cores && m <= plan.tuning.mma_multi_pass_max_rows;
  const bool wgmma = tensor_cores && tiles && w4a16_wgmma_enabled(plan, static_cast<int>(m));
  if (p.silu_gate && !(wgmma ? w4a16_wgmma_fuses_silu_gate(plan, static_cast<int>(m), n, p.group_size)
                              : mma && w4a16_mma_scales_after(p.group_size))) {
    // Not fused here: the product, then silu_mul.
    Tensor product(*ctx.allocator, p.y.dtype(), {m, n});  // freed on return: reuse is stream-ordered
    GemmW4A16Params full = p;
    full.silu_gate = false;
    full.y = product;
    gemm_w4a16(ctx, dense, full);
    silu_mul(ctx, {product, p.y});
    return;
  }
  if (mma || wgmma || (m <= kW4A16MaxRows && !tiles)) {  // the CUDA-core kernel reads the row layout only
    TensorView x = p.x;
    Tensor x_copy;
    if (!rows_vectorizable(x)) {  // the kernels read x 16 bytes at a time
      x_copy = Tensor(*ctx.allocator, x.dtype(), {m, k});
      convert(ctx, x_copy, x);
      x = x_copy;
    }
    if (wgmma) {
      run_wgmma(ctx, plan, p, x);
      return;
    }
    // Past kW4A16MmaMaxRows rows, passes of that many rows each read the weight again.
    for (int64_t r0 = 0; r0 < m; r0 += kW4A16MmaMaxRows) {
      const int64_t r1 = std::min(m, r0 + kW4A16MmaMaxRows);
      run_small_m(ctx, plan, p, x.slice(0, r0, r1), p.y.slice(0, r0, r1), mma, tiles);
    }
    return;
  }
  Tensor w(*ctx.allocator, p.x.dtype(), {n, k});  // freed on return: reuse is stream-ordered
  DequantizeInt4Args d;
  d.qweight = p.qweight.data_as<const uint8_t>();
  d.scales = p.scales.data();
  d.scale_type = float_type(p.scales.dtype());
  d.zeros = p.zeros.empty() ? nullptr : p.zeros.data_as<const uint8_t>();
  d.out = w.view().data();
  d.out_type = float_type(p.x.dtype());
  d.n = n;
  d.k = k;
  d.group_size = p.group_size;
  launch_dequantize_int4(d, tiles, ctx.stream);
  dense.run(ctx, {p.x, w, p.bias, p.y});
}

Int4Layout repack_int4(const OpContext& ctx, TensorView qweight) {
  BRISK_CHECK(qweight.dtype() == DType::kI4 && qweight.rank() == 2 && qweight.is_contiguous(),
              "repack_int4: qweight is {} but must be a contiguous i4 [N, K]", qweight.describe());
  const int64_t n = qweight.size(0), k = qweight.size(1);
  if (n % 16 != 0 || k % 128 != 0 || reinterpret_cast<uintptr_t>(qweight.data()) % 16 != 0) return Int4Layout::kRows;
  Tensor rows(*ctx.allocator, DType::kI4, {n, k});  // freed on return: reuse is stream-ordered
  BRISK_CUDA_CHECK(cudaMemcpyAsync(rows.view().data(), qweight.data(), qweight.num_bytes(), cudaMemcpyDeviceToDevice,
                                   ctx.stream));
  launch_int4_rows_to_tiles(rows.view().data_as<const uint8_t>(), qweight.data_as<uint8_t>(), n, k, ctx.stream);
  return Int4Layout::kTiles16;
}

}  // namespace brisk::cuda
