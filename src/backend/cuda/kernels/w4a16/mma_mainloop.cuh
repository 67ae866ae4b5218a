// The main loop of the W4A16 mma.sync kernel (w4a16_mma.cu): each warp streams its tile's
// weights through a ring of pipeline steps held in registers, dequantizes them into m16n8k16 A
// fragments and multiplies them by x (B, mma_x.cuh) into fp32 accumulators [m tile][n tile][4].
//
// The K order inside an MMA is free (a dot product does not care), so each lane reads the
// weights in long contiguous runs: lane (g = lane / 4, t = lane % 4) streams rows g and g + 8 of
// its warp's 16-row tile, 32 K values (one 16-byte non-caching load) per row and chunk at
// K offset k0 + 128 c + 32 t. Word w of such a load (K values 8w..8w+7) gives the lane two MMA
// k-steps: nibble pairs (i, i + 4) for i = 0..3 are exactly what one LOP3 turns into a packed
// bf16x2 / f16x2 (int4_pairs.cuh), and they stand in for the fragment's logical k pairs
// (2t, 2t + 1) and (2t + 8, 2t + 9). The B fragment takes x at the same physical positions:
// pairs (x[8w + i], x[8w + i + 4]).
//
// Dequantization: with group_size % 128 == 0 (kScaleAfter: one group per 128-K chunk) the pairs
// 128 + q / 1024 + q go into the MMA as they are, and each chunk's fp32 sums become
// s (sum (128 + q) x - (128 + z) sum x) per row: two LOP3-class instructions per pair of weights.
// Otherwise (q - z) * s is rounded once to x's dtype before the MMA, as the dequantize-then-GEMM
// path does.
#pragma once

#include <cstdint>

#include "backend/cuda/kernels/float_io.cuh"
#include "backend/cuda/kernels/launch.h"
#include "backend/cuda/kernels/mma_common.cuh"
#include "backend/cuda/kernels/w4a16/int4_pairs.cuh"
#include "backend/cuda/kernels/w4a16/mma_tile_scheduler.cuh"
#include "backend/cuda/kernels/w4a16/streaming_load.cuh"
#include "backend/cuda/kernels/w4a16/w4a16_configs.h"

namespace brisk::cuda {

// One pipeline step's global loads of one lane: raw, so that issuing them never waits.
template <int kNTiles, int kChunks>
struct MmaStep {
  uint4 w[kNTiles][2][kChunks];
  uint32_t scale[kNTiles][2][kChunks];  // raw bits of the scale's own type; 0 for a chunk past the split
  uint32_t zero[kNTiles][2][kChunks];
};

// The lane's weight rows (g and g + 8 of each tile): where the 16 bytes of its next chunk lie,
// and where its rows' scales and zero points start. Kept apart from MmaMainloop's scalars, as
// the ring is: arrays indexed in loops stay in memory until the loops unroll, and the scalars
// beside them would too (the compiler then repeats their arithmetic, a 64-bit division among it).
template <int kNTiles>
struct MmaWeightRows {
  const uint8_t* wptr[kNTiles][2];
  uint32_t group_row[kNTiles][2];
};

template <FloatType kType, FloatType kScale, int kIndex, bool kScaleAfter, bool kSiluGate>
struct MmaMainloop {
  static constexpr W4A16MmaConfig kCfg = kW4A16MmaConfigs[kIndex];
  static constexpr int kMTiles = kCfg.m_tiles, kNTiles = kCfg.n_tiles, kChunks = kCfg.chunks, kStages = kCfg.stages;
  static constexpr int kStepK = 128 * kChunks;
  using Math = Int4Pairs<kType>;
  using Step = MmaStep<kNTiles, kChunks>;
  using Acc = float[kMTiles][kNTiles][4];

  // (Members in the order the values are computed, chunks_per_row among them though only the
  // permuted x reads it: the order is part of the schedule the compiler makes, docs/perf/w4a16.md.)
  const W4A16Args& a;
  int k_end, t;
  int64_t row_bytes;  // of brisk's row layout
  GroupIndex groups;
  int64_t chunks_per_row;  // 128-K chunks
  // The lane's 16 bytes of chunk ci (K values [128 ci, 128 ci + 128)) of row h of tile nt lie
  // wstride apart from one chunk to the next: 64 bytes along a row (kRows), N / 16 KiB in the
  // chunk-major kTiles16 (where a warp's loads are 512 contiguous bytes); rows.wptr runs along
  // them (load_step runs once per step, in order).
  int64_t wstride;
  ZeroPoints zeros;
  MmaWeightRows<kNTiles>& rows;

