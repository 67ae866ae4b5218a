// The mma.sync prefill kernel's pieces (prefill_attention.cuh): its configuration, its work (one
// block per (kv head, sequence, row tile)) and the per-warp mainloop and epilogue.
//
// Mainloop, per warp and K / V tile: S = Q K^T (fp32), masking only on tiles that cross a row's
// causal / window bound, tiles no row of the warp sees skipped, online softmax in log2 units, P
// rounded to the KV dtype (the row sums add the rounded weights), O += P V. Q fragments stay in
// registers when they fit (m_tiles * head_dim <= 128), else they are re-read from shared memory
// per k-step. Epilogue: O / l in the output dtype, straight from the accumulators.
#pragma once

#include <cstdint>

#include "backend/cuda/kernels/float_io.cuh"
#include "backend/cuda/kernels/mma_common.cuh"
#include "backend/cuda/kernels/paged_kv_tiles.cuh"
#include "backend/cuda/kernels/prefill_attention/prefill_attention.h"
#include "backend/cuda/kernels/prefill_attention/query_rows.cuh"

namespace brisk::cuda::prefill {

template <int kHeadDimArg, int kMTilesArg, int kTileKeysArg, int kStagesArg, int kBlocksPerSmArg,
          KvCodes kCodesArg = KvCodes::kNone>
struct PrefillConfig : KvRingLayout<kHeadDimArg, kTileKeysArg, 128, kCodesArg> {
  using Ring = KvRingLayout<kHeadDimArg, kTileKeysArg, 128, kCodesArg>;
  static constexpr int kHeadDim = kHeadDimArg;
  static constexpr int kWarps = 4;
  static constexpr int kThreads = kWarps * 32;
  static constexpr int kMTiles = kMTilesArg;            // 16-row mma tiles per warp
  static constexpr int kWarpRows = 16 * kMTiles;
  static constexpr int kRows = kWarps * kWarpRows;      // query rows per block
  static constexpr int kTileKeys = kTileKeysArg;        // keys per pipeline stage
  static constexpr int kNTiles = kTileKeys / 8;         // n-tiles of S per m-tile
  static constexpr int kStages = kStagesArg;
  static constexpr int kBlocksPerSm = kBlocksPerSmArg;
  static constexpr int kChunks = kHeadDim / 8;          // 16-byte chunks per 16-bit row
  static constexpr int kQBytes = kRows * kHeadDim * 2;
  static constexpr int kFloatTileBytes = kTileKeys * kHeadDim * 2;  // K (or V) of a tile the math reads
  static constexpr int kStageBytes = Ring::kStageBytes;
  // A quantized cache's tile is dequantized into one 16-bit {K, V} tile before the math.
  static constexpr int kDequantBytes = kCodesArg == KvCodes::kNone ? 0 : 2 * kFloatTileBytes;
  static constexpr int kSharedBytes = kQBytes + kStages * kStageBytes + kDequantBytes;
  static constexpr bool kQInRegisters = kMTiles * kHeadDim <= 128;
  static_assert(kTileKeys % 16 == 0 && kStages >= 2);
  static_assert(kBlocksPerSm * (kSharedBytes + 1024) <= 228 * 1024);
};

// A block's work: grid (kv head, sequence, row tile), row tiles from the last one down, so the
// tiles that see the most keys (the long causal rows) start first and the short ones fill the
// tail. num_rows <= 0: the sequence has no such row tile.
struct MmaWork {
  int kv_head, seq, q_begin, row0, num_rows, past, key_base, key_end, num_tiles;
};

template <typename C>
__device__ __forceinline__ MmaWork mma_work(const PrefillAttentionArgs& a, int group) {
  MmaWork w;
  w.kv_head = blockIdx.x;
  w.seq = blockIdx.y;
  const int row_tile = static_cast<int>(gridDim.z) - 1 - static_cast<int>(blockIdx.z);
  w.q_begin = a.query_start[w.seq];
  const int q_len = a.query_start[w.seq + 1] - w.q_begin;
  const int context_len = a.context_lens[w.seq];
  w.row0 = row_tile * C::kRows;
  w.num_rows = min(C::kRows, group * q_len - w.row0);
  w.past = context_len - q_len;  // position of the sequence's first new token
  // Keys the block's rows see: up to the last row's position, from the first row's window.
  const int first_position = w.past + w.row0 / group;
  const int last_position = w.past + (w.row0 + w.num_rows - 1) / group;
  const int window = a.sliding_window;
  const int lowest_key = window > 0 ? max(0, first_position - window + 1) : 0;
  w.key_end = max(0, last_position + 1);
  w.key_base = lowest_key & ~(C::kTileKeys - 1);  // tiles align with cache blocks
  w.num_tiles = w.key_end > w.key_base ? (w.key_end - w.key_base + C::kTileKeys - 1) / C::kTileKeys : 0;
  return w;
}

// The block's q rows -> shared memory in the KV dtype, XOR-swizzled; rows past num_rows are zeros.
template <FloatType kKvType, typename C>
__device__ __forceinline__ void mma_stage_q(const PrefillAttentionArgs& a, const MmaWork& w, int group, uint8_t* q_s) {
  for (int e = threadIdx.x; e < C::kRows * C::kChunks; e += C::kThreads) {
    const int r = e / C::kChunks;
    const int c = e % C::kChunks;
    const uint4 words = r < w.num_rows ? load_q_chunk<kKvType, C::kHeadDim>(a, w.q_begin, w.row0 + r, group, w.kv_head, c)
                                       : make_uint4(0, 0, 0, 0);
    *reinterpret_cast<uint4*>(q_s + swizzled<C::kChunks>(r, c)) = words;
  }
}

template <FloatType kKvType, typename C>
struct MmaMainloop {
  static constexpr int kHeadDim = C::kHeadDim;
  static constexpr int kTileKeys = C::kTileKeys;
  static constexpr int kMTiles = C::kMTiles;
  static constexpr int kNTiles = C::kNTiles;
  static constexpr int kDTiles = kHeadDim / 8;  // n-tiles of O per m-tile
  static constexpr int kRowBytes = C::kChunks * 16;
  static constexpr int kQRegTiles = C::kQInRegisters ? kMTiles : 1;
  static constexpr int kQRegSteps = C::kQInRegisters ? kHeadDim / 16 : 1;
  using Kv = KvTraits<kKvType>;

