// W4A16 for prefill on Hopper tensor cores: y^T = dequant(W) x^T with warpgroup MMAs (wgmma),
// the int4 weights as the A operand taken from registers (dequantized there, never written to
// shared memory in 16 bits) and x as the B operand from shared memory.
//
// Block: two consumer warpgroups and a producer warpgroup (one thread of it issues the copies):
// per 128-K chunk the producer copies the x tile (tokens x 128 values, two 128-byte-swizzled
// panels, by TMA) and the block's 128 weight rows (8 KiB, contiguous in the chunk-major tile
// layout: one bulk copy) into a ring of stages, each completing on a "full" mbarrier. The
// two consumer warpgroups own 64 weight rows each (the wgmma's M), warp w of one the 16-row tile
// 4 wg + w; both multiply by the same x tile (the wgmma's N = tokens per block), in half chunks
// of 4 k-steps whose MMAs overlap the next half's dequantization, and release a stage ("empty"
// mbarrier) once their MMAs reading it completed. Grid: one block a (128 rows, tokens) tile,
// then one a K split of each split tile (block_work).
//
// The K order. In the tile layout (Int4Layout::kTiles16, the contract with the decode kernel of
// w4a16_mma.cu) lane (g, t) of a warp streams 32 consecutive K values of rows g and g + 8 per
// chunk: K 32 t + 8 w + i for word w, nibble i. The m16n8k16 A fragment (the RS wgmma's per-warp
// A) holds, per lane, the logical k pairs (2 t, 2 t + 1) and (2 t + 8, 2 t + 9) of a 16-wide
// k-step, and the wgmma reads x's logical k in column order. Two ways to match them:
// - direct x (group_size % 128 == 0, the rules' choice): k-step ks is K 16 ks .. + 15 of x as it
//   is (TMA reads the caller's x), and each lane gathers its pairs from the stage's shared copy
//   of the weights: byte t (K 2 t, 2 t + 1) of words 2 (ks % 2) and + 1 of lane (g, ks / 2)'s
//   16 bytes, a broadcast to the four lanes of a row. A chunk's K values then spread over the
//   lane's k-steps, so one scale per chunk needs groups of 128.
// - permuted x (any group that is a multiple of 32): each lane dequantizes its own 32 K values
//   (one group), nibbles (i, i + 4) of word w into the pair of k-step s = 2 w + hf (hf = i / 2),
//   so k-step s takes, at logical k = 8 b + 2 t + e, the physical K value 32 t + 8 w + 2 hf + b
//   + 4 e; a small kernel first writes x with each chunk's 128 columns in that order
//   (permute_x_kernel: a write and a read of 2 M K bytes) and TMA loads that copy.
//
// Dequantization before the MMA, in any group size that is a multiple of 32 (a lane's 32 K
// values of a chunk lie in one group): on packed pairs of x's dtype, 1024 + q (f16) or 128 + q
// (bf16) by a LOP3 with a magic number, the exact difference with the zero point, one rounding
// of the product with the scale rounded to x's dtype (a second rounding where the checkpoint's
// scales are of another dtype, as in w4a16_mma.cu's groups below 128; an exact fp32 product
// cost seven instructions a pair instead of four or five, and this kernel is bound by them
// below ~1000 tokens). Accumulation in fp32 in the wgmma.
//
// Split-K (w4a16_wgmma_plan: the tiles past the last whole wave, or all of them when they fill
// less than one): those blocks write fp32 partials (store_partials) that a second kernel sums
// (w4a16_wgmma_reduce_kernel), deterministic and graph safe. Outputs leave through shared memory
// (w4a16_wgmma_epilogue.cuh). Programmatic dependent launch: the first ring round's weights are
// requested before the kernel ahead has finished, and the kernel after may launch once every
// block's MMAs are done (H200, us, with / without: gate_up M 64 50.1 / 51.8, M 256 91.2 / 94.7,
// qkv M 64 20.5 / 22.8, o_proj M 128 19.4 / 21.8, down M 128 38.1 / 40.0).
// silu_gate (N / 2 % 16 == 0, direct x): a block's 64 features take their 4 gate tiles and 4 up
// tiles (two bulk copies), and each warp's rows g and g + 8 are one feature's gate and up rows,
// so each lane computes silu(gate) * up of its own sums.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>

