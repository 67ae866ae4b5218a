// gemm_fp8 (backend.h): x quantized to e4m3 per token (or per token and 128-column group, or by
// the static input scale), then each block's exact products q * w summed in fp32 (dot_f32's fixed
// order) and scaled by the activation and weight scales. Work is split over blocks of output
// columns as in gemm.cc: each task decodes its weight rows to fp32 once and reuses them for every
// row of x.
#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <vector>

#include "backend/common/op_params.h"
#include "backend/cpu/cpu_ops.h"
#include "backend/cpu/float_rows.h"
#include "core/parallel.h"

namespace brisk::cpu {
namespace {

constexpr int64_t kBlockElements = 32 * 1024;
constexpr int64_t kMaxBlockRows = 64;

const std::array<float, 256>& e4m3_values() {
  static const std::array<float, 256> table = [] {
    std::array<float, 256> t{};
    for (int i = 0; i < 256; ++i) t[i] = e4m3_to_float(static_cast<uint8_t>(i));
    return t;
  }();
  return table;
}

}  // namespace

Fp8QuantizedRows quantize_fp8_activations(const TensorView& x, int block_size, const TensorView& input_scale) {
  const int64_t m_rows = x.size(0), k = x.size(1);
  const int64_t group = block_size > 0 ? block_size : k;
  const int64_t groups = (k + group - 1) / group;
  Fp8QuantizedRows out{std::vector<float>(m_rows * k), std::vector<float>(m_rows * groups), groups};
  const float fixed = input_scale.empty() ? 0.0f : input_scale.data_as<const float>()[0];
  LoadFn load = load_fn(x.dtype());
  parallel_for(m_rows, 16, [&](int64_t begin, int64_t end) {
    std::vector<float> row(k);
    for (int64_t m = begin; m < end; ++m) {
      load(element_ptr(x, m, 0), row.data(), k);
      for (int64_t g = 0; g < groups; ++g) {
        const int64_t k0 = g * group, k1 = std::min(k, k0 + group);
        float scale = fixed;
        if (input_scale.empty()) {
          float amax = 0.0f;
          for (int64_t i = k0; i < k1; ++i) amax = std::max(amax, std::fabs(row[i]));
          scale = amax > 0.0f ? amax / kE4M3Max : 1.0f;
        }
        out.scales[m * groups + g] = scale;
        for (int64_t i = k0; i < k1; ++i) out.q[m * k + i] = e4m3_to_float(float_to_e4m3(row[i] / scale));
      }
    }
  });
  return out;
}

void gemm_fp8(const GemmFp8Params& p) {
  check_op_params(p, Device::kCpu);
  const int64_t m_rows = p.x.size(0), k = p.x.size(1), n_cols = p.weight.size(0);
  const Fp8QuantizedRows x = quantize_fp8_activations(p.x, p.block_size, p.input_scale);
  const int64_t group = p.block_size > 0 ? p.block_size : k, groups = x.groups;
  const auto& values = e4m3_values();
  const auto* w = p.weight.data_as<const uint8_t>();
  const auto* w_scale = p.weight_scale.data_as<const float>();
  std::vector<float> bias(p.bias.empty() ? 0 : n_cols);
  if (!p.bias.empty()) load_fn(p.bias.dtype())(p.bias.data(), bias.data(), n_cols);
  const int64_t block_rows = std::clamp<int64_t>(kBlockElements / std::max<int64_t>(k, 1), 1, kMaxBlockRows);
  const int64_t num_blocks = (n_cols + block_rows - 1) / block_rows;
  StoreFn store_y = store_fn(p.y.dtype());
  parallel_for(num_blocks, 1, [&](int64_t begin, int64_t end) {
    std::vector<float> w_block(block_rows * k), y_block(block_rows);
    for (int64_t b = begin; b < end; ++b) {
      const int64_t n0 = b * block_rows, count = std::min(block_rows, n_cols - n0);
      for (int64_t i = 0; i < count * k; ++i) w_block[i] = values[w[n0 * k + i]];
      for (int64_t m = 0; m < m_rows; ++m) {
        for (int64_t j = 0; j < count; ++j) {
          const int64_t n = n0 + j;
          float sum = 0.0f;
          for (int64_t g = 0; g < groups; ++g) {
            const int64_t k0 = g * group, len = std::min(k, k0 + group) - k0;
            const float block = dot_f32(x.q.data() + m * k + k0, w_block.data() + j * k + k0, len);
            sum += block * (x.scales[m * groups + g] * w_scale[n * groups + g]);  // weight_scale [N, groups]
          }
          y_block[j] = sum + (bias.empty() ? 0.0f : bias[n]);
        }
        store_y(y_block.data(), element_ptr(p.y, m, n0), count);
      }
    }
  });
  // Rows past x's (room for a GPU's whole tiles) may hold anything: NaN, so that reading them shows.
  const std::vector<float> nan_row(n_cols, std::numeric_limits<float>::quiet_NaN());
  for (int64_t m = m_rows; m < p.y.size(0); ++m) store_y(nan_row.data(), element_ptr(p.y, m, 0), n_cols);
}

}  // namespace brisk::cpu
