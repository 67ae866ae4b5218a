// rms_norm: out = rms_norm(x [+ residual, stored back]) * weight.
#include "backend/common/op_params.h"
#include "backend/cuda/kernels/launch.h"
#include "backend/cuda/ops/cuda_ops.h"
#include "backend/cuda/ops/op_checks.h"
#include "core/error.h"

namespace brisk::cuda {

void rms_norm(const OpContext& ctx, const RmsNormParams& p) {
  check_op_params(p, Device::kCuda);

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
