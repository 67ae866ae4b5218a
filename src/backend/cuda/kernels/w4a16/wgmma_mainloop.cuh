// The main loop of the W4A16 wgmma kernel (w4a16_wgmma.cu): a producer thread fills a ring of
// shared-memory stages, one 128-K chunk each (the x tile by TMA, the block's weights by one bulk
// copy), and two consumer warpgroups dequantize the weights into the wgmma's A registers and
// multiply them by the stage's x tile (B), in half chunks of 4 k-steps whose MMAs overlap the
// next half's dequantization. Each stage completes on a "full" mbarrier and is released by the
// consumer warps on an "empty" one once their MMAs reading it completed.
#pragma once

#include <cstdint>

#include "backend/cuda/kernels/float_io.cuh"
#include "backend/cuda/kernels/hopper_async.cuh"
#include "backend/cuda/kernels/launch.h"
#include "backend/cuda/kernels/pdl.cuh"
#include "backend/cuda/kernels/w4a16/int4_pairs.cuh"
#include "backend/cuda/kernels/w4a16/streaming_load.cuh"
#include "backend/cuda/kernels/w4a16/w4a16_wgmma.h"
#include "backend/cuda/kernels/w4a16/wgmma_tile_scheduler.cuh"

namespace brisk::cuda {

// Two consumer warpgroups (warps 0-7) and a producer warpgroup (8-11) that gives its registers
// to the consumers (setmaxnreg): a block's warps share each SM sub-partition's 16K registers
// three to one, so a lone producer warp would still cap every thread at 168 registers, too few
// for 256 tokens' accumulators and two fragment sets.
inline constexpr int kWgmmaThreads = 384;
inline constexpr int kWgmmaProducerRegisters = 40;
inline constexpr int kWgmmaConsumerRegisters = 232;
static_assert(kWgmmaProducerRegisters * 128 + kWgmmaConsumerRegisters * 256 <= 65536);
inline constexpr int kWgmmaTileChunkBytes = 16 * kW4A16WgmmaChunkK / 2;  // one 16-row tile's chunk: 1 KiB, contiguous
inline constexpr int kWgmmaWeightStageBytes = kWgmmaTilesPerBlock * kWgmmaTileChunkBytes;

// The ring in shared memory: stages of x (two 128-byte-swizzled panels of 64 K values) and
// weights, then the full and empty mbarriers of each stage.
template <int kTokens, int kStages>
struct WgmmaLayout {
  static constexpr int kXPanelBytes = kTokens * hopper::kPanelRowBytes;  // 64 K values of every token
  static constexpr int kXBytes = 2 * kXPanelBytes;
  static constexpr int kStageBytes = kXBytes + kWgmmaWeightStageBytes;  // multiple of 1024: panels stay aligned
  static constexpr int kBarrierOffset = kStages * kStageBytes;
  static constexpr int kSharedBytes = kBarrierOffset + 2 * kStages * 8 + 1024;  // + alignment slack
  static_assert(kSharedBytes <= 227 * 1024, "the ring must fit one SM's shared memory");
  static_assert(kBarrierOffset >= 2 * kTokens * 256, "the ring must hold both warpgroups' fp32 output tiles");
};

// A ring of kStages stages of layout L (L::kBarrierOffset: where the barriers start) at its
// shared-space addresses (its start aligned to 1024 bytes, as the swizzle needs): each stage
// fills on its "full" mbarrier (the producer's arrival and the copies' bytes) and is released
// on its "empty" one by the 8 consumer warps.
template <class L, int kStages>
struct StageRing {
  uint32_t address, full_bar, empty_bar;

