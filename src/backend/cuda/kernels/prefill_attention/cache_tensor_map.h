// 2-d tensor maps over the paged K / V caches for the bulk tensor copy engine (TMA): a cache
// [num_blocks, num_kv_heads, block_size, head_dim] viewed as rows [num_blocks * num_kv_heads *
// block_size, head_dim], boxes of 64 columns x box_rows rows, 128-byte swizzle, zeros for boxes
// outside (tensor_map.h: encoded on the host, passed to kernels by value). No fmt here: .cu
// files include this header.
#pragma once

#include <cstdint>

#include <cuda.h>

#include "backend/cuda/kernels/paged_attention_args.h"

namespace brisk::cuda {

struct CacheTensorMaps {
  CUtensorMap k;
  CUtensorMap v;
};

// Rows of the 2-d view of a cache.
int64_t cache_tensor_rows(const PagedAttentionArgs& a);
// The maps of a.k_cache and a.v_cache (16-bit KV, head_dim a multiple of 64); throws
// brisk::Error when the driver rejects them.
CacheTensorMaps make_cache_tensor_maps(const PagedAttentionArgs& a, int box_rows);
// A 3-d map over q [num_tokens, num_heads, head_dim] (token stride q_stride) in the KV dtype:
// boxes of 64 columns x `group` heads x `tokens` tokens, 128-byte swizzle, so one box lands as
// the token-major (token, head) rows of one kv head's GQA group. The caller checks that q is in
// the KV dtype, 16-byte aligned with q_stride a multiple of 8; throws brisk::Error when the
// driver rejects it.
CUtensorMap make_query_tensor_map(const PagedAttentionArgs& a, int group, int tokens);

}  // namespace brisk::cuda
