// Decode attention: the dispatch table over the support matrix and the split-KV cost model. The
// attention kernels themselves are instantiated one head dim per file (decode_attention_hd*.cu)
// so that they compile in parallel.
#include <algorithm>
#include <cstdint>

#include "backend/cuda/kernels/decode_attention/decode_attention.h"

namespace brisk::cuda {
namespace decode {

template <FloatType kKvType, int kHeadDim, int kWarps, int kStages, int kBlocksPerSm>
void launch_decode_attention_instance(const DecodeAttentionArgs& a, cudaStream_t stream);

// Instances (decode_attention_hd*.cu): key, shape (warps, stages, blocks per SM), and the
// largest context bound the entry serves (0: any). The first matching entry is taken. At
// head_dim 128, contexts up to 1024 keys use 2-warp blocks, 4 per SM, whose start-ups overlap
// better: on the H200 (32 / 8 heads, bf16) 256 x 512 ran at 3.87 TB/s against 3.57 with 4-warp
// blocks, 2 per SM; those ran 64 x 4096 at 4.25 TB/s and 1 x 32768 at 3.02 (2-warp: 2.87).
// The cache's block size (engine default 64 since 2026-12-01, 16 before) moves them a little: 16
// -> 64 took 8 x 4096 from 3.55 to 3.62 TB/s and 1 x 32768 from 3.46 to 3.52 (128, 256: the same
// within 1%).
// 8-warp blocks, one per SM (the same keys in flight per SM as two 4-warp blocks), with half the
// splits: 1 x 32768 38.9 us against 37.7, 8 x 4096 37.5 against 36.4-37.0 (2026-12-02). They
// were the shape for a merge in cluster pairs (decode_merge.cuh), as the H200 co-schedules 132
// clusters of two 4-warp blocks but only 62 of four, 30 of eight, 14 of sixteen
// (cudaOccupancyMaxActiveClusters; 8-warp blocks: 66 / 30 / 15 / 7): fewer than a wave of 256
// blocks needs in clusters of four or more.
#define BRISK_DECODE_INSTANCES(X)             \
  X(FloatType::kBF16, 64, 4, 4, 3, 0)        \
  X(FloatType::kF16, 64, 4, 4, 3, 0)         \
  X(FloatType::kBF16, 128, 2, 3, 4, 1024)    \
  X(FloatType::kF16, 128, 2, 3, 4, 1024)     \
  X(FloatType::kBF16, 128, 4, 3, 2, 0)       \
  X(FloatType::kF16, 128, 4, 3, 2, 0)        \
  X(FloatType::kBF16, 256, 4, 3, 1, 0)       \
  X(FloatType::kF16, 256, 4, 3, 1, 0)

#define BRISK_DECLARE(type, head_dim, warps, stages, blocks, max_context)                    \
  extern template void launch_decode_attention_instance<type, head_dim, warps, stages, blocks>( \
      const DecodeAttentionArgs&, cudaStream_t);
BRISK_DECODE_INSTANCES(BRISK_DECLARE)
#undef BRISK_DECLARE

using Launcher = void (*)(const DecodeAttentionArgs&, cudaStream_t);
struct TableEntry {
  FloatType kv_type;
  int head_dim;
  int64_t max_context;  // 0: any context bound
  DecodeKernelShape shape;
  Launcher launch;
};

// The support matrix (decode_attention.h).
constexpr TableEntry kTable[] = {
#define BRISK_ENTRY(type, head_dim, warps, stages, blocks, max_context) \
  {type, head_dim, max_context, {warps, stages, blocks},                \
   &launch_decode_attention_instance<type, head_dim, warps, stages, blocks>},
    BRISK_DECODE_INSTANCES(BRISK_ENTRY)
#undef BRISK_ENTRY
};

const TableEntry* find_entry(FloatType kv_type, int head_dim, int64_t max_context_len) {
  for (const TableEntry& entry : kTable) {
    if (entry.kv_type == kv_type && entry.head_dim == head_dim &&
        (entry.max_context == 0 || max_context_len <= entry.max_context))
      return &entry;
  }
  return nullptr;
}

}  // namespace decode

bool decode_attention_supports(FloatType kv_type, int head_dim) {
  // Every key has an entry for any context bound (the last one of the key).
  return decode::find_entry(kv_type, head_dim, INT64_MAX) != nullptr;
}

DecodeKernelShape decode_attention_shape(FloatType kv_type, int head_dim, int64_t max_context_len) {
  const decode::TableEntry* entry = decode::find_entry(kv_type, head_dim, max_context_len);
  return entry != nullptr ? entry->shape : DecodeKernelShape{};
}

int decode_attention_row_chunks(int group, int max_query_len) {
  return (group * std::max(max_query_len, 1) + kDecodeRowsPerBlock - 1) / kDecodeRowsPerBlock;
}

// Time, in keys streamed by one block: blocks = sequences x kv heads x row chunks x splits run
// in waves of (SMs x blocks per SM); in each wave a block pays a start-up (its first copies wait
// on the sequence's lengths and block table: about 128 keys' time) and streams ceil(tiles /
// splits) key tiles of the context bound; splitting adds the merge by the last split block
// (about 128 keys). Take the fewest splits that minimise it, each split keeping at least 2
// tiles. (A model without the start-up term favoured thousands of 2-tile blocks: 64 x 4096 fell
// from 4.25 to 2.46 TB/s. On the H200 the model's single waves also beat every two-wave split
// count tried, before the L2 prefetch and early q: 8 x 4096 32 / 8 ran 39.1 us at its 4 splits,
// 48.9-56.2 at 5 to 16; 1 x 32768 39.3 us at its 32, 50.8-58.0 at 40 to 128.)
int decode_attention_num_splits(const DecodeAttentionArgs& a, int num_sms) {
  constexpr int64_t kStartupKeys = 128;
  constexpr int64_t kMergeKeys = 128;
  const DecodeKernelShape shape = decode_attention_shape(a.kv_type, a.head_dim, a.max_context_len);
  const int64_t tile_keys = shape.tile_keys();
  const int64_t blocks = int64_t{a.num_seqs} * a.num_kv_heads * a.num_row_chunks;
  const int64_t slots = int64_t{std::max(num_sms, 1)} * shape.blocks_per_sm;
  const int64_t tiles = (std::max<int64_t>(a.max_context_len, 1) + tile_keys - 1) / tile_keys;
  const int max_splits = static_cast<int>(std::clamp<int64_t>(tiles / 2, 1, kDecodeMaxSplits));
  int best = 1;
  int64_t best_cost = -1;
  for (int splits = 1; splits <= max_splits; ++splits) {
    const int64_t waves = (blocks * splits + slots - 1) / slots;
    const int64_t cost = waves * (((tiles + splits - 1) / splits) * tile_keys + kStartupKeys) +
                         (splits > 1 ? kMergeKeys : 0);
    if (best_cost < 0 || cost < best_cost) {
      best_cost = cost;
      best = splits;
    }
  }
  return best;
}

bool decode_attention_single_wave(const DecodeAttentionArgs& a, int num_sms) {
  const DecodeKernelShape shape = decode_attention_shape(a.kv_type, a.head_dim, a.max_context_len);
  const int64_t blocks = int64_t{a.num_seqs} * a.num_kv_heads * a.num_row_chunks * a.num_splits;
  return blocks <= int64_t{num_sms} * shape.blocks_per_sm;
}

bool decode_attention_fuses_append(const DecodeAttentionArgs& a) {
  return a.num_splits > 1 || a.max_context_len > 1024;
}

bool launch_decode_attention(const DecodeAttentionArgs& a, cudaStream_t stream) {
  const decode::TableEntry* entry = decode::find_entry(a.kv_type, a.head_dim, a.max_context_len);
  if (entry == nullptr) return false;
  if (a.num_tokens == 0 || a.num_seqs == 0) return true;
  entry->launch(a, stream);
  return true;
}

}  // namespace brisk::cuda
