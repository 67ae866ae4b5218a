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

// Where the tensor-core kernel's lanes get x (its B fragments) from: a copy a first small kernel
// writes in fragment order (kPermuted: a warp's loads are 512 contiguous bytes), or shared memory
// that each block fills once with its rows and K range (kShared: fewer instructions a step; the
// fill costs more with M, and the K range is split further where it would not fit).
enum class W4A16XSource { kPermuted, kShared };

// One instantiation of the tensor-core kernel: m_tiles fragments of 8 tokens, n_tiles tiles of
// 16 weight rows per warp, chunks 16-byte weight loads per lane and row in a pipeline step (128
// K values each), stages steps in the register ring (stages - 1 in flight), where x comes from,
// and the blocks of 4 warps per SM the register budget must allow.
struct W4A16MmaConfig {
  int m_tiles;
  int n_tiles;
  int chunks;
  int stages;
  W4A16XSource x;
  int min_blocks;
};
inline constexpr W4A16XSource kXPermuted = W4A16XSource::kPermuted, kXShared = W4A16XSource::kShared;
inline constexpr W4A16MmaConfig kW4A16MmaConfigs[] = {
    {1, 1, 1, 4, kXShared, 5},    // 0
    {1, 1, 1, 6, kXPermuted, 4},  // 1
    {2, 1, 1, 5, kXPermuted, 4},  // 2
    {4, 1, 1, 3, kXPermuted, 4},  // 3
    {8, 1, 1, 4, kXPermuted, 2},  // 4
};
inline constexpr int kW4A16MmaNumConfigs = sizeof(kW4A16MmaConfigs) / sizeof(kW4A16MmaConfigs[0]);
// A block's shared x (kXShared) may take up to this many bytes (5 blocks an SM); past it the
// permuted-x configuration of w4a16_mma_permuted_config_index takes over (w4a16_mma_plan).
inline constexpr int64_t kW4A16MmaMaxSharedX = 44 << 10;

