// embedding: out[t] = table[ids[t]]. Ids are checked on the device: an id outside the table
// gives a zero row (the CPU reference throws before writing; checking here would need a copy
// of ids to the host and a synchronisation per step).
#include "backend/common/op_params.h"
#include "backend/cuda/kernels/launch.h"
#include "backend/cuda/ops/cuda_ops.h"
#include "backend/cuda/ops/op_checks.h"
#include "core/error.h"

namespace brisk::cuda {

void embedding(const OpContext& ctx, const EmbeddingParams& p) {
  check_op_params(p, Device::kCuda);
  const int64_t num_tokens = p.out.size(0);
  const int64_t dim = p.table.size(1);
  const bool same_dtype = p.table.dtype() == p.out.dtype();
  EmbeddingArgs a;
  a.table = p.table.data();
  a.table_stride_bytes = static_cast<int64_t>(dtype_bytes(p.table.dtype(), p.table.stride(0)));
  a.ids = p.ids.data_as<const int32_t>();
  a.first_id = p.shard_first_id >= 0 ? p.shard_first_id : 0;
  a.num_rows = p.table.size(0);
  a.out = p.out.data();
  a.out_stride_bytes = static_cast<int64_t>(dtype_bytes(p.out.dtype(), p.out.stride(0)));
  a.num_tokens = num_tokens;
  a.dim = dim;
  a.raw_copy = same_dtype;
  a.row_bytes = static_cast<int64_t>(dtype_bytes(p.table.dtype(), dim));
  if (!same_dtype) {
    a.table_type = float_type(p.table.dtype());
    a.out_type = float_type(p.out.dtype());
  }
  launch_embedding(a, ctx.stream);
}

}  // namespace brisk::cuda