  int lane, g, t4, warp_row0;
  int row_hi[kMTiles][2], row_lo[kMTiles][2];  // visible keys [row_lo, row_hi]
  int warp_rows;                 // the warp's real rows (<= 0: the warp idles)
  int warp_first, warp_last;     // positions of its first and last real rows
  int all_lo, some_lo;           // every row sees [all_lo, warp_first], some row [some_lo, warp_last]
  float scale_log2;
  float m[kMTiles][2];  // running max of the scaled scores (log2 units)
  float l[kMTiles][2];  // this thread's share of the running sums
  float acc[kMTiles][kDTiles][4];
  uint32_t q_off[4], k_off[4], v_off[4];  // ldmatrix addresses (below)
  uint32_t q_frag[kQRegTiles][kQRegSteps][4];

  __device__ __forceinline__ MmaMainloop(const PrefillAttentionArgs& a, const MmaWork& w, int group) {
    lane = threadIdx.x % 32;
    g = lane / 4;
    t4 = lane % 4;
    warp_row0 = static_cast<int>(threadIdx.x / 32) * C::kWarpRows;  // rows warp_row0 + 16 mt + g (+ 8)
    const int window = a.sliding_window;
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const int r = warp_row0 + 16 * mt + g + 8 * h;
        // Padding rows see what the last row sees: finite values, never written.
        row_hi[mt][h] = w.past + (w.row0 + min(r, w.num_rows - 1)) / group;
        row_lo[mt][h] = window > 0 ? row_hi[mt][h] - window + 1 : 0;
      }
    }
    warp_rows = min(C::kWarpRows, w.num_rows - warp_row0);
    warp_first = w.past + (w.row0 + warp_row0) / group;
    warp_last = w.past + (w.row0 + warp_row0 + max(warp_rows, 1) - 1) / group;
    all_lo = window > 0 ? warp_last - window + 1 : 0;
    some_lo = window > 0 ? warp_first - window + 1 : 0;
    scale_log2 = a.scale * kLog2e;
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt) {
      m[mt][0] = m[mt][1] = -INFINITY;
      l[mt][0] = l[mt][1] = 0.0f;
#pragma unroll
      for (int n = 0; n < kDTiles; ++n) acc[mt][n][0] = acc[mt][n][1] = acc[mt][n][2] = acc[mt][n][3] = 0.0f;
    }
  }

  // After q_s is written. ldmatrix addresses: chunk 2 kk + c of a row r with r % 8 == lane % 8
  // lies at swizzled(r, 2 (kk % 4) + c) + 128 (kk / 4): four per-thread offsets (kk % 4) per
  // operand, the rest compile-time immediates (without this the compiler keeps one register per
  // (row, k-step) address and spills).
  __device__ __forceinline__ void load_q(const uint8_t* q_s) {
    const int matrix = lane / 8;
#pragma unroll
    for (int s4 = 0; s4 < 4; ++s4) {
      q_off[s4] = shared_address(q_s) + swizzled<C::kChunks>(warp_row0 + (matrix & 1) * 8 + lane % 8, 2 * s4 + (matrix >> 1));
      k_off[s4] = swizzled<C::kChunks>((matrix >> 1) * 8 + lane % 8, 2 * s4 + (matrix & 1));
      v_off[s4] = swizzled<C::kChunks>((matrix & 1) * 8 + lane % 8, 2 * s4 + (matrix >> 1));
    }
    if constexpr (C::kQInRegisters) {
#pragma unroll
      for (int mt = 0; mt < kMTiles; ++mt) {
#pragma unroll
        for (int kk = 0; kk < kHeadDim / 16; ++kk) load_q_frag(q_frag[mt][kk], mt, kk);
      }
    }
  }
  __device__ __forceinline__ void load_q_frag(uint32_t (&frag)[4], int mt, int kk) const {
    ldmatrix_x4(frag, q_off[kk % 4] + mt * 16 * kRowBytes + (kk / 4) * 128);
  }

  // S = Q K^T: per m-tile, n-tile n holds keys 8n .. 8n + 7 of the tile.
  __device__ __forceinline__ void scores(float (&s)[kMTiles][kNTiles][4], uint32_t k_base) const {
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt) {
#pragma unroll
      for (int n = 0; n < kNTiles; ++n) s[mt][n][0] = s[mt][n][1] = s[mt][n][2] = s[mt][n][3] = 0.0f;
    }
