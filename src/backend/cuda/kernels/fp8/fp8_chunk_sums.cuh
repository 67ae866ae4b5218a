// The FP8 wgmma kernels' chunk sums. Hopper's FP8 MMAs keep fewer bits than fp32 while they sum,
// so each 128-K chunk's MMAs go into a fresh sum that is then added to fp32 accumulators (as
// CUTLASS's FP8 kernels promote every 4 MMAs). Two sums alternate, so that chunk j's MMAs run
// while chunk j - 1's sum is added and its stage released.
#pragma once

#include "backend/cuda/kernels/hopper_async.cuh"

namespace brisk::cuda::fp8 {

// Chunks 0..n-1 (n >= 1): issue(j, sum) queues chunk j's MMAs into sum and commits them;
// promote(j, sum) takes chunk j's sum once its MMAs completed.
template <int kValues, class Issue, class Promote>
__device__ __forceinline__ void alternating_chunk_sums(int n, Issue&& issue, Promote&& promote) {
  float part[2][kValues];
  issue(0, part[0]);
  int j = 1;
  for (; j + 1 < n; j += 2) {
    issue(j, part[1]);
    hopper::wgmma_wait<1>();
    promote(j - 1, part[0]);
    issue(j + 1, part[0]);
    hopper::wgmma_wait<1>();
    promote(j, part[1]);
  }
  if (j < n) {
    issue(j, part[1]);
    hopper::wgmma_wait<1>();
    promote(j - 1, part[0]);
    hopper::wgmma_wait<0>();
    promote(j, part[1]);
  } else {
    hopper::wgmma_wait<0>();
    promote(j - 1, part[0]);
  }
}

}  // namespace brisk::cuda::fp8
