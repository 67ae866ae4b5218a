// The W4A16 wgmma kernel's outputs (w4a16_wgmma.cu; also the FP8 kernel's, fp8/fp8_wgmma.cu, whose
// arguments carry the same fields): y staged through shared memory (or stored
// from the fragments where y is f32 or unaligned), and the fp32 partials of a K split in their
// tile layout (w4a16_wgmma.h), which w4a16_wgmma_reduce_kernel sums.
#pragma once

#include <cstdint>

#include "backend/cuda/kernels/float_io.cuh"
#include "backend/cuda/kernels/hopper_async.cuh"
#include "backend/cuda/kernels/launch.h"
#include "backend/cuda/kernels/mma_common.cuh"
#include "backend/cuda/kernels/silu.cuh"
#include "backend/cuda/kernels/w4a16/streaming_load.cuh"
#include "backend/cuda/kernels/w4a16/w4a16_wgmma.h"
#include "backend/cuda/kernels/w4a16/wgmma_tile_scheduler.cuh"

namespace brisk::cuda {

// The epilogue through shared memory (the ring, free once the MMAs are complete): y in a 16-bit
// dtype with 16-byte aligned rows, or the fp32 partials of split-K. Each warpgroup writes its
// [tokens, 64 rows] tile there, XOR-swizzled by token (swizzled<>: conflict-free), then stores
// whole 16-byte chunks, 8 or 16 lanes a token's 128 or 256 contiguous bytes: stored from the
// fragments (2 or 4 bytes a lane, 16 bytes a row and token) they took a large share of the kernel
// (docs/perf/w4a16.md).
template <class Args>
__device__ __forceinline__ bool tile_stores_16bit(const Args& a) {
  return a.y_type != FloatType::kF32 && a.y_stride % 8 == 0 && reinterpret_cast<uintptr_t>(a.y) % 16 == 0;
}

// The copy out of a warpgroup's staged tile: kChunks 16-byte chunks a token, chunk c of token tk
// at at(tk, c) in shared memory and at out + tk * stride_bytes + 16 c in global memory, for the
// tokens before `tokens` and the chunks before `chunks` (the columns inside N).
template <int kTokens, int kChunks, typename At>
__device__ __forceinline__ void copy_tile_out(At at, void* out, int64_t stride_bytes, int tokens, int64_t chunks) {
  hopper::named_barrier_sync(2 + threadIdx.x / 128, 128);  // the warpgroup's tile is written
#pragma unroll 4
  for (int u = threadIdx.x % 128; u < kTokens * kChunks; u += 128) {
    const int token = u / kChunks, chunk = u % kChunks;
    if (token < tokens && chunk < chunks) {
      *reinterpret_cast<uint4*>(static_cast<uint8_t*>(out) + token * stride_bytes + 16 * chunk) =
          load_shared_u128(at(token, chunk));
    }
  }
}

// row0: the warpgroup's first weight row, or with kSiluGate its first feature (32 a warpgroup,
// 8 a warp: a [tokens][32 features] tile of 64-byte rows, swizzled by token / 2).
template <int kTokens, bool kSiluGate, class Args>
__device__ __forceinline__ void store_tile(const Args& a, const float (&acc)[kTokens / 2], const float (&bias)[2],
                                           uint32_t ring_address, int64_t row0, int m0) {
  const int wg = threadIdx.x / 128, warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
  const bool f16 = a.y_type == FloatType::kF16;
  if constexpr (kSiluGate) {
    const uint32_t tile = ring_address + wg * kTokens * 64;
    auto at = [&](int token, int chunk) { return tile + token * 64 + ((chunk ^ ((token >> 1) & 3)) << 4); };
    const int i = lane / 8, r = lane % 8;
#pragma unroll
    for (int j = 0; j < kTokens / 8; j += 4) {  // matrix q: tokens 8 (j + q) .., features 8 warp ..
      uint32_t v[4];
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        const float* p = &acc[4 * (j + q)];  // gate e = 0, 1, then up
        const float lo = silu_times(p[0] + bias[0], p[2] + bias[1]), hi = silu_times(p[1] + bias[0], p[3] + bias[1]);
        v[q] = f16 ? KvTraits<FloatType::kF16>::pack(lo, hi) : KvTraits<FloatType::kBF16>::pack(lo, hi);
      }
      stmatrix_x4_trans(at(8 * (j + i) + r, warp), v);
    }
    copy_tile_out<kTokens, 4>(at, static_cast<uint16_t*>(a.y) + m0 * a.y_stride + row0, 2 * a.y_stride, a.m - m0,
                              (a.n / 2 - row0) / 8);
    return;
  }
  const uint32_t tile = ring_address + wg * kTokens * 128;  // [tokens][64 rows], 16-bit
  // stmatrix: matrices (j, h = 0), (j, h = 1), (j + 1, 0), (j + 1, 1); lane 8 i + r gives
  // memory row r (token 8 (j + i / 2) + r) of matrix i, chunk 2 warp + i % 2 (rows 8 h ..).
  const int i = lane / 8, r = lane % 8;
#pragma unroll
  for (int j = 0; j < kTokens / 8; j += 2) {
    uint32_t v[4];
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const float lo = acc[4 * (j + q / 2) + 2 * (q % 2)] + bias[q % 2];
      const float hi = acc[4 * (j + q / 2) + 2 * (q % 2) + 1] + bias[q % 2];
      v[q] = f16 ? KvTraits<FloatType::kF16>::pack(lo, hi) : KvTraits<FloatType::kBF16>::pack(lo, hi);
    }
    stmatrix_x4_trans(tile + swizzled<8>(8 * (j + i / 2) + r, 2 * warp + i % 2), v);
  }
  copy_tile_out<kTokens, 8>([&](int token, int chunk) { return tile + swizzled<8>(token, chunk); },
                            static_cast<uint16_t*>(a.y) + m0 * a.y_stride + row0, 2 * a.y_stride, a.m - m0,
                            (a.n - row0) / 8);
}

