// Kernel choice for gemm_w4a16 by M (tuned on the H200 with the GemmW4A16Perf benchmark and
// bench/w4a16_peers.py), kept apart from the kernels. Host and device code may include it.
//
// M <= kW4A16MmaMaxRows with 16-bit x and K % 128 == 0: the tensor-core kernel of
// w4a16_mma.cu in the configuration the rules below pick. Otherwise: M <= kW4A16MaxRows (16) the
// CUDA-core kernel of w4a16_small_m.cu (f32 x, or K not a multiple of 128), for prefill M up to
// kW4A16WgmmaMaxRows the wgmma kernel of w4a16_wgmma.cu (the last section), and otherwise the
// weight is dequantized into scratch and multiplied by cuBLASLt.
#pragma once

#include <cstdint>

namespace brisk::cuda {

// One instantiation of the tensor-core kernel: m_tiles fragments of 8 tokens, n_tiles tiles of
// 16 weight rows per warp, chunks 16-byte weight loads per lane and row in a pipeline step (128
// K values each), stages steps in the register ring (stages - 1 in flight), whether x is first
// permuted into fragment order (w4a16_mma.cu says why), and the blocks of 4 warps per SM the
// register budget must allow.
struct W4A16MmaConfig {
  int m_tiles;
  int n_tiles;
  int chunks;
  int stages;
  bool permuted_x;
  int min_blocks;
};
inline constexpr W4A16MmaConfig kW4A16MmaConfigs[] = {
    {1, 1, 1, 6, false, 4},  // 0
    {1, 1, 1, 8, false, 3},  // 1
    {1, 1, 1, 6, true, 4},   // 2
    {2, 1, 1, 5, true, 4},   // 3
    {4, 1, 1, 3, true, 4},   // 4
    {8, 1, 1, 2, true, 3},   // 5
    {8, 1, 1, 4, true, 2},   // 6
};
inline constexpr int kW4A16MmaNumConfigs = sizeof(kW4A16MmaConfigs) / sizeof(kW4A16MmaConfigs[0]);

// The configuration for M (the first rule with M <= max_m).
struct W4A16MmaRule {
  int max_m;
  int config;
};
// Measured (H200, K x N = 4096 x 28672, g128, tile layout; GemmW4A16Perf.MmaConfigs), us at
// M = 1 / 16 / 64: config 0: 37.4; 2: 33.9; 3: 43.3 / 43.7; 4: 55.6 / 56.2; 6: 91.9 / 92.8 / 95.3;
// 5 and 6 are slower below 33 rows. (On 4096 x 4096, config 0 beat 2 at M = 1: 11.5 vs 12.9.)
inline constexpr W4A16MmaRule kW4A16MmaRules[] = {{8, 2}, {16, 3}, {32, 4}, {64, 6}};
inline constexpr int kW4A16MmaMaxRows = 64;
// Up to this M the tensor-core kernel runs in passes of kW4A16MmaMaxRows rows (each reading the
// weight again) rather than dequantizing the weight for cuBLASLt. At M = 128 two passes lost to
// the dequantizing path on three of the four Llama-3-8B shapes (o_proj 49 vs 35 us, qkv 63 vs
// 46, down 122 vs 103; gate_up even at 190 vs 193), so: one pass.
inline constexpr int kW4A16MmaMultiPassMaxRows = 64;

// Split K when N alone gives fewer than kW4A16MmaMinWarpsPerSm warps per SM, into enough pieces
// for about kW4A16MmaWarpsPerSm (enough 16-byte loads in flight to cover DRAM latency), but
// never more than kW4A16MmaMaxSplits (each writes an fp32 partial of [M, N]).
inline constexpr int kW4A16MmaMinWarpsPerSm = 8;
inline constexpr int kW4A16MmaWarpsPerSm = 16;
inline constexpr int kW4A16MmaMaxSplits = 16;

// The streaming kernel (w4a16_stream.cu: one producer fills a shared-memory ring, persistent
// stream-K CTAs, x kept in shared memory) takes M <= kW4A16StreamMaxRows with the tile layout,
// group_size % 128 == 0 and x small enough for its plan (w4a16_stream_supported). The rule
// sends it only what it wins: measured (H200, bf16 x, g128, us, streaming / register ring):
//   gate_up 4096 x 28672  M 1: 37.7 / 33.7   M 2: 38.1 / 34.0   M 4: 40.9 / 33.9   M 16: 54.2 / 44.2
//   qkv     4096 x 6144   M 1: 13.6 / 15.3   M 2: 14.1 / 15.5   M 4: 16.6 / 15.5   M 16: 23.7 / 17.4
//   o_proj  4096 x 4096   M 1: 11.6 / 12.5   M 2: 12.0 / 12.8   M 4: 14.2 / 12.7   M 16: 20.8 / 14.5
//   down    14336 x 4096  M 1: 21.3 / 24.6   M 2: 24.7 / 24.9   M 4: 28.0 / 25.1   (M >= 8: x does not fit)
// so: M <= 2 on weights of up to 64 Mi values (the ring kernel needs split-K below that, and
// the streaming kernel's CTAs then cost less than its second kernel and partials).
inline constexpr int kW4A16StreamMaxRows = 16;
inline constexpr int kW4A16StreamRuleMaxRows = 2;
inline constexpr int64_t kW4A16StreamRuleMaxWeights = int64_t{64} << 20;
// Its ring: at most this many stages of 16 KiB (fewer where x takes the room), filled by 1-d
// bulk copies (TMA) of one thread or (false) by the producer warp's 16-byte cp.async (measured
// on gate_up M = 1: 45.9 vs 47.7 us; depths 2 to 12 made no difference).
inline int w4a16_stream_max_stages = 8;
inline bool w4a16_stream_bulk_copies = true;
// Tests and benchmarks only: kW4A16StreamForced runs the streaming kernel wherever it holds the
// arguments, kW4A16StreamOff never (the register-ring kernel instead).
inline constexpr int kW4A16StreamByRule = 0, kW4A16StreamForced = 1, kW4A16StreamOff = -1;
inline int w4a16_stream_mode = kW4A16StreamByRule;
inline bool w4a16_stream_wanted(int64_t m, int64_t n, int64_t k) {
  if (w4a16_stream_mode != kW4A16StreamByRule) return w4a16_stream_mode == kW4A16StreamForced;
  return m <= kW4A16StreamRuleMaxRows && n * k <= kW4A16StreamRuleMaxWeights;
}

// Tuning benchmarks only (GemmW4A16Perf): >= 0 forces that configuration wherever it holds M.
inline int w4a16_mma_config_override = -1;

inline int w4a16_mma_config_index(int m) {
  const int forced = w4a16_mma_config_override;
  if (forced >= 0 && forced < kW4A16MmaNumConfigs && kW4A16MmaConfigs[forced].m_tiles * 8 >= m) return forced;
  for (const W4A16MmaRule& rule : kW4A16MmaRules)
    if (m <= rule.max_m) return rule.config;
  return kW4A16MmaRules[sizeof(kW4A16MmaRules) / sizeof(kW4A16MmaRules[0]) - 1].config;
}
inline W4A16MmaConfig w4a16_mma_config(int m) { return kW4A16MmaConfigs[w4a16_mma_config_index(m)]; }

inline constexpr bool w4a16_mma_rules_valid() {
  int covered = 0;
  for (const W4A16MmaRule& rule : kW4A16MmaRules) {
    if (rule.config < 0 || rule.config >= kW4A16MmaNumConfigs) return false;
    if (kW4A16MmaConfigs[rule.config].m_tiles * 8 < rule.max_m || rule.max_m <= covered) return false;
    covered = rule.max_m;
  }
  return covered == kW4A16MmaMaxRows;
}
static_assert(w4a16_mma_rules_valid(),
              "each rule's configuration must hold its M, rules ascending up to kW4A16MmaMaxRows");

// --- Prefill (M >= kW4A16WgmmaMinRows): the wgmma kernel of w4a16_wgmma.cu ---------------------
//
// 16-bit x, K % 128 == 0 and the tile layout (Int4Layout::kTiles16), for kW4A16WgmmaMinRows <= M
// <= kW4A16WgmmaMaxRows; otherwise the mma.sync kernel up to kW4A16MmaMultiPassMaxRows and past
// it the weight dequantized for cuBLASLt.
// One instantiation: tokens per block (the wgmma's N), stages of the shared-memory ring (128 K
// values each: tokens x 256 bytes of x plus 8 KiB of weights), and whether x is first permuted
// into the weights' K order (w4a16_wgmma.cu says why; otherwise TMA reads x itself and each
// lane gathers its weights from the tile's shared-memory copy).
struct W4A16WgmmaConfig {
  int tokens;
  int stages;
  bool permuted_x;
};
inline constexpr W4A16WgmmaConfig kW4A16WgmmaConfigs[] = {
    {128, 5, true},   // 0
    {256, 3, true},   // 1
    {128, 5, false},  // 2
    {256, 3, false},  // 3
};
inline constexpr int kW4A16WgmmaNumConfigs = sizeof(kW4A16WgmmaConfigs) / sizeof(kW4A16WgmmaConfigs[0]);
struct W4A16WgmmaRule {
  int max_m;
  int config;
};
// Measured (H200, bf16 x, g128, GemmW4A16Perf.Prefill; us, the rules' configuration /
// dequantize + cuBLASLt / dense cuBLASLt on a bf16 weight, same run): gate_up M 65: 77 / 209 /
// 64, M 128: 78 / 213 / 66, M 512: 210 / 296 / 152, M 1024: 366 / 440 / 301, M 2048 (an earlier
// run, fp32 dequantization): 771 / 751 / 612; qkv M 128: 30 / 52 / 17, M 512: 53 / 70 / 36,
// M 1024: 106 / 103 / 68; o_proj M 128: 20 / 38 / 15, M 1024: 55 / 69 / 45, M 2048 (earlier):
// 118 / 112 / 89; down M 128: 43 / 114 / 38, M 1024: 170 / 219 / 146, M 2048 (earlier): 378 /
// 365 / 296. 128 tokens a block up to M 128 (256 pads M 65-128 to twice the MMAs: gate_up 150
// vs 77 at M 65), 256 above (128 reads every weight tile twice at M 192-256: 152 vs 106);
// direct x beat permuted x by 0-10% except on gate_up at M >= 512 (within 3%). Past 1024 tokens
// the fallback's dense GEMM is as fast or faster.
inline constexpr W4A16WgmmaRule kW4A16WgmmaRules[] = {{128, 2}, {1 << 30, 3}};
inline constexpr int kW4A16WgmmaMaxRows = 1024;
// From this M the wgmma kernel (128 tokens a block, padded) takes over from the mma.sync kernel
// on the tile layout: M 64 (one gpu-check run, us, mma.sync / wgmma at M 65): gate_up 94.5 /
// 77, qkv 31.4 / 28, o_proj 24.7 / 18, down 60.0 / 43; the mma.sync kernel's 64-token
// configuration costs about the same from M 33, while at M 32 it is ahead on all four (56.9,
// 20.6, 16.6, 41.3).
inline constexpr int kW4A16WgmmaMinRows = 33;
// Split K while the (N, M) tiles fill fewer than the SMs, each split at least this many 128-K
// chunks (fp32 partials summed by launch_w4a16_reduce).
inline constexpr int kW4A16WgmmaMinChunksPerSplit = 4;

// Tuning benchmarks only (GemmW4A16Perf): >= 0 forces that configuration (for every M from
// kW4A16WgmmaMinRows), -2 turns the wgmma kernel off (the mma.sync kernel or the dequantizing
// fallback everywhere).
inline int w4a16_wgmma_config_override = -1;

inline bool w4a16_wgmma_enabled(int m) {
  if (w4a16_wgmma_config_override == -2) return false;
  if (w4a16_wgmma_config_override >= 0) return m >= kW4A16WgmmaMinRows;  // tuning: any M
  return m >= kW4A16WgmmaMinRows && m <= kW4A16WgmmaMaxRows;
}
// The configuration for M and the group size: reading x directly needs one group per 128-K
// chunk (group_size % 128 == 0); otherwise the permuted configuration of as many tokens.
inline int w4a16_wgmma_config_index(int m, int group_size) {
  int index = kW4A16WgmmaRules[sizeof(kW4A16WgmmaRules) / sizeof(kW4A16WgmmaRules[0]) - 1].config;
  for (const W4A16WgmmaRule& rule : kW4A16WgmmaRules) {
    if (m <= rule.max_m) {
      index = rule.config;
      break;
    }
  }
  const int forced = w4a16_wgmma_config_override;
  if (forced >= 0 && forced < kW4A16WgmmaNumConfigs) index = forced;
  if (group_size % 128 != 0 && !kW4A16WgmmaConfigs[index].permuted_x) {
    for (int i = 0; i < kW4A16WgmmaNumConfigs; ++i)
      if (kW4A16WgmmaConfigs[i].permuted_x && kW4A16WgmmaConfigs[i].tokens == kW4A16WgmmaConfigs[index].tokens)
        return i;
  }
  return index;
}

}  // namespace brisk::cuda
