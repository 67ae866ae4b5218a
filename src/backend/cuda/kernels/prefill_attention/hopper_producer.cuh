// The Hopper prefill kernel's producer: one warp of the producer warpgroup takes items from the
// work queue (hopper_work_queue.cuh), hands them to the consumers through the item ring, and
// streams each item's K / V tiles into the stage ring with the bulk tensor copy engine (TMA).
//
// Per K / V tile it waits for a free stage (the `empty` barrier), announces the stage's bytes on
// the `full` barrier and has lane i copy box i of the tile: the keys of one paged block (or of a
// tile's worth of a larger block), one TMA box per 64-column panel, the block id read from the
// block table one tile ahead. Boxes past the keys the item needs, or whose block id is outside
// the table or the cache, are aimed outside the tensor map: the copy engine writes zeros.
// With Q by TMA it also loads each item's Q tile (one 3-d box of 64 columns x group heads x
// kRows / group tokens per panel) after the item's first K / V tile, once the consumers' last S
// of the previous item completed, so it lands while they finish that item.
#pragma once

#include <cstdint>

#include <cuda.h>

#include "backend/cuda/kernels/prefill_attention/hopper_config.cuh"

namespace brisk::cuda::prefill {

template <typename C>
struct HopperProducer {
  const PrefillAttentionArgs& a;
  const CUtensorMap* k_map;
  const CUtensorMap* v_map;
  const CUtensorMap* q_map;
  const HopperLaunchExtras& extras;
  const HopperShared<C>& s;
  int lane;
  int group;
  int num_items;

  // Row of the tensor maps where this lane's box of tile t of item w starts.
  __device__ __forceinline__ int box_row(const HopperWork& w, const int32_t* table, int t) const {
    const int box_log2 = extras.box_rows_log2;
    const int block_log2 = a.block_size_log2;
    const int key = w.key_base + t * C::kTileKeys + (lane << box_log2);
    if (lane >= (C::kTileKeys >> box_log2) || t >= w.num_tiles || key >= w.key_end) return extras.oob_row;
    const int block = key >> block_log2;
    if (block >= a.max_blocks_per_seq) return extras.oob_row;
    const int id = table[block];
    if (id < 0 || id >= a.num_cache_blocks) return extras.oob_row;
    return ((id * a.num_kv_heads + w.kv_head) << block_log2) + (key & ((1 << block_log2) - 1));
  }

  // The item's Q tile, once the consumers' last S of the previous item completed.
  __device__ __forceinline__ void load_q(const HopperWork& w, int items_done) const {
    if (!extras.q_by_tma || lane != 0) return;
    hopper::mbarrier_wait(s.q_empty_bar, (items_done & 1) ^ 1);
    hopper::mbarrier_arrive_expect_tx(s.q_full_bar, C::kQBytes);
    const uint32_t q_dst = shared_address(s.q);
#pragma unroll
    for (int p = 0; p < C::kPanels; ++p)
      hopper::tma_load_3d(q_dst + p * C::kQPanelBytes, q_map, p * hopper::kPanelCols, w.kv_head * group,
                          w.q_begin + w.row0 / group, s.q_full_bar);
  }

  // Tile t of the item into stage `it` % kStages; `row` is this lane's box row of the tile.
  __device__ __forceinline__ void load_tile(int it, int row) const {
    const int stage = it % C::kStages;
    const int box_log2 = extras.box_rows_log2;
    hopper::mbarrier_wait(s.empty_bar + 8 * stage, ((it / C::kStages) & 1) ^ 1);
    if (lane == 0) hopper::mbarrier_arrive_expect_tx(s.full_bar + 8 * stage, C::kStageBytes);
    __syncwarp();
    if (lane < (C::kTileKeys >> box_log2)) {
      const uint32_t k_dst = shared_address(s.ring + stage * C::kStageBytes) + (lane << box_log2) * hopper::kPanelRowBytes;
      const uint32_t v_dst = k_dst + C::kTileBytes;
#pragma unroll
      for (int p = 0; p < C::kPanels; ++p) {
        hopper::tma_load_2d(k_dst + p * C::kKvPanelBytes, k_map, p * hopper::kPanelCols, row, s.full_bar + 8 * stage);
        hopper::tma_load_2d(v_dst + p * C::kKvPanelBytes, v_map, p * hopper::kPanelCols, row, s.full_bar + 8 * stage);
      }
    }
  }

  __device__ __forceinline__ void run() const {
    if (lane == 0) {
      hopper::tma_prefetch_descriptor(k_map);
      hopper::tma_prefetch_descriptor(v_map);
      if (extras.q_by_tma) hopper::tma_prefetch_descriptor(q_map);
    }
    int* const queue = a.work_counters;
    int it = 0;          // tiles issued so far: stage it % kStages, round it / kStages
    int items_done = 0;  // items this block took so far (the item slots' and q barriers' phases)
    for (int item = hopper_resolve<C::kRows>(a, queue, hopper_take(queue, lane), num_items, group, lane);
         item < num_items; ++items_done) {
      if (lane == 0) s.items.publish(items_done, item);
      const int ticket = hopper_take(queue, lane);  // the next item's, in flight during this one
      const HopperWork w = hopper_work<C::kRows, C::kTileKeys>(a, item, group);
      const int32_t* table = a.block_tables + int64_t{w.seq} * a.max_blocks_per_seq;
      int row = box_row(w, table, 0);
      for (int t = 0; t < w.num_tiles; ++t, ++it) {
        const int next_row = box_row(w, table, t + 1);  // the table read overlaps the wait
        load_tile(it, row);
        row = next_row;
        if (t == 0) load_q(w, items_done);  // after the first tile: its copy is not held up
      }
      if (w.num_tiles == 0) load_q(w, items_done);
      item = hopper_resolve<C::kRows>(a, queue, ticket, num_items, group, lane);
    }
    if (lane == 0) s.items.publish(items_done, -1);
    hopper_queue_done(queue, lane);
  }
};

}  // namespace brisk::cuda::prefill