  __device__ __forceinline__ explicit StageRing(uint8_t* shared_raw) {
    uint8_t* ring = reinterpret_cast<uint8_t*>((reinterpret_cast<uintptr_t>(shared_raw) + 1023) & ~uintptr_t{1023});
    address = shared_address(ring);
    full_bar = address + L::kBarrierOffset;
    empty_bar = full_bar + 8 * kStages;
  }
  // By one thread, before the block's barrier.
  __device__ __forceinline__ void init() const {
    for (int s = 0; s < kStages; ++s) {
      hopper::mbarrier_init(full_bar + 8 * s, 1);
      hopper::mbarrier_init(empty_bar + 8 * s, 8);  // one arrival per consumer warp
    }
    hopper::mbarrier_init_fence();
  }
};
template <int kTokens, int kStages>
using WgmmaRing = StageRing<WgmmaLayout<kTokens, kStages>, kStages>;

// The producer thread: chunk i's x tile and weights into stage i % kStages. With kSiluGate the
// block's 4 gate tiles (tile0 / 2 ..), then their 4 up tiles (+ N / 32), two bulk copies.
template <int kTokens, int kStages, bool kSiluGate>
__device__ __forceinline__ void wgmma_produce(const W4A16Args& a, const CUtensorMap* x_map,
                                              const WgmmaRing<kTokens, kStages>& ring, const WgmmaTile<kTokens>& tile) {
  using L = WgmmaLayout<kTokens, kStages>;
  hopper::tma_prefetch_descriptor(x_map);
  constexpr int copies = kSiluGate ? 2 : 1, tiles_per_copy = kWgmmaTilesPerBlock / copies;
  const int64_t tiles_n = a.n / 16, first_tile = kSiluGate ? tile.tile0 / 2 : tile.tile0;
  const int valid_tiles = static_cast<int>(min(int64_t{tiles_per_copy}, tiles_n / copies - first_tile));
  const uint32_t stage_tx = L::kXBytes + copies * valid_tiles * kWgmmaTileChunkBytes;
  const uint8_t* wsrc = a.qweight + first_tile * kWgmmaTileChunkBytes;  // tile T's chunk c at (c * N / 16 + T) KiB
  const int64_t chunk_bytes = tiles_n * kWgmmaTileChunkBytes;
  // Chunk i's weights into stage i % kStages, once its barrier expects the stage's bytes.
  auto copy_weights = [&](int i) {
    const int s = i % kStages;
    const uint32_t bar = ring.full_bar + 8 * s, dst = ring.address + s * L::kStageBytes + L::kXBytes;
    hopper::mbarrier_arrive_expect_tx(bar, stage_tx);
#pragma unroll
    for (int copy = 0; copy < copies; ++copy) {
      bulk_copy_to_shared(dst + copy * tiles_per_copy * kWgmmaTileChunkBytes,
                          wsrc + tile.chunk_of(i) * chunk_bytes + copy * (tiles_n / 2) * kWgmmaTileChunkBytes,
                          valid_tiles * kWgmmaTileChunkBytes, bar);
    }
  };
  // Programmatic dependent launch (pdl.cuh): the first round's weights (the model's) are on
  // their way while the kernel before this one finishes; x waits for it.
  const int first_round = min(kStages, tile.num_chunks);
  for (int i = 0; i < first_round; ++i) copy_weights(i);
  pdl_wait();
  for (int i = 0; i < tile.num_chunks; ++i) {
    const int s = i % kStages, c = tile.chunk_of(i);
    if (i >= first_round) {
      hopper::mbarrier_wait(ring.empty_bar + 8 * s, ((i / kStages) & 1) ^ 1);
      copy_weights(i);
    }
    const uint32_t bar = ring.full_bar + 8 * s, dst = ring.address + s * L::kStageBytes;
    hopper::tma_load_2d(dst, x_map, c * kW4A16WgmmaChunkK, tile.m0, bar);
    hopper::tma_load_2d(dst + L::kXPanelBytes, x_map, c * kW4A16WgmmaChunkK + hopper::kPanelCols, tile.m0, bar);
  }
}

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

// The consumer warps: per chunk, the lane's scale and zero point of rows g and g + 8, then two
// half chunks of dequantization and MMAs into acc (acc[4 j + 2 h + e]: weight row row[h], token
// m0 + 8 j + 2 t + e).
//
// The K order. In the tile layout (Int4Layout::kTiles16, the contract with the mma.sync
// kernel) lane (g, t) of a warp streams 32 consecutive K values of rows g and g + 8 per chunk:
// K 32 t + 8 w + i for word w, nibble i. The m16n8k16 A fragment (the RS wgmma's per-warp A)
// holds, per lane, the logical k pairs (2 t, 2 t + 1) and (2 t + 8, 2 t + 9) of a 16-wide
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
//   (w4a16_wgmma.cu) and TMA loads that copy.
// Dequantization: 1024 + q (f16) or 128 + q (bf16) by a LOP3 with a magic number, the exact
// difference with the zero point, one rounding of the product with the scale rounded to x's
// dtype (a second rounding where the checkpoint's scales are of another dtype, as in the
// mma.sync kernel's groups below 128: an exact fp32 product costs seven instructions a pair
// instead of four or five, and below ~1000 tokens this kernel is bound by them).
template <FloatType kType, FloatType kScale, int kTokens, int kStages, bool kPermutedX, bool kSiluGate>
struct WgmmaConsumer {
  using L = WgmmaLayout<kTokens, kStages>;
  using D = WeightPairs<kType>;
  using Group = typename D::Group;
  using Frags = uint32_t[4][4];  // [k-step][A register]
  // Scales and zero points are loaded this many chunks ahead into a ring of registers (a load
  // per chunk would otherwise put one memory latency into every chunk: the loads miss L1 and,
  // first touched, L2).
  static constexpr int kScaleAhead = 4;

  // Copies of the ring, tile and row values rather than references, and scalars rather than
  // arrays: the compiler splits this object into registers only once nothing in it is indexed
  // by a loop variable or points at another object; until then (the loops unroll) it stays in
  // memory, and the kernel gets another schedule (docs/perf/w4a16.md).
  const W4A16Args& a;
  const WgmmaRing<kTokens, kStages> ring;
  const WgmmaTile<kTokens> tile;
  const int lane, g, t, warp_offset;
  GroupIndex groups;
  uint32_t group_row0, group_row1;  // rows g and g + 8: where their scales and zero points start
  uint32_t lo_hi;
  ZeroPoints zeros;

