// A Llama-family model's weights in brisk's canonical form, whatever the checkpoint's names:
// q/k/v fused into one projection (q heads, then k heads, then v heads), gate and up fused.
// The linear layers of AWQ / GPTQ checkpoints stay int4, repacked once at load into the layout
// of the backend's gemm_w4a16 (model/int4_weight.h), and those of FP8 checkpoints e4m3
// (model/fp8_weight.h); embeddings, norms and lm_head stay dense.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "model/model_config.h"
#include "model/tensor_parallel.h"

namespace brisk {

class Checkpoint;

// One linear layer's weight [out_features, in_features]: dense, int4 (qweight set) or FP8
// (fp8 set).
struct LinearWeight {
  TensorView dense;    // [out_features, in_features] when not quantized
  TensorView qweight;  // i4 [out_features, in_features]
  TensorView scales;   // [out_features, in_features / group_size]
  TensorView zeros;    // optional u8 [out_features, in_features / group_size]
  int group_size = 0;
  Int4Layout layout = Int4Layout::kRows;  // qweight's, from Backend::repack_int4 at load time
  TensorView fp8;           // f8e4m3 [out_features, in_features] (model/fp8_weight.h)
  TensorView fp8_scale;     // f32 [out_features, groups]
  TensorView input_scale;   // optional f32 [1]: static activation scale
  int fp8_block_size = 0;   // 0 or 128
  bool fp8_row_blocks = false;  // GemmFp8Params::row_blocks

  bool is_int4() const { return !qweight.empty(); }
  bool is_fp8() const { return !fp8.empty(); }
  uint64_t num_bytes() const;
};

// y = x * w^T (+ bias) through the backend's gemm, gemm_w4a16 or gemm_fp8; silu_gate (int4
// weights only): y = silu(gate) * up of that product's halves (GemmW4A16Params::silu_gate).
// y may have more rows than x: gemm_fp8 may overwrite them (GemmFp8Params::y), the others do not.
void run_linear(Backend& backend, TensorView x, const LinearWeight& w, TensorView bias, TensorView y,
                bool silu_gate = false);

struct LayerWeights {
  TensorView input_norm;  // [hidden]
  LinearWeight qkv;       // [(num_heads + 2 * num_kv_heads) * head_dim, hidden]
  TensorView qkv_bias;    // optional [(num_heads + 2 * num_kv_heads) * head_dim]
  TensorView q_norm;      // optional [head_dim] (Qwen3)
  TensorView k_norm;      // optional [head_dim] (Qwen3)
  LinearWeight o_proj;    // [hidden, num_heads * head_dim]
  TensorView post_norm;   // [hidden]
  LinearWeight gate_up;   // [2 * intermediate, hidden]: gate rows, then up rows
  LinearWeight down;      // [hidden, intermediate]
  // The checkpoint's fp8 KV cache scales (QuantizationConfig::kv_cache_scales), else 0.
  float k_cache_scale = 0.0f;
  float v_cache_scale = 0.0f;
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
// tensor, its file and the expected shape. dequantize_int4 turns int4 layers into dense f32
// ones (the reference that quantized runs are compared with). A shard (tensor_parallel.h) loads
// one tensor-parallel rank's part; the default is the whole model.
ModelWeights load_weights(const ModelConfig& config, const std::filesystem::path& model_dir,
                          Backend& backend, bool dequantize_int4 = false, const LoadProgress& on_progress = {},
                          const ModelShard& shard = {});

// Module names of the checkpoint's linear layers that int4 checkpoints quantize (q/k/v/o and
// gate/up/down, or InternLM2's wqkv/wo/w1/w3/w2), layer by layer: "<name>.weight" holds each
// dense weight.
std::vector<std::string> linear_module_names(const ModelConfig& config);

// Random weights of the right shapes (std 0.02 normal-like; norms 1), for benchmarks of shapes
// without a checkpoint; int4 or FP8 linear layers when the config has a quantization_config.
// Deterministic for a seed.
ModelWeights make_dummy_weights(const ModelConfig& config, Backend& backend, uint64_t seed = 0,
                                const LoadProgress& on_progress = {});

}  // namespace brisk
