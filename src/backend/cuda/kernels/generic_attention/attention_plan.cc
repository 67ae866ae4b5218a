// The generic attention kernel's plan (launch.h: attention_num_splits): its key splits. Host code.
#include <algorithm>
#include <cstdint>

#include "backend/cuda/kernels/generic_attention/attention_config.h"
#include "backend/cuda/kernels/launch.h"

namespace brisk::cuda {
namespace {

int rows_per_block(int head_dim) {
  switch (head_dim) {
    case 32: return AttentionConfig<32>::kRows;
    case 64: return AttentionConfig<64>::kRows;
    case 128: return AttentionConfig<128>::kRows;
    default: return AttentionConfig<256>::kRows;
  }
}

}  // namespace

int attention_num_splits(const AttentionArgs& a, int num_sms) {
  const AttentionTiling tiling = attention_tiling(a, rows_per_block(a.head_dim));
  const int64_t blocks =
      int64_t{tiling.num_query_tiles} * a.num_seqs * a.num_kv_heads * tiling.num_head_chunks;
  const int64_t max_context = a.max_context_len > 0 ? a.max_context_len
                                                    : a.max_blocks_per_seq * a.block_size;
  // Split only when the grid cannot fill the GPU and each split still gets >= 256 keys.
  if (blocks >= num_sms || max_context < 512) return 1;
  const int64_t wanted = (2 * int64_t{num_sms} + blocks - 1) / blocks;
  return static_cast<int>(std::clamp<int64_t>(std::min(wanted, max_context / 256), 1, 32));
}

}  // namespace brisk::cuda
