// Paged causal GQA prefill attention for Hopper: warp-specialised, K/V tiles by the bulk tensor
// copy engine (TMA) from the paged cache, both matrix products on wgmma.
//
// Work split: items of kRows query rows, (kv head, sequence, row tile), the rows (token, head)
// pairs of one sequence sharing the kv head, token-major (row = token * group + head in group),
// so each K/V tile serves the whole GQA group. Persistent: one block per SM takes items from a
// work queue as it frees up (hopper_work_queue.cuh: sequence by sequence, each longest-first),
// which evens out the blocks' unequal shares of long rows better than striding over the items.
// The K/V stage ring and its barrier phases run on across a block's items.
//
// Roles: warpgroup 0 is the producer (hopper_producer.cuh; its registers given away with
// setmaxnreg, one warp works); warpgroups 1 .. kConsumerWgs are the consumers, 64 rows each
// (hopper_mainloop.cuh), whose epilogue writes O / l in the output dtype straight from the
// accumulators (store_output_rows, query_rows.cuh).
#pragma once

#include <cstdint>

#include <cuda.h>

#include "backend/cuda/kernels/dynamic_shared_memory.cuh"
#include "backend/cuda/kernels/prefill_attention/hopper_mainloop.cuh"
#include "backend/cuda/kernels/prefill_attention/hopper_producer.cuh"
#include "backend/cuda/runtime/cuda_check.h"

namespace brisk::cuda::prefill {

template <FloatType kKvType, typename C>
__global__ void __launch_bounds__(C::kThreads, 1)
prefill_attention_hopper_kernel(const PrefillAttentionArgs a, const __grid_constant__ CUtensorMap k_map,
                                const __grid_constant__ CUtensorMap v_map, const __grid_constant__ CUtensorMap q_map,
                                const HopperLaunchExtras extras) {
  extern __shared__ uint8_t shared_raw[];
  const HopperShared<C> shared = HopperShared<C>::carve(shared_raw);
  if (threadIdx.x == 0) shared.init();
  __syncthreads();

  if (threadIdx.x < 128) {
    hopper::registers_decrease<C::kProducerRegisters>();
    if (threadIdx.x >= 32) return;
    const int group = a.num_heads / a.num_kv_heads;
    const int num_items = a.num_kv_heads * a.num_seqs * a.num_row_tiles;
    const HopperProducer<C> producer{a, &k_map, &v_map, &q_map, extras, shared, static_cast<int>(threadIdx.x % 32),
                                     group, num_items};
    producer.run();
    return;
  }
  hopper::registers_increase<C::kConsumerRegisters>();
  HopperMainloop<kKvType, C> consumer(a, shared, extras.q_by_tma);
  consumer.run();
}

// Persistent: one block per SM (at most one per item), taking items from the queue.
template <FloatType kKvType, int kHeadDim, int kStages>
void launch_prefill_attention_hopper_instance(const PrefillAttentionArgs& a, const CUtensorMap& k_map,
                                              const CUtensorMap& v_map, const CUtensorMap& q_map,
                                              const HopperLaunchExtras& extras, int num_sms, cudaStream_t stream) {
  using Config = HopperConfig<kHeadDim, kStages>;
  constexpr auto kernel = prefill_attention_hopper_kernel<kKvType, Config>;
  allow_dynamic_shared_memory<kernel>(Config::kSharedBytes);
  const int64_t items = int64_t{a.num_kv_heads} * a.num_seqs * a.num_row_tiles;
  const int grid = static_cast<int>(items < num_sms ? items : num_sms);
  kernel<<<grid, Config::kThreads, Config::kSharedBytes, stream>>>(a, k_map, v_map, q_map, extras);
  BRISK_CUDA_CHECK_LAUNCH();
}

}  // namespace brisk::cuda::prefill
