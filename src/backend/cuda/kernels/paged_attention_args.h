// The arguments the tensor-core attention kernels share (decode_attention/, prefill_attention/):
// q, the paged KV cache, the ragged batch and the output. Each kernel's own struct adds its
// launch shape.
#pragma once

#include <cstdint>

#include "backend/cuda/kernels/launch.h"

namespace brisk::cuda {

struct PagedAttentionArgs {
  const void* q = nullptr;  // [num_tokens, num_heads * head_dim] rows of q_stride elements
  int64_t q_stride = 0;
  FloatType q_type = FloatType::kBF16;
  const void* k_cache = nullptr;  // [num_blocks, num_kv_heads, block_size, head_dim] (or codes)
  const void* v_cache = nullptr;
  FloatType kv_type = FloatType::kBF16;  // with codes: the type K / V are dequantized to (f16)
  KvQuantArgs quant;
  const int32_t* block_tables = nullptr;  // [num_seqs, max_blocks_per_seq]
  int64_t max_blocks_per_seq = 0;
  int64_t num_cache_blocks = 0;  // block ids outside [0, num_cache_blocks) read as zeros
  const int32_t* query_start = nullptr;   // [num_seqs + 1]
  const int32_t* context_lens = nullptr;  // [num_seqs]: cached + new tokens
  void* out = nullptr;  // [num_tokens, num_heads * head_dim] rows of out_stride elements
  int64_t out_stride = 0;
  FloatType out_type = FloatType::kBF16;
  int num_seqs = 0;
  int num_tokens = 0;
  int num_heads = 0;
  int num_kv_heads = 0;
  int head_dim = 0;
  int block_size_log2 = 4;
  float scale = 1.0f;
  int sliding_window = 0;
};

}  // namespace brisk::cuda
