// The decode attention kernel's epilogue: the warps' (max, sum, O) merge through shared memory;
// with one split the block writes normalised rows to out, else unnormalised fp32 partials +
// (max, sum), and the last split block of the (sequence, kv head, row chunk) to finish merges
// them all into out (decode_merge.cuh). The merge runs in this kernel: a second kernel's launch
// and wait would add to the wave's tail.
#pragma once

#include <cstdint>

#include "backend/cuda/kernels/decode_attention/decode_config.cuh"
#include "backend/cuda/kernels/decode_attention/decode_merge.cuh"
#include "backend/cuda/kernels/decode_attention/decode_work.cuh"
#include "backend/cuda/kernels/float_io.cuh"
#include "backend/cuda/kernels/mma_common.cuh"

namespace brisk::cuda::decode {

template <typename C>
struct DecodeEpilogue {
  static constexpr int kHeadDim = C::kHeadDim;
  static constexpr int kWarps = C::kWarps;
  float* ml_s;      // [warps, 16, 2]: each warp's (max, sum) per row
  float* reduce_s;  // [warps, 16, kReduceStride]: each warp's O, rescaled to the rows' max; in the ring

  __device__ __forceinline__ DecodeEpilogue(uint8_t* ring_s, float* ml_s_arg)
      : ml_s(ml_s_arg), reduce_s(reinterpret_cast<float*>(ring_s)) {}

  // Per-row (max, sum) first, then each warp's O rescaled to the rows' max into reduce_s (the
  // ring, free once every warp is done with it). The mainloop (DecodeMainloop or
  // DecodeQuantMainloop) says which rows its lanes hold (slots) and where their O values go.
  template <typename Mainloop>
  __device__ __forceinline__ void merge_warps(Mainloop& mainloop) {
    const int warp = mainloop.warp;
    cp_async_wait<0>();
    mainloop.reduce_sums();
    if (mainloop.writes_row_state()) {
#pragma unroll
      for (int s = 0; s < Mainloop::kSlots; ++s) {
        float* ml = ml_s + (warp * kDecodeRowsPerBlock + mainloop.slot_row(s)) * 2;
        ml[0] = mainloop.m[s];
        ml[1] = mainloop.l[s];
      }
    }
    __syncthreads();  // ml_s written; every warp is done with the ring
#pragma unroll
    for (int s = 0; s < Mainloop::kSlots; ++s) {
      const int r = mainloop.slot_row(s);
      const float m_max = row_max(r);
      const float factor = m_max == -INFINITY ? 0.0f : exp2f(mainloop.m[s] - m_max);
      float* dst = reduce_s + (warp * kDecodeRowsPerBlock + r) * C::kReduceStride;
      mainloop.for_each_o_pair(s, [&](int dim, float v0, float v1) {
        *reinterpret_cast<float2*>(dst + dim) = make_float2(v0 * factor, v1 * factor);
      });
    }
    __syncthreads();
  }

  __device__ __forceinline__ float row_max(int r) const {
    float v = -INFINITY;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) v = fmaxf(v, ml_s[(w * kDecodeRowsPerBlock + r) * 2]);
    return v;
  }

