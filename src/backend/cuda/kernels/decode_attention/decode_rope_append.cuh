// The decode attention kernel's fused RoPE and KV append (DecodeAttentionArgs::rope,
// decode_attention.cuh), in place of a separate rope_kv_append launch per layer: q rows are
// rotated as they load, and a block whose keys include the new tokens writes their rotated K and
// V into the cache before copying the tiles that hold them (before its pipeline fill only where
// the fill holds them: decode_startup).
#pragma once

#include <cstdint>

#include "backend/cuda/kernels/decode_attention/decode_attention.h"
#include "backend/cuda/kernels/float_io.cuh"
#include "backend/cuda/kernels/rope_rotate.cuh"

namespace brisk::cuda::decode {

// The fused append (DecodeAttentionArgs::rope): the K (rotated) and V of the sequence's new tokens for
// this kv head into the cache, computed and rounded as rope_kv_append does. Thread tid takes the
// elements e = tid + j kThreads of the q_len x head_dim / 2 rotation pairs, in three steps so that
// no step waits on another's loads: prepare (positions and slots: host-written, read before the
// programmatic-dependent wait), load (qkv and the cos / sin, after it), store.
template <int kHeadDim, int kThreads>
struct NewKv {
  static constexpr int kHalf = kHeadDim / 2;
  static constexpr int kPerThread = (kDecodeMaxQueryLen * kHalf + kThreads - 1) / kThreads;
  int position[kPerThread];  // -1: no write
  int slot[kPerThread];
  float k1[kPerThread], k2[kPerThread], v1[kPerThread], v2[kPerThread], cos[kPerThread], sin[kPerThread];

  __device__ __forceinline__ void prepare(const DecodeAttentionArgs& a, int q_begin, int q_len) {
    const RopeKvAppendArgs& r = a.rope;
#pragma unroll
    for (int j = 0; j < kPerThread; ++j) {
      const int e = static_cast<int>(threadIdx.x) + j * kThreads;
      position[j] = -1;
      slot[j] = 0;
      if (e >= q_len * kHalf) continue;
      const int token = q_begin + e / kHalf;
      const int p = r.positions[token];
      const int s = r.slot_mapping[token];
      if (p < 0 || p >= r.num_positions || s < 0 || s >= r.num_slots) continue;
      position[j] = p;
      slot[j] = s;
    }
  }
  __device__ __forceinline__ void load(const DecodeAttentionArgs& a, int q_begin, int kv_head) {
    const RopeKvAppendArgs& r = a.rope;
    const int64_t k_col = int64_t{a.num_heads + kv_head} * kHeadDim;
    const int64_t v_col = int64_t{a.num_heads + a.num_kv_heads + kv_head} * kHeadDim;
#pragma unroll
    for (int j = 0; j < kPerThread; ++j) {
      if (position[j] < 0) continue;
      const int e = static_cast<int>(threadIdx.x) + j * kThreads;
      const int i = e % kHalf;
      const int64_t row = int64_t{q_begin + e / kHalf} * r.qkv_stride;
      const float* cs = r.cos_sin + position[j] * r.cos_sin_stride;
      k1[j] = load_one(r.qkv, r.qkv_type, row + k_col + i);
      k2[j] = load_one(r.qkv, r.qkv_type, row + k_col + kHalf + i);
      v1[j] = load_one(r.qkv, r.qkv_type, row + v_col + i);
      v2[j] = load_one(r.qkv, r.qkv_type, row + v_col + kHalf + i);
      cos[j] = cs[i];
      sin[j] = cs[kHalf + i];
    }
  }
  __device__ __forceinline__ void store(const DecodeAttentionArgs& a, int kv_head) const {
    const RopeKvAppendArgs& r = a.rope;
    const int block_mask = (1 << a.block_size_log2) - 1;
#pragma unroll
    for (int j = 0; j < kPerThread; ++j) {
      if (position[j] < 0) continue;
      const int e = static_cast<int>(threadIdx.x) + j * kThreads;
      const int64_t cache =
          (((int64_t{slot[j] >> a.block_size_log2} * a.num_kv_heads + kv_head) << a.block_size_log2) +
           (slot[j] & block_mask)) * kHeadDim + e % kHalf;
      store_one(r.k_cache, a.kv_type, cache, rope_first_half(k1[j], k2[j], cos[j], sin[j]));
      store_one(r.k_cache, a.kv_type, cache + kHalf, rope_second_half(k1[j], k2[j], cos[j], sin[j]));
      store_one(r.v_cache, a.kv_type, cache, v1[j]);
      store_one(r.v_cache, a.kv_type, cache + kHalf, v2[j]);
    }
  }
};

// The fused RoPE of 8 q values v = q[base, base + 8) at `position` (-1: none), chunk c of its
// head (the partner half's values read alongside), rounded to the qkv dtype as rope_kv_append
// stores them.
template <int kHeadDim>
__device__ __forceinline__ void rotate_q(const DecodeAttentionArgs& a, int position, int64_t base, int c,
                                         float (&v)[8]) {
  constexpr int kHalf = kHeadDim / 2;
  if (position < 0) return;
  const bool first = c * 8 < kHalf;
  const int64_t partner = first ? base + kHalf : base - kHalf;
  const float* cos = a.rope.cos_sin + position * a.rope.cos_sin_stride + (c * 8) % kHalf;
  const float* sin = cos + kHalf;
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    const float p = load_one(a.q, a.q_type, partner + j);
    const float y = first ? rope_first_half(v[j], p, cos[j], sin[j]) : rope_second_half(p, v[j], cos[j], sin[j]);
    v[j] = round_to(y, a.rope.qkv_type);
  }
}

}  // namespace brisk::cuda::decode
