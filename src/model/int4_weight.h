// Group-quantized int4 weights of one linear layer (W4A16), in brisk's layout, and the
// conversions from and to the checkpoint packings brisk reads and writes.
//
// brisk's layout (what GemmW4A16Params takes): rows are output features, as in a dense
// Hugging Face weight [out_features, in_features], so fusing projections concatenates rows.
//   qweight  i4 [N, K]         q[n, k] in [0, 15], two per byte along K, low nibble first
//   scales      [N, K / group] f16, bf16 or f32 as the checkpoint stores them
//   zeros    u8 [N, K / group] zero points in [0, 15]; absent: symmetric, zero point 8
//   w[n, k] = (q[n, k] - zeros[n, k / group]) * scales[n, k / group]
// A row of K int4 values is K / 2 contiguous bytes, which the CUDA kernel streams with 16-byte
// loads along K.
//
// AutoAWQ "gemm" packing (y = x @ W with W [K, N] = [in_features, out_features]):
//   qweight int32 [K, N / 8]: word j of row k holds columns 8j..8j+7; nibble i (bits 4i..4i+3)
//                             holds column 8j + kAwqOrder[i], kAwqOrder = {0, 2, 4, 6, 1, 3, 5, 7}
//   qzeros  int32 [K / group, N / 8], packed like qweight (the stored value is the zero point)
//   scales  f16   [K / group, N]
// GPTQ packing (AutoGPTQ / GPTQModel, desc_act false):
//   qweight int32 [K / 8, N]: nibble i of word [r, n] holds row k = 8r + i
//   qzeros  int32 [K / group, N / 8]: nibble i of word [g, j] holds column 8j + i; format "gptq"
//                                     (v1) stores zero - 1, "gptq_v2" the zero itself
//   scales  f16   [K / group, N]
//   g_idx   int32 [K] (optional): must be k / group (no activation reordering)
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace brisk {

// Nibble i of an AutoAWQ word holds column kAwqOrder[i] of its 8 columns.
inline constexpr std::array<int, 8> kAwqOrder = {0, 2, 4, 6, 1, 3, 5, 7};

struct Int4Weight {
  Tensor qweight;  // i4 [N, K]
  Tensor scales;   // [N, K / group_size]
  Tensor zeros;    // optional u8 [N, K / group_size]; empty: symmetric (zero point 8)
  int64_t group_size = 0;

  int64_t out_features() const { return qweight.shape()[0]; }
  int64_t in_features() const { return qweight.shape()[1]; }
  // q[n, k] and the zero point of element [n, k] (for tests and conversions).
  int quant(int64_t n, int64_t k) const;
  int zero(int64_t n, int64_t k) const;
};

// The AutoAWQ tensors of one linear layer (views into a checkpoint or into owned tensors).
struct AwqTensors {
  TensorView qweight;  // i32 [K, N / 8]
  TensorView qzeros;   // i32 [K / group, N / 8]
  TensorView scales;   // [K / group, N]
};

struct GptqTensors {
  TensorView qweight;  // i32 [K / 8, N]
  TensorView qzeros;   // i32 [K / group, N / 8]
  TensorView scales;   // [K / group, N]
  TensorView g_idx;    // optional i32 [K]
};

struct GptqOptions {
  bool symmetric = true;   // sym: the zero points must all be 8 and are dropped
  int zero_offset = 1;     // added to stored zeros: 1 for checkpoint_format "gptq", 0 for "gptq_v2"
};

// Each conversion checks dtypes and shapes and throws naming `name` (the layer) and the tensor.
Int4Weight from_awq(const AwqTensors& t, int64_t group_size, const std::string& name);
Int4Weight from_gptq(const GptqTensors& t, int64_t group_size, const GptqOptions& options,
                     const std::string& name);

// AutoAWQ tensors of w (asymmetric weights; a symmetric one is written with zero points 8).
struct AwqPacked {
  Tensor qweight;  // i32 [K, N / 8]
  Tensor qzeros;   // i32 [K / group, N / 8]
  Tensor scales;   // [K / group, N], w's scale dtype
};
AwqPacked to_awq(const Int4Weight& w);

// Round-to-nearest asymmetric quantization of a dense [N, K] weight (AWQ's zero-point scheme):
// per group, scale = (max - min) / 15 rounded to scale_dtype, zero = round(-min / scale), q =
// clamp(round(w / scale) + zero, 0, 15).
Int4Weight quantize_rtn(TensorView weight, int64_t group_size, DType scale_dtype);

// The dequantized weight as f32 [N, K] (exact: see GemmW4A16Params).
Tensor dequantize(const Int4Weight& w);

// Rows [begin, begin + count) of several weights of equal K and group size, concatenated
// (fused projections; InternLM2's regrouped wqkv).
struct Int4Rows {
  const Int4Weight* weight;
  int64_t begin;
  int64_t count;
};
Int4Weight concat_rows(const std::vector<Int4Rows>& parts);

// Input features [begin, begin + count) of w, in whole groups (a row-parallel tensor-parallel
// shard; one group per row stays one group).
Int4Weight slice_columns(const Int4Weight& w, int64_t begin, int64_t count);

}  // namespace brisk