  __device__ __forceinline__ MmaMainloop(const W4A16Args& args, const MmaWarpTile<kNTiles, kSiluGate>& tile,
                                         const MmaKSplit& k, bool tiles, int lane, MmaWeightRows<kNTiles>& weight_rows)
      : a(args),
        k_end(k.end),
        t(lane % 4),
        row_bytes(args.k / 2),
        groups(args.group_size),
        chunks_per_row(args.k / 128),
        wstride(tiles ? (args.n / 16) * 1024 : 64),
        zeros(args.zeros),
        rows(weight_rows) {
    const int g = lane / 4;
#pragma unroll
    for (int nt = 0; nt < kNTiles; ++nt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int64_t r8 = tile.first_row(nt, h), n = min(r8 + g, a.n - 1);  // a clamped row is never written
        const int64_t tile_bytes =
            kSiluGate ? (r8 / 16) * 1024 + (r8 / 8 % 2) * 512 : (tile.n0 / 16 + nt) * 1024 + h * 512;
        rows.wptr[nt][h] = (tiles ? a.qweight + tile_bytes + lane * 16 : a.qweight + n * row_bytes + 16 * t) +
                           (k.begin / 128) * wstride;
        rows.group_row[nt][h] = groups.row_start(n, a.k);
      }
  }

  // Steps at or past k_end are never computed: no loads. A chunk past k_end inside a computed
  // step (kChunks > 1) is zero-filled (scale 0: its weights count 0). kScaleAfter: one group a
  // chunk or fewer (a power of two from 128), the lane's t does not change it.
  __device__ __forceinline__ void load_step(int k0, Step& s) {
#pragma unroll
    for (int c = 0; c < kChunks; ++c) {
      const unsigned kc = static_cast<unsigned>(k0 + 128 * c);
      const bool valid = k0 + 128 * c < k_end;
      const unsigned group = kScaleAfter ? kc >> groups.shift : groups.of(kc + 32 * t);
#pragma unroll
      for (int nt = 0; nt < kNTiles; ++nt)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          if (valid) {
            s.w[nt][h][c] = load_streaming(rows.wptr[nt][h] + c * wstride);
            s.scale[nt][h][c] = load_scale<kScale>(a.scales, rows.group_row[nt][h] + group);
            s.zero[nt][h][c] = zeros.load(rows.group_row[nt][h] + group);
          } else if (kChunks > 1) {
            s.w[nt][h][c] = make_uint4(0, 0, 0, 0);
            s.scale[nt][h][c] = 0;
            s.zero[nt][h][c] = 0;
          }
        }
    }
#pragma unroll
    for (int nt = 0; nt < kNTiles; ++nt)
#pragma unroll
      for (int h = 0; h < 2; ++h) rows.wptr[nt][h] += kChunks * wstride;
  }

  // The first kStages - 1 steps from k_begin into the ring (issued before the kernel ahead
  // finishes).
  __device__ __forceinline__ void load_prologue(int k_begin, Step (&ring)[kStages]) {
#pragma unroll
    for (int s = 0; s < kStages - 1; ++s) load_step(k_begin + s * kStepK, ring[s]);
  }

