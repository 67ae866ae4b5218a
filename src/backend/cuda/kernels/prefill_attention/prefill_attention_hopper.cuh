// Paged causal GQA prefill attention for Hopper: warp-specialised, K/V tiles by the bulk tensor
// copy engine (TMA) from the paged cache, both matrix products on wgmma.
//
// Work split: items of kRows rows as in the mma.sync kernel (prefill_attention.cuh): (kv head,
// sequence, row tile), the rows (token, head) pairs of one sequence sharing the kv head,
// token-major (row = token * group + head in group), so each K/V tile serves the whole GQA
// group. Persistent: one block per SM takes items from a work queue (an atomic counter; the
// producer hands each item to the consumers through a ring of shared-memory slots) in order,
// sequence by sequence, each in longest-first order (row tiles from the last one down: the long
// causal rows first, the short ones fill the tail; hopper_work); a sequence's row tiles past its
// rows are jumped over (hopper_work_queue.cuh). The K/V stage ring and its barrier phases run on
// across a block's items.
// Taking items as blocks free up instead of striding over them (item = block + k x grid) evens
// out the blocks' unequal shares of long rows (H200, 2026-12-02: see the launcher).
//
// Roles: warpgroup 0 is the producer (its registers given away with setmaxnreg; one warp
// works): per K/V tile it waits for a free stage (the `empty` barrier), announces the stage's
// bytes on the `full` barrier and has lane i copy box i of the tile: the keys of one paged block
// (or of a tile's worth of a larger block), one TMA box per 64-column panel, the block id read
// from the block table one tile ahead. Boxes past the keys the item needs, or whose block id is
// outside the table or the cache, are aimed outside the tensor map: the copy engine writes
// zeros. It also loads each item's Q tile (q_by_tma: q in the KV dtype, 16-byte rows, whole
// tokens per item): one 3-d box (64 columns x group heads x kRows / group tokens) per panel,
// issued after the item's first K/V tile once the consumers' last S of the previous item
// completed (the q_full / q_empty barriers), so it lands while they finish that item. Else the
// consumers convert and stage Q themselves per item. Warpgroups 1 .. kConsumerWgs are
// consumers, 64 rows each: per tile S = Q K^T with wgmma from shared memory (both K-major),
// mask (its own code path, only on tiles that cross a row's causal / window bound), online
// softmax (running max of the raw scores, weights exp2(S scale log2e - max scale log2e): one
// FFMA and one ex2 each; the rows' sums of the fp32 weights), P rounded to the KV dtype in
// registers, O rescaled only when some row of the warp saw a new max, O += P V with P as the
// register A operand and V read N-major, then the stage is released (one arrival per consumer
// warp). On an item's last tile the V rows past the sequence's context are zeroed first (the
// cache may hold anything there; P is 0 there but 0 * NaN is not), by each consumer warpgroup
// for itself.
//
// Main loop (kLoop): ping-pong by default: tile t's S = Q K^T and softmax run while tile t - 1's
// P V is on the tensor cores, and the two consumer warpgroups take turns issuing their MMAs
// (named barriers), so one's softmax overlaps the other's MMAs. The serial and overlap-only
// loops stay for comparison (BRISK_PREFILL_KERNEL, prefill_attention.h).
//
// Epilogue: O / l in the output dtype, straight from the accumulators (store_output_rows,
// query_rows.cuh).
//
// Measured (H200, bf16, 32 / 8 heads, hd 128, causal; TFLOP/s of useful FLOPs, 2026-11-30):
// 4 x 4096: 514, 1 x 16384: 590, 64 ragged 100-2000: 373, 2048 after 14336: 580 (cuDNN in the
// same session 592 / 565 / 176 padded, 298 one at a time / 293; FA2 305 / 333 / 102 / 337).
// Earlier: 398-402 / 469-471 / 263-265 / 486-492; the mma.sync kernel 230 / 248 / 192 / 239.
// Probes (since removed) timed the parts alone: the loads without the math run at 718 / 891 /
// 404 / 887, the math on stale stages (then) at 433 / 529 / 286 / 540. Steps that moved it:
// ex2.approx instead of exp2f (+10%), the FFMA softmax with ping-pong (+9% together; ping-pong
// alone 0-3% over the overlap-only loop); then the mask as its own code path (it had been a
// predicate on every element: ~330 of the ~960 instructions of a tile), the fp32 row sums and
// the skipped O rescale, together 400 -> 416 / 465 -> 506 / 266 -> 265 / 490 -> 526; Q by TMA
// for the next item -> 471 / 536 / 349 / 536 (BRISK_PREFILL_Q=consumers keeps the old load);
// the warpgroup index made warp-uniform (the wgmma descriptors in uniform registers: 16 wgmmas
// issued in ~67 instructions instead of ~145), the per-warpgroup tail zeroing and precomputed mask
// offsets -> 514 / 590 / 373 / 580. A cp.async gather producer instead of TMA was slower (289 /
// 326 / 213 / 317); partial max / sum accumulators changed nothing. Where the consumer warps stall
// now (ncu source counters, 4 x 4096): 7.5% of samples waiting for a K/V stage to land (the loads
// alone, 718 TFLOP/s-equivalent here, move ~5.5 TB/s out of L2), 6.7% at the ping-pong turn, 5%
// waiting for S, ~12% issuing wgmmas; tensor pipe ~55% of cycles.
// 2026-12-01: the engine's block size 64 (was 16; the benchmark follows it): boxes of 64 rows
// instead of 16, 512 / 564 / 369 / 584 -> 540 / 619 / 381 / 637 in one run (128 and 256 within
// 1% of 64). Tried and dropped that day (same-run comparisons): items in runs of 2-8 row tiles
// per (kv head, sequence), so the blocks working at once share K / V streams in L2 (ragged 362
// -> 329-259, the rest within 3%); an item's last P V issued with the next item's first S, Q
// loaded per consumer warpgroup half (546 / 601 / 384 / 647 against 542 / 617 / 383 / 638: the
// item boundary is not where the time goes); a 64-key last tile (m64n64 S, half the P V). ptxas
// serialises every wgmma of the kernel (C7514 / C7515 in -Xptxas -v, 20-30% slower) when a
// wgmma's shape or issue depends on a branch, or accumulators are read before the wait that
// covers them on some path: check for those messages after changing the loop.
// 2026-12-02 (the work queue in place): the four shapes' times fit T tiles x 1.64 us + I items x
// 3.55 us per block (least squares, within 1%): an item's fixed cost was worth two tiles. Parts
// of it, each skipped alone in an experiment (TFLOP/s, 4 x 4096 / ragged, against 581-585 /
// 441-446): the output stores 631 / 526 (hence the epilogue's 16-byte streaming stores), the mask
// path 591 / 451-454, the tail zeroing 589 / 449-455, Q's barrier waits 586 / 445. Dropped the
// same day: Q prefetched into L2 as the producer starts an item (no change), and K and V of a
// stage on barriers of their own so that S waits for K only (573 / 437 against 579 / 439).
#pragma once

