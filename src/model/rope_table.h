// RoPE frequencies (with Llama-3 or linear scaling) and the cos/sin table the rope op reads.
#pragma once

#include <vector>

#include "core/tensor.h"
#include "model/model_config.h"

namespace brisk {

// inv_freq[i] for i < head_dim / 2, after the config's scaling, as Hugging Face computes it.
std::vector<float> rope_inv_freq(const ModelConfig& config);

// Host f32 table [num_positions, head_dim]: cos(p * inv_freq) in the first half of each row,
// sin(p * inv_freq) in the second.
Tensor make_rope_table(const ModelConfig& config, int64_t num_positions);

}  // namespace brisk
