// The query rows of the prefill kernels: row r of a CTA's tile is the (token, head) pair
// (r / group, kv_head * group + r % group), so each K/V tile serves the whole GQA group. The
// kernels read q and write the output through these.
#pragma once

#include <cstdint>

#include "backend/cuda/kernels/float_io.cuh"
#include "backend/cuda/kernels/mma_common.cuh"
#include "backend/cuda/kernels/prefill_attention/prefill_attention.h"

namespace brisk::cuda::prefill {

// Where query row `row` (counted from the sequence's first new token q_begin) starts in a
// [tokens, heads * kHeadDim] array with row stride `stride` (q or the output), in elements.
template <int kHeadDim>
__device__ __forceinline__ int64_t query_row_offset(int64_t stride, int64_t q_begin, int row, int group, int kv_head) {
  const int64_t token = q_begin + row / group;
  const int64_t head = int64_t{kv_head} * group + row % group;
  return token * stride + head * kHeadDim;
}

// Eight q values, columns [8 c, 8 c + 8), of query row `row`, in the KV dtype, packed as the
// MMAs' A operand reads them.
template <FloatType kKvType, int kHeadDim>
__device__ __forceinline__ uint4 load_q_chunk(const PrefillAttentionArgs& a, int64_t q_begin, int row, int group,
                                              int kv_head, int c) {
  const int64_t base = query_row_offset<kHeadDim>(a.q_stride, q_begin, row, group, kv_head) + c * 8;
  if (a.q_vectorized && a.q_type == kKvType)
    return *reinterpret_cast<const uint4*>(static_cast<const uint16_t*>(a.q) + base);
  float v[8];
  if (a.q_vectorized) {
    load8(a.q, a.q_type, base, v);
  } else {
#pragma unroll
    for (int j = 0; j < 8; ++j) v[j] = load_one(a.q, a.q_type, base + j);
  }
  uint32_t w[4];
#pragma unroll
  for (int j = 0; j < 4; ++j)
    w[j] = float_to_bits(v[2 * j], kKvType) | (uint32_t{float_to_bits(v[2 * j + 1], kKvType)} << 16);
  return make_uint4(w[0], w[1], w[2], w[3]);
}

// Output elements index and index + 1: one packed 32-bit store when `pairs` (the output is in the
// KV dtype with even element offsets), else one at a time in the output's dtype.
template <FloatType kKvType>
__device__ __forceinline__ void store_out_pair(const PrefillAttentionArgs& a, bool pairs, int64_t index, float v0,
                                               float v1) {
  if (pairs) {
    *reinterpret_cast<uint32_t*>(static_cast<uint16_t*>(a.out) + index) =
        float_to_bits(v0, kKvType) | (uint32_t{float_to_bits(v1, kKvType)} << 16);
  } else {
    store_one(a.out, a.out_type, index, v0);
    store_one(a.out, a.out_type, index + 1, v1);
  }
}

// The Hopper kernel's epilogue: a consumer warp's O / l (wgmma accumulators: rows warp_row0 + g
// and + 8, columns 8 n + 2 t4 (+1), o[4 n + 2 h + e]) in the output dtype. Where the output takes
// 16-byte stores in the KV dtype, each quad first transposes its pieces of chunks 4 m .. 4 m
// + 3, so that lane t4 stores chunk 4 m + t4 whole: a quarter of the store instructions, each
// writing whole sectors, as streaming stores (evict first: the output is not read again here,
// and the K / V stay in L2): the consumers' stores at an item's end were a large part of an
// item's fixed cost (docs/perf/prefill_attention.md).
template <FloatType kKvType, int kHeadDim>
__device__ __forceinline__ void store_output_rows(const PrefillAttentionArgs& a, const float (&o)[kHeadDim / 2],
                                                  const float (&l)[2], int q_begin, int row0, int num_rows,
                                                  int group, int kv_head, int warp_row0, int g, int t4) {
  const bool vectors = a.out_vectorized && a.out_type == kKvType;
  const bool pairs = a.out_pairs && a.out_type == kKvType;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const float row_sum = quad_sum(l[h]);
    const int r = warp_row0 + g + 8 * h;
    const float inv_sum = row_sum > 0.0f ? 1.0f / row_sum : 0.0f;
    const int64_t index =
        query_row_offset<kHeadDim>(a.out_stride, q_begin, row0 + min(r, num_rows - 1), group, kv_head);
    if (vectors) {  // warp-uniform: every lane shuffles
#pragma unroll
      for (int m = 0; m < kHeadDim / 32; ++m) {
        uint32_t v[4];
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const int n = 4 * m + j;
          v[j] = KvTraits<kKvType>::pack(o[4 * n + 2 * h] * inv_sum, o[4 * n + 2 * h + 1] * inv_sum);
        }
        quad_transpose(v, t4);
        if (r < num_rows) {
          __stcs(reinterpret_cast<uint4*>(static_cast<uint16_t*>(a.out) + index + (4 * m + t4) * 8),
                 make_uint4(v[0], v[1], v[2], v[3]));
        }
      }
    } else if (r < num_rows) {
#pragma unroll
      for (int n = 0; n < kHeadDim / 8; ++n)
        store_out_pair<kKvType>(a, pairs, index + n * 8 + 2 * t4, o[4 * n + 2 * h] * inv_sum,
                                o[4 * n + 2 * h + 1] * inv_sum);
    }
  }
}

}  // namespace brisk::cuda::prefill