#include "backend/cuda/kernels/dynamic_shared_memory.cuh"
#include "backend/cuda/kernels/float_io.cuh"
#include "backend/cuda/kernels/hopper_async.cuh"
#include "backend/cuda/kernels/launch.h"
#include "backend/cuda/kernels/mma_common.cuh"
#include "backend/cuda/kernels/pdl.cuh"
#include "backend/cuda/kernels/silu.cuh"
#include "backend/cuda/kernels/w4a16/int4_pairs.cuh"
#include "backend/cuda/kernels/w4a16/streaming_load.cuh"
#include "backend/cuda/kernels/w4a16/w4a16_heuristics.h"
#include "backend/cuda/kernels/w4a16/w4a16_launch.h"
#include "backend/cuda/kernels/w4a16/w4a16_wgmma.h"
#include "backend/cuda/kernels/w4a16/w4a16_wgmma_epilogue.cuh"
#include "backend/cuda/runtime/cuda_check.h"

namespace brisk::cuda {
namespace {

// Two consumer warpgroups (warps 0-7) and a producer warpgroup (8-11) that gives its registers
// to the consumers (setmaxnreg): a block's warps share each SM sub-partition's 16K registers
// three to one, so a lone producer warp would still cap every thread at 168 registers, too few
// for 256 tokens' accumulators and two fragment sets.
constexpr int kThreads = 384;
constexpr int kProducerRegisters = 40;
constexpr int kConsumerRegisters = 232;
static_assert(kProducerRegisters * 128 + kConsumerRegisters * 256 <= 65536);
constexpr int kRowsPerBlock = kW4A16WgmmaBlockRows;  // weight rows (outputs): 64 per consumer warpgroup
constexpr int kTilesPerBlock = kRowsPerBlock / 16;
constexpr int kChunkK = kW4A16WgmmaChunkK;  // K values per stage
constexpr int kTileChunkBytes = 16 * kChunkK / 2;  // one 16-row tile's chunk: 1 KiB, contiguous
constexpr int kWeightStageBytes = kTilesPerBlock * kTileChunkBytes;

template <int kTokens, int kStages>
struct Layout {
  static constexpr int kXPanelBytes = kTokens * hopper::kPanelRowBytes;  // 64 K values of every token
  static constexpr int kXBytes = 2 * kXPanelBytes;
  static constexpr int kStageBytes = kXBytes + kWeightStageBytes;     // multiple of 1024: panels stay aligned
  static constexpr int kBarrierOffset = kStages * kStageBytes;
  static constexpr int kSharedBytes = kBarrierOffset + 2 * kStages * 8 + 1024;  // + alignment slack
  static_assert(kSharedBytes <= 227 * 1024, "the ring must fit one SM's shared memory");
  static_assert(kBarrierOffset >= 2 * kTokens * 256, "the ring must hold both warpgroups' fp32 output tiles");
};

// (q - z) s on packed 16-bit pairs of x's dtype (int4_pairs.cuh): at most five instructions a
// pair.
template <FloatType kType>
struct WeightPairs {
  using M = Int4Pairs<kType>;
  // Per row and chunk: the scale and offset + z as packed pairs of x's dtype.
  struct Group {
    uint32_t s2, z2;
  };
  __device__ static Group group(float scale, uint32_t zero) {
    return {M::splat(scale), M::splat(M::kOffset + static_cast<float>(zero))};
  }
  // Nibbles i and i + 4 of word (permuted x).
  __device__ static uint32_t pair(uint32_t word, int i, Group gr) {
    return M::dequant(int4_pair<kType>(word, i), gr.z2, gr.s2);
  }
  // Nibbles 2 t and 2 t + 1 (byte t) of word (direct x): lo_hi = 0x(4+t)(4+t)tt puts byte t of
  // word in byte 0 and byte t of word >> 4 (its high nibble low) in byte 2.
  __device__ static uint32_t byte_pair(uint32_t word, uint32_t lo_hi, Group gr) {
    return M::dequant(magic_pair<kType>(__byte_perm(word, word >> 4, lo_hi)), gr.z2, gr.s2);
  }
};

// The block's work (w4a16_wgmma_plan): blocks before a.split_from_tile take that tile over all
// of K, the rest one K split of a tile from it on (split s of the i-th such tile: block
// split_from_tile + s * count + i). Tile i: N tile i % n_tiles, token tile i / n_tiles.
struct BlockWork {
  int64_t tile, n_tile, split_slot;  // split_slot: the tile's place in the partials, -1 when whole
  int m_tile, split;
};
__device__ __forceinline__ BlockWork block_work(const W4A16Args& a, int tokens) {
  const int64_t n_tiles = w4a16_wgmma_n_tiles(a), b = blockIdx.x;
  const int64_t tiles = w4a16_wgmma_tiles(a, tokens), first = a.split_from_tile;
  BlockWork w{b, 0, -1, 0, 0};
  if (a.num_splits > 1 && b >= first) {
    const int64_t count = tiles - first, u = b - first;
    w.split = static_cast<int>(u / count);
    w.tile = first + u % count;
    w.split_slot = u;  // split * count + (tile - first)
  }
  w.n_tile = w.tile % n_tiles;
  w.m_tile = static_cast<int>(w.tile / n_tiles);
  return w;
}

template <FloatType kType, FloatType kScale, int kTokens, int kStages, bool kPermutedX, bool kSiluGate>
__global__ void __launch_bounds__(kThreads, 1)
    w4a16_wgmma_kernel(const W4A16Args a, const __grid_constant__ CUtensorMap x_map) {
  using L = Layout<kTokens, kStages>;
  using D = WeightPairs<kType>;
  extern __shared__ uint8_t shared_raw[];
  uint8_t* ring = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(shared_raw) + 1023) & ~uintptr_t{1023});
  const uint32_t ring_address = shared_address(ring);
  const uint32_t full_bar = ring_address + L::kBarrierOffset;
  const uint32_t empty_bar = full_bar + 8 * kStages;