// A K split's fp32 sums, the block's [tokens][128 rows] tile of the partials (w4a16_wgmma.h) at
// out: warpgroup wg's 64 rows at 64 wg, in the accumulators' order (row 16 warp + 8 h + g;
// silu_gate: h = 0 feature 8 warp + g's gate, h = 1 its up). Rows and tokens past y's are
// written too (the reduction skips them), up to `tokens`.
template <int kTokens>
__device__ __forceinline__ void store_partials(const float (&acc)[kTokens / 2], uint32_t ring_address, float* out,
                                               int tokens) {
  const int wg = threadIdx.x / 128, warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const uint32_t tile = ring_address + wg * kTokens * 256;  // [tokens][64 rows], fp32
#pragma unroll
  for (int j = 0; j < kTokens / 8; ++j)
#pragma unroll
    for (int h = 0; h < 2; ++h)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int row = 16 * warp + 8 * h + g;
        const uint32_t at = tile + swizzled<16>(8 * j + 2 * t + e, row / 4) + 4 * (row % 4);
        asm volatile("st.shared.f32 [%0], %1;" ::"r"(at), "f"(acc[4 * j + 2 * h + e]) : "memory");
      }
  copy_tile_out<kTokens, 16>([&](int token, int chunk) { return tile + swizzled<16>(token, chunk); }, out + 64 * wg,
                             4 * kW4A16WgmmaBlockRows, tokens, 16);
}

// The block's outputs once its MMAs completed (acc[4 j + 2 h + e]: weight row rows.row[h], token
// m0 + 8 j + 2 t + e). The ring is free then, once both warpgroups got there. (rows by value:
// by reference its array keeps the compiler from the schedule the kernel had.)
template <int kTokens, bool kSiluGate, class Args, class Tile>
__device__ __forceinline__ void wgmma_store(const Args& a, const float (&acc)[kTokens / 2], uint32_t ring_address,
                                            const Tile& tile, const WgmmaWarpRows<kSiluGate> rows) {
  if (tile.split) {
    hopper::named_barrier_sync(1, 256);  // both warpgroups' MMAs are complete: the ring is free
    const int64_t tile_floats = int64_t{kTokens} * kW4A16WgmmaBlockRows;
    store_partials<kTokens>(acc, ring_address, a.partials + tile.work.split_slot * tile_floats,
                            min(kTokens, a.m - tile.m0));
    return;
  }
  float bias[2] = {0.0f, 0.0f};
  if (a.bias != nullptr) {
    bias[0] = load_one(a.bias, a.bias_type, rows.row[0]);
    bias[1] = load_one(a.bias, a.bias_type, rows.row[1]);
  }
  if (tile_stores_16bit(a)) {
    hopper::named_barrier_sync(1, 256);  // both warpgroups' MMAs are complete: the ring is free
    const int64_t first = kSiluGate ? tile.tile0 * 8 + 32 * rows.wg : tile.tile0 * 16 + 64 * rows.wg;  // feature or row
    store_tile<kTokens, kSiluGate>(a, acc, bias, ring_address, first, tile.m0);
    return;
  }
  if (!rows.valid) return;
#pragma unroll
  for (int j = 0; j < kTokens / 8; ++j)
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const int token = tile.m0 + 8 * j + 2 * rows.t + e;
      if (token >= a.m) continue;
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const float v = acc[4 * j + 2 * h + e];
        if constexpr (!kSiluGate) {
          store_one(row_ptr(a.y, a.y_type, token, a.y_stride), a.y_type, rows.row[h], v + bias[h]);
        } else if (h == 0) {  // feature row[0]: gate here, up at h = 1
          const float up = acc[4 * j + 2 + e] + bias[1];
          store_one(row_ptr(a.y, a.y_type, token, a.y_stride), a.y_type, rows.row[0], silu_times(v + bias[0], up));
        }
      }
    }
}

}  // namespace brisk::cuda
