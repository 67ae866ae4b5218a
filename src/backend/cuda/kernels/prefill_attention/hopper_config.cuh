// The Hopper prefill kernel's configuration and shared-memory layout: one block per SM, a
// producer warpgroup and two consumer warpgroups of 64 query rows each; Q in 64-column swizzled
// panels, a ring of K / V stages, the stages' barriers, Q's barriers and the item ring.
#pragma once

#include <cstdint>

#include "backend/cuda/kernels/hopper_async.cuh"
#include "backend/cuda/kernels/mma_common.cuh"
#include "backend/cuda/kernels/prefill_attention/hopper_work_queue.cuh"
#include "backend/cuda/kernels/prefill_attention/prefill_attention.h"

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

// Host-computed extras of a launch: the box height (log2) of the tensor maps and the row that
// lies past both tensors (boxes aimed there land as zeros). q_by_tma: the producer loads each
// item's Q tile with one 3-d box per panel (q in the KV dtype, aligned, kRows a multiple of the
// group); else the consumers load and convert it.
struct HopperLaunchExtras {
  int box_rows_log2 = 4;
  int oob_row = 0;
  bool q_by_tma = false;
};

// A block's shared memory, carved from the dynamic allocation (swizzled panels need 1024-byte
// alignment).
template <typename C>
struct HopperShared {
  uint8_t* q;            // kPanels x [kRows rows x 128 bytes]
  uint8_t* ring;         // kStages x {K, V}, each kPanels x [kTileKeys x 128 bytes]
  uint32_t full_bar;     // kStages barriers of 8 bytes: the stage's K / V landed
  uint32_t empty_bar;    // kStages: every consumer warp is done with the stage
  uint32_t q_full_bar;   // Q by TMA: the item's Q tile landed
  uint32_t q_empty_bar;  // every consumer warp's last S = Q K^T of the item completed
  HopperItemRing<C::kItemSlots, C::kConsumerWarps> items;  // the producer's items, to the consumers

  __device__ __forceinline__ static HopperShared carve(uint8_t* raw) {
    const uint32_t raw_address = shared_address(raw);
    uint8_t* base = raw + ((1024 - (raw_address & 1023)) & 1023);
    HopperShared s;
    s.q = base;
    s.ring = base + C::kQBytes;
    s.full_bar = shared_address(base + C::kBarrierOffset);
    s.empty_bar = s.full_bar + C::kStages * 8;
    s.q_full_bar = s.empty_bar + C::kStages * 8;
    s.q_empty_bar = s.q_full_bar + 8;
    s.items = {s.q_empty_bar + 8, reinterpret_cast<volatile int*>(base + C::kItemOffset)};
    return s;
  }

  // By one thread, before the block's first barrier.
  __device__ __forceinline__ void init() const {
    for (int s = 0; s < C::kStages; ++s) {
      hopper::mbarrier_init(full_bar + 8 * s, 1);
      hopper::mbarrier_init(empty_bar + 8 * s, C::kConsumerWarps);
    }
    hopper::mbarrier_init(q_full_bar, 1);
    hopper::mbarrier_init(q_empty_bar, C::kConsumerWarps);
    items.init();
    hopper::mbarrier_init_fence();
  }
};

}  // namespace brisk::cuda::prefill