#pragma unroll
    for (int kk = 0; kk < kHeadDim / 16; ++kk) {
      uint32_t qa[kMTiles][4];
#pragma unroll
      for (int mt = 0; mt < kMTiles; ++mt) {
        if constexpr (C::kQInRegisters) {
#pragma unroll
          for (int i = 0; i < 4; ++i) qa[mt][i] = q_frag[mt][kk][i];
        } else {
          load_q_frag(qa[mt], mt, kk);
        }
      }
#pragma unroll
      for (int nk = 0; nk < kTileKeys / 16; ++nk) {
        uint32_t b[4];
        ldmatrix_x4(b, k_base + k_off[kk % 4] + nk * 16 * kRowBytes + (kk / 4) * 128);
#pragma unroll
        for (int mt = 0; mt < kMTiles; ++mt) {
          Kv::mma(s[mt][2 * nk], qa[mt], b[0], b[1]);
          Kv::mma(s[mt][2 * nk + 1], qa[mt], b[2], b[3]);
        }
      }
    }
  }

  // Mask, online softmax (log2 units), P in the KV dtype as the A operand of P V: k-step j
  // (keys 16 j ..) takes n-tiles 2 j (a0: row g, a1: row g + 8) and 2 j + 1 (a2, a3).
  __device__ __forceinline__ void softmax(const float (&s)[kMTiles][kNTiles][4], int key0, bool masked,
                                          uint32_t (&p_frag)[kMTiles][kTileKeys / 16][4]) {
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        float x[kNTiles][2];
        float tile_max = -INFINITY;
#pragma unroll
        for (int n = 0; n < kNTiles; ++n) {
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            float v = s[mt][n][2 * h + e] * scale_log2;
            if (masked) {
              const int key = key0 + n * 8 + 2 * t4 + e;
              if (key > row_hi[mt][h] || key < row_lo[mt][h]) v = -INFINITY;
            }
            x[n][e] = v;
            tile_max = fmaxf(tile_max, v);
          }
        }
        tile_max = quad_max(tile_max);
        const float m_new = fmaxf(m[mt][h], tile_max);
        const float base = m_new == -INFINITY ? 0.0f : m_new;
        const float alpha = exp2f(m[mt][h] - base);  // 0 while nothing was visible
        m[mt][h] = m_new;
        float sum = 0.0f;