  __device__ __forceinline__ WgmmaConsumer(const W4A16Args& args, const WgmmaRing<kTokens, kStages>& r,
                                           const WgmmaTile<kTokens>& tl, const WgmmaWarpRows<kSiluGate>& rw)
      : a(args),
        ring(r),
        tile(tl),
        lane(rw.lane),
        g(rw.g),
        t(rw.t),
        warp_offset(rw.warp_offset),
        groups(args.group_size),
        group_row0(groups.row_start(rw.row[0], args.k)),
        group_row1(groups.row_start(rw.row[1], args.k)),
        lo_hi(static_cast<uint32_t>(rw.t * 0x11 + (4 + rw.t) * 0x1100)),
        zeros(args.zeros) {}

  // The lane's scale and zero point of rows g, g + 8 for chunk c (permuted x: K 128 c + 32 t ..
  // + 31, one group; direct x: one group per chunk).
  __device__ __forceinline__ void load_group(int c, uint32_t (&rs)[2], uint32_t (&rz)[2]) const {
    const unsigned kk = static_cast<unsigned>(c * kW4A16WgmmaChunkK + (kPermutedX ? 32 * t : 0));
    const unsigned group = groups.of(kk);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      rs[h] = load_scale<kScale>(a.scales, (h == 0 ? group_row0 : group_row1) + group);
      rz[h] = zeros.load((h == 0 ? group_row0 : group_row1) + group);
    }
  }

  // Half `half` of the stage's weights at wsm (the warp's tile) as the A fragments of its 4
  // k-steps.
  __device__ __forceinline__ void dequantize(uint32_t wsm, int half, const Group (&gr)[2], Frags& cur) const {
    constexpr int kRow8Offset = WgmmaWarpRows<kSiluGate>::kRow8Offset;
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
  }

  // Half a chunk (4 k-steps) of chunk i: dequantize into `cur`, issue its MMAs, wait for the
  // previous half's (which read `prev`) and, at a chunk's first half, release the previous
  // chunk's stage. The A registers of an MMA in flight must not change until a wait covers it,
  // and the compiler does not know that an asm's register inputs are read after the asm: two
  // fragment sets alternate, `prev` kept alive past the wait. Halves rather than whole chunks
  // keep the two sets small enough for 256 tokens' accumulators.
  __device__ __forceinline__ void half_chunk(int i, int slot, int half, uint32_t (&raw_s)[kScaleAhead][2],
                                             uint32_t (&raw_z)[kScaleAhead][2], Group (&gr)[2], Frags& cur,
                                             Frags& prev, float (&acc)[kTokens / 2]) const {
    const int s = i % kStages;
    if (half == 0) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        gr[h] = D::group(scale_value<kScale>(raw_s[slot][h]), raw_z[slot][h]);
      }
      if (i + kScaleAhead < tile.num_chunks) load_group(tile.chunk_of(i + kScaleAhead), raw_s[slot], raw_z[slot]);
      hopper::mbarrier_wait(ring.full_bar + 8 * s, (i / kStages) & 1);
    }
    // (ld.shared on the address: through the generic pointer the compiler emits generic loads.)
    dequantize(ring.address + s * L::kStageBytes + L::kXBytes + warp_offset, half, gr, cur);
#pragma unroll
    for (int ks = 0; ks < 4; ++ks)
#pragma unroll
      for (int r = 0; r < 4; ++r) asm volatile("" : "+r"(cur[ks][r])::"memory");
    const uint64_t x_desc =
        hopper::smem_descriptor(ring.address + s * L::kStageBytes + half * L::kXPanelBytes, 16, 1024);
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
      if (lane == 0) hopper::mbarrier_arrive(ring.empty_bar + 8 * ((i - 1) % kStages));
    }
  }

  // The block's chunks into acc (zeroed); the last MMAs may still be in flight.
  __device__ __forceinline__ void run(float (&acc)[kTokens / 2]) const {
    uint32_t raw_s[kScaleAhead][2], raw_z[kScaleAhead][2];
    Group gr[2];
#pragma unroll
    for (int j = 0; j < kScaleAhead; ++j)
      if (j < tile.num_chunks) load_group(tile.chunk_of(j), raw_s[j], raw_z[j]);
    uint32_t frag_a[4][4], frag_b[4][4];
#pragma unroll
    for (int ks = 0; ks < 4; ++ks)
#pragma unroll
      for (int r = 0; r < 4; ++r) frag_b[ks][r] = 0;
    for (int i = 0; i < tile.num_chunks; i += kScaleAhead) {
#pragma unroll
      for (int j = 0; j < kScaleAhead; ++j) {
        if (i + j < tile.num_chunks) {
          half_chunk(i + j, j, 0, raw_s, raw_z, gr, frag_a, frag_b, acc);
          half_chunk(i + j, j, 1, raw_s, raw_z, gr, frag_b, frag_a, acc);
        }
      }
    }
  }
};

}  // namespace brisk::cuda
