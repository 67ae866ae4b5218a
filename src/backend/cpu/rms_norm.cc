// out = rms_norm(x) * weight, optionally after residual += x ("add & norm").
#include <vector>

#include "backend/common/op_params.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/float_rows.h"
#include "core/error.h"
#include "core/parallel.h"

namespace brisk::cpu {
void rms_norm(const RmsNormParams& p) {
  check_op_params(p, Device::kCpu);
  const int64_t num_rows = p.x.size(0);
  const int64_t dim = p.x.size(1);
  const bool has_residual = !p.residual.empty();
  std::vector<float> weight(dim);
  load_fn(p.weight.dtype())(p.weight.data(), weight.data(), dim);
  LoadFn load_x = load_fn(p.x.dtype());
  StoreFn store_out = store_fn(p.out.dtype());
  LoadFn load_residual = has_residual ? load_fn(p.residual.dtype()) : nullptr;
  StoreFn store_residual = has_residual ? store_fn(p.residual.dtype()) : nullptr;

  parallel_for(num_rows, 4, [&](int64_t begin, int64_t end) {
    std::vector<float> row(dim);
    std::vector<float> residual(has_residual ? dim : 0);
    for (int64_t r = begin; r < end; ++r) {
      load_x(element_ptr(p.x, r, 0), row.data(), dim);
      if (has_residual) {
        char* residual_ptr = element_ptr(p.residual, r, 0);
        load_residual(residual_ptr, residual.data(), dim);
        for (int64_t i = 0; i < dim; ++i) residual[i] += row[i];
        // Normalise the residual as stored (rounded to its dtype), as the next layer's add
        // will see it; this is what HF and vLLM do.
        store_residual(residual.data(), residual_ptr, dim);
        load_residual(residual_ptr, row.data(), dim);
      }
      rms_norm_row(row.data(), weight.data(), dim, p.eps, row.data());
      store_out(row.data(), element_ptr(p.out, r, 0), dim);
    }
  });
}

}  // namespace brisk::cpu