#include <cstdint>

#include <cuda.h>

#include "backend/cuda/kernels/float_io.cuh"
#include "backend/cuda/kernels/hopper_async.cuh"
#include "backend/cuda/kernels/mma_common.cuh"
#include "backend/cuda/kernels/prefill_attention/hopper_work_queue.cuh"
#include "backend/cuda/kernels/prefill_attention/prefill_attention.h"
#include "backend/cuda/kernels/prefill_attention/query_rows.cuh"
#include "backend/cuda/kernels/dynamic_shared_memory.cuh"
#include "backend/cuda/runtime/cuda_check.h"

namespace brisk::cuda::prefill {

template <int kHeadDimArg, int kStagesArg>
struct HopperConfig {
  static constexpr int kHeadDim = kHeadDimArg;
  static constexpr int kPanels = kHeadDim / hopper::kPanelCols;  // 64-column panels of a row
  static constexpr int kConsumerWgs = 2;
  static constexpr int kRows = 64 * kConsumerWgs;                // query rows per block
  static constexpr int kThreads = 128 * (1 + kConsumerWgs);
  static constexpr int kConsumerWarps = 4 * kConsumerWgs;
  static constexpr int kTileKeys = 128;
  static constexpr int kTileKeysLog2 = 7;
  static constexpr int kStages = kStagesArg;
  static constexpr int kQPanelBytes = kRows * hopper::kPanelRowBytes;
  static constexpr int kQBytes = kPanels * kQPanelBytes;
  static constexpr int kKvPanelBytes = kTileKeys * hopper::kPanelRowBytes;
  static constexpr int kTileBytes = kPanels * kKvPanelBytes;  // K (or V) of one stage
  static constexpr int kStageBytes = 2 * kTileBytes;
  static constexpr int kBarrierOffset = kQBytes + kStages * kStageBytes;
  // The items the producer took, on their way to the consumers: a ring of kItemSlots indices
  // (enough that short items never hold the producer up before the K / V stages do).
  static constexpr int kItemSlots = kStages + 1;
  // Full / empty per stage, q full / empty, full / empty per item slot.
  static constexpr int kBarriers = 2 * kStages + 2 + 2 * kItemSlots;
  static constexpr int kItemOffset = kBarrierOffset + kBarriers * 8;
  static constexpr int kSharedBytes = kItemOffset + kItemSlots * 4 + 1024;  // + alignment slack
  static constexpr int kProducerRegisters = 56;
  static constexpr int kConsumerRegisters = 224;
  static_assert(kHeadDim % hopper::kPanelCols == 0 && kStages >= 2);
  static_assert(kRows == kPrefillHopperRows);
  static_assert(kSharedBytes <= 227 * 1024);
  static_assert(kProducerRegisters * 128 + kConsumerRegisters * 128 * kConsumerWgs <= 65536);
};

// Main loops: one tile at a time; tile t's S and softmax while tile t - 1's P V runs; that
// and the consumer warpgroups taking turns on the tensor cores.
constexpr int kLoopSerial = 0;
constexpr int kLoopOverlap = 1;
constexpr int kLoopPingPong = 2;
// The softmax's masks: none (every key of the tile visible to every row), the causal bound, the
// causal and the sliding-window bounds.
constexpr int kMaskNone = 0;
constexpr int kMaskCausal = 1;
constexpr int kMaskWindow = 2;

// Host-computed extras of a launch: the box height (log2) of the tensor maps and the row that
// lies past both tensors (boxes aimed there land as zeros). q_by_tma: the producer loads each
// item's Q tile with one 3-d box per panel (q in the KV dtype, aligned, kRows a multiple of the
// group); else the consumers load and convert it.
struct HopperLaunchExtras {
  int box_rows_log2 = 4;
  int oob_row = 0;
  bool q_by_tma = false;
};

template <FloatType kKvType, typename C, int kLoop>
__global__ void __launch_bounds__(C::kThreads, 1)
prefill_attention_hopper_kernel(const PrefillAttentionArgs a, const __grid_constant__ CUtensorMap k_map,
                                const __grid_constant__ CUtensorMap v_map, const __grid_constant__ CUtensorMap q_map,
                                const HopperLaunchExtras extras) {
  constexpr int kHeadDim = C::kHeadDim;
  constexpr int kTileKeys = C::kTileKeys;
  constexpr int kStages = C::kStages;
  constexpr int kPanels = C::kPanels;
  constexpr int kSChunks = kTileKeys / 8;  // 8-column chunks of S (keys)
  constexpr int kOChunks = kHeadDim / 8;   // of O (head dims)
  using Kv = KvTraits<kKvType>;
  extern __shared__ uint8_t shared_raw[];
  // Swizzled panels need 1024-byte alignment.
  const uint32_t raw_address = shared_address(shared_raw);
  uint8_t* shared = shared_raw + ((1024 - (raw_address & 1023)) & 1023);
  uint8_t* q_s = shared;                 // kPanels x [kRows rows x 128 bytes]
  uint8_t* ring_s = shared + C::kQBytes;  // kStages x {K, V}, each kPanels x [kTileKeys x 128 bytes]
  const uint32_t full_bar = shared_address(shared + C::kBarrierOffset);  // kStages barriers of 8 bytes
  const uint32_t empty_bar = full_bar + kStages * 8;
  // Q by TMA: q_full completes when an item's Q tile landed, q_empty when every consumer warp's
  // last S = Q K^T of the item completed (the producer then loads the next item's Q over it).
  const uint32_t q_full_bar = empty_bar + kStages * 8;
  const uint32_t q_empty_bar = q_full_bar + 8;
  // The items the producer took from the work queue, on their way to the consumer warps.
  const HopperItemRing<C::kItemSlots, C::kConsumerWarps> items{
      q_empty_bar + 8, reinterpret_cast<volatile int*>(shared + C::kItemOffset)};
  const bool q_by_tma = extras.q_by_tma;

  const int tid = threadIdx.x;
  const int lane = tid % 32;
  const int group = a.num_heads / a.num_kv_heads;
  const int num_items = a.num_kv_heads * a.num_seqs * a.num_row_tiles;
  const int window = a.sliding_window;

  if (tid == 0) {
    for (int s = 0; s < kStages; ++s) {
      hopper::mbarrier_init(full_bar + 8 * s, 1);
      hopper::mbarrier_init(empty_bar + 8 * s, C::kConsumerWarps);
    }
    hopper::mbarrier_init(q_full_bar, 1);
    hopper::mbarrier_init(q_empty_bar, C::kConsumerWarps);
    items.init();
    hopper::mbarrier_init_fence();
  }
  __syncthreads();

  if (tid < 128) {
    // Producer warpgroup.
    hopper::registers_decrease<C::kProducerRegisters>();
    if (tid >= 32) return;
    const int box_log2 = extras.box_rows_log2;
    const int boxes = kTileKeys >> box_log2;
    const int block_log2 = a.block_size_log2;
    if (lane == 0) {
      hopper::tma_prefetch_descriptor(&k_map);
      hopper::tma_prefetch_descriptor(&v_map);
      if (q_by_tma) hopper::tma_prefetch_descriptor(&q_map);
    }
    int* const queue = a.work_counters;  // hopper_work_queue.cuh
    auto resolve = [&](int ticket) { return hopper_resolve<C::kRows>(a, queue, ticket, num_items, group, lane); };
    int it = 0;  // tiles issued so far: stage it % kStages, round it / kStages
    int items_done = 0;  // items this block took so far (the item slots' and q barriers' phases)
    for (int item = resolve(hopper_take(queue, lane)); item < num_items; ++items_done) {
      if (lane == 0) items.publish(items_done, item);
      const int ticket = hopper_take(queue, lane);  // the next item's, in flight during this one
      const HopperWork w = hopper_work<C::kRows, kTileKeys>(a, item, group);
      // The item's Q tile, once the consumers' last S of the previous item completed: issued
      // after the item's first K / V tile, so that tile's copy is not held up behind the wait.
      auto load_q = [&] {
        if (!q_by_tma || lane != 0) return;
        hopper::mbarrier_wait(q_empty_bar, (items_done & 1) ^ 1);
        hopper::mbarrier_arrive_expect_tx(q_full_bar, C::kQBytes);
        const uint32_t q_dst = shared_address(q_s);
#pragma unroll
        for (int p = 0; p < kPanels; ++p)
          hopper::tma_load_3d(q_dst + p * C::kQPanelBytes, &q_map, p * hopper::kPanelCols, w.kv_head * group,
                              w.q_begin + w.row0 / group, q_full_bar);
      };
      const int32_t* table = a.block_tables + int64_t{w.seq} * a.max_blocks_per_seq;
      // Row of the tensor maps where this lane's box of tile t starts.
      auto box_row = [&](int t) {
        const int key = w.key_base + t * kTileKeys + (lane << box_log2);
        if (lane >= boxes || t >= w.num_tiles || key >= w.key_end) return extras.oob_row;
        const int block = key >> block_log2;
        if (block >= a.max_blocks_per_seq) return extras.oob_row;
        const int id = table[block];
        if (id < 0 || id >= a.num_cache_blocks) return extras.oob_row;
        return ((id * a.num_kv_heads + w.kv_head) << block_log2) + (key & ((1 << block_log2) - 1));
      };
      int row = box_row(0);
      for (int t = 0; t < w.num_tiles; ++t, ++it) {
        const int s = it % kStages;
        const int next_row = box_row(t + 1);  // the table read overlaps the wait
        hopper::mbarrier_wait(empty_bar + 8 * s, ((it / kStages) & 1) ^ 1);
        if (lane == 0) hopper::mbarrier_arrive_expect_tx(full_bar + 8 * s, C::kStageBytes);
        __syncwarp();
        if (lane < boxes) {
          const uint32_t k_dst = shared_address(ring_s + s * C::kStageBytes) + (lane << box_log2) * hopper::kPanelRowBytes;
          const uint32_t v_dst = k_dst + C::kTileBytes;
#pragma unroll
          for (int p = 0; p < kPanels; ++p) {
            hopper::tma_load_2d(k_dst + p * C::kKvPanelBytes, &k_map, p * hopper::kPanelCols, row, full_bar + 8 * s);
            hopper::tma_load_2d(v_dst + p * C::kKvPanelBytes, &v_map, p * hopper::kPanelCols, row, full_bar + 8 * s);
          }
        }
        row = next_row;
        if (t == 0) load_q();
      }
      if (w.num_tiles == 0) load_q();
      item = resolve(ticket);
    }
    if (lane == 0) items.publish(items_done, -1);
    hopper_queue_done(queue, lane);
    return;
  }

  // Consumer warpgroups.
  hopper::registers_increase<C::kConsumerRegisters>();
  const int ctid = tid - 128;        // 0 .. 128 kConsumerWgs - 1
  // Through a shuffle from lane 0 the compiler knows these are warp-uniform: the wgmma
  // descriptors built from them then live in uniform registers instead of being moved there
  // before every wgmma.
  const int wg = __shfl_sync(0xFFFFFFFFu, ctid / 128, 0);  // consumer warpgroup
  const int wg_tid = ctid % 128;
  const int warp = __shfl_sync(0xFFFFFFFFu, ctid / 32, 0);  // consumer warp
  const int wg_row0 = wg * 64;

  const int g = lane / 4;
  const int t4 = lane % 4;
  const int warp_row0 = warp * 16;  // this thread's rows: warp_row0 + g + 8 h
  const float scale_log2 = a.scale * kLog2e;
  const uint64_t q_desc = hopper::smem_descriptor(shared_address(q_s) + wg_row0 * hopper::kPanelRowBytes, 16, 1024);
  const uint32_t ring_address = shared_address(ring_s);
  // Ping-pong (kLoopPingPong): the consumer warpgroups take turns issuing their MMAs (named
  // barriers 4 and 5), so one's softmax runs while the other's MMAs occupy the tensor cores;
  // warpgroup 0 goes first. Both issue the same number of times (the same items and tiles).
  auto mma_turn_begin = [&] {
    if constexpr (kLoop == kLoopPingPong) hopper::named_barrier_sync(4 + wg, 256);
  };
  auto mma_turn_end = [&] {
    if constexpr (kLoop == kLoopPingPong) hopper::named_barrier_arrive(4 + (wg ^ 1), 256);
  };
  if (kLoop == kLoopPingPong && wg == 1) hopper::named_barrier_arrive(4, 256);
  int it = 0;  // tiles consumed so far
  for (int items_done = 0;; ++items_done) {
    const int item = items.take(items_done, lane);
    if (item < 0) break;
    const HopperWork w = hopper_work<C::kRows, kTileKeys>(a, item, group);
    const int num_rows = w.num_rows, row0 = w.row0, kv_head = w.kv_head, q_begin = w.q_begin;
    const int key_base = w.key_base, num_tiles = w.num_tiles, past = w.past;
    const int context_len = w.context_len;

    if (q_by_tma) {
      // Rows past num_rows hold the next tokens' q (or zeros past the tensor): they only feed
      // their own S rows, which are never written out.
      hopper::mbarrier_wait(q_full_bar, items_done & 1);
    } else {
      // The warpgroup's q rows -> shared memory in the KV dtype; rows past num_rows are zeros.
      constexpr int kChunks = kHeadDim / 8;
      for (int e = wg_tid; e < 64 * kChunks; e += 128) {
        const int r = wg_row0 + e / kChunks;
        const int c = e % kChunks;
        const uint4 words = r < num_rows ? load_q_chunk<kKvType, kHeadDim>(a, q_begin, row0 + r, group, kv_head, c)
                                         : make_uint4(0, 0, 0, 0);
        *reinterpret_cast<uint4*>(q_s + (c / 8) * C::kQPanelBytes + hopper::panel_offset(r, c % 8)) = words;
      }
      hopper::fence_proxy_async();  // the q stores, before wgmma reads them
      hopper::named_barrier_sync(2 + wg, 128);
    }
    // After this warp's last S of the item completed: the producer may load the next Q.
    auto release_q = [&] {
      if (!q_by_tma) return;
      __syncwarp();
      if (lane == 0) hopper::mbarrier_arrive(q_empty_bar);
    };
    if (num_tiles == 0) release_q();

    int row_hi[2], row_lo[2];  // visible keys [row_lo, row_hi]
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = warp_row0 + g + 8 * h;
      // Padding rows see what the last row sees: finite values, never written.
      row_hi[h] = past + (row0 + min(r, num_rows - 1)) / group;
      row_lo[h] = window > 0 ? row_hi[h] - window + 1 : 0;
    }
    // The warp's rows (clamped to real ones): keys every one of them sees, keys some of them see.
    const int warp_first = past + (row0 + min(warp_row0, num_rows - 1)) / group;
    const int warp_last = past + (row0 + min(warp_row0 + 15, num_rows - 1)) / group;
    const int all_lo = window > 0 ? warp_last - window + 1 : 0;    // every row sees [all_lo, warp_first]

    float m[2] = {-INFINITY, -INFINITY};  // running max of the raw scores
    float l[2] = {0.0f, 0.0f};            // this thread's share of the running sums
    float o[kHeadDim / 2];
#pragma unroll
    for (int i = 0; i < kHeadDim / 2; ++i) o[i] = 0.0f;


    // The main loop's steps.
    auto wait_tile = [&](int t) { hopper::mbarrier_wait(full_bar + 8 * ((it + t) % kStages), ((it + t) / kStages) & 1); };
    auto release_tile = [&](int t) {  // after this warp's last MMA reading the tile completed
      __syncwarp();
      if (lane == 0) hopper::mbarrier_arrive(empty_bar + 8 * ((it + t) % kStages));
    };
    // S = Q K^T: head_dim / 16 k-steps, 4 per panel; one commit group.
    auto issue_s = [&](float (&sc)[kTileKeys / 2], int t) {
      const uint64_t k_desc = hopper::smem_descriptor(ring_address + ((it + t) % kStages) * C::kStageBytes, 16, 1024);
      hopper::fence_registers(sc);
      hopper::wgmma_fence();
#pragma unroll
      for (int kk = 0; kk < kHeadDim / 16; ++kk) {
        const uint32_t step = (kk % 4) * 32;  // 16 columns into the panel
        const uint64_t qd = hopper::smem_descriptor_advance(q_desc, (kk / 4) * C::kQPanelBytes + step);
        const uint64_t kd = hopper::smem_descriptor_advance(k_desc, (kk / 4) * C::kKvPanelBytes + step);
        hopper::Wgmma<kTileKeys, kKvType>::ss(sc, qd, kd, kk > 0);
      }
      hopper::wgmma_commit();
    };
    // O += P V: V rows are keys (K), columns head dims (N), N-major panels; one commit group.
    auto issue_pv = [&](const uint32_t (&p)[kTileKeys / 16][4], int t) {
      const uint64_t v_desc = hopper::smem_descriptor(
          ring_address + ((it + t) % kStages) * C::kStageBytes + C::kTileBytes, C::kKvPanelBytes, 1024);
      hopper::fence_registers(o);
      hopper::wgmma_fence();
#pragma unroll
      for (int j = 0; j < kTileKeys / 16; ++j) {
        const uint64_t vd = hopper::smem_descriptor_advance(v_desc, j * 16 * hopper::kPanelRowBytes);
        hopper::Wgmma<kHeadDim, kKvType>::template rs<1>(o, p[j], vd);
      }
      hopper::wgmma_commit();
    };
    // The item's last tile: V rows past the sequence's context (loaded from its last, partly
    // filled cache block) become zeros before P V reads them; rows of keys the item's rows do not
    // see but the context holds are finite, and their P is 0 (zeroing from key_end, as before
    // 2026-12-02, did the same on the benchmark shapes with more stores). Each
    // consumer warpgroup zeroes all of them itself and waits only for its own threads: a barrier
    // of both warpgroups here stalled the one ahead in the ping-pong by about half a tile per
    // item. The two write the same zeros to the same bytes, so whichever P V reads a row while
    // the other warpgroup stores to it still sees zeros.
    auto zero_tail = [&](int t) {
      const int valid = context_len - (key_base + t * kTileKeys);
      if (t != num_tiles - 1 || valid >= kTileKeys) return;
      constexpr int kChunksPerRow = kPanels * 8;
      uint8_t* v_s = ring_s + ((it + t) % kStages) * C::kStageBytes + C::kTileBytes;
      for (int e = wg_tid + valid * kChunksPerRow; e < kTileKeys * kChunksPerRow; e += 128) {
        const int r = e / kChunksPerRow;
        const int c = e % kChunksPerRow;
        *reinterpret_cast<uint4*>(v_s + (c / 8) * C::kKvPanelBytes + r * hopper::kPanelRowBytes + (c % 8) * 16) =
            make_uint4(0, 0, 0, 0);
      }
      hopper::fence_proxy_async();
      hopper::named_barrier_sync(2 + wg, 128);
    };
    // Mask and online softmax: the running max m of the raw scores (the scale is positive), S
    // becomes exp2(S scale log2e - m scale log2e) in place (fp32, one FFMA and one ex2 each),
    // alpha the factor that rescales the rows' earlier O and l. The mask is its own code path,
    // taken (warp-uniformly) only on tiles that cross a row's causal / window bound: as a
    // predicate on every tile it cost ~5 instructions an element (a third of the loop). Without a
    // window it compares each element with the causal bound only. (The masked path cost 1.7% of
    // 4 x 4096 and 2% of the ragged batch in an experiment that skipped it; the epilogue says
    // what dropping the window compare gained together with the streaming stores.)
    auto softmax_rows = [&](float(&sc)[kTileKeys / 2], int key0, float(&alpha)[2], int mask) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        // Four independent partial maxima: short dependency chains.
        float part_max[4] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY};
        // The visible keys as offsets from this thread's first column: each element's offset is
        // a constant after unrolling (one compare pair and a select each).
        const int hi = row_hi[h] - key0 - 2 * t4;
        const int lo = row_lo[h] - key0 - 2 * t4;
#pragma unroll
        for (int n = 0; n < kSChunks; ++n) {
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            float v = sc[4 * n + 2 * h + e];
            if (mask != kMaskNone) {  // a constant in each inlined call
              if (n * 8 + e > hi || (mask == kMaskWindow && n * 8 + e < lo)) v = -INFINITY;
              sc[4 * n + 2 * h + e] = v;
            }
            part_max[n % 4] = fmaxf(part_max[n % 4], v);
          }
        }
        const float tile_max = quad_max(fmaxf(fmaxf(part_max[0], part_max[1]), fmaxf(part_max[2], part_max[3])));
        const float m_new = fmaxf(m[h], tile_max);
        const float base = m_new == -INFINITY ? 0.0f : m_new * scale_log2;
        alpha[h] = hopper::exp2_approx(m[h] * scale_log2 - base);  // 0 while nothing was visible
        m[h] = m_new;
