// out = silu(gate) * up with x = [gate | up]: the SwiGLU activation of Llama-style MLPs.
#include <cmath>
#include <vector>

#include "backend/common/op_params.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/float_rows.h"
#include "core/error.h"
#include "core/parallel.h"

namespace brisk::cpu {

void silu_mul(const SiluMulParams& p) {
  check_op_params(p, Device::kCpu);
  const int64_t num_tokens = p.x.size(0);
  const int64_t dim = p.out.size(1);
  LoadFn load = load_fn(p.x.dtype());
  StoreFn store = store_fn(p.out.dtype());
  parallel_for(num_tokens, 4, [&](int64_t begin, int64_t end) {
    std::vector<float> x(2 * dim);
    for (int64_t t = begin; t < end; ++t) {
      load(element_ptr(p.x, t, 0), x.data(), 2 * dim);
      const float* up = x.data() + dim;
      for (int64_t i = 0; i < dim; ++i) {
        float g = x[i];
        // Overwriting gate i is safe: up lives in the second half.
        x[i] = g / (1.0f + std::exp(-g)) * up[i];
      }
      store(x.data(), element_ptr(p.out, t, 0), dim);
    }
  });
}

}  // namespace brisk::cpu
