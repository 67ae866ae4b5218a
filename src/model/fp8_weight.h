// FP8 (e4m3) weights of one linear layer in brisk's form (what GemmFp8Params takes), and the
// conversions from the checkpoint layouts brisk reads:
//   weight        f8e4m3 [N, K]   rows are output features, as a dense weight
//   weight_scale  f32 [N, groups]  groups = 1, or ceil(K / 128) for 128x128 block checkpoints:
//                 each row carries its block's scales, so fusing layers concatenates rows
//                 whatever their block alignment; a per-tensor scale is repeated on every row
//   input_scale   the static activation scale, 0 where activations are scaled per token
//   dequant(w)[n, k] = e4m3(weight[n, k]) * weight_scale[n, k / 128 or 0]
// Checkpoint layouts (safetensors, per linear module <m>):
//   compressed-tensors (llm-compressor, "float-quantized"): <m>.weight F8_E4M3 [N, K],
//     <m>.weight_scale [N, 1] (channel), [1] or [] (tensor), [ceil(N/128), ceil(K/128)] (block);
//     <m>.input_scale [1] or [] for static activations
//   quant_method "fp8": <m>.weight, <m>.weight_scale_inv [ceil(N/128), ceil(K/128)] (despite the
//     name, the scale itself: dequant = weight * weight_scale_inv), or <m>.weight_scale [1] with
//     an optional <m>.input_scale
// Scales may be f32, f16 or bf16; they are converted to f32 exactly.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "model/model_config.h"

namespace brisk {

inline constexpr int kFp8BlockSize = 128;

struct Fp8Weight {
  Tensor weight;        // f8e4m3 [N, K]
  Tensor weight_scale;  // f32 [N, groups]
  float input_scale = 0.0f;
  int block_size = 0;  // 0 or kFp8BlockSize
  bool row_blocks = false;  // weight_scale's rows repeat per 128-row block (GemmFp8Params::row_blocks)

  int64_t out_features() const { return weight.shape()[0]; }
  int64_t in_features() const { return weight.shape()[1]; }
};

// One checkpoint layer's tensors (views into the checkpoint).
struct Fp8Tensors {
  TensorView weight;        // f8e4m3 [N, K]
  TensorView weight_scale;  // as the checkpoint stores it (above)
  TensorView input_scale;   // optional
};

// Checks dtypes and shapes against the config's scheme and throws naming `name` (the module)
// and the tensor.
// A per-tensor scale (an activation's input_scale, a KV cache's k_scale / v_scale): one positive,
// finite f32, f16 or bf16 value; errors name `name`.
float fp8_tensor_scale(const TensorView& t, const std::string& name);

Fp8Weight from_fp8_checkpoint(const Fp8Tensors& t, const QuantizationConfig& config, const std::string& name);

// Rows [begin, begin + count) of several weights of equal K and block size, concatenated; a
// static input scale becomes the largest of the parts' (as vLLM fuses them).
struct Fp8Rows {
  const Fp8Weight* weight;
  int64_t begin;
  int64_t count;
};
Fp8Weight concat_rows(const std::vector<Fp8Rows>& parts);

// Input features [begin, begin + count) of w (a row-parallel tensor-parallel shard), in whole
// 128-blocks for block scales.
Fp8Weight slice_columns(const Fp8Weight& w, int64_t begin, int64_t count);

// Per-channel quantization of a dense [N, K] weight (brisk quantize --method fp8): scale[n] =
// max |w[n, :]| / 448 (1 for an all-zero row), weight = float_to_e4m3(w / scale).
Fp8Weight quantize_fp8(TensorView weight);

// The dequantized weight as f32 [N, K], each product rounded once to f32.
Tensor dequantize(const Fp8Weight& w);

}  // namespace brisk