  const int tid = threadIdx.x;
  const BlockWork work = block_work(a, kTokens);
  const bool split = work.split_slot >= 0;
  const int64_t tile0 = work.n_tile * kTilesPerBlock;  // the block's first 16-row tile
  const int m0 = work.m_tile * kTokens;
  const int num_chunks_total = static_cast<int>(a.k / kChunkK);
  const int chunks_per_split = split ? static_cast<int>(a.k_per_split / kChunkK) : num_chunks_total;
  const int c_begin = work.split * chunks_per_split;
  const int num_chunks = min(num_chunks_total - c_begin, chunks_per_split);
  // The block's i-th chunk: blocks start at different chunks (by their N tile), so that the
  // blocks running side by side read different x tiles rather than all the same lines of L2
  // (H200, gate_up M 128: 72.8 -> 65.8 us; qkv 28.9 -> 27.3).
  const int rotation = num_chunks > 0 ? static_cast<int>(work.n_tile % num_chunks) : 0;
  auto chunk_of = [&](int i) {
    const int r = i + rotation;
    return c_begin + (r >= num_chunks ? r - num_chunks : r);
  };

  if (tid == 0) {
    for (int s = 0; s < kStages; ++s) {
      hopper::mbarrier_init(full_bar + 8 * s, 1);
      hopper::mbarrier_init(empty_bar + 8 * s, 8);  // one arrival per consumer warp
    }
    hopper::mbarrier_init_fence();
  }
  __syncthreads();