// The configuration for M (the first rule with M <= max_m).
struct W4A16MmaRule {
  int max_m;
  int config;
};
// Measured (H200, bf16 x, g128, tile layout; GemmW4A16Perf.MmaConfigs), us, gate_up / qkv / o_proj
// / down: M 1: shared x (0): 23.8 / 11.1 / 9.6 / 16.1; permuted (1): 30.6 / 16.0 / 14.7 / 22.4. M
// 4: (0) 29.3 / 12.2 / 11.4 / 18.5; (1) 30.8 / 14.4 / 17.4 / 22.8. M 8: (0) 30.9 (its 67 KB of
// shared x would allow 3 blocks an SM, so the plan takes (1)) / 13.9 / 11.0 / 21.7; (1) 30.9 / 15.2
// / 15.1 / 23.0. An earlier run: M 16 (2): 35.6 / 15.7 / 13.0 / 28.8 (shared x with 2 fragments:
// 35.7 / 18.2 / 14.1 / 28.7); M 32 (3): 54.4 / 19.5 / 16.0 / 40.0; M 64 (4): 92.2 / 31.6 / 24.8 /
// 59.7 (on the tile layout the wgmma kernel takes M >= kW4A16WgmmaMinRows). Also dropped: shared x
// with 2 chunks a step (M 1: 26.5 / 12.0 / 9.8 / 17.0 against 24.9 / 11.4 / 9.7 / 16.5 then), 6
// stages and 4 blocks an SM (26.4 / 12.7 / 10.7 / 18.7 against 25.5 / 11.7 / 11.6 / 16.8),
// prefetching permuted x into L1 a ring ahead (51 us on gate_up), two MMA accumulators a step (no
// change), and weights as the MMA's B operand (8 rows a warp: twice the warps on 72 registers, but
// ~110 instructions per 512 bytes against ~147 per KiB; M 1: 31.4 / 12.9 / 10.9 / 19.2). The
// register ring with x in shared memory also beat the streaming kernel it replaces (one producer
// warp filling a shared ring by TMA; M 1: 37.8 / 13.8 / 11.7 / 21.6). The bound: a plain read of
// gate_up's 58.7 MB in this kernel's access pattern takes 14.4 us (4.0 TB/s); the kernel issues
// ~147 instructions per KiB of weights, about 0.5 a cycle per scheduler with ~3 warps each
// (gate_up's 1792 warps fill 13.6 of an SM's slots), stalled on fixed-latency dependencies and on
// the weight loads about equally (ncu). 2026-12-01: the chunk-major tile layout (warps side by side
// read one contiguous run) and the shared x filled with 4 loads in flight took M 1 to 22.7 / 11.5 /
// 9.7 / 15.8; deeper register rings (6 or 7 stages, 4 blocks an SM) and more K splits (16 to 48
// warps an SM) gained nothing (M 1 gate_up 23.6 / 24.4 and 24.6-26.9 against 23.6), so the loads in
// flight are not what limits it; starting each group of 32 warps at its own chunk (against permuted
// x's L2 hot spot, as the wgmma kernel does) lost (M 32 64 vs 48.5: the weights' contiguous run
// matters more here). 2026-12-02 (us, gate_up / qkv / o_proj / down, same run as the rules'
// configurations): two 16-row tiles a warp (half the x loads per weight) lost except on down: M 16
// with 4 stages 44.2 / 18.3 / 15.7 / 26.1 and 3 stages 36.5 / 18.4 / 16.4 / 26.5 against 35.3 /
// 15.9 / 13.6 / 28.4; M 1 with shared x 26.0 / 13.4 / 12.3 / 18.7 against 23.0 / 11.7 / 10.2 /
// 16.1; M 32 58.1 / 22.5 / 19.6 / 32.4 against 47.3 / 18.8 / 16.3 / 35.6. The 16-token
// configuration at 3 blocks an SM (no spill at 168 registers; 4 blocks spill 12 bytes): 49.8 / 19.0
// / 16.2 / 29.3. Its M 1 step (SASS) takes ~150 instructions a KiB of weights against ~80 for the
// dequantization, MMAs and x loads alone: the rest is address and group arithmetic (64-bit products
// per load, the group-size branch), a lead for the next attempt. 2026-12-02 (session 11): running
// weight pointers, a shift for the group and one integer instruction for 128 + z took the step from
// ~146 to ~129 instructions (gate_up M 1 23.1 us against 22.5 in an earlier run: no clear change);
// programmatic launch released after the main loop gave 21.3 (w4a16_mma.cu). ncu of that M 1 kernel
// (no programmatic launch, 24.4 us under the profiler): DRAM 54% of peak, issue slots 39% busy, 3.2
// warps a scheduler of which 0.8 eligible, stalls per issued instruction: fixed-latency wait 1.83,
// long scoreboard 1.44, math pipe 0.46; SMs active 81% of the time (448 blocks over 132 SMs, 3 or 4
// each). Variants (us, gate_up / qkv / o_proj / down at M 1): no scale or zero loads 24.6 against
// 25.4, x a constant instead of read from shared memory no change, no dequantization or MMA at all
// 18.4 / 9.6 / 10.7 / 13.4 (the loads alone: this pipeline's floor); two or four MMA accumulators a
// chunk 26.8-27.0 against 25.4; blocks of 2 warps 26.6; x rows laid out bank-conflict free (ncu:
// 47% of shared wavefronts were conflicts) no change; a weight ring in shared memory by cp.async (6
// stages, 84 registers) 24.3 against 21.3, with two warps a tile splitting the block's K (twice the
// warps an SM, 64-72 registers, spills) 23.3-27.6; a register ring of 8 stages (spills) 25.8.
// Reaching 16 us needs both a lower load floor and the compute hidden under it: more warps an SM at
// no more registers a warp. 2026-12-02 (session 12): each warp's lane 0 prefetching its tile's
// 1 KiB into L2 (cp.async.bulk.prefetch) 4 to 16 steps ahead of the register ring lost: gate_up
// M 1 25.0-26.6 us against 23.9 (M 16 34.4-36.1 against 33.0), qkv / o_proj the same, down M 1
// 15.0-16.1 against 15.0. 2026-12-02 (session 13): the M 1 kernel is bound by SM cycles, not
// by DRAM: under ncu (SM clock locked at 1.35 GHz) gate_up takes 41.1k cycles = 30.4 us, DRAM
// 44% of peak, 0.52 instructions issued a cycle per scheduler with 0.95 of 3.29 warps eligible;
// 41.1k cycles at the ~1.98 GHz boost are the 20.9 us of the benchmark. Time against N (M 1, K
// 4096, us): N 16896 (2 blocks an SM) 16.6, 25344 (3) 19.9, 28672 (3.39) 21.0, 33792 (4) 24.1,
// 42240 (5) 25.5: more warps an SM raise the rate, 2.5x the bytes for 1.5x the time. A stream-K
// version (local branch streamk-experiment, 3bf5fe9: every SM 20 warps, each a balanced run of
// (tile, chunk) units, runs quantized to whole ring groups, the last warp of a shared tile
// adding the partial sums) lost nevertheless: gate_up M 1 / 8 / 16 23.9 / 34.7 / 40.4 (here 20.8 / - / 29.9), qkv
// M 1 12.6 (9.3), down 17.9 (13.3), o_proj 8.4 (8.3-9.3); at N 16896 its 20 warps an SM of 12.8
// units each took 16.9 against 16.6 for 8 warps of 32 units, so each warp's run carries a fixed
// start and end (first loads, x fill, final stores and, there, the partial-sum hand-off) that
// shorter runs do not amortize. Also lost: lane 0 of each warp prefetching its next 2 to 16 KiB
// steps into L2 (cp.async.bulk.prefetch) before the PDL wait: gate_up M 1 21.4 / 21.8 / 22.4 /
// 23.8 (2 / 4 / 8 / 16 steps) against 20.8-20.9, down 13.7-15.5 against 13.2-13.3. And
// configuration 0 at 4 blocks an SM (100 registers, 116-118 instructions a unit against 125):
// M 1 gate_up 21.5, qkv 9.6-10.4, o_proj 8.4-9.5, down 16.2-16.4. In that build, time against K
// at N 28672, M 1: K 512 6.0, 1024 8.0, 2048 12.3, 4096 21.5, 8192 45.1 us: about 4 us of start
// and end, then 0.54-0.74 us for each 128-K step of a warp (13.6 warps an SM).
inline constexpr W4A16MmaRule kW4A16MmaRules[] = {{8, 0}, {16, 2}, {32, 3}, {64, 4}};
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

