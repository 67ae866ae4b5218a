// The generic attention kernel's epilogue: each warp's valid rows, normalised to out, or with
// splits unnormalised fp32 partials + (max, sum) for attention_combine_kernel.
#pragma once

#include <cstdint>

#include "backend/cuda/kernels/float_io.cuh"
#include "backend/cuda/kernels/generic_attention/attention_mainloop.cuh"
#include "backend/cuda/kernels/generic_attention/attention_work.cuh"
#include "backend/cuda/kernels/launch.h"

namespace brisk::cuda {

template <int kHeadDim>
__device__ __forceinline__ void attention_store(const AttentionArgs& a, const AttentionTiling& tiling,
                                                const AttentionWork& w, const AttentionRows& rows,
                                                const AttentionMainloop<kHeadDim>& mainloop) {
  constexpr int kDimsPerLane = AttentionConfig<kHeadDim>::kDimsPerLane;
#pragma unroll
  for (int i = 0; i < AttentionConfig<kHeadDim>::kRowsPerWarp; ++i) {
    if (!mainloop.row_valid[i]) continue;
    const int r = i * kAttentionWarps + mainloop.warp;
    const int64_t token = w.q_begin + w.tile_token0 + r / tiling.heads_per_block;
    const int64_t head = rows.first_head + r % tiling.heads_per_block;
    if (a.num_splits == 1) {
      const float inv_sum = mainloop.l[i] > 0.0f ? 1.0f / mainloop.l[i] : 0.0f;
      void* out_row = row_ptr(a.out, a.out_type, token, a.out_stride);
#pragma unroll
      for (int c = 0; c < kDimsPerLane; ++c)
        store_one(out_row, a.out_type, head * kHeadDim + mainloop.lane + 32 * c, mainloop.acc[i][c] * inv_sum);
    } else {
      const int64_t item = (int64_t{w.split} * a.num_tokens + token) * a.num_heads + head;
#pragma unroll
      for (int c = 0; c < kDimsPerLane; ++c) {
        a.partial_acc[item * kHeadDim + mainloop.lane + 32 * c] = mainloop.acc[i][c];
      }
      if (mainloop.lane == 0) {
        a.partial_ml[item * 2] = mainloop.m[i];
        a.partial_ml[item * 2 + 1] = mainloop.l[i];
      }
    }
  }
}

}  // namespace brisk::cuda
