// The W4A16 kernels' plans (w4a16_plan.h). Host code.
#include "backend/cuda/kernels/w4a16/w4a16_plan.h"

#include <algorithm>
#include <cstdint>

#include "backend/cuda/kernels/w4a16/w4a16_wgmma.h"

namespace brisk::cuda {
namespace {

int rule_config(const W4A16Rule* rules, int num_rules, int m) {
  for (int i = 0; i < num_rules; ++i)
    if (m <= rules[i].max_m) return rules[i].config;
  return rules[num_rules - 1].config;
}

// Configuration `index`'s split over K for these sizes (k_per_split, num_splits).
void mma_splits(W4A16Args& a, int index, const W4A16PlanContext& c) {
  const W4A16MmaConfig cfg = kW4A16MmaConfigs[index];
  const W4A16Tuning& t = c.tuning;
  const int64_t step_k = 128 * cfg.chunks;
  const int64_t num_warps = (a.n + 16 * cfg.n_tiles - 1) / (16 * cfg.n_tiles);
  const int64_t sms = std::max(c.num_sms, 1);
  const int64_t steps = (a.k + step_k - 1) / step_k;
  int64_t splits = 1;
  if (num_warps < sms * t.mma_min_warps_per_sm) {
    splits = std::clamp<int64_t>((sms * t.mma_warps_per_sm + num_warps - 1) / num_warps, 1,
                                 std::min<int64_t>(steps, t.mma_max_splits));
  }
  const int64_t steps_per_split = (steps + splits - 1) / splits;
  a.k_per_split = steps_per_split * step_k;
  a.num_splits = static_cast<int>((steps + steps_per_split - 1) / steps_per_split);
}

// The wgmma kernel's tiles past the last whole wave (all of them when they fill less than one)
// in K splits, enough to fill that wave's SMs, each at least wgmma_min_chunks_per_split chunks
// of 128; split_last_wave false: only when they fill less than one.
struct SplitPlan {
  int64_t tiles, whole, per_split, splits;  // whole: the tiles before the first split one
};
SplitPlan split_plan(const W4A16Args& a, const W4A16PlanContext& c, int tokens, bool split_last_wave) {
  const int num_sms = c.num_sms;
  const int64_t tiles = w4a16_wgmma_tiles(a, tokens), chunks = a.k / kW4A16WgmmaChunkK;
  const int64_t whole = tiles / num_sms * num_sms, rest = tiles - whole;
  int64_t splits = 1;
  if (rest > 0 && (whole == 0 || split_last_wave)) {
    splits = std::clamp<int64_t>(num_sms / rest, 1, std::max<int64_t>(1, chunks / c.tuning.wgmma_min_chunks_per_split));
  }
  const int64_t per_split = (chunks + splits - 1) / splits;
  splits = (chunks + per_split - 1) / per_split;
  return {tiles, splits > 1 ? whole : tiles, per_split, splits};
}

// A block's time for one 128-K chunk at `tokens` tokens a block.
double chunk_us(const W4A16Tuning& t, int tokens) {
  return tokens >= 256 ? t.wgmma_chunk_us_256 : t.wgmma_chunk_us_128 * tokens / 128.0;
}

// The estimated time of configuration `index` with plan p: waves of blocks times a block's
// chunks times the time of one, plus, with split-K, the split's fixed cost and the partials'
// traffic.
double plan_us(const W4A16Args& a, int index, const SplitPlan& p, const W4A16PlanContext& c) {
  const int num_sms = c.num_sms;
  const int tokens = kW4A16WgmmaConfigs[index].tokens;
  const int64_t chunks = a.k / kW4A16WgmmaChunkK, split_tiles = p.tiles - p.whole;
  const int64_t whole_waves = (p.whole + num_sms - 1) / num_sms;
  const int64_t split_waves = (split_tiles * p.splits + num_sms - 1) / num_sms;
  double us = static_cast<double>(whole_waves * chunks + split_waves * p.per_split) * chunk_us(c.tuning, tokens);
  if (p.splits > 1) {
    const double partial_bytes = 8.0 * p.splits * split_tiles * tokens * kW4A16WgmmaBlockRows;
    us += c.tuning.wgmma_split_us + partial_bytes / c.tuning.wgmma_partial_bytes_per_us;
  }
  return us;
}

}  // namespace

int w4a16_mma_config_index(const W4A16PlanContext& c, int m) {
  const int forced = c.forced.mma_config;
  if (forced >= 0 && forced < kW4A16MmaNumConfigs && kW4A16MmaConfigs[forced].m_tiles * 8 >= m) return forced;
  return rule_config(c.tuning.mma_rules, c.tuning.num_mma_rules, m);
}

int w4a16_mma_permuted_config_index(int m) {
  for (int i = 0; i < kW4A16MmaNumConfigs; ++i)
    if (kW4A16MmaConfigs[i].x == W4A16XSource::kPermuted && kW4A16MmaConfigs[i].m_tiles * 8 >= m) return i;
  return kW4A16MmaNumConfigs - 1;
}

void w4a16_mma_plan(W4A16Args& a, const W4A16PlanContext& c) {
  int index = w4a16_mma_config_index(c, a.m);
  mma_splits(a, index, c);
  // Shared x past a block's share (a long K range, several tokens): x permuted instead.
  if (kW4A16MmaConfigs[index].x == W4A16XSource::kShared &&
      w4a16_shared_x_bytes(a.m, a.k_per_split) > kW4A16MmaMaxSharedX) {
    index = w4a16_mma_permuted_config_index(a.m);
    mma_splits(a, index, c);
  }
  a.mma_config = index;
}

int64_t w4a16_mma_x_frag_bytes(const W4A16Args& a) {
  const W4A16MmaConfig cfg = kW4A16MmaConfigs[a.mma_config];
  if (cfg.x != W4A16XSource::kPermuted) return 0;
  const int64_t tokens = 8 * cfg.m_tiles;
  return tokens * a.k * 2 + tokens * (a.k / 128) * 4;  // x in fragment order, then xsum
}

bool w4a16_wgmma_enabled(const W4A16PlanContext& c, int m) {
  if (c.forced.no_wgmma) return false;
  if (c.forced.wgmma_config >= 0) return m >= c.tuning.wgmma_min_rows;  // tuning: any M
  return m >= c.tuning.wgmma_min_rows && m <= c.tuning.wgmma_max_rows;
}

int w4a16_wgmma_config_index(const W4A16PlanContext& c, int m, int group_size) {
  int index = rule_config(c.tuning.wgmma_rules, c.tuning.num_wgmma_rules, m);
  const int forced = c.forced.wgmma_config;
  if (forced >= 0 && forced < kW4A16WgmmaNumConfigs) index = forced;
  if (group_size % 128 != 0 && !kW4A16WgmmaConfigs[index].permuted_x) {
    for (int i = 0; i < kW4A16WgmmaNumConfigs; ++i)
      if (kW4A16WgmmaConfigs[i].permuted_x && kW4A16WgmmaConfigs[i].tokens == kW4A16WgmmaConfigs[index].tokens)
        return i;
  }
  return index;
}

void w4a16_wgmma_plan(W4A16Args& a, const W4A16PlanContext& c) {
  // The rules' configuration and, past wgmma_wave_choice_min_rows, the 128-token one, each with
  // its last partial wave split over K or not: the lowest estimate.
  const int rules = w4a16_wgmma_config_index(c, a.m, a.group_size);
  int candidates[2] = {rules, rules};
  const int wave_choice_rows = c.tuning.wgmma_wave_choice_min_rows;
  if (c.forced.wgmma_config < 0 && a.m > wave_choice_rows) {
    candidates[1] = w4a16_wgmma_config_index(c, wave_choice_rows, a.group_size);  // 128 tokens
  }
  double best_us = -1;
  for (const int index : candidates) {
    for (const bool split_last_wave : {false, true}) {
      if (c.forced.split_last_wave != 0 && split_last_wave != (c.forced.split_last_wave > 0)) continue;
      const SplitPlan p = split_plan(a, c, kW4A16WgmmaConfigs[index].tokens, split_last_wave);
      const double us = plan_us(a, index, p, c);
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

bool w4a16_wgmma_fuses_silu_gate(const W4A16PlanContext& c, int m, int64_t n, int group_size) {
  return (n / 2) % 16 == 0 && !kW4A16WgmmaConfigs[w4a16_wgmma_config_index(c, m, group_size)].permuted_x;
}

// The CUDA-core kernel's split (launch.h): about 24 warps per SM keep enough 16-byte loads in
// flight to cover DRAM latency; split K only when N alone gives fewer, and never below one warp
// step of K per split.
void w4a16_plan_splits(W4A16Args& a, int num_sms) {
  const int cols = w4a16_small_m_cols(a.m <= 1 ? 1 : (a.m <= 2 ? 2 : (a.m <= 4 ? 4 : (a.m <= 8 ? 8 : 16))));
  const int64_t num_warps = (a.n + cols - 1) / cols;
  const int64_t wanted_warps = int64_t{std::max(num_sms, 1)} * 24;
  const int64_t steps = (a.k + kW4A16SmallMWarpK - 1) / kW4A16SmallMWarpK;
  const int64_t splits = std::clamp<int64_t>((wanted_warps + num_warps - 1) / num_warps, 1, std::min<int64_t>(steps, 64));
  const int64_t steps_per_split = (steps + splits - 1) / splits;
  a.k_per_split = steps_per_split * kW4A16SmallMWarpK;
  a.num_splits = static_cast<int>((steps + steps_per_split - 1) / steps_per_split);
}

}  // namespace brisk::cuda