  // Word w of chunk c of `cur` as the A fragments of rows g and g + 8 of every tile: the pairs
  // as they are (kScaleAfter) or (q - z) s in x's dtype.
  __device__ __forceinline__ void dequantize_word(const Step& cur, int c, int w, const float (&scale)[kNTiles][2],
                                                  const float (&zero)[kNTiles][2], const uint32_t (&s2)[kNTiles][2],
                                                  const uint32_t (&z2)[kNTiles][2],
                                                  uint32_t (&frag)[kNTiles][2][4]) const {
#pragma unroll
    for (int nt = 0; nt < kNTiles; ++nt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const uint32_t word = word_of(cur.w[nt][h][c], w);
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const uint32_t q = int4_pair<kType>(word, i);
          if constexpr (kScaleAfter) {
            frag[nt][h][i] = q;
          } else if constexpr (kType == FloatType::kBF16) {
            frag[nt][h][i] = Math::dequant_fp32(q, scale[nt][h], zero[nt][h] * scale[nt][h]);
          } else {
            frag[nt][h][i] = Math::dequant(q, z2[nt][h], s2[nt][h]);
          }
        }
      }
  }

  // Chunk c of the step at k0 into acc.
  template <typename X>
  __device__ __forceinline__ void compute_chunk(const Step& cur, int k0, int c, const X& x, Acc& acc) const {
    const int chunk = (k0 + 128 * c) >> 7;
    const bool valid = k0 + 128 * c < k_end;  // uniform per warp
    float scale[kNTiles][2], zero[kNTiles][2];
    uint32_t z2[kNTiles][2], s2[kNTiles][2];
#pragma unroll
    for (int nt = 0; nt < kNTiles; ++nt)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        scale[nt][h] = scale_value<kScale>(cur.scale[nt][h][c]);
        zero[nt][h] = Math::offset_plus(cur.zero[nt][h][c]);
        if constexpr (!kScaleAfter && kType == FloatType::kF16) {
          s2[nt][h] = Math::splat(scale[nt][h]);
          z2[nt][h] = Math::splat(zero[nt][h]);
        }
      }
    float part[kMTiles][kNTiles][4];
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
      for (int nt = 0; nt < kNTiles; ++nt)
#pragma unroll
        for (int i = 0; i < 4; ++i) part[mt][nt][i] = 0.0f;
#pragma unroll
    for (int w = 0; w < 4; ++w) {
      uint32_t frag[kNTiles][2][4];  // [tile][row g / g + 8][nibble pair i]
      dequantize_word(cur, c, w, scale, zero, s2, z2, frag);
#pragma unroll
      for (int mt = 0; mt < kMTiles; ++mt) {
        const uint4 xv = x.fragment(mt, k0, c, chunk, w, valid);
#pragma unroll
        for (int nt = 0; nt < kNTiles; ++nt) {
          const uint32_t a0[4] = {frag[nt][0][0], frag[nt][1][0], frag[nt][0][1], frag[nt][1][1]};
          const uint32_t a1[4] = {frag[nt][0][2], frag[nt][1][2], frag[nt][0][3], frag[nt][1][3]};
          KvTraits<kType>::mma(part[mt][nt], a0, xv.x, xv.y);
          KvTraits<kType>::mma(part[mt][nt], a1, xv.z, xv.w);
        }
      }
    }
    // kScaleAfter: the chunk's sums turned into s (sum (offset + q) x - (offset + z) sum x) per
    // row (one group per chunk).
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt) {
      float x0 = 0.0f, x1 = 0.0f;  // the chunk's x sums of tokens 2t, 2t + 1 (c0, c1)
      if (kScaleAfter && (kChunks == 1 || valid)) x.sums(mt, k0, c, chunk, x0, x1);
#pragma unroll
      for (int nt = 0; nt < kNTiles; ++nt)
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          if constexpr (kScaleAfter) {
            const int h = i >> 1;
            acc[mt][nt][i] =
                fmaf(scale[nt][h], fmaf(-zero[nt][h], (i & 1) ? x1 : x0, part[mt][nt][i]), acc[mt][nt][i]);
          } else {
            acc[mt][nt][i] += part[mt][nt][i];
          }
        }
    }
  }

  // The warp's K range from k_begin: each step's loads kStages - 1 steps ahead of its MMAs in a
  // ring of kStages steps, indexed by compile-time constants only (the loop over it unrolls), so
  // that it stays in registers.
  template <typename X>
  __device__ __forceinline__ void run(int k_begin, Step (&ring)[kStages], const X& x, Acc& acc) {
    for (int k0 = k_begin; k0 < k_end; k0 += kStages * kStepK) {
#pragma unroll
      for (int s = 0; s < kStages; ++s) {
        const int ks = k0 + s * kStepK;
        if (ks >= k_end) break;
        load_step(ks + (kStages - 1) * kStepK, ring[(s + kStages - 1) % kStages]);
#pragma unroll
        for (int c = 0; c < kChunks; ++c) compute_chunk(ring[s], ks, c, x, acc);
      }
    }
  }
};

}  // namespace brisk::cuda
