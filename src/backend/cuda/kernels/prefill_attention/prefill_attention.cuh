// Paged causal GQA prefill attention on tensor cores (mma.sync m16n8k16, bf16 / f16),
// FlashAttention-2 style.
//
// Work split: one thread block of 4 warps per (kv head, sequence, row tile). The block's rows are
// (token, head) pairs of one sequence that share the kv head, token-major (row = token * group +
// head in group), so every K/V tile read from the cache serves the whole GQA group, and a chunk
// of few tokens still fills the rows. Warp w owns rows [w * 16 m_tiles, (w + 1) * 16 m_tiles).
// Grid z runs over row tiles from the last one down, so the tiles that see the most keys (the
// long causal rows) start first and the short ones fill the tail; tiles beyond a sequence's
// rows exit at once.
//
// Mainloop: key tiles of kTileKeys keys from the lowest key any row sees (sliding window) to
// the last row's position. K and V stream from the paged cache with 16-byte cp.async (zero fill
// past the end, rows XOR-swizzled for conflict-free ldmatrix) through a kStages-deep ring; the
// block-table entries of a tile are loaded one tile ahead. Per warp and tile: S = Q K^T (fp32),
// masking only on tiles that cross a row's causal / window bound, tiles no row of the warp sees
// skipped, online softmax in log2 units, P rounded to the KV dtype (the row sums add the rounded
// weights), O += P V. Q fragments stay in registers when they fit (m_tiles * head_dim <= 128),
// else they are re-read from shared memory per k-step.
//
// Epilogue: O / l in the output dtype, straight from the accumulators.
#pragma once

#include <cstdint>

#include "backend/cuda/kernels/float_io.cuh"
#include "backend/cuda/kernels/mma_common.cuh"
#include "backend/cuda/kernels/paged_kv_tiles.cuh"
#include "backend/cuda/kernels/prefill_attention/prefill_attention.h"
#include "backend/cuda/kernels/prefill_attention/query_rows.cuh"
#include "backend/cuda/kernels/dynamic_shared_memory.cuh"
#include "backend/cuda/runtime/cuda_check.h"