  // Thread tid: the 8-element chunks e = tid + i * kThreads of the block's rows (row e / kChunks),
  // summed over the warps, to out or to the split's partials.
  __device__ __forceinline__ void store(const DecodeAttentionArgs& a, const DecodeWork& w) const {
    for (int e = threadIdx.x; e < kDecodeRowsPerBlock * C::kChunks; e += C::kThreads) {
      const int r = e / C::kChunks;
      const int c = e % C::kChunks;
      if (r >= w.num_rows) break;  // rows are in order: the rest are padding too
      const float m_max = row_max(r);
      float sum = 0.0f;
      if (m_max != -INFINITY) {
#pragma unroll
        for (int k = 0; k < kWarps; ++k) {
          const float m = ml_s[(k * kDecodeRowsPerBlock + r) * 2];
          if (m != -INFINITY) sum += ml_s[(k * kDecodeRowsPerBlock + r) * 2 + 1] * exp2f(m - m_max);
        }
      }
      float v[8] = {0, 0, 0, 0, 0, 0, 0, 0};
#pragma unroll
      for (int k = 0; k < kWarps; ++k) {
        const float4* src =
            reinterpret_cast<const float4*>(reduce_s + (k * kDecodeRowsPerBlock + r) * C::kReduceStride + c * 8);
        const float4 x0 = src[0];
        const float4 x1 = src[1];
        v[0] += x0.x; v[1] += x0.y; v[2] += x0.z; v[3] += x0.w;
        v[4] += x1.x; v[5] += x1.y; v[6] += x1.z; v[7] += x1.w;
      }
      const int64_t token = w.q_begin + (w.row0 + r) / w.group;
      const int64_t head = int64_t{w.kv_head} * w.group + (w.row0 + r) % w.group;
      if (a.num_splits == 1) {
        store_out(a, token, head, c, sum, v);
      } else {
        store_partial(a, w.split, token, head, c, m_max, sum, v);
      }
    }
  }

  __device__ __forceinline__ static void store_out(const DecodeAttentionArgs& a, int64_t token, int64_t head, int c,
                                                   float sum, float (&v)[8]) {
    const float inv_sum = sum > 0.0f ? 1.0f / sum : 0.0f;
#pragma unroll
    for (int j = 0; j < 8; ++j) v[j] *= inv_sum;
    const int64_t index = token * a.out_stride + head * kHeadDim + c * 8;
    if (a.out_vectorized) {
      store8(a.out, a.out_type, index, v);
    } else {
#pragma unroll
      for (int j = 0; j < 8; ++j) store_one(a.out, a.out_type, index + j, v[j]);
    }
  }

  __device__ __forceinline__ static void store_partial(const DecodeAttentionArgs& a, int split, int64_t token,
                                                       int64_t head, int c, float m_max, float sum,
                                                       const float (&v)[8]) {
    const int64_t item = (int64_t{split} * a.num_tokens + token) * a.num_heads + head;
    float4* dst = reinterpret_cast<float4*>(a.partial_acc + item * kHeadDim + c * 8);
    dst[0] = make_float4(v[0], v[1], v[2], v[3]);
    dst[1] = make_float4(v[4], v[5], v[6], v[7]);
    if (c == 0) {
      a.partial_ml[item * 2] = m_max;
      a.partial_ml[item * 2 + 1] = sum;
    }
  }

  // Split-KV: the last of the item's split blocks to get here merges the partials. Thread 0
  // counts the block in with an acquire-release atomic once every thread's partials are written
  // (the barrier orders them before it): release publishes them, and in the last block acquire
  // makes every other block's visible, to all its threads through the barrier that follows
  // (cheaper than every thread fencing around the count).
  __device__ __forceinline__ void merge_splits_if_last(const DecodeAttentionArgs& a, const DecodeWork& w,
                                                       uint8_t* ring_s) const {
    __shared__ int is_last_s;
    const int64_t counter = (int64_t{w.seq} * a.num_kv_heads + w.kv_head) * a.num_row_chunks + w.chunk;
    __syncthreads();  // every thread's partials are written; reduce_s is read
    if (threadIdx.x == 0) is_last_s = atomic_add_acq_rel(&a.merge_counters[counter], 1) == a.num_splits - 1;
    __syncthreads();
    if (!is_last_s) return;
    merge_splits<kHeadDim, C::kThreads, C::kRingBytes>(a, w.q_begin, w.row0, w.num_rows, w.kv_head, ring_s);
    if (threadIdx.x == 0) a.merge_counters[counter] = 0;  // ready for the next launch (stream-ordered after this grid)
  }
};

}  // namespace brisk::cuda::decode
