// The host-side choices of gemm_w4a16 for one call: which W4A16 kernel takes M, in which
// configuration (w4a16_configs.h) and split over K, from the GPU's tuning table
// (backend/cuda/tuning/w4a16_tuning.h) and what the caller pins (GemmW4A16Params::forced).
//
// 16-bit x with K % 128 == 0: M <= kW4A16MmaMaxRows the mma.sync kernel (w4a16_mma.cu), passes
// of it up to tuning.mma_multi_pass_max_rows; on the tile layout (Int4Layout::kTiles16) the wgmma
// kernel (w4a16_wgmma.cu) from tuning.wgmma_min_rows to tuning.wgmma_max_rows ahead of both.
// Otherwise M <= kW4A16MaxRows the CUDA-core kernel (w4a16_small_m.cu), and past that the weight
// is dequantized into scratch and multiplied by cuBLASLt.
#pragma once

#include <cstdint>

#include "backend/backend.h"
#include "backend/cuda/kernels/launch.h"
#include "backend/cuda/kernels/w4a16/w4a16_configs.h"
#include "backend/cuda/tuning/w4a16_tuning.h"

namespace brisk::cuda {

// What a plan is made for: the GPU's tuning table and SM count, and the caller's pinned choices.
struct W4A16PlanContext {
  const W4A16Tuning& tuning;
  int num_sms;
  GemmW4A16Forced forced;
};

// --- mma.sync kernel ---
// The configuration for M: forced.mma_config where it holds M, else the first rule with M <= max_m.
int w4a16_mma_config_index(const W4A16PlanContext& c, int m);
// The first permuted-x configuration that holds M (where the rule's shared x would not fit).
int w4a16_mma_permuted_config_index(int m);
// a.mma_config and the split over K (k_per_split, num_splits).
void w4a16_mma_plan(W4A16Args& a, const W4A16PlanContext& c);
// The scratch bytes of x in fragment order (and its chunk sums) that a planned launch needs: 0
// for the shared-x configurations.
int64_t w4a16_mma_x_frag_bytes(const W4A16Args& a);

// --- wgmma kernel ---
// Whether it takes M (forced.wgmma_config: every M from tuning.wgmma_min_rows).
bool w4a16_wgmma_enabled(const W4A16PlanContext& c, int m);
// The configuration for M and the group size: reading x directly needs one group per 128-K
// chunk (group_size % 128 == 0); otherwise the permuted configuration of as many tokens.
int w4a16_wgmma_config_index(const W4A16PlanContext& c, int m, int group_size);
// wgmma_config, split_from_tile, k_per_split and num_splits: the tiles of the last partial wave
// (all of them when they fill less than one) split over K where the estimate says so.
void w4a16_wgmma_plan(W4A16Args& a, const W4A16PlanContext& c);
// The floats of a.partials a planned launch needs: for each K split, the split tiles' fp32 sums,
// [tokens][128 rows] a tile (0 without splits). A second kernel sums them into y.
int64_t w4a16_wgmma_partial_floats(const W4A16Args& a);
// Whether launch_w4a16_wgmma takes a.silu_gate for these sizes (its direct-x configurations,
// N / 2 % 16 == 0).
bool w4a16_wgmma_fuses_silu_gate(const W4A16PlanContext& c, int m, int64_t n, int group_size);

}  // namespace brisk::cuda
