// What the W4A16 plan (kernels/w4a16/w4a16_plan.h) takes from measurements on one GPU: which
// configuration serves which M, where each kernel's M range ends, and the constants of its K-split
// rules and cost estimate. One table per GPU (<gpu>_w4a16.cc beside this file), written by
// bench/retune_w4a16.py; docs/perf/w4a16.md says how each entry was measured.
#pragma once

#include <string_view>

#include "backend/cuda/kernels/w4a16/w4a16_configs.h"

namespace brisk::cuda {

// Configuration `config` (an index into kW4A16MmaConfigs or kW4A16WgmmaConfigs) for M up to max_m,
// from the previous rule's max_m + 1.
struct W4A16Rule {
  int max_m;
  int config;
};
inline constexpr int kW4A16MaxRules = 8;

// Field order is the order bench/retune_w4a16.py writes: the entries it measures first, then the
// ones it carries over from the previous table.
struct W4A16Tuning {
  const char* gpu;  // the device it was measured on (cudaDeviceProp::name)
  int num_sms;
  // mma.sync kernel (M <= kW4A16MmaMaxRows): ascending rules, the last one up to kW4A16MmaMaxRows.
  int num_mma_rules;
  W4A16Rule mma_rules[kW4A16MaxRules];
  // wgmma kernel: its M range on the tile layout, and ascending rules naming direct-x
  // configurations (the plan takes the permuted one of as many tokens for groups that are not
  // a multiple of 128), the last one reaching wgmma_max_rows.
  int wgmma_min_rows;
  int wgmma_max_rows;
  int num_wgmma_rules;
  W4A16Rule wgmma_rules[kW4A16MaxRules];
  // Carried over. Up to this M the mma.sync kernel runs in passes of kW4A16MmaMaxRows rows (each
  // reading the weight again) rather than the weight being dequantized for cuBLASLt.
  int mma_multi_pass_max_rows;
  // mma.sync split K: when N alone gives fewer than mma_min_warps_per_sm warps per SM, into
  // enough pieces for about mma_warps_per_sm (enough 16-byte loads in flight to cover DRAM
  // latency), at most mma_max_splits (each writes an fp32 partial of [M, N]).
  int mma_min_warps_per_sm;
  int mma_warps_per_sm;
  int mma_max_splits;
  // wgmma cost estimate (w4a16_plan.cc): past wgmma_wave_choice_min_rows the 128-token
  // configuration competes with the rules' one; a block's 128-K chunk takes wgmma_chunk_us_256 at
  // 256 tokens and wgmma_chunk_us_128 * tokens / 128 below; a K split adds wgmma_split_us and its
  // partials' traffic (written and read, 8 bytes a value and split) at wgmma_partial_bytes_per_us;
  // each split takes at least wgmma_min_chunks_per_split chunks.
  int wgmma_wave_choice_min_rows;
  double wgmma_chunk_us_256;
  double wgmma_chunk_us_128;
  double wgmma_split_us;
  double wgmma_partial_bytes_per_us;
  int wgmma_min_chunks_per_split;
};

// Whether a table's rules name configurations that exist and hold their M, ascending and covering
// each kernel's range (the generated tables static_assert it).
constexpr bool w4a16_tuning_valid(const W4A16Tuning& t) {
  if (t.num_mma_rules < 1 || t.num_mma_rules > kW4A16MaxRules) return false;
  if (t.num_wgmma_rules < 1 || t.num_wgmma_rules > kW4A16MaxRules) return false;
  int covered = 0;
  for (int i = 0; i < t.num_mma_rules; ++i) {
    const W4A16Rule& rule = t.mma_rules[i];
    if (rule.config < 0 || rule.config >= kW4A16MmaNumConfigs) return false;
    if (kW4A16MmaConfigs[rule.config].m_tiles * 8 < rule.max_m || rule.max_m <= covered) return false;
    covered = rule.max_m;
  }
  if (covered != kW4A16MmaMaxRows) return false;
  covered = 0;
  for (int i = 0; i < t.num_wgmma_rules; ++i) {
    const W4A16Rule& rule = t.wgmma_rules[i];
    if (rule.config < 0 || rule.config >= kW4A16WgmmaNumConfigs || kW4A16WgmmaConfigs[rule.config].permuted_x) return false;
    if (rule.max_m <= covered) return false;
    covered = rule.max_m;
  }
  return t.wgmma_min_rows >= 1 && t.wgmma_min_rows <= t.wgmma_max_rows && covered >= t.wgmma_max_rows &&
         t.mma_multi_pass_max_rows >= 1 && t.mma_max_splits >= 1 && t.wgmma_min_chunks_per_split >= 1;
}

// The table for a GPU by its name and SM count; the H200's where none was measured on it.
const W4A16Tuning& w4a16_tuning_for(std::string_view gpu, int num_sms);
// The table for the GPU brisk runs on (select_device), looked up once.
const W4A16Tuning& w4a16_tuning();

// The tables (one generated file each).
extern const W4A16Tuning kW4A16TuningH200;

}  // namespace brisk::cuda
