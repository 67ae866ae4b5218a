// The generic attention kernel's scheduler: which (query tile of one sequence, kv head, chunk of
// its query heads, key split) a thread block serves, its rows and the keys they see.
#pragma once

#include "backend/cuda/kernels/generic_attention/attention_config.h"
#include "backend/cuda/kernels/launch.h"

namespace brisk::cuda {

// Grid (query tile, sequence, kv head x head chunk x split). The block's rows are (token r / Gb
// of the tile, head r % Gb of the chunk). tile_token0 >= q_len: the sequence has no such tile.
struct AttentionWork {
  int seq, split, kv_head, group;
  int q_begin, q_len, context_len;  // the sequence's new tokens [q_begin, q_begin + q_len)
  int tile_token0;                  // the tile's first token, in the sequence's new tokens
};

__device__ __forceinline__ AttentionWork attention_work(const AttentionArgs& a, const AttentionTiling& tiling) {
  AttentionWork w;
  w.seq = blockIdx.y;
  w.group = a.num_heads / a.num_kv_heads;
  w.split = blockIdx.z % a.num_splits;
  w.kv_head = blockIdx.z / a.num_splits / tiling.num_head_chunks;
  w.q_begin = a.query_start[w.seq];
  w.q_len = a.query_start[w.seq + 1] - w.q_begin;
  w.context_len = a.context_lens[w.seq];
  w.tile_token0 = blockIdx.x * tiling.tokens_per_block;
  return w;
}

// The rows of a block with work, and the keys they see: from the first token's window to the
// last token's position, the split's share of them.
struct AttentionRows {
  int num_tile_tokens, first_head, num_chunk_heads, first_position, num_used_rows;
  int key_begin, key_end;
};

__device__ __forceinline__ AttentionRows attention_rows(const AttentionArgs& a, const AttentionTiling& tiling,
                                                        const AttentionWork& w) {
  AttentionRows r;
  const int head_chunk = (blockIdx.z / a.num_splits) % tiling.num_head_chunks;
  r.num_tile_tokens = min(tiling.tokens_per_block, w.q_len - w.tile_token0);
  r.first_head = w.kv_head * w.group + head_chunk * tiling.heads_per_block;
  r.num_chunk_heads = min(tiling.heads_per_block, w.group - head_chunk * tiling.heads_per_block);
  r.first_position = w.context_len - w.q_len + w.tile_token0;
  r.num_used_rows = r.num_tile_tokens * tiling.heads_per_block;
  r.key_begin = a.sliding_window > 0 ? max(0, r.first_position - a.sliding_window + 1) : 0;
  r.key_end = r.first_position + r.num_tile_tokens;
  if (a.num_splits > 1) {
    const int per_split = ((r.key_end - r.key_begin + a.num_splits - 1) / a.num_splits + kAttentionKeys - 1) /
                          kAttentionKeys * kAttentionKeys;
    r.key_begin = min(r.key_end, r.key_begin + w.split * per_split);
    r.key_end = min(r.key_end, r.key_begin + per_split);
  }
  return r;
}

}  // namespace brisk::cuda