  if (tid >= 256) {
    hopper::registers_decrease<kProducerRegisters>();
    if (tid != 256) return;
    hopper::tma_prefetch_descriptor(&x_map);
    // kSiluGate: the block's 4 gate tiles (tile0 / 2 ..), then their 4 up tiles (+ N / 32).
    constexpr int copies = kSiluGate ? 2 : 1, tiles_per_copy = kTilesPerBlock / copies;
    const int64_t tiles_n = a.n / 16, first_tile = kSiluGate ? tile0 / 2 : tile0;
    const int valid_tiles = static_cast<int>(min(int64_t{tiles_per_copy}, tiles_n / copies - first_tile));
    const uint32_t stage_tx = L::kXBytes + copies * valid_tiles * kTileChunkBytes;
    const uint8_t* wsrc = a.qweight + first_tile * kTileChunkBytes;  // tile T's chunk c at (c * N / 16 + T) KiB
    const int64_t chunk_bytes = tiles_n * kTileChunkBytes;
    // Chunk i's weights into stage i % kStages, once its barrier expects the stage's bytes.
    auto copy_weights = [&](int i) {
      const int s = i % kStages;
      const uint32_t bar = full_bar + 8 * s, dst = ring_address + s * L::kStageBytes + L::kXBytes;
      hopper::mbarrier_arrive_expect_tx(bar, stage_tx);
#pragma unroll
      for (int copy = 0; copy < copies; ++copy) {
        bulk_copy_to_shared(dst + copy * tiles_per_copy * kTileChunkBytes,
                            wsrc + chunk_of(i) * chunk_bytes + copy * (tiles_n / 2) * kTileChunkBytes,
                            valid_tiles * kTileChunkBytes, bar);
      }
    };
    // Programmatic dependent launch (pdl.cuh): the first round's weights (the model's) are on
    // their way while the kernel before this one finishes; x waits for it.
    const int first_round = min(kStages, num_chunks);
    for (int i = 0; i < first_round; ++i) copy_weights(i);
    pdl_wait();
    for (int i = 0; i < num_chunks; ++i) {
      const int s = i % kStages, c = chunk_of(i);
      if (i >= first_round) {
        hopper::mbarrier_wait(empty_bar + 8 * s, ((i / kStages) & 1) ^ 1);
        copy_weights(i);
      }
      const uint32_t bar = full_bar + 8 * s, dst = ring_address + s * L::kStageBytes;
      hopper::tma_load_2d(dst, &x_map, c * kChunkK, m0, bar);
      hopper::tma_load_2d(dst + L::kXPanelBytes, &x_map, c * kChunkK + hopper::kPanelCols, m0, bar);
    }
    return;
  }

  hopper::registers_increase<kConsumerRegisters>();
  const int ctid = tid;
  const int wg = ctid / 128, warp = (ctid / 32) % 4, lane = ctid % 32, g = lane / 4, t = lane % 4;
  // The warp's rows g and g + 8 (h = 0, 1) of tile 4 wg + warp, at warp_offset and kRow8Offset
  // past it in a stage's weights; kSiluGate: features f0 + g, rows f0 + g (gate: half tile
  // tile_in_block of the block's gate tiles) and N / 2 + f0 + g (up: the same in the up tiles).
  const int tile_in_block = 4 * wg + warp;
  const int64_t tile = tile0 + tile_in_block, half_n = a.n / 2, f0 = tile0 * 8 + 8 * tile_in_block;
  // Uniform per warp; a warp past N multiplies garbage, stores nothing.
  const bool tile_valid = kSiluGate ? f0 < half_n : tile * 16 < a.n;
  const int64_t row[2] = {min(kSiluGate ? f0 + g : tile * 16 + g, a.n - 1),
                          min(kSiluGate ? half_n + f0 + g : tile * 16 + 8 + g, a.n - 1)};
  constexpr int kRow8Offset = kSiluGate ? kWeightStageBytes / 2 : 512;
  const int warp_offset = kSiluGate ? tile_in_block * 512 : tile_in_block * kTileChunkBytes;
  const GroupIndex groups(a.group_size);
  const uint32_t group_row[2] = {groups.row_start(row[0], a.k), groups.row_start(row[1], a.k)};
  const uint32_t lo_hi = static_cast<uint32_t>(t * 0x11 + (4 + t) * 0x1100);
  const ZeroPoints zeros(a.zeros);

  // The lane's scale and zero point of rows g, g + 8 for chunk c (permuted x: K 128 c + 32 t ..
  // + 31, one group; direct x needs group_size % 128 == 0: one group per chunk), loaded
  // kScaleAhead chunks ahead into a ring of registers (a load per chunk would otherwise put one
  // memory latency into every chunk: the loads miss L1 and, first touched, L2).
  constexpr int kScaleAhead = 4;
  uint32_t raw_s[kScaleAhead][2], raw_z[kScaleAhead][2];
  auto load_group = [&](int c, uint32_t (&rs)[2], uint32_t (&rz)[2]) {
    const unsigned kk = static_cast<unsigned>(c * kChunkK + (kPermutedX ? 32 * t : 0));
    const unsigned group = groups.of(kk);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      rs[h] = load_scale<kScale>(a.scales, group_row[h] + group);
      rz[h] = zeros.load(group_row[h] + group);
    }
  };

  float acc[kTokens / 2];
