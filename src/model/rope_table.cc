#include "model/rope_table.h"

#include <cmath>

namespace brisk {

std::vector<float> rope_inv_freq(const ModelConfig& config) {
  const int64_t half = config.head_dim / 2;
  std::vector<float> inv_freq(half);
  for (int64_t i = 0; i < half; ++i) {
    // float32 like transformers: base ** (arange(0, dim, 2) / dim)
    float exponent = static_cast<float>(2 * i) / static_cast<float>(config.head_dim);
    inv_freq[i] = 1.0f / static_cast<float>(std::pow(config.rope_theta, static_cast<double>(exponent)));
  }
  const RopeScaling& s = config.rope_scaling;
  if (s.type == RopeScalingType::kLinear) {
    for (float& f : inv_freq) f = static_cast<float>(f / s.factor);
  } else if (s.type == RopeScalingType::kLlama3) {
    // Llama 3.1: long wavelengths are slowed by `factor`, short ones kept, the band between
    // interpolated smoothly.
    const double old_len = static_cast<double>(s.original_max_position_embeddings);
    const double low_freq_wavelen = old_len / s.low_freq_factor;
    const double high_freq_wavelen = old_len / s.high_freq_factor;
    for (float& f : inv_freq) {
      const double wavelen = 2 * M_PI / f;
      if (wavelen < high_freq_wavelen) continue;
      if (wavelen > low_freq_wavelen) {
        f = static_cast<float>(f / s.factor);
        continue;
      }
      const double smooth = (old_len / wavelen - s.low_freq_factor) / (s.high_freq_factor - s.low_freq_factor);
      f = static_cast<float>((1 - smooth) * f / s.factor + smooth * f);
    }
  }
  return inv_freq;
}

Tensor make_rope_table(const ModelConfig& config, int64_t num_positions) {
  const int64_t half = config.head_dim / 2;
  std::vector<float> inv_freq = rope_inv_freq(config);
  Tensor table(cpu_allocator(), DType::kF32, {num_positions, config.head_dim});
  float* out = table.data_as<float>();
  for (int64_t p = 0; p < num_positions; ++p) {
    for (int64_t i = 0; i < half; ++i) {
      const float angle = static_cast<float>(p) * inv_freq[i];  // fp32 product, as in transformers
      out[p * config.head_dim + i] = static_cast<float>(std::cos(static_cast<double>(angle)));
      out[p * config.head_dim + half + i] = static_cast<float>(std::sin(static_cast<double>(angle)));
    }
  }
  return table;
}

}  // namespace brisk
