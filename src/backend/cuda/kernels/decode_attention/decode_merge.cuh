// The decode attention kernel's split-KV merge (decode_epilogue.cuh): the last split block of
// each (sequence, kv head, row chunk) folds every split's partial softmax state into out.
#pragma once

#include <cstdint>

#include "backend/cuda/kernels/decode_attention/decode_attention.h"
#include "backend/cuda/kernels/float_io.cuh"
#include "backend/cuda/kernels/hopper_async.cuh"
#include "backend/cuda/kernels/mma_common.cuh"

namespace brisk::cuda::decode {

// The exact merge of the split blocks' online-softmax states for the block's rows: out =
// sum_s acc_s 2^(m_s - M) / sum_s l_s 2^(m_s - M), M = max m_s (an empty split has m = -inf,
// acc = 0). The merge is on the grid's critical path (the last block of an item starts it when
// every other block is done): the accumulators of as many splits as the buffer holds come into
// shared memory with bulk copies (one per split and token of the rows: the rows of one token are
// adjacent heads, contiguous in the partials) while the (max, sum) pairs are read and turned into
// one weight per (row, split); then each thread sums its 4 head dims of a row over the splits, in
// split order, so the result does not depend on which block merges. Bulk copies rather than
// 16-byte cp.async: as fast, fewer instructions.
// The buffer is the block's free pipeline ring: weights [16][kDecodeMaxSplits] floats, the
// copies' mbarrier, then the accumulators.
template <int kHeadDim, int kThreads, int kBufferBytes>
struct SplitMerge {
  static constexpr int kQuads = kHeadDim / 4;
  static constexpr int kWeightBytes = kDecodeRowsPerBlock * kDecodeMaxSplits * 4;
  static constexpr int kAccOffset = kWeightBytes + 128;
  static_assert(kBufferBytes >= kAccOffset + kDecodeRowsPerBlock * kHeadDim * 4);
  static constexpr int kSplitsPerLane = kDecodeMaxSplits / 32;
  // Thread tid's (row, 4 head dims) items rq = tid + i * kThreads < num_quads.
  static constexpr int kItemsPerThread = (kDecodeRowsPerBlock * kQuads + kThreads - 1) / kThreads;

  const DecodeAttentionArgs& a;
  int q_begin, row0, num_rows, kv_head, group, num_splits;
  int64_t num_items;
  float* weight_s;  // [16][kDecodeMaxSplits]
  uint32_t bar;
  float4* acc_s;    // [splits of a batch][rows][quads]
  int num_quads;
  int batch;        // splits the buffer holds
  int first_token;  // of the rows
  int num_runs;     // row runs of one token: rows [run_begin(j), run_begin(j + 1)) for j < num_runs

  __device__ __forceinline__ SplitMerge(const DecodeAttentionArgs& args, int q_begin_arg, int row0_arg,
                                        int num_rows_arg, int kv_head_arg, uint8_t* buffer)
      : a(args), q_begin(q_begin_arg), row0(row0_arg), num_rows(num_rows_arg), kv_head(kv_head_arg) {
    group = a.num_heads / a.num_kv_heads;
    num_splits = a.num_splits;
    num_items = int64_t{a.num_tokens} * a.num_heads;
    weight_s = reinterpret_cast<float*>(buffer);
    bar = shared_address(buffer + kWeightBytes);
    acc_s = reinterpret_cast<float4*>(buffer + kAccOffset);
    num_quads = num_rows * kQuads;
    batch = (kBufferBytes - kAccOffset) / (num_quads * 16);
    first_token = row0 / group;
    num_runs = (row0 + num_rows - 1) / group - first_token + 1;
  }

  __device__ __forceinline__ int64_t token_of(int r) const { return int64_t{q_begin} + (row0 + r) / group; }
  __device__ __forceinline__ int64_t head_of(int r) const { return int64_t{kv_head} * group + (row0 + r) % group; }
  __device__ __forceinline__ int64_t item_of(int r) const { return token_of(r) * a.num_heads + head_of(r); }
  __device__ __forceinline__ int run_begin(int j) const {
    return min(num_rows, max(0, (first_token + j) * group - row0));
  }

  // Bulk copies of the accumulators of splits [s0, s0 + batch) into acc_s, on the mbarrier.
  __device__ __forceinline__ void copy_batch(int s0) const {
    const int count = min(batch, num_splits - s0);
    if (threadIdx.x == 0) hopper::mbarrier_arrive_expect_tx(bar, count * num_quads * 16);
    for (int e = threadIdx.x; e < count * num_runs; e += kThreads) {
      const int s = e / num_runs;
      const int r0 = run_begin(e % num_runs);
      const int r1 = run_begin(e % num_runs + 1);
      hopper::bulk_load(shared_address(acc_s + s * num_quads + r0 * kQuads),
                        a.partial_acc + ((s0 + s) * num_items + item_of(r0)) * kHeadDim, (r1 - r0) * kHeadDim * 4, bar);
    }
  }