#pragma unroll
  for (int i = 0; i < kTokens / 2; ++i) acc[i] = 0.0f;

  // Half a chunk (4 k-steps): dequantize into `cur`, issue its MMAs, wait for the previous
  // half's (which read `prev`) and, at a chunk's first half, release the previous chunk's stage.
  // The A registers of an MMA in flight must not change until a wait covers it, and the compiler
  // does not know that an asm's register inputs are read after the asm: two fragment sets
  // alternate, `prev` kept alive past the wait. Halves rather than whole chunks keep the two
  // sets small enough for 256 tokens' accumulators.
  typename D::Group gr[2];
  auto half_chunk = [&](int i, int slot, int half, uint32_t (&cur)[4][4], uint32_t (&prev)[4][4]) {
    const int s = i % kStages;
    if (half == 0) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        gr[h] = D::group(scale_value<kScale>(raw_s[slot][h]), raw_z[slot][h]);
      }
      if (i + kScaleAhead < num_chunks) load_group(chunk_of(i + kScaleAhead), raw_s[slot], raw_z[slot]);
      hopper::mbarrier_wait(full_bar + 8 * s, (i / kStages) & 1);
    }
    // (ld.shared on the address: through the generic pointer the compiler emits generic loads.)
    const uint32_t wsm = ring_address + s * L::kStageBytes + L::kXBytes + warp_offset;
    if constexpr (kPermutedX) {
      // k-step 2 word + hf: A = {row g pair 2 hf, row g + 8 pair 2 hf, row g pair 2 hf + 1,
      // row g + 8 pair 2 hf + 1} of the lane's own 16 bytes per row (words 2 half, + 1 here).
      const uint2 w[2] = {load_shared_u64(wsm + lane * 16 + 8 * half),
                          load_shared_u64(wsm + kRow8Offset + lane * 16 + 8 * half)};
#pragma unroll
      for (int ks = 0; ks < 4; ++ks) {
        const int i0 = 2 * (ks % 2);
        const uint32_t w0 = ks < 2 ? w[0].x : w[0].y, w1 = ks < 2 ? w[1].x : w[1].y;
        cur[ks][0] = D::pair(w0, i0, gr[0]);
        cur[ks][1] = D::pair(w1, i0, gr[1]);
        cur[ks][2] = D::pair(w0, i0 + 1, gr[0]);
        cur[ks][3] = D::pair(w1, i0 + 1, gr[1]);
      }
    } else {
      // x in its own order: k-step ks takes K 16 ks .. + 15, held by lane (g, ks / 2) of the
      // tile layout in words 2 (ks % 2) (K 16 ks .. + 7) and + 1 (+ 8 .. + 15); this lane
      // needs byte t (K 2 t, 2 t + 1) of each, for rows g and g + 8 (a broadcast to the four
      // lanes of a row).
#pragma unroll
      for (int src = 0; src < 2; ++src) {
        const int unit = (4 * g + 2 * half + src) * 16;
        const uint4 w[2] = {load_shared_u128(wsm + unit), load_shared_u128(wsm + kRow8Offset + unit)};
#pragma unroll
        for (int hw = 0; hw < 2; ++hw) {
          const int ks = 2 * src + hw;
          cur[ks][0] = D::byte_pair(word_of(w[0], 2 * hw), lo_hi, gr[0]);
          cur[ks][1] = D::byte_pair(word_of(w[1], 2 * hw), lo_hi, gr[1]);
          cur[ks][2] = D::byte_pair(word_of(w[0], 2 * hw + 1), lo_hi, gr[0]);
          cur[ks][3] = D::byte_pair(word_of(w[1], 2 * hw + 1), lo_hi, gr[1]);
        }
      }
    }
#pragma unroll
    for (int ks = 0; ks < 4; ++ks)