namespace brisk::cuda::prefill {

template <int kHeadDimArg, int kMTilesArg, int kTileKeysArg, int kStagesArg, int kBlocksPerSmArg>
struct PrefillConfig {
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
  static constexpr int kChunks = kHeadDim / 8;          // 16-byte chunks per row
  static constexpr int kQBytes = kRows * kHeadDim * 2;
  static constexpr int kTileBytes = kTileKeys * kHeadDim * 2;  // K (or V) of one stage
  static constexpr int kStageBytes = 2 * kTileBytes;
  static constexpr int kSharedBytes = kQBytes + kStages * kStageBytes;
  static constexpr int kLoadsPerThread = kTileKeys * kChunks / kThreads;  // per K (or V) tile
  static constexpr int kKeyStep = kThreads / kChunks;  // keys between a thread's loads
  static constexpr bool kQInRegisters = kMTiles * kHeadDim <= 128;
  static_assert(kThreads % kChunks == 0 && kLoadsPerThread * kKeyStep == kTileKeys);
  static_assert(kTileKeys % 16 == 0 && kStages >= 2);
  static_assert(kBlocksPerSm * (kSharedBytes + 1024) <= 228 * 1024);
};

template <FloatType kKvType, typename C>
__global__ void __launch_bounds__(C::kThreads, C::kBlocksPerSm)
prefill_attention_kernel(const PrefillAttentionArgs a) {
  constexpr int kHeadDim = C::kHeadDim;
  constexpr int kThreads = C::kThreads;
  constexpr int kTileKeys = C::kTileKeys;
  constexpr int kMTiles = C::kMTiles;
  constexpr int kNTiles = C::kNTiles;
  constexpr int kChunks = C::kChunks;
  constexpr int kStages = C::kStages;
  constexpr int kLoads = C::kLoadsPerThread;
  constexpr int kDTiles = kHeadDim / 8;  // n-tiles of O per m-tile
  using Kv = KvTraits<kKvType>;
  extern __shared__ __align__(128) uint8_t shared[];
  uint8_t* q_s = shared;                      // [rows, head_dim], swizzled
  uint8_t* ring_s = shared + C::kQBytes;      // kStages x {K tile, V tile}

  const int tid = threadIdx.x;
  const int lane = tid % 32;
  const int warp = tid / 32;
  const int kv_head = blockIdx.x;
  const int seq = blockIdx.y;
  const int row_tile = static_cast<int>(gridDim.z) - 1 - static_cast<int>(blockIdx.z);
  const int group = a.num_heads / a.num_kv_heads;

  const int q_begin = a.query_start[seq];
  const int q_len = a.query_start[seq + 1] - q_begin;
  const int context_len = a.context_lens[seq];
  const int row0 = row_tile * C::kRows;
  const int num_rows = min(C::kRows, group * q_len - row0);
  if (num_rows <= 0) return;  // uniform over the block, before any barrier
  const int past = context_len - q_len;  // position of the sequence's first new token

  // Keys the block's rows see: up to the last row's position, from the first row's window.
  const int first_position = past + row0 / group;
  const int last_position = past + (row0 + num_rows - 1) / group;
  const int window = a.sliding_window;
  const int lowest_key = window > 0 ? max(0, first_position - window + 1) : 0;
  const int key_end = max(0, last_position + 1);
  const int key_base = lowest_key & ~(kTileKeys - 1);  // tiles align with cache blocks
  const int num_tiles = key_end > key_base ? (key_end - key_base + kTileKeys - 1) / kTileKeys : 0;

  // K/V tiles from the paged cache; the pipeline is filled first, then q is staged meanwhile.
  const PagedKvTiles<C, PrefillAttentionArgs> tiles(a, seq, kv_head, key_base, key_end, num_tiles);
  int table_ids[kLoads];  // ids of the next tile to issue, loaded one tile ahead
  tiles.fill(ring_s, table_ids);

  // q rows -> shared memory in the KV dtype; rows past num_rows are zeros.
  for (int e = tid; e < C::kRows * kChunks; e += kThreads) {
    const int r = e / kChunks;
    const int c = e % kChunks;
    const uint4 words =
        r < num_rows ? load_q_chunk<kKvType, kHeadDim>(a, q_begin, row0 + r, group, kv_head, c) : make_uint4(0, 0, 0, 0);
    *reinterpret_cast<uint4*>(q_s + swizzled<kChunks>(r, c)) = words;
  }

  // This thread's rows of the mma layout: warp_row0 + 16 mt + g (+ 8).
  const int g = lane / 4;
  const int t4 = lane % 4;
  const int matrix = lane / 8;
  const int warp_row0 = warp * C::kWarpRows;
  int row_hi[kMTiles][2], row_lo[kMTiles][2];  // visible keys [row_lo, row_hi]
#pragma unroll
  for (int mt = 0; mt < kMTiles; ++mt) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = warp_row0 + 16 * mt + g + 8 * h;
      // Padding rows see what the last row sees: finite values, never written.
      row_hi[mt][h] = past + (row0 + min(r, num_rows - 1)) / group;
      row_lo[mt][h] = window > 0 ? row_hi[mt][h] - window + 1 : 0;
    }
  }
  // The warp's real rows: keys every one of them sees, and keys some of them see.
  const int warp_rows = min(C::kWarpRows, num_rows - warp_row0);  // <= 0: the warp idles
  const int warp_first = past + (row0 + warp_row0) / group;
  const int warp_last = past + (row0 + warp_row0 + max(warp_rows, 1) - 1) / group;
  const int all_lo = window > 0 ? warp_last - window + 1 : 0;    // every row sees [all_lo, warp_first]
  const int some_lo = window > 0 ? warp_first - window + 1 : 0;  // some row sees [some_lo, warp_last]
  const float scale_log2 = a.scale * kLog2e;

  float m[kMTiles][2];  // running max of the scaled scores (log2 units)
  float l[kMTiles][2];  // this thread's share of the running sums
  float acc[kMTiles][kDTiles][4];
#pragma unroll
  for (int mt = 0; mt < kMTiles; ++mt) {
    m[mt][0] = m[mt][1] = -INFINITY;
    l[mt][0] = l[mt][1] = 0.0f;
#pragma unroll
    for (int n = 0; n < kDTiles; ++n) acc[mt][n][0] = acc[mt][n][1] = acc[mt][n][2] = acc[mt][n][3] = 0.0f;
  }

  __syncthreads();  // q_s is written
  // ldmatrix addresses. Chunk 2 kk + c of a row r with r % 8 == lane % 8 lies at
  // swizzled(r, 2 (kk % 4) + c) + 128 (kk / 4): four per-thread offsets (kk % 4) per operand,
  // the rest compile-time immediates (without this the compiler keeps one register per
  // (row, k-step) address and spills).
  constexpr int kRowBytes = kChunks * 16;
  uint32_t q_off[4], k_off[4], v_off[4];