// Tuning benchmarks only (GemmW4A16Perf): >= 0 forces that configuration wherever it holds M.
inline int w4a16_mma_config_override = -1;

inline int w4a16_mma_config_index(int m) {
  const int forced = w4a16_mma_config_override;
  if (forced >= 0 && forced < kW4A16MmaNumConfigs && kW4A16MmaConfigs[forced].m_tiles * 8 >= m) return forced;
  for (const W4A16MmaRule& rule : kW4A16MmaRules)
    if (m <= rule.max_m) return rule.config;
  return kW4A16MmaRules[sizeof(kW4A16MmaRules) / sizeof(kW4A16MmaRules[0]) - 1].config;
}
// The permuted-x configuration for M where the rule's shared x would not fit: the first one
// that holds M.
inline int w4a16_mma_permuted_config_index(int m) {
  for (int i = 0; i < kW4A16MmaNumConfigs; ++i)
    if (kW4A16MmaConfigs[i].x == W4A16XSource::kPermuted && kW4A16MmaConfigs[i].m_tiles * 8 >= m) return i;
  return kW4A16MmaNumConfigs - 1;
}

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
    {64, 8, false},   // 4
    {64, 8, true},    // 5
};
inline constexpr int kW4A16WgmmaNumConfigs = sizeof(kW4A16WgmmaConfigs) / sizeof(kW4A16WgmmaConfigs[0]);
struct W4A16WgmmaRule {
  int max_m;
  int config;
};
// Measured (H200, bf16 x, g128, GemmW4A16Perf.Prefill, 2026-12-01, after the chunk-major
// layout and the rotated chunk order; us, the rules' configuration / dequantize + cuBLASLt /
// dense cuBLASLt on a bf16 weight, same run): gate_up M 64: 47.9 / - / 63.6, M 128: 65.6 / 214
// / 67.7, M 512: 203 / 300 / 156, M 1024: 355 / 447 / 306, M 2048: 710 / 748 / 607; qkv M 64:
// 20.9 / - / 17.5, M 128: 27.1 / 51 / 18.0, M 512: 49.5 / 70 / 36.6, M 1024: 102 / 103 / 69;
// o_proj M 64: 14.4 / - / 10.8, M 128: 19.1 / 37 / 14.0, M 1024: 51.8 / 69 / 45.4; down M 64:
// 29.2 / - / 37.7, M 128: 38.7 / 115 / 38.3, M 1024: 164 / 221 / 148. 64 tokens a block up to
// M 64 (half the x and MMAs of 128: gate_up M 64 47.9 vs 80.3, qkv 20.9 vs 28.0, o_proj 14.4
// vs 17.8, down 29.2 vs 38.0), 128 up to M 128 (64 dequantizes every weight tile twice there:
// gate_up 88.7 vs 65.6 at M 128), 256 above (128 reads every weight tile twice at M 192-256:
// 119 vs 103); direct x beat permuted x by 0-10% except on gate_up at M >= 512 (within 3%).
// (How far M goes: kW4A16WgmmaMaxRows.)
inline constexpr W4A16WgmmaRule kW4A16WgmmaRules[] = {{64, 4}, {128, 2}, {1 << 30, 3}};
// Past this M, w4a16_wgmma_plan takes the 128-token configuration instead of the rules' 256
// where its estimate is lower: waves of blocks times a block's chunks times the time of one
// (w4a16_wgmma_chunk_us), plus, with split-K, kW4A16WgmmaSplitUs and the partials' traffic
// (written and read, 8 bytes a value and split, at kW4A16WgmmaPartialBytesPerUs). Fitted
// 2026-12-03 on the H200 (GemmW4A16Perf.Prefill, us, 128 / 256 tokens a block): gate_up M 384
// 177.1 / 191.7, M 512 207.7 / 188.3, M 1024 411.5 / 331.8; qkv M 256 31.2 / 38.9, M 384 59.0 /
// 46.3, M 1024 90.9 / 94.6; o_proj M 256 27.5 / 27.0, M 384 31.2 / 43.7, M 512 32.4 / 43.6,
// M 1024 61.7 / 49.4; down M 384 96.8 / 113.1, M 512 100.7 / 100.8, M 1024 198.7 / 159.3. On
// the 20 points (M 192-1024, the four Llama shapes) it picks the faster one but for o_proj M 192
// and 256 (0.6 and 0.5 us off); the rules alone lost 55 us there (gate_up M 384, qkv M 192-256
// and 1024, o_proj M 384-512, down M 384). The plan also weighs splitting over K the tiles past
// the last whole wave, into enough splits to fill that wave (w4a16_wgmma_plan.cc). Measured
// 2026-12-03 (GemmW4A16Perf.OneShape, us, whole tiles / last wave split): qkv M 768 88.2 / 65.2,
// M 1536 139.4 / 121.4; gate_up M 384 177.2 / 161.6, M 768 276.8 / 255.1; o_proj M 1280 88.4 /
// 77.4; down M 1280 293.1 / 215.0, M 1536 298.0 / 262.1; no change where the estimate keeps whole
// tiles (qkv M 1024 89.6 / 89.7). Beyond the waves' chunk times, those splits cost 9-19 us where
// the two constants below (fitted where every tile splits) give 16-26: the plan splits a little
// less often than it could. Re-checked 2026-12-03 (session 19) after the reductions lost their
// 64-bit divisions (qkv M 128 28.3 -> 25.4 us, o_proj M 256 31.5 -> 27.7, down M 256 60.3 ->
// 55.8): against each configuration forced with and without the split, the plan's choice was
// within 0.5% of the fastest on qkv M 512-1024, o_proj M 768 and 1280, down M 768 and 1280 and
// gate_up M 1024, and 1.8% off on gate_up M 512 (184.7 against 181.5 split): constants kept.
inline constexpr int kW4A16WgmmaWaveChoiceMinRows = 128;
inline constexpr double w4a16_wgmma_chunk_us(int tokens) { return tokens >= 256 ? 1.47 : 0.92 * tokens / 128.0; }
inline constexpr double kW4A16WgmmaSplitUs = 10.0;
inline constexpr double kW4A16WgmmaPartialBytesPerUs = 2e6;
// Past this M the weight is dequantized for cuBLASLt. Measured 2026-12-03 (H200, GemmW4A16Perf.
// OneShape, us, this kernel with the plan's configuration / dequantize + cuBLASLt): gate_up M 1280
// 415.7 / 514.9, 1536 502.0 / 578.3, 2048 649.5 / 735.0, 3072 973.5 / 1042.6, 4096 1284.5 /
// 1323.8; qkv 94.8 / 120.1, 139.4 / 132.1, 143.3 / 164.2, 231.0 / 226.7, 278.3 / 286.8; o_proj
// 88.0 / 80.5, 89.4 / 92.2, 97.3 / 110.7, 144.1 / 152.3, 189.6 / 194.0; down 291.4 / 256.1, 293.0
// / 297.8, 314.7 / 359.6, 470.5 / 503.2, 626.7 / 647.3. The four shapes together are 5-12%
// faster at every M (the single losses are grids a little past a whole wave: o_proj and down at
// M 1280, 160 tiles of 256 tokens on 132 SMs), and no step of up to 4096 tokens (the engine's
// default budget is 2048) needs a dequantized weight's scratch (gate_up: 235 MB). At M 8192 the
// fallback is ahead (gate_up 2510 us against twice 1284.5).
inline constexpr int kW4A16WgmmaMaxRows = 4096;
// From this M the wgmma kernel (64 tokens a block, padded) takes over from the mma.sync kernel
// on the tile layout. Same run, us, gate_up / qkv / o_proj / down, mma.sync (its 32-token
// configuration) against wgmma: M 17: 48.2 / 18.7 / 15.7 / 36.0 against 54.9 / 19.3 / 13.5 /
// 28.5; M 24: 48.3 / 18.7 / 17.0 / 36.6 against 51.9 / 19.7 / 13.4 / 28.4; M 32: 48.7 / 19.0 /
// 16.2 / 36.8 against 47.3 / 19.0 / 13.5 / 28.8 (a Llama layer's four: 118.6 against 116.2 at
// M 17). At M 16 the mma.sync kernel's 16-token configuration is far ahead (36.6 on gate_up).
inline constexpr int kW4A16WgmmaMinRows = 17;
// Split K while the (N, M) tiles fill fewer than the SMs, each split at least this many 128-K
// chunks (fp32 partials summed by launch_w4a16_reduce).
//
// Tried 2026-12-02 (session 14; GemmW4A16Perf.LlamaShapes, both builds in one run; us, this
// kernel's numbers first). Stream-K (branch streamk-wgmma): a persistent grid of one block an SM,
// each an equal run of (tile, 128-K chunk) units, the ring running on across a block's tiles, a
// tile shared between blocks summed by the last to arrive (fp32 partials, per-tile counters, block
// order: deterministic, no second kernel). All stream-K: gate_up M 512 203.3 against 188.5 and qkv
// M 1024 102.5 against 93.6, but o_proj M 1024 52.7 against 66.3 (128 tiles split over 132 blocks),
// qkv M 512 49.6 against 55.5, and M 32-256 lost everywhere (o_proj M 32 12.5 against 17.1). Its
// main loop matches this one's (~250 instructions a chunk a warp, SASS; 64-bit unit arithmetic had
// added ~35 and lost up to 9% more), so the loss is the fix-up: ncu (o_proj M 1024) puts 15% of the
// warps' samples at the named barriers around the partial writes and the counter's atomic, and the
// last block reads the others' 128 KiB partials. Stream-K only where whole tiles leave the last
// wave under 3/4 full, else K splits summed in the kernel: gate_up M 512 201.7 against 187.8, qkv M
// 1024 101.9 against 93.3, o_proj M 512 42.4 against 38.4, down M 512 99.5 against 95.1, qkv M 256
// 39.1 against 36.9, but gate_up M 256 101.2 against 105.1 and at 64 tokens the in-kernel sum lost
// to the second kernel (o_proj M 32 12.6 against 15.9, down M 64 27.5 against 29.6, gate_up M 32
// 50.8 against 55.7). The 64-token configuration at two blocks an SM (branch wgmma-two-blocks: 4
// stages, 24 / 104 registers; the registers setmaxnreg.inc takes come from the block's own pool, so
// 112 hung): gate_up M 64 50.0 against 45.6, qkv M 64 19.7 / 19.3, but o_proj M 17-64 12.6-13.5
// against 13.6-14.7, down M 17-64 26.6-27.6 against 29.1-30.5, gate_up M 17 56.4 against 64.5. And
// x's copies skipped after the first ring round (wrong results, timing only) moved nothing at M
// 32-128 (within 2%: gate_up M 64 50.6 / 50.2, down M 32 27.3 / 26.6) and 3% at M 512: neither x's
// L2 traffic nor warps an SM bound M 17-128 here. What is left is the MMAs: m64n64k16 (N = 64
// tokens) reach ~30% of the tensor peak (gate_up M 64: 15 GFLOP in 50 us) against ~70% at N 256;
// ncu's tensor-pipe utilization at M 64 is the next thing to measure. Measured 2026-12-02
// (session 15, gate_up M 64, configuration 4, under ncu): tensor pipe 32% busy, 1.52 instructions
// an SM a cycle, 0.62 of 2.21 warps a scheduler eligible: latency-bound, not MMA-bound. The
// tokens as the wgmma's M instead (branch w4a16-tokens-as-m: x as A, each consumer warpgroup
// dequantizing its 128 rows into 128-byte-swizzled panels in shared memory, m64n128k16 SS; passed
// parity) lost everywhere (us, this kernel first): gate_up M 17 / 32 / 64 55.0 / 50.6 / 50.5
// against 54.3 / 54.0 / 55.6, qkv 18.3 / 17.9 / 19.3 against 20.1 / 20.3 / 25.2, o_proj 12.5 /
// 12.5 / 13.6 against 16.1 / 16.7 / 22.3, down 26.9 / 26.8 / 27.8 against 29.7 / 30.3 / 35.6;
// under ncu the tensor pipe was 29% busy with 0.42 warps eligible: the dequantization's
// dependency chains and the barrier before each half chunk's MMAs, not the MMA shape, bound both.
// 2026-12-03 (session 16), what this kernel's time is made of, timing-only variants (us, gate_up
// M 512 / o_proj M 1024 / gate_up M 256 / qkv M 128 / o_proj M 128 / gate_up M 64 / o_proj M 64):
// as it was 201.3 / 52.2 / 101.5 / 26.6 / 18.4 / 50.7 / 13.9; the raw weight words as A (no
// dequantization) 190.4 / 49.0 / 96.0 / 23.7 / 17.2 / 32.1 / 11.5; no stores at all 179.4 / 46.6
// / 89.3 / 23.9 / 15.7 / 47.8 / 12.2; neither dequantization nor MMA (copies, waits and stores
// only) 142.1 / 39.0 / 77.2 / 19.6 / 14.8 / 27.0 / 10.5; the dequantization without the MMAs
// 145.9 / 39.4 / - / 21.1 / 15.8 / 40.5 / -. At 4096 x 16384 x 16384 (256 tokens forced): 3138 as
// it was, 2743 without dequantization (801 TFLOP/s), 2218 for the dequantization alone. So the
// stores cost 11-15% (fixed: the epilogue now goes through shared memory, w4a16_wgmma.cu, gate_up
// M 512 201 -> 188-190 us), the dequantization 6-12% past 256 tokens and 37% at M 64, and even
// without it the MMA pipeline stays under dense cuBLASLt at M 512 (190 against 155): the waves
// (448 blocks on 132 SMs) and each block's start and end. Three fragment sets with two MMA groups
// in flight (wgmma_wait<2>, scales 3 chunks ahead) lost everywhere: 225.7 / 57.4 / - / 30.3 /
// 20.0 / 62.6 / -. Under ncu (gate_up M 512): tensor pipe 62% of cycles, 0.33 of 2.2 warps a
// scheduler eligible, top stalls the wait after each half chunk's MMAs and the first MMA of a half.
// 2026-12-03 (session 17): 64 tokens a block with four consumer warpgroups, one pair for each
// half of every chunk, the second pair's sums added through shared memory at the end (16 consumer
// warps an SM at 112 registers, scales 2 chunks ahead) lost everywhere (us, M 17 / 32 / 64 / 128,
// against configuration 4): gate_up 57.5 / 52.3 / 52.0 / 99.8 against 55.5 / 49.9 / 49.1 / 94.1,
// qkv 18.4-26.8 against 17.8-25.9, o_proj 12.6-20.9 against 12.6-20.2, down 28.9-50.9 against
// 26.6-47.2. Twice the warps do not shorten a chunk: what bounds 17-128 tokens is shared by the
// block's warps, not each warp's latency. (setmaxnreg.inc past the block's allocation at launch
// hangs: 120 registers for 512 consumers with 96 a thread at launch.)
inline constexpr int kW4A16WgmmaMinChunksPerSplit = 4;

// Tuning benchmarks only (GemmW4A16Perf): >= 0 forces that configuration (for every M from
// kW4A16WgmmaMinRows), -2 turns the wgmma kernel off (the mma.sync kernel or the dequantizing
// fallback everywhere).
inline int w4a16_wgmma_config_override = -1;

// Tuning benchmarks and tests only: the last partial wave of tiles past whole waves split over
// K never (-1), where the estimate says so (0), or always (1) (w4a16_wgmma_plan).
inline int w4a16_wgmma_last_wave_split = 0;

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
