// AWQ's scaling groups of one decoder layer, in checkpoint tensor names, and the folding of a
// group's scales s into the checkpoint: the group's linear layers get their input channels
// multiplied by s, and the op that produces their input (an RMSNorm weight, or rows of the
// previous linear layer and its bias) divided by s, so the model computes the same function.
//
// Groups (inputs shared), as AutoAWQ makes them for Llama-family models:
//   q/k/v (InternLM2: wqkv) after the attention norm;
//   o after the v rows, only when o's inputs are the v rows one to one (num_heads == num_kv_heads);
//   gate/up (w1/w3) after the MLP norm;
//   down (w2) after the up (w3) rows.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "model/llama_model.h"
#include "model/model_config.h"
#include "model/safetensors.h"

namespace brisk {

// f32 host copies of checkpoint tensors, by name, that quantization changes.
using DenseTensors = std::map<std::string, Tensor>;

// The f32 copy of a checkpoint tensor in `tensors`, made on first use.
Tensor& dense_f32(DenseTensors& tensors, const Checkpoint& checkpoint, const std::string& name);

struct RowBlock {
  int64_t begin;
  int64_t count;
};

struct GroupLinear {
  std::string weight;                // "<module>.weight" [N, K]
  std::vector<RowBlock> clip_rows;   // rows AWQ's clipping search may change (none for q and k,
                                     // whose errors the attention scores amplify)
};

struct ScalingGroup {
  std::string name;                  // for logs: "layer 3 q/k/v"
  LinearInput input;                 // the captured input the group reads
  std::vector<GroupLinear> linears;  // input channels * s
  std::string prev;                  // tensor producing the input: its rows (entries) / s
  std::vector<RowBlock> prev_rows;   // rows of prev, in input channel order
  std::vector<std::string> prev_biases;  // 1-D tensors with the rows of prev (biases): / s
};

std::vector<ScalingGroup> scaling_groups(const ModelConfig& config, int64_t layer);

// Moves each scale by at most a rounding step so that the entries fold_scales divides and that the
// written checkpoint stores unquantized (an RMSNorm weight, or the biases of prev) are exactly
// representable in their checkpoint dtype after the division: s = w / round(w / s). Folding then
// keeps the model's function exactly (up to f32 rounding) in bf16 and f16 checkpoints too.
void make_scales_foldable(std::vector<float>& scales, DenseTensors& tensors, const Checkpoint& checkpoint,
                          const ScalingGroup& group);

// Multiplies the group's linear layers' columns by scales and divides prev's rows by them.
void fold_scales(DenseTensors& tensors, const Checkpoint& checkpoint, const ScalingGroup& group,
                 const std::vector<float>& scales);

}  // namespace brisk
