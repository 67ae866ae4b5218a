#include "backend/cpu/kv_quant.h"

#include <algorithm>
#include <cmath>

namespace brisk::cpu {
namespace {

int qmax(KvQuant kind) { return kind == KvQuant::kInt4 ? 15 : 255; }

}  // namespace

KvRow kv_row(const TensorView& cache, const KvQuantParams& quant, bool value, int64_t row, int64_t head_dim) {
  KvRow r;
  const int64_t row_bytes = quant.kind == KvQuant::kInt4 ? head_dim / 2 : head_dim;
  r.codes = static_cast<char*>(cache.data()) + row * row_bytes;
  if (quant.kind == KvQuant::kInt8 || quant.kind == KvQuant::kInt4) {
    r.scale = (value ? quant.v_scale : quant.k_scale).data_as<Half>() + row;
    r.zero = (value ? quant.v_zero : quant.k_zero).data_as<uint8_t>() + row;
  }
  r.fp8_scale = value ? quant.v_fp8_scale : quant.k_fp8_scale;
  return r;
}

void quantize_kv_row(const float* x, int64_t head_dim, KvQuant kind, const KvRow& out) {
  auto* codes = static_cast<uint8_t*>(out.codes);
  if (kind == KvQuant::kFp8) {
    for (int64_t d = 0; d < head_dim; ++d) codes[d] = float_to_e4m3(x[d] / out.fp8_scale);
    return;
  }
  float lo = 0.0f, hi = 0.0f;
  for (int64_t d = 0; d < head_dim; ++d) {
    lo = std::min(lo, x[d]);
    hi = std::max(hi, x[d]);
  }
  const int q_max = qmax(kind);
  // Rounded up, so that qmax steps span [lo, hi].
  const float exact = std::min((hi - lo) / static_cast<float>(q_max), 65504.0f);
  Half scale_bits = float_to_half(exact);
  if (half_to_float(scale_bits) < exact) ++scale_bits.bits;
  float scale = half_to_float(scale_bits);
  if (scale == 0.0f) {
    scale_bits = float_to_half(1.0f);
    scale = 1.0f;
  }
  const float zero = std::clamp(std::nearbyint(-lo / scale), 0.0f, static_cast<float>(q_max));
  *out.scale = scale_bits;
  *out.zero = static_cast<uint8_t>(zero);
  for (int64_t d = 0; d < head_dim; ++d) {
    const auto q =
        static_cast<uint8_t>(std::clamp(std::nearbyint(x[d] / scale) + zero, 0.0f, static_cast<float>(q_max)));
    if (kind == KvQuant::kInt8) codes[d] = q;
    else if (d % 2 == 0) codes[d / 2] = q;
    else codes[d / 2] |= static_cast<uint8_t>(q << 4);
  }
}

void dequantize_kv_row(const KvRow& row, int64_t head_dim, KvQuant kind, float* out) {
  const auto* codes = static_cast<const uint8_t*>(row.codes);
  if (kind == KvQuant::kFp8) {
    for (int64_t d = 0; d < head_dim; ++d) out[d] = e4m3_to_float(codes[d]) * row.fp8_scale;
    return;
  }
  const float scale = half_to_float(*row.scale);
  const int zero = *row.zero;
  for (int64_t d = 0; d < head_dim; ++d) {
    const int q = kind == KvQuant::kInt8 ? codes[d] : (codes[d / 2] >> (4 * (d % 2))) & 0xF;
    out[d] = static_cast<float>(q - zero) * scale;
  }
}

}  // namespace brisk::cpu
