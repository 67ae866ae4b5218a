// A Llama-family model's weights in brisk's canonical form, whatever the checkpoint's names:
// q/k/v fused into one projection (q heads, then k heads, then v heads), gate and up fused.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <vector>

#include "backend/backend.h"
#include "model/model_config.h"

namespace brisk {

class Checkpoint;

struct LayerWeights {
  TensorView input_norm;  // [hidden]
  TensorView qkv;         // [(num_heads + 2 * num_kv_heads) * head_dim, hidden]
  TensorView qkv_bias;    // optional [(num_heads + 2 * num_kv_heads) * head_dim]
  TensorView q_norm;      // optional [head_dim] (Qwen3)
  TensorView k_norm;      // optional [head_dim] (Qwen3)
  TensorView o_proj;      // [hidden, num_heads * head_dim]
  TensorView post_norm;   // [hidden]
  TensorView gate_up;     // [2 * intermediate, hidden]: gate rows, then up rows
  TensorView down;        // [hidden, intermediate]
};

struct ModelWeights {
  TensorView embed;       // [vocab, hidden]
  std::vector<LayerWeights> layers;
  TensorView final_norm;  // [hidden]
  TensorView lm_head;     // [vocab, hidden]; the embedding when tied

  // Bytes one forward step reads from the weights (the decode roofline's numerator).
  uint64_t num_bytes() const;

  // Keep-alive for what the views point at (mapped files, fused or uploaded tensors).
  std::shared_ptr<const Checkpoint> checkpoint;
  std::vector<Tensor> owned;
};

// Reports (layers loaded, number of layers) after each layer.
using LoadProgress = std::function<void(int64_t num_layers_done, int64_t num_layers)>;

// Loads the checkpoint of model_dir into the backend's memory, mapping the architecture's tensor
// names to the canonical form and checking every shape against the config. Errors name the
// tensor, its file and the expected shape.
ModelWeights load_weights(const ModelConfig& config, const std::filesystem::path& model_dir,
                          Backend& backend, const LoadProgress& on_progress = {});

// Random weights of the right shapes (std 0.02 normal-like; norms 1), for benchmarks of shapes
// without a checkpoint. Deterministic for a seed.
ModelWeights make_dummy_weights(const ModelConfig& config, Backend& backend, uint64_t seed = 0,
                                const LoadProgress& on_progress = {});

}  // namespace brisk