#pragma unroll
  for (int s4 = 0; s4 < 4; ++s4) {
    q_off[s4] = shared_address(q_s) + swizzled<kChunks>(warp_row0 + (matrix & 1) * 8 + lane % 8, 2 * s4 + (matrix >> 1));
    k_off[s4] = swizzled<kChunks>((matrix >> 1) * 8 + lane % 8, 2 * s4 + (matrix & 1));
    v_off[s4] = swizzled<kChunks>((matrix & 1) * 8 + lane % 8, 2 * s4 + (matrix >> 1));
  }
  auto load_q_frag = [&](uint32_t (&frag)[4], int mt, int kk) {
    ldmatrix_x4(frag, q_off[kk % 4] + mt * 16 * kRowBytes + (kk / 4) * 128);
  };
  constexpr int kQRegTiles = C::kQInRegisters ? kMTiles : 1;
  constexpr int kQRegSteps = C::kQInRegisters ? kHeadDim / 16 : 1;
  uint32_t q_frag[kQRegTiles][kQRegSteps][4];
  if constexpr (C::kQInRegisters) {
#pragma unroll
    for (int mt = 0; mt < kMTiles; ++mt) {
#pragma unroll
      for (int kk = 0; kk < kHeadDim / 16; ++kk) load_q_frag(q_frag[mt][kk], mt, kk);
    }
  }

  for (int t = 0; t < num_tiles; ++t) {
    cp_async_wait<kStages - 2>();
    __syncthreads();  // tile t landed for every thread; everyone is done with tile t - 1's slot
    tiles.issue(t + kStages - 1, table_ids, ring_s);
    cp_async_commit();
    tiles.fetch_ids(t + kStages, table_ids);

    const int key0 = key_base + t * kTileKeys;
    const int key_last = key0 + kTileKeys - 1;
    if (warp_rows <= 0 || key0 > warp_last || key_last < some_lo) continue;  // no row sees the tile
    const bool masked = key_last > warp_first || key0 < all_lo;
    const uint32_t k_base = shared_address(ring_s + (t % kStages) * C::kStageBytes);
    const uint32_t v_base = k_base + C::kTileBytes;

    // S = Q K^T: per m-tile, n-tile n holds keys 8n .. 8n + 7 of the tile.
    float s[kMTiles][kNTiles][4];
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

    // Mask, online softmax (log2 units), P in the KV dtype as the A operand of P V: k-step j
    // (keys 16 j ..) takes n-tiles 2 j (a0: row g, a1: row g + 8) and 2 j + 1 (a2, a3).
    uint32_t p_frag[kMTiles][kTileKeys / 16][4];
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

    // O += P V: V rows are keys (k), columns head dims (n), read transposed.
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
  cp_async_wait<0>();

  // Epilogue: rows g and g + 8 of each m-tile, columns 8 n + 2 t4 (+1).
  const bool pairs = a.out_pairs && a.out_type == kKvType;
#pragma unroll
  for (int mt = 0; mt < kMTiles; ++mt) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const float row_sum = quad_sum(l[mt][h]);
      const int r = warp_row0 + 16 * mt + g + 8 * h;
      if (r >= num_rows) continue;
      const float inv_sum = row_sum > 0.0f ? 1.0f / row_sum : 0.0f;
      const int64_t index = query_row_offset<kHeadDim>(a.out_stride, q_begin, row0 + r, group, kv_head) + 2 * t4;
#pragma unroll
      for (int n = 0; n < kDTiles; ++n)
        store_out_pair<kKvType>(a, pairs, index + n * 8, acc[mt][n][2 * h] * inv_sum, acc[mt][n][2 * h + 1] * inv_sum);
    }
  }
}

template <FloatType kKvType, int kHeadDim, int kMTiles, int kTileKeys, int kStages, int kBlocksPerSm>
void launch_prefill_attention_instance(const PrefillAttentionArgs& a, cudaStream_t stream) {
  using Config = PrefillConfig<kHeadDim, kMTiles, kTileKeys, kStages, kBlocksPerSm>;
  constexpr auto kernel = prefill_attention_kernel<kKvType, Config>;
  allow_dynamic_shared_memory<kernel>(Config::kSharedBytes);
  const dim3 grid(a.num_kv_heads, a.num_seqs, a.num_row_tiles);
  kernel<<<grid, Config::kThreads, Config::kSharedBytes, stream>>>(a);
  BRISK_CUDA_CHECK_LAUNCH();
}

}  // namespace brisk::cuda::prefill
