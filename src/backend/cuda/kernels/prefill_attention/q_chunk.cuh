// The query rows of the prefill kernels: row r of a CTA's tile is the (token, head) pair
// (r / group, kv_head * group + r % group), so each K/V tile serves the whole GQA group.
#pragma once

#include <cstdint>

#include "backend/cuda/kernels/float_io.cuh"
#include "backend/cuda/kernels/prefill_attention/prefill_attention.h"

namespace brisk::cuda::prefill {

// Eight q values, columns [8 c, 8 c + 8), of query row `row` (counted from the sequence's first
// new token q_begin), in the KV dtype, packed as the MMAs' A operand reads them.
template <FloatType kKvType, int kHeadDim>
__device__ __forceinline__ uint4 load_q_chunk(const PrefillAttentionArgs& a, int64_t q_begin, int row, int group,
                                              int kv_head, int c) {
  const int64_t token = q_begin + row / group;
  const int64_t head = int64_t{kv_head} * group + row % group;
  const int64_t base = token * a.q_stride + head * kHeadDim + c * 8;
  if (a.q_vectorized && a.q_type == kKvType) return *reinterpret_cast<const uint4*>(static_cast<const uint16_t*>(a.q) + base);
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

}  // namespace brisk::cuda::prefill
