// The decode attention kernel's split-KV merge (decode_attention.cuh): the last split block of
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
// split order, so the result does not depend on which block merges. On the H200 (1 x 32768, 32 /
// 8 heads, 32 splits) the merge's part of a 39.4 us call was 3.5 us with every thread fencing
// before the count and again after it, 2.3 with the handshake below (thread 0's acquire-release
// count); bulk copies and 16-byte cp.async ran the same, the bulk copies take fewer instructions.
// The buffer is the block's free pipeline ring: weights [16][kDecodeMaxSplits] floats, the
// copies' mbarrier, then the accumulators.
// Where the time goes (2026-12-02, H200, 32 / 8 heads, 256 blocks in one wave, a build with
// globaltimer probes): 1 x 32768 (32 splits) and 8 x 4096 (4 splits) took 39.1 / 37.5 us, and
// 35.1 / 35.1 with no merge at all (partials written, never merged); 3.6-3.9 us lay between the
// last block's partials and the end of its merge (its stores' release, its count and its loads
// are trips to L2 one after the other). Tried and dropped then (us, 1 x 32768 / 8 x 4096, this
// merge 37.7-38.0 / 36.6-37.3 in the same runs): each thread loading 8 splits at a time into
// registers, folded one by one (the online rescale chains every split's max and exp2), 39.4 /
// 36.4; 16-byte cp.async of every split with the max first and independent weights, 38.1-38.4 /
// 36.8-37.1; cluster pairs of split blocks folding through distributed shared memory first
// (decode_attention.cu says why in 8-warp blocks), 38.3-38.5 / 37.1-37.2; tickets taken as each
// block's keys are done (the last block knows it is last while its warps still merge) and the
// others' partials awaited with an acquire load, 38.7-38.9 / 36.7-36.8 (this merge 38.6 / 36.7-
// 36.9 in that run). Also dropped (2026-12-02): one more block per (sequence, kv head, row chunk)
// in a single wave (1 x 32768: 264 blocks on 264 slots) that only merges, polling per-split flags
// (set with release) and bulk-copying each split's partials as it arrives, so that only the last
// split's are left to fetch: 1 x 32768 40.0-40.4 us against 38.5-39.9 (with the fused append
// 42.0-47.0 against 38.7-40.4; 8 x 4096 has no room for them).
template <int kHeadDim, int kThreads, int kBufferBytes>
__device__ __forceinline__ void merge_splits(const DecodeAttentionArgs& a, int q_begin, int row0, int num_rows,
                                             int kv_head, uint8_t* buffer) {
  constexpr int kQuads = kHeadDim / 4;
  constexpr int kWeightBytes = kDecodeRowsPerBlock * kDecodeMaxSplits * 4;
  constexpr int kAccOffset = kWeightBytes + 128;
  static_assert(kBufferBytes >= kAccOffset + kDecodeRowsPerBlock * kHeadDim * 4);
  const int group = a.num_heads / a.num_kv_heads;
  const int num_splits = a.num_splits;
  const int64_t num_items = int64_t{a.num_tokens} * a.num_heads;
  float* weight_s = reinterpret_cast<float*>(buffer);  // [16][kDecodeMaxSplits]
  const uint32_t bar = shared_address(buffer + kWeightBytes);
  float4* acc_s = reinterpret_cast<float4*>(buffer + kAccOffset);  // [splits of a batch][rows][quads]
  const int num_quads = num_rows * kQuads;
  const int batch = (kBufferBytes - kAccOffset) / (num_quads * 16);
  auto token_of = [&](int r) { return int64_t{q_begin} + (row0 + r) / group; };
  auto head_of = [&](int r) { return int64_t{kv_head} * group + (row0 + r) % group; };
  auto item_of = [&](int r) { return token_of(r) * a.num_heads + head_of(r); };
  // Row runs of one token: rows [run_begin(j), run_begin(j + 1)) for j < num_runs.
  const int first_token = row0 / group;
  const int num_runs = (row0 + num_rows - 1) / group - first_token + 1;
  auto run_begin = [&](int j) { return min(num_rows, max(0, (first_token + j) * group - row0)); };
  auto copy_batch = [&](int s0) {
    const int count = min(batch, num_splits - s0);
    if (threadIdx.x == 0) hopper::mbarrier_arrive_expect_tx(bar, count * num_quads * 16);
    for (int e = threadIdx.x; e < count * num_runs; e += kThreads) {
      const int s = e / num_runs;
      const int r0 = run_begin(e % num_runs);
      const int r1 = run_begin(e % num_runs + 1);
      hopper::bulk_load(shared_address(acc_s + s * num_quads + r0 * kQuads),
                        a.partial_acc + ((s0 + s) * num_items + item_of(r0)) * kHeadDim, (r1 - r0) * kHeadDim * 4,
                        bar);
    }
  };
  if (threadIdx.x == 0) {
    hopper::mbarrier_init(bar, 1);
    hopper::mbarrier_init_fence();
  }
  // Order the other blocks' partials (acquired above) and this block's earlier use of the buffer
  // before the bulk copies.
  hopper::fence_proxy_async_global();
  hopper::fence_proxy_async();
  __syncthreads();  // the barrier is initialised
  copy_batch(0);

  // Weights: 2^(m_s - M) / sum_s l_s 2^(m_s - M) per row, a warp per row.
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  constexpr int kSplitsPerLane = kDecodeMaxSplits / 32;
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

  // Each thread: its (row, 4 head dims) items rq = tid + i * kThreads < num_quads, summed over
  // the splits in order, a batch at a time.
  constexpr int kItemsPerThread = (kDecodeRowsPerBlock * kQuads + kThreads - 1) / kThreads;
  float4 o[kItemsPerThread];
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

}  // namespace brisk::cuda::decode