#pragma unroll
        for (int n = 0; n < kSChunks; ++n) {
          sc[4 * n + 2 * h] = hopper::exp2_approx(fmaf(sc[4 * n + 2 * h], scale_log2, -base));
          sc[4 * n + 2 * h + 1] = hopper::exp2_approx(fmaf(sc[4 * n + 2 * h + 1], scale_log2, -base));
        }
      }
    };
    auto softmax = [&](float(&sc)[kTileKeys / 2], int t, float(&alpha)[2]) {
      const int key0 = key_base + t * kTileKeys;
      if (key0 + kTileKeys - 1 > warp_first || key0 < all_lo) {
        if (window > 0) {
          softmax_rows(sc, key0, alpha, kMaskWindow);
        } else {
          softmax_rows(sc, key0, alpha, kMaskCausal);
        }
      } else {
        softmax_rows(sc, key0, alpha, kMaskNone);
      }
    };
    // P in the KV dtype as the A operand of P V (k-step j: keys 16 j ..: chunks 2 j (a0: row g,
    // a1: row g + 8) and 2 j + 1 (a2, a3)); l = l alpha + the fp32 weights (summing the rounded
    // ones cost a conversion back per weight; the output moves by at most u max|v| either way).
    auto pack = [&](const float (&sc)[kTileKeys / 2], const float (&alpha)[2], uint32_t (&p)[kTileKeys / 16][4]) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float part_sum[4] = {0.0f, 0.0f, 0.0f, 0.0f};  // independent partial sums
