// The decode attention kernel's launch plan (decode_plan.h).
#include "backend/cuda/kernels/decode_attention/decode_plan.h"

#include <algorithm>
#include <cstdint>

namespace brisk::cuda {

int decode_attention_row_chunks(int group, int max_query_len, KvCodes codes) {
  const int rows = decode_rows_per_block(codes);
  return (group * std::max(max_query_len, 1) + rows - 1) / rows;
}

// Time, in keys streamed by one block: blocks = sequences x kv heads x row chunks x splits run
// in waves of (SMs x blocks per SM); in each wave a block pays a start-up (its first copies wait
// on the sequence's lengths and block table: about 128 keys' time) and streams ceil(tiles /
// splits) key tiles of the context bound; splitting adds the merge by the last split block
// (about 128 keys). Take the fewest splits that minimise it, each split keeping at least 2
// tiles. Without the start-up term the model would favour thousands of 2-tile blocks.
// Where even 2 splits overflow one wave, a last wave short of the slots costs its share of a
// wave, at least a quarter: its blocks run faster with fewer beside them, down to what each
// one's own latency allows. Where a single wave holds 2 splits or more, every wave costs a whole
// one: leaving a single wave costs more than its share (docs/perf/decode_attention.md).
int decode_attention_num_splits(const DecodeAttentionArgs& a, int num_sms) {
  constexpr int64_t kStartupKeys = 128;
  constexpr int64_t kMergeKeys = 128;
  const DecodeKernelShape shape = decode_attention_shape(a.kv_type, a.head_dim, a.max_context_len, a.quant.codes);
  const int64_t tile_keys = shape.tile_keys();
  const int64_t blocks = int64_t{a.num_seqs} * a.num_kv_heads * a.num_row_chunks;
  const int64_t slots = int64_t{std::max(num_sms, 1)} * shape.blocks_per_sm;
  const int64_t tiles = (std::max<int64_t>(a.max_context_len, 1) + tile_keys - 1) / tile_keys;
  const int max_splits = static_cast<int>(std::clamp<int64_t>(tiles / 2, 1, kDecodeMaxSplits));
  const bool whole_waves = 2 * blocks <= slots;
  int best = 1;
  int64_t best_cost = -1;
  for (int splits = 1; splits <= max_splits; ++splits) {
    // In units of 1 / slots of a wave, so that the comparisons stay exact.
    const int64_t grid = blocks * splits, last = grid % slots;
    const int64_t partial = last == 0 ? 0 : whole_waves ? slots : std::max(last, slots / 4);
    const int64_t wave_slots = grid <= slots ? slots : grid / slots * slots + partial;
    const int64_t cost = wave_slots * (((tiles + splits - 1) / splits) * tile_keys + kStartupKeys) +
                         (splits > 1 ? kMergeKeys * slots : 0);
    if (best_cost < 0 || cost < best_cost) {
      best_cost = cost;
      best = splits;
    }
  }
  return best;
}

bool decode_attention_single_wave(const DecodeAttentionArgs& a, int num_sms) {
  const DecodeKernelShape shape = decode_attention_shape(a.kv_type, a.head_dim, a.max_context_len, a.quant.codes);
  const int64_t blocks = int64_t{a.num_seqs} * a.num_kv_heads * a.num_row_chunks * a.num_splits;
  return blocks <= int64_t{num_sms} * shape.blocks_per_sm;
}

bool decode_attention_fuses_append(const DecodeAttentionArgs& a, int num_sms) {
  // A quantized row's append (its min / max across the row's threads, then the codes) pays in a
  // single wave, where the separate launch is a fixed cost; in waves the blocks carry it (slower).
  if (a.quant.codes != KvCodes::kNone && !decode_attention_single_wave(a, num_sms)) return false;
  return a.num_splits > 1 || a.max_context_len > 1024;
}

}  // namespace brisk::cuda
