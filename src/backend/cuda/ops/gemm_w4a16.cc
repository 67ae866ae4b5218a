// gemm_w4a16: int4 weights (brisk's layout) times 16-bit or f32 activations. The kernel is
// chosen by M (kernels/w4a16/w4a16_heuristics.h):
// - M <= kW4A16MmaMaxRows, 16-bit x, K % 128 == 0: the tensor-core kernel (w4a16_mma.cu),
//   every weight byte read once, split over K when N alone cannot fill the GPU (fp32 partials
//   in scratch, summed by a second kernel). Each weight is dequantized to x's dtype (one
//   rounding of (q - z) * s) before the fp32-accumulating MMA.
// - otherwise M <= kW4A16MaxRows: the CUDA-core kernel (w4a16_small_m.cu; f32 x, or K not a
//   multiple of 128), fp32 dequantization.
// - larger M (prefill): the weight is dequantized into scratch in x's dtype and multiplied by
//   cuBLASLt. This costs a write and a read of the dense weight per call; it is the fallback
//   until a wgmma W4A16 kernel lands. With f32 activations the dequantized weight is exact;
//   bf16 rounds each (q - z) * s once.
#include <cstdint>

#include "backend/common/op_params.h"
#include "backend/cuda/kernels/launch.h"
#include "backend/cuda/kernels/w4a16/w4a16_heuristics.h"
#include "backend/cuda/kernels/w4a16/w4a16_launch.h"
#include "backend/cuda/ops/cuda_ops.h"
#include "backend/cuda/ops/gemm_runner.h"
#include "backend/cuda/ops/op_checks.h"
#include "core/error.h"

namespace brisk::cuda {

void gemm_w4a16(const OpContext& ctx, GemmRunner& dense, const GemmW4A16Params& p) {
  check_op_params(p, Device::kCuda);
  BRISK_CHECK(p.group_size % 32 == 0,
              "gemm_w4a16: group_size is {} but the cuda backend needs a multiple of 32 (32, 64, 128, ...)",
              p.group_size);
  BRISK_CHECK(reinterpret_cast<uintptr_t>(p.qweight.data()) % 16 == 0,
              "gemm_w4a16: qweight {} must be 16-byte aligned", p.qweight.describe());
  const int64_t m = p.x.size(0), n = p.qweight.size(0), k = p.qweight.size(1);
  if (m == 0 || n == 0) return;
  const bool mma = p.x.dtype() != DType::kF32 && k % 128 == 0 && m <= kW4A16MmaMaxRows;
  if (!mma && m > kW4A16MaxRows) {
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
    launch_dequantize_int4(d, ctx.stream);
    dense.run(ctx, {p.x, w, p.bias, p.y});
    return;
  }
  TensorView x = p.x;
  Tensor x_copy;
  if (!rows_vectorizable(x)) {  // the kernel reads x 16 bytes at a time
    x_copy = Tensor(*ctx.allocator, x.dtype(), {m, k});
    convert(ctx, x_copy, x);
    x = x_copy;
  }
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
  a.y = p.y.data();
  a.y_stride = m > 1 ? p.y.stride(0) : n;
  a.y_type = float_type(p.y.dtype());
  a.m = static_cast<int>(m);
  a.n = n;
  a.k = k;
  a.group_size = p.group_size;
  if (mma) {
    w4a16_mma_plan_splits(a, ctx.num_sms);
  } else {
    w4a16_plan_splits(a, ctx.num_sms);
  }
  Tensor partials;
  if (a.num_splits > 1) {
    partials = Tensor(*ctx.allocator, DType::kF32, {a.num_splits, m, n});
    a.partials = partials.data_as<float>();
  }
  if (!mma) {
    launch_w4a16_small_m(a, ctx.stream);
    return;
  }
  Tensor x_frag;
  if (w4a16_mma_config(a.m).permuted_x) x_frag = Tensor(*ctx.allocator, DType::kU8, {w4a16_mma_x_frag_bytes(a.m, k)});
  launch_w4a16_mma(a, x_frag.empty() ? nullptr : x_frag.view().data(), ctx.stream);
}

}  // namespace brisk::cuda
