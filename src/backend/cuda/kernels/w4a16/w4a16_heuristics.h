// Kernel choice for gemm_w4a16 by M (tuned on the H200 with the GemmW4A16Perf benchmark and
// bench/w4a16_peers.py), kept apart from the kernels. Host and device code may include it.
//
// M <= kW4A16MmaMaxRows with 16-bit x and K % 128 == 0: the tensor-core kernel of
// w4a16_mma.cu in the configuration the rules below pick. Otherwise: M <= kW4A16MaxRows (16) the
// CUDA-core kernel of w4a16_small_m.cu (f32 x, or K not a multiple of 128), and larger M the
// weight is dequantized into scratch and multiplied by cuBLASLt.
#pragma once

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

// M <= kW4A16StreamMaxRows with the tile layout and group_size % 128 == 0: the streaming kernel
// (w4a16_stream.cu: bulk copies into a shared-memory ring, persistent CTAs) where its
// shared-memory plan holds x (w4a16_stream_supported), the tensor-core kernel otherwise.
inline constexpr int kW4A16StreamMaxRows = 16;
// Its ring: at most this many stages of 16 KiB (fewer where x takes the room), filled by 1-d
// bulk copies (TMA) of one thread or (false) by the producer warp's 16-byte cp.async (measured
// on gate_up M = 1: 47.1 vs 48.7 us, the depth 4-12 made no difference).
inline int w4a16_stream_max_stages = 8;
inline bool w4a16_stream_bulk_copies = true;
// Tests and benchmarks only: true sends every M to the register-ring tensor-core kernel.
inline bool w4a16_stream_disabled = false;

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

}  // namespace brisk::cuda
