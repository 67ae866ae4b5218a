// out[t] = table[ids[t]]: a row gather, converting between float dtypes when they differ; or of a
// vocabulary shard, zero rows for the ids of other shards.
#include <cstring>
#include <vector>

#include "backend/common/op_params.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/float_rows.h"
#include "core/error.h"
#include "core/parallel.h"

namespace brisk::cpu {

void embedding(const EmbeddingParams& p) {
  check_op_params(p, Device::kCpu);
  const int64_t num_tokens = p.out.size(0);
  const int64_t num_rows = p.table.size(0);
  const int64_t dim = p.table.size(1);
  const bool same_dtype = p.table.dtype() == p.out.dtype();
  const int32_t* ids = p.ids.data_as<const int32_t>();
  const bool shard = p.shard_first_id >= 0;
  const int64_t first = shard ? p.shard_first_id : 0;
  // All ids are checked before any row is written, so a bad id leaves out untouched.
  for (int64_t t = 0; t < num_tokens && !shard; ++t) {
    BRISK_CHECK(ids[t] >= 0 && ids[t] < num_rows,
                "embedding: ids[{}] = {} is out of range for a table of {} rows ({})", t, ids[t],
                num_rows, p.table.describe());
  }

  LoadFn load = same_dtype ? nullptr : load_fn(p.table.dtype());
  StoreFn store = same_dtype ? nullptr : store_fn(p.out.dtype());
  const size_t row_bytes = dtype_bytes(p.table.dtype(), dim);
  parallel_for(num_tokens, 16, [&](int64_t begin, int64_t end) {
    std::vector<float> row(same_dtype ? 0 : dim);
    for (int64_t t = begin; t < end; ++t) {
      char* dst = element_ptr(p.out, t, 0);
      const int64_t row_index = ids[t] - first;
      if (row_index < 0 || row_index >= num_rows) {  // another shard's id
        std::memset(dst, 0, dtype_bytes(p.out.dtype(), dim));
        continue;
      }
      const char* src = element_ptr(p.table, row_index, 0);
      if (same_dtype) {
        std::memcpy(dst, src, row_bytes);
      } else {
        load(src, row.data(), dim);
        store(row.data(), dst, dim);
      }
    }
  });
}

}  // namespace brisk::cpu
