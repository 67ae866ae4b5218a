// embedding: out[t] = table[ids[t]]. Ids are checked on the device: an id outside the table
// gives a zero row (the CPU reference throws before writing; checking here would need a copy
// of ids to the host and a synchronisation per step).
#include "backend/cuda/kernels/launch.h"
#include "backend/cuda/ops/cuda_ops.h"
#include "backend/cuda/ops/op_checks.h"
#include "core/error.h"

namespace brisk::cuda {

void embedding(const OpContext& ctx, const EmbeddingParams& p) {
  constexpr std::string_view kOp = "embedding";
  check_view(kOp, "table", p.table, 2, Layout::kStridedRows);
  check_view(kOp, "out", p.out, 2, Layout::kStridedRows);
  const int64_t num_tokens = p.out.size(0);
  const int64_t dim = p.table.size(1);
  check_index_vector(kOp, "ids", p.ids, num_tokens);
  BRISK_CHECK(p.out.size(1) == dim, "embedding: table is {} but out is {}: dim differs",
              p.table.describe(), p.out.describe());
  const bool same_dtype = p.table.dtype() == p.out.dtype();
  if (same_dtype) {
    BRISK_CHECK(dtype_bits(p.table.dtype()) >= 8, "embedding: table is {}; packed dtypes cannot be "
                "gathered row by row", p.table.describe());
  } else {
    check_float(kOp, "table", p.table);
    check_float(kOp, "out", p.out);
  }
  EmbeddingArgs a;
  a.table = p.table.data();
  a.table_stride_bytes = static_cast<int64_t>(dtype_bytes(p.table.dtype(), p.table.stride(0)));
  a.ids = p.ids.data_as<const int32_t>();
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