#pragma unroll
        for (int n = 0; n < kNTiles; ++n) {
          float r0, r1;
          p_frag[mt][n / 2][(n & 1) * 2 + h] = Kv::pack(exp2f(x[n][0] - base), exp2f(x[n][1] - base), r0, r1);
          sum += r0 + r1;
        }
        l[mt][h] = l[mt][h] * alpha + sum;
#pragma unroll
        for (int n = 0; n < kDTiles; ++n) {
          acc[mt][n][2 * h] *= alpha;
          acc[mt][n][2 * h + 1] *= alpha;
        }
      }
    }
  }

  // O += P V: V rows are keys (k), columns head dims (n), read transposed.
  __device__ __forceinline__ void accumulate(const uint32_t (&p_frag)[kMTiles][kTileKeys / 16][4], uint32_t v_base) {
#pragma unroll
    for (int j = 0; j < kTileKeys / 16; ++j) {
#pragma unroll
      for (int dn = 0; dn < kHeadDim / 16; ++dn) {
        uint32_t b[4];
        ldmatrix_x4_trans(b, v_base + v_off[dn % 4] + j * 16 * kRowBytes + (dn / 4) * 128);
#pragma unroll
        for (int mt = 0; mt < kMTiles; ++mt) {
          Kv::mma(acc[mt][2 * dn], p_frag[mt][j], b[0], b[1]);
          Kv::mma(acc[mt][2 * dn + 1], p_frag[mt][j], b[2], b[3]);
        }
      }
    }
  }

  // One K / V tile (keys from key0) in shared memory at k_base.
  __device__ __forceinline__ void tile(int key0, uint32_t k_base) {
    const int key_last = key0 + kTileKeys - 1;
    if (warp_rows <= 0 || key0 > warp_last || key_last < some_lo) return;  // no row sees the tile
    const bool masked = key_last > warp_first || key0 < all_lo;
    float s[kMTiles][kNTiles][4];
    scores(s, k_base);
    uint32_t p_frag[kMTiles][kTileKeys / 16][4];
    softmax(s, key0, masked, p_frag);
    accumulate(p_frag, k_base + C::kFloatTileBytes);
  }

  // Epilogue: rows g and g + 8 of each m-tile, columns 8 n + 2 t4 (+1).
  __device__ __forceinline__ void store(const PrefillAttentionArgs& a, const MmaWork& w, int group) const {
    const bool pairs = a.out_pairs && a.out_type == kKvType;
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt) {
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const float row_sum = quad_sum(l[mt][h]);
        const int r = warp_row0 + 16 * mt + g + 8 * h;
        if (r >= w.num_rows) continue;
        const float inv_sum = row_sum > 0.0f ? 1.0f / row_sum : 0.0f;
        const int64_t index = query_row_offset<kHeadDim>(a.out_stride, w.q_begin, w.row0 + r, group, w.kv_head) + 2 * t4;
#pragma unroll
        for (int n = 0; n < kDTiles; ++n)
          store_out_pair<kKvType>(a, pairs, index + n * 8, acc[mt][n][2 * h] * inv_sum, acc[mt][n][2 * h + 1] * inv_sum);
      }
    }
  }
};

}  // namespace brisk::cuda::prefill