#pragma unroll
        for (int n = 0; n < kSChunks; ++n) {
          p[n / 2][(n & 1) * 2 + h] = Kv::pack(sc[4 * n + 2 * h], sc[4 * n + 2 * h + 1]);
          part_sum[n % 4] += sc[4 * n + 2 * h] + sc[4 * n + 2 * h + 1];
        }
        l[h] = l[h] * alpha[h] + ((part_sum[0] + part_sum[1]) + (part_sum[2] + part_sum[3]));
      }
    };
    // O *= alpha; skipped when no row of the warp saw a new maximum (alpha is exactly 1 then),
    // which is most tiles past the first few of a long row.
    auto rescale = [&](const float (&alpha)[2]) {
      if (!__any_sync(0xFFFFFFFFu, alpha[0] != 1.0f || alpha[1] != 1.0f)) return;
#pragma unroll
      for (int n = 0; n < kOChunks; ++n) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          o[4 * n + 2 * h] *= alpha[h];
          o[4 * n + 2 * h + 1] *= alpha[h];
        }
      }
    };

    float sc[kTileKeys / 2];
    uint32_t p[kTileKeys / 16][4];
    float alpha[2];
    if constexpr (kLoop == kLoopSerial) {
      // One tile at a time: S, softmax, P V.
      for (int t = 0; t < num_tiles; ++t) {
        wait_tile(t);
        issue_s(sc, t);
        hopper::wgmma_wait<0>();
        hopper::fence_registers(sc);
        if (t == num_tiles - 1) release_q();
        zero_tail(t);
        softmax(sc, t, alpha);
        rescale(alpha);
        pack(sc, alpha, p);
        issue_pv(p, t);
        hopper::wgmma_wait<0>();
        hopper::fence_registers(o);
        release_tile(t);
      }
    } else if (num_tiles > 0) {
      // Tile t's S = Q K^T and softmax run while tile t - 1's P V is on the tensor cores.
      wait_tile(0);
      mma_turn_begin();
      issue_s(sc, 0);
      mma_turn_end();
      hopper::wgmma_wait<0>();
      hopper::fence_registers(sc);
      if (num_tiles == 1) release_q();
      zero_tail(0);
      softmax(sc, 0, alpha);
      pack(sc, alpha, p);  // O is still zero: no rescale
      for (int t = 1; t < num_tiles; ++t) {
        wait_tile(t);
        mma_turn_begin();
        issue_s(sc, t);
        issue_pv(p, t - 1);
        mma_turn_end();
        hopper::wgmma_wait<1>();  // S of tile t
        hopper::fence_registers(sc);
        if (t == num_tiles - 1) release_q();
        zero_tail(t);
        softmax(sc, t, alpha);
        hopper::wgmma_wait<0>();  // P V of tile t - 1: p and O are free
        hopper::fence_registers(o);
        release_tile(t - 1);
        rescale(alpha);
        pack(sc, alpha, p);
      }
      mma_turn_begin();
      issue_pv(p, num_tiles - 1);
      mma_turn_end();
      hopper::wgmma_wait<0>();
      hopper::fence_registers(o);
      release_tile(num_tiles - 1);
    }

    it += num_tiles;

    store_output_rows<kKvType, kHeadDim>(a, o, l, q_begin, row0, num_rows, group, kv_head, warp_row0, g, t4);
  }
}

