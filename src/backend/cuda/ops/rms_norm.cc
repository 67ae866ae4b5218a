// rms_norm: out = rms_norm(x [+ residual, stored back]) * weight.
#include "backend/cuda/kernels/launch.h"
#include "backend/cuda/ops/cuda_ops.h"
#include "backend/cuda/ops/op_checks.h"
#include "core/error.h"

namespace brisk::cuda {

void rms_norm(const OpContext& ctx, const RmsNormParams& p) {
  constexpr std::string_view kOp = "rms_norm";
  check_view(kOp, "x", p.x, 2, Layout::kStridedRows);
  check_view(kOp, "out", p.out, 2, Layout::kStridedRows);
  check_view(kOp, "weight", p.weight, 1, Layout::kContiguous);
  check_float(kOp, "x", p.x);
  check_float(kOp, "out", p.out);
  check_float(kOp, "weight", p.weight);
  check_same_shape(kOp, "out", p.out, "x", p.x);
  BRISK_CHECK(p.weight.size(0) == p.x.size(1), "rms_norm: x is {} but weight is {}: dim differs",
              p.x.describe(), p.weight.describe());
  if (!p.residual.empty()) {
    check_view(kOp, "residual", p.residual, 2, Layout::kStridedRows);
    check_float(kOp, "residual", p.residual);
    check_same_shape(kOp, "residual", p.residual, "x", p.x);
  }
  BRISK_CHECK(p.eps >= 0.0f, "rms_norm: eps is {} but must be >= 0", p.eps);

  RmsNormArgs a;
  a.x = p.x.data();
  a.x_stride = p.x.stride(0);
  a.x_type = float_type(p.x.dtype());
  if (!p.residual.empty()) {
    a.residual = p.residual.data();
    a.residual_stride = p.residual.stride(0);
    a.residual_type = float_type(p.residual.dtype());
  }
  a.weight = p.weight.data();
  a.weight_type = float_type(p.weight.dtype());
  a.out = p.out.data();
  a.out_stride = p.out.stride(0);
  a.out_type = float_type(p.out.dtype());
  a.num_rows = p.x.size(0);
  a.dim = p.x.size(1);
  a.eps = p.eps;
  a.vectorized = rows_vectorizable(p.x) && rows_vectorizable(p.out) &&
                 rows_vectorizable(p.weight) && rows_vectorizable(p.residual);
  launch_rms_norm(a, ctx.stream);
}

}  // namespace brisk::cuda
