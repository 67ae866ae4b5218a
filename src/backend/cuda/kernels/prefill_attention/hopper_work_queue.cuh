// The Hopper prefill kernel's tile scheduler (prefill_attention_hopper.cuh): its work items,
// the queue its persistent blocks take them from, and the ring of shared-memory slots through
// which a block's producer warp hands them to its consumer warpgroups.
#pragma once

#include <cstdint>

#include "backend/cuda/kernels/hopper_async.cuh"
#include "backend/cuda/kernels/prefill_attention/prefill_attention.h"

namespace brisk::cuda::prefill {

// One work item of the persistent kernel: (kv head, sequence, row tile) and the keys its rows see.
struct HopperWork {
  int kv_head, seq, q_begin, row0, num_rows, past, context_len, key_base, key_end, num_tiles;
};

// Item `item`: sequence by sequence, each in longest-first order (row tiles from the last one
// down, the long causal rows first; then kv heads), so that the blocks working at once take
// several row tiles of the same one or two sequences, whose K / V stay in L2 between them.
// num_rows <= 0: the sequence has no such row tile. (The whole batch in longest-first order had
// the blocks working at once on many sequences, each row tile reading its K / V from DRAM again.)
template <int kRows, int kTileKeys>
__device__ __forceinline__ HopperWork hopper_work(const PrefillAttentionArgs& a, int item, int group) {
  HopperWork w;
  const int seq_items = a.num_kv_heads * a.num_row_tiles;
  w.seq = item / seq_items;
  const int local = item % seq_items;
  w.kv_head = local % a.num_kv_heads;
  const int row_tile = a.num_row_tiles - 1 - local / a.num_kv_heads;
  w.q_begin = a.query_start[w.seq];
  const int q_len = a.query_start[w.seq + 1] - w.q_begin;
  const int context_len = a.context_lens[w.seq];
  w.row0 = row_tile * kRows;
  w.num_rows = min(kRows, group * q_len - w.row0);
  w.past = context_len - q_len;  // position of the sequence's first new token
  w.context_len = context_len;
  // Keys the rows see: up to the last row's position, from the first row's window.
  const int first_position = w.past + w.row0 / group;
  const int last_position = w.past + (w.row0 + max(w.num_rows, 1) - 1) / group;
  const int lowest_key = a.sliding_window > 0 ? max(0, first_position - a.sliding_window + 1) : 0;
  w.key_end = max(0, last_position + 1);
  w.key_base = lowest_key & ~(kTileKeys - 1);  // tiles align with cache blocks
  w.num_tiles = w.key_end > w.key_base ? (w.key_end - w.key_base + kTileKeys - 1) / kTileKeys : 0;
  return w;
}

// The work queue, PrefillAttentionArgs::work_counters: [0] the next ticket (an item index), [1]
// the blocks done. Lane 0 of a producer warp takes a ticket as an item starts (hopper_take), so
// the atomic's round trip overlaps the item's copies, and resolves it when the item is issued.
// Tickets go out in item order; the row tiles past a sequence's own rows (those of a longer
// sequence in the batch) come first in its range, as the longest rows do, so a ticket among them
// moves the queue past them all at once. The last block to finish sets both counters back to
// zero for the next launch on the stream.
__device__ __forceinline__ int hopper_take(int* queue, int lane) { return lane == 0 ? atomicAdd(queue, 1) : 0; }

// The item with rows that `ticket` (lane 0's) leads to, to every lane; num_items when none.
template <int kRows>
__device__ __forceinline__ int hopper_resolve(const PrefillAttentionArgs& a, int* queue, int ticket, int num_items,
                                              int group, int lane) {
  if (lane == 0) {
    const int seq_items = a.num_kv_heads * a.num_row_tiles;
    while (ticket < num_items) {
      const int seq = ticket / seq_items;
      const int row_tiles = (group * (a.query_start[seq + 1] - a.query_start[seq]) + kRows - 1) / kRows;
      const int first = seq * seq_items + a.num_kv_heads * (a.num_row_tiles - row_tiles);  // with rows
      if (ticket >= first) break;
      atomicMax(queue, first);
      ticket = atomicAdd(queue, 1);
    }
  }
  return __shfl_sync(0xFFFFFFFFu, ticket, 0);
}

// After a block's last ticket: the last block to get here resets the queue.
__device__ __forceinline__ void hopper_queue_done(int* queue, int lane) {
  if (lane != 0) return;
  __threadfence();
  if (atomicAdd(queue + 1, 1) == static_cast<int>(gridDim.x) - 1) {
    atomicExch(queue, 0);
    atomicExch(queue + 1, 0);
  }
}

// A block's items on their way from its producer warp to its consumer warps: kSlots indices in
// shared memory; full[j] completes when slot j holds the next item (-1: no more), empty[j] when
// all kReaders consumer warps have read it. The k-th item of the block goes through slot
// k % kSlots.
template <int kSlots, int kReaders>
struct HopperItemRing {
  uint32_t full_bar;   // kSlots barriers of 8 bytes, then the kSlots empty ones
  volatile int* slots;  // [kSlots]

  __device__ uint32_t empty_bar() const { return full_bar + kSlots * 8; }
  __device__ void init() const {  // by one thread, before the block's barrier
    for (int j = 0; j < kSlots; ++j) {
      hopper::mbarrier_init(full_bar + 8 * j, 1);
      hopper::mbarrier_init(empty_bar() + 8 * j, kReaders);
    }
  }
  // The producer's lane 0.
  __device__ void publish(int k, int item) const {
    const int slot = k % kSlots;
    hopper::mbarrier_wait(empty_bar() + 8 * slot, ((k / kSlots) & 1) ^ 1);
    slots[slot] = item;
    hopper::mbarrier_arrive(full_bar + 8 * slot);
  }
  // Every lane of a consumer warp.
  __device__ int take(int k, int lane) const {
    const int slot = k % kSlots;
    hopper::mbarrier_wait(full_bar + 8 * slot, (k / kSlots) & 1);
    const int item = slots[slot];
    __syncwarp();
    if (lane == 0) hopper::mbarrier_arrive(empty_bar() + 8 * slot);
    return item;
  }
};

}  // namespace brisk::cuda::prefill