template <FloatType kKvType, int kHeadDim, int kStages, int kLoop>
void launch_prefill_attention_hopper_instance(const PrefillAttentionArgs& a, const CUtensorMap& k_map,
                                              const CUtensorMap& v_map, const CUtensorMap& q_map,
                                              const HopperLaunchExtras& extras,
                                              int num_sms, cudaStream_t stream) {
  using Config = HopperConfig<kHeadDim, kStages>;
  constexpr auto kernel = prefill_attention_hopper_kernel<kKvType, Config, kLoop>;
  allow_dynamic_shared_memory<kernel>(Config::kSharedBytes);
  // Persistent: one block per SM (at most one per item), taking items from the queue. Against
  // striding over the items (H200, 2026-12-02, two runs each, TFLOP/s): 4 x 4096 581-585 vs 562-567,
  // 1 x 16384 620-659 vs 594-608, ragged 64 x 100-2000 440-445 vs 424-427, 2048 after 14336
  // 655-656 vs 644-645 (a model of the items' tile counts gave the strided blocks 3-6% more than
  // their mean at the slowest; the queue's tail is one item).
  const int64_t items = int64_t{a.num_kv_heads} * a.num_seqs * a.num_row_tiles;
  const int grid = static_cast<int>(items < num_sms ? items : num_sms);
  kernel<<<grid, Config::kThreads, Config::kSharedBytes, stream>>>(a, k_map, v_map, q_map, extras);
  BRISK_CUDA_CHECK_LAUNCH();
}

}  // namespace brisk::cuda::prefill
