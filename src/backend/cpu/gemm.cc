// y = x * w^T (+ bias), every operand in any float dtype, fp32 accumulation.
//
// Work is split over blocks of output columns (rows of w): each task converts its block of w
// to fp32 once, small enough to stay in cache, and reuses it for every row of x. x is
// converted to fp32 once up front. Each y[m, n] is one dot_f32 of fixed order, so results do
// not depend on M, the blocking or the thread count.
#include <algorithm>
#include <vector>

#include "backend/common/op_params.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/float_rows.h"
#include "core/error.h"
#include "core/parallel.h"

namespace brisk::cpu {
namespace {

// fp32 elements of w per block: 128 KiB, which fits in the L2 cache of any current CPU.
constexpr int64_t kBlockElements = 32 * 1024;
constexpr int64_t kMaxBlockRows = 64;

// x as a contiguous fp32 [M, K] matrix.
std::vector<float> x_as_f32(const TensorView& x) {
  const int64_t m_rows = x.size(0);
  const int64_t k = x.size(1);
  std::vector<float> out(m_rows * k);
  LoadFn load = load_fn(x.dtype());
  parallel_for(m_rows, 16, [&](int64_t begin, int64_t end) {
    for (int64_t m = begin; m < end; ++m) load(element_ptr(x, m, 0), out.data() + m * k, k);
  });
  return out;
}

}  // namespace

void gemm(const GemmParams& p) {
  check_op_params(p, Device::kCpu);
  const int64_t m_rows = p.x.size(0);
  const int64_t n_cols = p.w.size(0);
  const int64_t k = p.x.size(1);
  const std::vector<float> x = x_as_f32(p.x);  // [M, K]
  std::vector<float> bias(p.bias.empty() ? 0 : n_cols);
  if (!p.bias.empty()) load_fn(p.bias.dtype())(p.bias.data(), bias.data(), n_cols);

  const int64_t block_rows = std::clamp<int64_t>(kBlockElements / std::max<int64_t>(k, 1), 1,
                                                 kMaxBlockRows);
  const int64_t num_blocks = (n_cols + block_rows - 1) / block_rows;
  LoadFn load_w = load_fn(p.w.dtype());
  StoreFn store_y = store_fn(p.y.dtype());

  parallel_for(num_blocks, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> w_block(block_rows * k);  // [block_rows, K]
    std::vector<const float*> w_rows(block_rows);
    std::vector<float> y_block(block_rows);
    for (int64_t b = begin; b < end; ++b) {
      const int64_t n0 = b * block_rows;
      const int64_t count = std::min(block_rows, n_cols - n0);
      for (int64_t j = 0; j < count; ++j) {
        w_rows[j] = row_as_f32(element_ptr(p.w, n0 + j, 0), p.w.dtype(), load_w,
                               w_block.data() + j * k, k);
      }
      for (int64_t m = 0; m < m_rows; ++m) {
        const float* x_row = x.data() + m * k;
        for (int64_t j = 0; j < count; ++j) {
          y_block[j] = dot_f32(x_row, w_rows[j], k) + (bias.empty() ? 0.0f : bias[n0 + j]);
        }
        store_y(y_block.data(), element_ptr(p.y, m, n0), count);
      }
    }
  });
}

}  // namespace brisk::cpu