#pragma unroll
      for (int r = 0; r < 4; ++r) asm volatile("" : "+r"(cur[ks][r])::"memory");
    const uint64_t x_desc =
        hopper::smem_descriptor(ring_address + s * L::kStageBytes + half * L::kXPanelBytes, 16, 1024);
    hopper::fence_registers(acc);
    hopper::wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < 4; ++ks) {  // x K-major
      hopper::Wgmma<kTokens, kType>::template rs<0>(acc, cur[ks], hopper::smem_descriptor_advance(x_desc, ks * 32));
    }
    hopper::wgmma_commit();
    hopper::wgmma_wait<1>();
    hopper::fence_registers(acc);
#pragma unroll
    for (int ks = 0; ks < 4; ++ks)
#pragma unroll
      for (int r = 0; r < 4; ++r) asm volatile("" ::"r"(prev[ks][r]) : "memory");
    if (half == 0 && i > 0) {  // the previous chunk's MMAs completed: its stage may be refilled
      __syncwarp();
      if (lane == 0) hopper::mbarrier_arrive(empty_bar + 8 * ((i - 1) % kStages));
    }
  };

#pragma unroll
  for (int j = 0; j < kScaleAhead; ++j)
    if (j < num_chunks) load_group(chunk_of(j), raw_s[j], raw_z[j]);
  uint32_t frag_a[4][4], frag_b[4][4];
#pragma unroll
  for (int ks = 0; ks < 4; ++ks)
#pragma unroll
    for (int r = 0; r < 4; ++r) frag_b[ks][r] = 0;
  for (int i = 0; i < num_chunks; i += kScaleAhead) {
#pragma unroll
    for (int j = 0; j < kScaleAhead; ++j) {
      if (i + j < num_chunks) {
        half_chunk(i + j, j, 0, frag_a, frag_b);
        half_chunk(i + j, j, 1, frag_b, frag_a);
      }
    }
  }
  hopper::wgmma_wait<0>();
  hopper::fence_registers(acc);
  // The kernel after this one may launch (its blocks start as this one's leave), and the
  // outputs wait for the kernel before this one (it may still read them).
  pdl_wait();
  pdl_release();

  if (split) {
    hopper::named_barrier_sync(1, 256);  // both warpgroups' MMAs are complete: the ring is free
    const int64_t tile_floats = int64_t{kTokens} * kRowsPerBlock;
    store_partials<kTokens>(acc, ring_address, a.partials + work.split_slot * tile_floats, min(kTokens, a.m - m0));
    return;
  }
  // acc[4 j + 2 h + e]: weight row row[h], token m0 + 8 j + 2 t + e.
  float bias[2] = {0.0f, 0.0f};
  if (a.bias != nullptr) {
    bias[0] = load_one(a.bias, a.bias_type, row[0]);
    bias[1] = load_one(a.bias, a.bias_type, row[1]);
  }
  if (tile_stores_16bit(a)) {
    hopper::named_barrier_sync(1, 256);  // both warpgroups' MMAs are complete: the ring is free
    const int64_t first = kSiluGate ? tile0 * 8 + 32 * wg : tile0 * 16 + 64 * wg;  // feature or row
    store_tile<kTokens, kSiluGate>(a, acc, bias, ring_address, first, m0);
    return;
  }
  if (!tile_valid) return;
#pragma unroll
  for (int j = 0; j < kTokens / 8; ++j)
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const int token = m0 + 8 * j + 2 * t + e;
      if (token >= a.m) continue;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const float v = acc[4 * j + 2 * h + e];
        if constexpr (!kSiluGate) {
          store_one(row_ptr(a.y, a.y_type, token, a.y_stride), a.y_type, row[h], v + bias[h]);
        } else if (h == 0) {  // feature row[0]: gate here, up at h = 1
          const float up = acc[4 * j + 2 + e] + bias[1];
          store_one(row_ptr(a.y, a.y_type, token, a.y_stride), a.y_type, row[0], silu_times(v + bias[0], up));
        }
      }
    }
}

