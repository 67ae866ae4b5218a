// silu_mul: out = silu(gate) * up with x = [gate | up].
#include "backend/common/op_params.h"
#include "backend/cuda/kernels/launch.h"
#include "backend/cuda/ops/cuda_ops.h"
#include "backend/cuda/ops/op_checks.h"
#include "core/error.h"

namespace brisk::cuda {

void silu_mul(const OpContext& ctx, const SiluMulParams& p) {
  check_op_params(p, Device::kCuda);
  const int64_t num_tokens = p.x.size(0);
  const int64_t dim = p.out.size(1);
  SiluMulArgs a;
  a.x = p.x.data();
  a.x_stride = p.x.stride(0);
  a.x_type = float_type(p.x.dtype());
  a.out = p.out.data();
  a.out_stride = p.out.stride(0);
  a.out_type = float_type(p.out.dtype());
  a.num_tokens = num_tokens;
  a.dim = dim;
  // The up half starts dim elements into the row: aligned when dim is a multiple of 8.
  a.vectorized = dim % 8 == 0 && rows_vectorizable(p.x) && rows_vectorizable(p.out);
  launch_silu_mul(a, ctx.stream);
}

}  // namespace brisk::cuda
