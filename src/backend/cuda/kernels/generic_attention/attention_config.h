// The generic attention kernel's configuration (attention_kernel.cuh) and the shape of its grid:
// plain constants and host code, shared by the kernel, its launcher and its plan.
#pragma once

#include <cstddef>

#include "backend/cuda/kernels/launch.h"

namespace brisk::cuda {

constexpr int kAttentionWarps = 8;
constexpr int kAttentionThreads = kAttentionWarps * 32;
constexpr int kAttentionKeys = 32;  // keys per shared-memory tile: one per lane

template <int kHeadDim>
struct AttentionConfig {
  static constexpr int kRowsPerWarp = kHeadDim <= 128 ? 8 : 4;
  static constexpr int kRows = kAttentionWarps * kRowsPerWarp;  // query rows per block
  static constexpr int kDimsPerLane = kHeadDim / 32;
  static constexpr int kKeyStride = kHeadDim + 4;  // padding: conflict-free float4 row reads
  static constexpr size_t kQFloats = size_t{kRows} * kHeadDim;
  static constexpr size_t kKFloats = size_t{kAttentionKeys} * kKeyStride;
  static constexpr size_t kVFloats = size_t{kAttentionKeys} * kHeadDim;
  static constexpr size_t kPFloats = size_t{kAttentionWarps} * kRowsPerWarp * kAttentionKeys;
  static constexpr size_t kSharedBytes = (kQFloats + kKFloats + kVFloats + kPFloats) * sizeof(float);
};

// The shape of the work: how query rows map to blocks. Shared by the launcher and the kernel.
struct AttentionTiling {
  int heads_per_block;  // Gb: query heads of one kv head handled together
  int tokens_per_block; // Tq
  int num_head_chunks;  // ceil(group_size / Gb)
  int num_query_tiles;  // ceil(max_query_len / Tq)
};

inline AttentionTiling attention_tiling(const AttentionArgs& a, int rows_per_block) {
  AttentionTiling t;
  const int group = a.num_heads / a.num_kv_heads;
  t.heads_per_block = group < rows_per_block ? group : rows_per_block;
  t.tokens_per_block = rows_per_block / t.heads_per_block;
  t.num_head_chunks = (group + t.heads_per_block - 1) / t.heads_per_block;
  const int max_query = a.max_query_len > 0 ? a.max_query_len : a.num_tokens;
  t.num_query_tiles = (max_query + t.tokens_per_block - 1) / t.tokens_per_block;
  return t;
}

}  // namespace brisk::cuda