// x [m, k] -> out [m, k] with each 128-column chunk in the wgmma's K order (see the top): the
// 16 bytes of physical K 32 t + 8 w .. + 7 become four pairs at logical 16 (2 w + hf) + 8 b + 2 t.
__global__ void w4a16_permute_x_kernel(const uint16_t* x, int64_t x_stride, uint16_t* out, int m, int64_t k) {
  const int64_t units_per_row = k / 8;
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < m * units_per_row;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t r = i / units_per_row, u = i % units_per_row;
    const int p = static_cast<int>(u % 16), w = p % 4, t = p / 4;
    const uint4 v = *reinterpret_cast<const uint4*>(x + r * x_stride + 8 * u);
    // Pairs (0, 4), (1, 5), (2, 6), (3, 7): (hf, b) = (0, 0), (0, 1), (1, 0), (1, 1).
    uint32_t* dst = reinterpret_cast<uint32_t*>(out + r * k + (u / 16) * kChunkK + 32 * w + 2 * t);
    dst[0] = __byte_perm(v.x, v.z, 0x5410);
    dst[4] = __byte_perm(v.x, v.z, 0x7632);
    dst[8] = __byte_perm(v.y, v.w, 0x5410);
    dst[12] = __byte_perm(v.y, v.w, 0x7632);
  }
}

template <FloatType kType, FloatType kScale, int kIndex, bool kSiluGate>
void launch_kernel(const W4A16Args& a, const CUtensorMap& map, cudaStream_t stream) {
  constexpr W4A16WgmmaConfig kCfg = kW4A16WgmmaConfigs[kIndex];
  using L = Layout<kCfg.tokens, kCfg.stages>;
  constexpr auto kernel = w4a16_wgmma_kernel<kType, kScale, kCfg.tokens, kCfg.stages, kCfg.permuted_x, kSiluGate>;
  allow_dynamic_shared_memory<kernel>(L::kSharedBytes);
  const int64_t blocks = a.split_from_tile + (w4a16_wgmma_tiles(a, kCfg.tokens) - a.split_from_tile) * a.num_splits;
  launch_pdl(kernel, dim3(static_cast<unsigned>(blocks)), dim3(kThreads), L::kSharedBytes, stream, a, map);
}

// y from the partials of the split tiles (block_work): sum of the splits, + bias, silu_gate's
// silu(gate) * up. Block (x, y) takes 256 of split tile y's outputs (a tile's row or silu_gate's
// feature, and token), thread by thread along the rows: one division for the tile's place, a
// thread's within it in 32 bits by constants (a grid-stride loop with five 64-bit divisions by
// runtime values an output made this kernel instruction-bound: under ncu 8.1 us for down's 32
// tiles of 64 tokens at M 64, now 5.3).
constexpr int kReduceThreads = 256;
constexpr int reduce_cols(bool silu_gate) { return silu_gate ? kRowsPerBlock / 2 : kRowsPerBlock; }
template <bool kSiluGate>
__global__ void __launch_bounds__(kReduceThreads) w4a16_wgmma_reduce_kernel(const W4A16Args a, int tokens) {
  // The partials of the kernel before; then the next kernel may launch at once (released after
  // the loop instead, or without programmatic launch: 0.4-2 us slower at M 32-256, 2026-12-03).
  pdl_wait();
  pdl_release();
  constexpr int kCols = reduce_cols(kSiluGate);
  const int64_t n_tiles = w4a16_wgmma_n_tiles(a), slot = blockIdx.y, tile = a.split_from_tile + slot;
  const int index = static_cast<int>(blockIdx.x) * kReduceThreads + static_cast<int>(threadIdx.x);
  const int col = index % kCols, local = index / kCols;
  const int64_t token = tile / n_tiles * tokens + local, out = tile % n_tiles * kCols + col;
  if (local >= tokens || token >= a.m || out >= w4a16_y_cols(a)) return;
  const int64_t tile_floats = int64_t{tokens} * kRowsPerBlock;
  const int64_t split_floats = int64_t{gridDim.y} * tile_floats;  // one split of every split tile
  const float* p = a.partials + slot * tile_floats + local * kRowsPerBlock;
  auto sum = [&](int r, int64_t bias_row) {
    float v = a.bias != nullptr ? load_one(a.bias, a.bias_type, bias_row) : 0.0f;
    for (int s = 0; s < a.num_splits; ++s) v += p[s * split_floats + r];
    return v;
  };
  float v;
  if constexpr (kSiluGate) {  // feature col: gate row 64 wg + 16 warp + g, up 8 past it (store_partials)
    const int r = 64 * (col / 32) + 16 * (col % 32 / 8) + col % 8;
    v = silu_times(sum(r, out), sum(r + 8, a.n / 2 + out));
  } else {
    v = sum(col, out);
  }
  store_one(row_ptr(a.y, a.y_type, token, a.y_stride), a.y_type, out, v);
}

