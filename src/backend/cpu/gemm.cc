// y = x * w^T (+ bias), every operand in any float dtype, fp32 accumulation; and its int4
// variant gemm_w4a16, which differs only in how a row of w becomes fp32.
//
// Work is split over blocks of output columns (rows of w): each task converts (or dequantizes)
// its block of w to fp32 once, small enough to stay in cache, and reuses it for every row of x.
// x is converted to fp32 once up front. Each y[m, n] is one dot_f32_halving of fixed order, so results
// do not depend on M, the blocking or the thread count, and an int4 weight gives exactly the
// results of its dequantized fp32 copy (the dequantized value (q - zero) * scale is exact in
// fp32: a 5-bit integer times a value of at most 24 significant bits).
#include <algorithm>
#include <functional>
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

// Writes row n of the weight matrix as fp32 into dst [K]; returns dst or the row itself when it
// is already contiguous fp32.
using WeightRowFn = std::function<const float*(int64_t n, float* dst)>;

// y = x * w^T (+ bias) with w given row by row.
void gemm_rows(const TensorView& x_view, int64_t n_cols, const WeightRowFn& weight_row,
               const TensorView& bias_view, const TensorView& y) {
  const int64_t m_rows = x_view.size(0);
  const int64_t k = x_view.size(1);
  const std::vector<float> x = x_as_f32(x_view);  // [M, K]
  std::vector<float> bias(bias_view.empty() ? 0 : n_cols);
  if (!bias_view.empty()) load_fn(bias_view.dtype())(bias_view.data(), bias.data(), n_cols);

  const int64_t block_rows = std::clamp<int64_t>(kBlockElements / std::max<int64_t>(k, 1), 1,
                                                 kMaxBlockRows);
  const int64_t num_blocks = (n_cols + block_rows - 1) / block_rows;
  StoreFn store_y = store_fn(y.dtype());

  parallel_for(num_blocks, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> w_block(block_rows * k);  // [block_rows, K]
    std::vector<const float*> w_rows(block_rows);
    std::vector<float> y_block(block_rows);
    for (int64_t b = begin; b < end; ++b) {
      const int64_t n0 = b * block_rows;
      const int64_t count = std::min(block_rows, n_cols - n0);
      for (int64_t j = 0; j < count; ++j) w_rows[j] = weight_row(n0 + j, w_block.data() + j * k);
      for (int64_t m = 0; m < m_rows; ++m) {
        const float* x_row = x.data() + m * k;
        for (int64_t j = 0; j < count; ++j) {
          y_block[j] = dot_f32_halving(x_row, w_rows[j], k) + (bias.empty() ? 0.0f : bias[n0 + j]);
        }
        store_y(y_block.data(), element_ptr(y, m, n0), count);
      }
    }
  });
}

}  // namespace

void gemm(const GemmParams& p) {
  check_op_params(p, Device::kCpu);
  const int64_t k = p.x.size(1);
  LoadFn load_w = load_fn(p.w.dtype());
  gemm_rows(p.x, p.w.size(0), [&](int64_t n, float* dst) {
    return row_as_f32(element_ptr(p.w, n, 0), p.w.dtype(), load_w, dst, k);
  }, p.bias, p.y);
}

void gemm_w4a16(const GemmW4A16Params& p) {
  check_op_params(p, Device::kCpu);
  if (p.silu_gate) {  // the fp32 product, then silu(gate) * up
    std::vector<float> product(static_cast<size_t>(p.x.size(0) * p.qweight.size(0)));
    GemmW4A16Params full = p;
    full.silu_gate = false;
    full.y = TensorView(product.data(), DType::kF32, {p.x.size(0), p.qweight.size(0)});
    gemm_w4a16(full);
    silu_mul({full.y, p.y});
    return;
  }
  const int64_t k = p.x.size(1);
  const int64_t num_groups = k / p.group_size;
  const auto* packed = p.qweight.data_as<const uint8_t>();
  const auto* zeros = p.zeros.empty() ? nullptr : p.zeros.data_as<const uint8_t>();
  LoadFn load_scales = load_fn(p.scales.dtype());
  const size_t scale_bytes = dtype_bytes(p.scales.dtype(), 1);
  gemm_rows(p.x, p.qweight.size(0), [&](int64_t n, float* dst) {
    const uint8_t* row = packed + n * (k / 2);
    for (int64_t g = 0; g < num_groups; ++g) {
      float scale = 0.0f;
      load_scales(static_cast<const char*>(p.scales.data()) + (n * num_groups + g) * scale_bytes, &scale, 1);
      const int zero = zeros != nullptr ? zeros[n * num_groups + g] : 8;
      for (int64_t i = g * p.group_size; i < (g + 1) * p.group_size; ++i) {
        const int q = (row[i / 2] >> (4 * (i % 2))) & 0xF;
        dst[i] = static_cast<float>(q - zero) * scale;
      }
    }
    return dst;
  }, p.bias, p.y);
}

}  // namespace brisk::cpu
