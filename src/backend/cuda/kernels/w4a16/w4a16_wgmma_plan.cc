// The W4A16 wgmma kernel's plan (w4a16_wgmma.h): its configuration, and which tiles run split
// over K, from the estimates of w4a16_heuristics.h. Host code.
#include <algorithm>
#include <cstdint>

#include "backend/cuda/kernels/w4a16/w4a16_heuristics.h"
#include "backend/cuda/kernels/w4a16/w4a16_wgmma.h"

namespace brisk::cuda {
namespace {

// The tiles past the last whole wave (all of them when they fill less than one) in K splits,
// enough to fill that wave's SMs, each at least kW4A16WgmmaMinChunksPerSplit chunks of 128;
// split_last_wave false: only when they fill less than one.
struct SplitPlan {
  int64_t tiles, whole, per_split, splits;  // whole: the tiles before the first split one
};
SplitPlan split_plan(const W4A16Args& a, int tokens, int num_sms, bool split_last_wave) {
  const int64_t tiles = w4a16_wgmma_tiles(a, tokens), chunks = a.k / kW4A16WgmmaChunkK;
  const int64_t whole = tiles / num_sms * num_sms, rest = tiles - whole;
  int64_t splits = 1;
  if (rest > 0 && (whole == 0 || split_last_wave)) {
    splits = std::clamp<int64_t>(num_sms / rest, 1, std::max<int64_t>(1, chunks / kW4A16WgmmaMinChunksPerSplit));
  }
  const int64_t per_split = (chunks + splits - 1) / splits;
  splits = (chunks + per_split - 1) / per_split;
  return {tiles, splits > 1 ? whole : tiles, per_split, splits};
}

// The estimated time of configuration `index` with plan p (w4a16_heuristics.h,
// kW4A16WgmmaWaveChoiceMinRows).
double plan_us(const W4A16Args& a, int index, const SplitPlan& p, int num_sms) {
  const int tokens = kW4A16WgmmaConfigs[index].tokens;
  const int64_t chunks = a.k / kW4A16WgmmaChunkK, split_tiles = p.tiles - p.whole;
  const int64_t whole_waves = (p.whole + num_sms - 1) / num_sms;
  const int64_t split_waves = (split_tiles * p.splits + num_sms - 1) / num_sms;
  double us = static_cast<double>(whole_waves * chunks + split_waves * p.per_split) * w4a16_wgmma_chunk_us(tokens);
  if (p.splits > 1) {
    const double partial_bytes = 8.0 * p.splits * split_tiles * tokens * kW4A16WgmmaBlockRows;
    us += kW4A16WgmmaSplitUs + partial_bytes / kW4A16WgmmaPartialBytesPerUs;
  }
  return us;
}

}  // namespace

void w4a16_wgmma_plan(W4A16Args& a, int num_sms) {
  // The rules' configuration and, past kW4A16WgmmaWaveChoiceMinRows, the 128-token one, each
  // with its last partial wave split over K or not: the lowest estimate.
  const int rules = w4a16_wgmma_config_index(a.m, a.group_size);
  int candidates[2] = {rules, rules};
  if (w4a16_wgmma_config_override < 0 && a.m > kW4A16WgmmaWaveChoiceMinRows) {
    candidates[1] = w4a16_wgmma_config_index(kW4A16WgmmaWaveChoiceMinRows, a.group_size);  // 128 tokens
  }
  double best_us = -1;
  for (const int index : candidates) {
    for (const bool split_last_wave : {false, true}) {
      if (w4a16_wgmma_last_wave_split != 0 && split_last_wave != (w4a16_wgmma_last_wave_split > 0)) continue;
      const SplitPlan p = split_plan(a, kW4A16WgmmaConfigs[index].tokens, num_sms, split_last_wave);
      const double us = plan_us(a, index, p, num_sms);
      if (best_us >= 0 && us >= best_us) continue;
      best_us = us;
      a.wgmma_config = index;
      a.split_from_tile = p.whole;
      a.k_per_split = p.per_split * kW4A16WgmmaChunkK;
      a.num_splits = static_cast<int>(p.splits);
    }
  }
}

int64_t w4a16_wgmma_partial_floats(const W4A16Args& a) {
  if (a.num_splits <= 1) return 0;
  const int tokens = kW4A16WgmmaConfigs[a.wgmma_config].tokens;
  return a.num_splits * (w4a16_wgmma_tiles(a, tokens) - a.split_from_tile) * tokens * kW4A16WgmmaBlockRows;
}

bool w4a16_wgmma_fuses_silu_gate(int m, int64_t n, int group_size) {
  return (n / 2) % 16 == 0 && !kW4A16WgmmaConfigs[w4a16_wgmma_config_index(m, group_size)].permuted_x;
}

}  // namespace brisk::cuda