// silu_gate: instantiated for the direct-x configurations only (w4a16_wgmma_fuses_silu_gate).
template <FloatType kType, FloatType kScale, int kIndex>
void launch_config(const W4A16Args& a, const CUtensorMap& map, cudaStream_t stream) {
  if constexpr (!kW4A16WgmmaConfigs[kIndex].permuted_x) {
    if (a.silu_gate) {
      launch_kernel<kType, kScale, kIndex, true>(a, map, stream);
      return;
    }
  }
  if (a.silu_gate) check(cudaErrorInvalidValue, "w4a16 wgmma: silu_gate with permuted x", __FILE__, __LINE__);
  launch_kernel<kType, kScale, kIndex, false>(a, map, stream);
}

template <FloatType kType, int kIndex>
void launch_index(const W4A16Args& a, const CUtensorMap& map, int index, cudaStream_t stream) {
  if constexpr (kIndex < kW4A16WgmmaNumConfigs) {
    if (index != kIndex) {
      launch_index<kType, kIndex + 1>(a, map, index, stream);
    } else if (a.scale_type == FloatType::kF32) {
      launch_config<kType, FloatType::kF32, kIndex>(a, map, stream);
    } else if (a.scale_type == FloatType::kBF16) {
      launch_config<kType, FloatType::kBF16, kIndex>(a, map, stream);
    } else {
      launch_config<kType, FloatType::kF16, kIndex>(a, map, stream);
    }
  }
}

}  // namespace

void launch_w4a16_wgmma(const W4A16Args& a, void* x_perm, cudaStream_t stream) {
  if (a.m == 0 || a.n == 0) return;
  const int index = a.wgmma_config;
  if (index < 0 || index >= kW4A16WgmmaNumConfigs) {
    check(cudaErrorInvalidValue, "w4a16 wgmma: no configuration planned", __FILE__, __LINE__);
  }
  const W4A16WgmmaConfig cfg = kW4A16WgmmaConfigs[index];
  if (cfg.permuted_x) {
    const int64_t units = int64_t{a.m} * (a.k / 8);
    const unsigned blocks = static_cast<unsigned>(std::clamp<int64_t>((units + 255) / 256, 1, 65536));
    w4a16_permute_x_kernel<<<blocks, 256, 0, stream>>>(static_cast<const uint16_t*>(a.x), a.x_stride,
                                                       static_cast<uint16_t*>(x_perm), a.m, a.k);
    BRISK_CUDA_CHECK(cudaGetLastError());
  }
  const CUtensorMap map = cfg.permuted_x ? w4a16_x_tensor_map(x_perm, a.x_type, a.m, a.k, a.k, cfg.tokens)
                                         : w4a16_x_tensor_map(a.x, a.x_type, a.m, a.k, a.x_stride, cfg.tokens);
  if (a.x_type == FloatType::kF16) {
    launch_index<FloatType::kF16, 0>(a, map, index, stream);
  } else {
    launch_index<FloatType::kBF16, 0>(a, map, index, stream);
  }
  BRISK_CUDA_CHECK(cudaGetLastError());
  if (a.num_splits > 1) {
    const int64_t split_tiles = w4a16_wgmma_tiles(a, cfg.tokens) - a.split_from_tile;
    const dim3 grid((cfg.tokens * reduce_cols(a.silu_gate) + kReduceThreads - 1) / kReduceThreads,
                    static_cast<unsigned>(split_tiles));
    if (a.silu_gate) {
      launch_pdl(w4a16_wgmma_reduce_kernel<true>, grid, dim3(kReduceThreads), 0, stream, a, cfg.tokens);
    } else {
      launch_pdl(w4a16_wgmma_reduce_kernel<false>, grid, dim3(kReduceThreads), 0, stream, a, cfg.tokens);
    }
    BRISK_CUDA_CHECK(cudaGetLastError());
  }
}

}  // namespace brisk::cuda