  __device__ __forceinline__ void start_copies() const {
    if (threadIdx.x == 0) {
      hopper::mbarrier_init(bar, 1);
      hopper::mbarrier_init_fence();
    }
    // Order the other blocks' partials (acquired by the caller) and this block's earlier use of
    // the buffer before the bulk copies.
    hopper::fence_proxy_async_global();
    hopper::fence_proxy_async();
    __syncthreads();  // the barrier is initialised
    copy_batch(0);
  }

  // Weights: 2^(m_s - M) / sum_s l_s 2^(m_s - M) per row, a warp per row.
  __device__ __forceinline__ void compute_weights() const {
    const int warp = threadIdx.x / 32;
    const int lane = threadIdx.x % 32;
    for (int r = warp; r < num_rows; r += kThreads / 32) {
      const float2* ml = reinterpret_cast<const float2*>(a.partial_ml) + item_of(r);
      float2 v[kSplitsPerLane];
      float row_max = -INFINITY;
#pragma unroll
      for (int i = 0; i < kSplitsPerLane; ++i) {
        const int s = lane + 32 * i;
        v[i] = s < num_splits ? __ldcg(ml + s * num_items) : make_float2(-INFINITY, 0.0f);
        row_max = fmaxf(row_max, v[i].x);
      }
      row_max = warp_max(row_max);
      float row_sum = 0.0f;
#pragma unroll
      for (int i = 0; i < kSplitsPerLane; ++i) {
        v[i].x = v[i].x == -INFINITY ? 0.0f : exp2f(v[i].x - row_max);  // an empty split weighs 0
        row_sum += v[i].y * v[i].x;
      }
      row_sum = warp_sum(row_sum);
      const float inv_sum = row_sum > 0.0f ? 1.0f / row_sum : 0.0f;
#pragma unroll
      for (int i = 0; i < kSplitsPerLane; ++i) {
        if (lane + 32 * i < num_splits) weight_s[r * kDecodeMaxSplits + lane + 32 * i] = v[i].x * inv_sum;
      }
    }
  }

  // The thread's items summed over the splits in order, a batch at a time.
  __device__ __forceinline__ void accumulate(float4 (&o)[kItemsPerThread]) const {
#pragma unroll
    for (int i = 0; i < kItemsPerThread; ++i) o[i] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    for (int s0 = 0, parity = 0; s0 < num_splits; s0 += batch, parity ^= 1) {
      hopper::mbarrier_wait(bar, parity);
      __syncthreads();  // the weights are in shared memory
      const int count = min(batch, num_splits - s0);
#pragma unroll
      for (int i = 0; i < kItemsPerThread; ++i) {
        const int rq = static_cast<int>(threadIdx.x) + i * kThreads;
        if (rq >= num_quads) break;
        const float* w = weight_s + rq / kQuads * kDecodeMaxSplits + s0;
#pragma unroll 8
        for (int s = 0; s < count; ++s) {
          const float4 x = acc_s[s * num_quads + rq];
          o[i].x += x.x * w[s];
          o[i].y += x.y * w[s];
          o[i].z += x.z * w[s];
          o[i].w += x.w * w[s];
        }
      }
      if (s0 + batch < num_splits) {
        __syncthreads();  // everyone is done with the batch
        copy_batch(s0 + batch);
      }
    }
  }

  __device__ __forceinline__ void store(const float4 (&o)[kItemsPerThread]) const {
#pragma unroll
    for (int i = 0; i < kItemsPerThread; ++i) {
      const int rq = static_cast<int>(threadIdx.x) + i * kThreads;
      if (rq >= num_quads) break;
      const int r = rq / kQuads;
      const int64_t index = token_of(r) * a.out_stride + head_of(r) * kHeadDim + rq % kQuads * 4;
      store_one(a.out, a.out_type, index, o[i].x);
      store_one(a.out, a.out_type, index + 1, o[i].y);
      store_one(a.out, a.out_type, index + 2, o[i].z);
      store_one(a.out, a.out_type, index + 3, o[i].w);
    }
  }
};

// The block's rows (row0, num_rows of kv head kv_head's rows from token q_begin) merged into out;
// every split's partials are written and acquired, buffer is free.
template <int kHeadDim, int kThreads, int kBufferBytes>
__device__ __forceinline__ void merge_splits(const DecodeAttentionArgs& a, int q_begin, int row0, int num_rows,
                                             int kv_head, uint8_t* buffer) {
  using Merge = SplitMerge<kHeadDim, kThreads, kBufferBytes>;
  const Merge merge(a, q_begin, row0, num_rows, kv_head, buffer);
  merge.start_copies();
  merge.compute_weights();
  float4 o[Merge::kItemsPerThread];
  merge.accumulate(o);
  merge.store(o);
}

}  // namespace brisk::cuda::decode
