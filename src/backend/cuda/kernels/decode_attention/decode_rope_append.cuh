// The decode attention kernel's fused RoPE and KV append (DecodeAttentionArgs::rope,
// decode_attention.cuh), in place of a separate rope_kv_append launch per layer: q rows are
// rotated as they load, and a block whose keys include the new tokens writes their rotated K and
// V into the cache before copying the tiles that hold them (before its pipeline fill only where
// the fill holds them: decode_startup).
#pragma once

#include <cstdint>

#include "backend/cuda/kernels/decode_attention/decode_attention.h"
#include "backend/cuda/kernels/float_io.cuh"
#include "backend/cuda/kernels/kv_codes.cuh"
#include "backend/cuda/kernels/rope_rotate.cuh"

namespace brisk::cuda::decode {

// The fused append (DecodeAttentionArgs::rope): the K (rotated) and V of the sequence's new tokens for
// this kv head into the cache, computed and rounded (or quantized: kCodes) as rope_kv_append does.
// Thread tid takes the elements e = tid + j kThreads of the q_len x head_dim / 2 rotation pairs, in
// three steps so that no step waits on another's loads: prepare (positions and slots: host-written,
// read before the programmatic-dependent wait), load (qkv and the cos / sin, after it), store. A
// row's pairs are head_dim / 2 consecutive threads; int8 / int4 take its min and max round them
// (shuffles, then shared memory across warps), int4 joins neighbouring dims' codes by a shuffle.
template <int kHeadDim, int kThreads, KvCodes kCodes>
struct NewKv {
  static constexpr int kHalf = kHeadDim / 2;
  static_assert(kThreads % kHalf == 0 || kCodes == KvCodes::kNone, "a quantized row's pairs in one slot");
  static constexpr int kPerThread = (kDecodeMaxQueryLen * kHalf + kThreads - 1) / kThreads;
  int position[kPerThread];  // -1: no write
  int num_slots;             // slots j holding some thread's pair: the same for the whole block
  int slot[kPerThread];
  float k1[kPerThread], k2[kPerThread], v1[kPerThread], v2[kPerThread], cos[kPerThread], sin[kPerThread];

  __device__ __forceinline__ void prepare(const DecodeAttentionArgs& a, int q_begin, int q_len) {
    const RopeKvAppendArgs& r = a.rope;
    num_slots = (q_len * kHalf + kThreads - 1) / kThreads;
#pragma unroll
    for (int j = 0; j < kPerThread; ++j) {
      const int e = static_cast<int>(threadIdx.x) + j * kThreads;
      position[j] = -1;
      slot[j] = 0;
      k1[j] = k2[j] = v1[j] = v2[j] = cos[j] = sin[j] = 0.0f;  // a quantized row's shuffles read them all
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
    if constexpr (kCodes != KvCodes::kNone) {
      store_codes(a, kv_head);
      return;
    }
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

  // Every thread of the block calls this (its shuffles and barrier need them all).
  __device__ __forceinline__ void store_codes(const DecodeAttentionArgs& a, int kv_head) const {
    const KvQuantArgs& q = a.quant;
    const int block_mask = (1 << a.block_size_log2) - 1;
    float kx1[kPerThread], kx2[kPerThread];
    int64_t row[kPerThread];  // of the cache's [num_blocks, num_kv_heads, block_size] rows
#pragma unroll
    for (int j = 0; j < kPerThread; ++j) {
      kx1[j] = rope_first_half(k1[j], k2[j], cos[j], sin[j]);
      kx2[j] = rope_second_half(k1[j], k2[j], cos[j], sin[j]);
      row[j] = ((int64_t{slot[j] >> a.block_size_log2} * a.num_kv_heads + kv_head) << a.block_size_log2) +
               (slot[j] & block_mask);
    }
    if constexpr (kCodes == KvCodes::kFp8) {
#pragma unroll
      for (int j = 0; j < kPerThread; ++j) {
        if (position[j] < 0) continue;
        const int64_t i = row[j] * kHeadDim + (static_cast<int>(threadIdx.x) + j * kThreads) % kHalf;
        auto* k = static_cast<uint8_t*>(a.rope.k_cache);
        auto* v = static_cast<uint8_t*>(a.rope.v_cache);
        k[i] = static_cast<uint8_t>(e4m3_code(kx1[j], q.k_fp8_scale));
        k[i + kHalf] = static_cast<uint8_t>(e4m3_code(kx2[j], q.k_fp8_scale));
        v[i] = static_cast<uint8_t>(e4m3_code(v1[j], q.v_fp8_scale));
        v[i + kHalf] = static_cast<uint8_t>(e4m3_code(v2[j], q.v_fp8_scale));
      }
    } else {
      // The rows' lo / hi (0 included): K's and V's, [j][0..3] = k lo, k hi, v lo, v hi.
      float range[kPerThread][4];
#pragma unroll
      for (int j = 0; j < kPerThread; ++j) {
        if (j >= num_slots) break;  // uniform: the shuffles below need every lane
        const bool valid = position[j] >= 0;
        range[j][0] = valid ? fminf(0.0f, fminf(kx1[j], kx2[j])) : 0.0f;
        range[j][1] = valid ? fmaxf(0.0f, fmaxf(kx1[j], kx2[j])) : 0.0f;
        range[j][2] = valid ? fminf(0.0f, fminf(v1[j], v2[j])) : 0.0f;
        range[j][3] = valid ? fmaxf(0.0f, fmaxf(v1[j], v2[j])) : 0.0f;
#pragma unroll
        for (int o = 1; o < kHalf && o < 32; o *= 2) {
#pragma unroll
          for (int c = 0; c < 4; ++c) {
            const float other = __shfl_xor_sync(0xFFFFFFFFu, range[j][c], o);
            range[j][c] = c % 2 == 0 ? fminf(range[j][c], other) : fmaxf(range[j][c], other);
          }
        }
      }
      if constexpr (kHalf > 32) {  // a row over kHalf / 32 warps: their ranges through shared memory
        constexpr int kSegments = kHalf / 32;
        __shared__ float segments[kDecodeMaxQueryLen][kSegments][4];
#pragma unroll
        for (int j = 0; j < kPerThread; ++j) {
          const int e = static_cast<int>(threadIdx.x) + j * kThreads;
          if (j >= num_slots) break;
          if (e % 32 != 0 || e >= kDecodeMaxQueryLen * kHalf) continue;
#pragma unroll
          for (int c = 0; c < 4; ++c) segments[e / kHalf][(e % kHalf) / 32][c] = range[j][c];
        }
        __syncthreads();
#pragma unroll
        for (int j = 0; j < kPerThread; ++j) {
          const int e = static_cast<int>(threadIdx.x) + j * kThreads;
          if (j >= num_slots) break;
          if (e >= kDecodeMaxQueryLen * kHalf) continue;
#pragma unroll
          for (int g = 0; g < kSegments; ++g) {
#pragma unroll
            for (int c = 0; c < 4; ++c) {
              const float other = segments[e / kHalf][g][c];
              range[j][c] = c % 2 == 0 ? fminf(range[j][c], other) : fmaxf(range[j][c], other);
            }
          }
        }
      }
      constexpr bool kInt4 = kCodes == KvCodes::kInt4;
      constexpr float kQMax = kInt4 ? 15.0f : 255.0f;
#pragma unroll
      for (int j = 0; j < kPerThread; ++j) {
        if (j >= num_slots) break;
        const int i = (static_cast<int>(threadIdx.x) + j * kThreads) % kHalf;
        const RowQuant rk = row_quant(range[j][0], range[j][1], kQMax);
        const RowQuant rv = row_quant(range[j][2], range[j][3], kQMax);
        const uint32_t codes[4] = {quantize_value(kx1[j], rk), quantize_value(kx2[j], rk), quantize_value(v1[j], rv),
                                   quantize_value(v2[j], rv)};
        uint32_t packed[4];  // int4: this even dim's code and its odd neighbour's
#pragma unroll
        for (int c = 0; c < 4; ++c) {
          packed[c] = codes[c];
          if constexpr (kInt4) packed[c] |= __shfl_xor_sync(0xFFFFFFFFu, codes[c], 1) << 4;
        }
        if (position[j] < 0) continue;
        auto* k = static_cast<uint8_t*>(a.rope.k_cache);
        auto* v = static_cast<uint8_t*>(a.rope.v_cache);
        if (i == 0) {
          q.k_scale[row[j]] = rk.scale_bits;
          q.v_scale[row[j]] = rv.scale_bits;
          q.k_zero[row[j]] = static_cast<uint8_t>(rk.zero);
          q.v_zero[row[j]] = static_cast<uint8_t>(rv.zero);
        }
        if constexpr (kInt4) {
          if (i % 2 != 0) continue;
          const int64_t b = (row[j] * kHeadDim + i) / 2;
          k[b] = static_cast<uint8_t>(packed[0]);
          k[b + kHalf / 2] = static_cast<uint8_t>(packed[1]);
          v[b] = static_cast<uint8_t>(packed[2]);
          v[b + kHalf / 2] = static_cast<uint8_t>(packed[3]);
        } else {
          const int64_t b = row[j] * kHeadDim + i;
          k[b] = static_cast<uint8_t>(packed[0]);
          k[b + kHalf] = static_cast<uint8_t>(packed[1]);
          v[b] = static_cast<uint8_t>(packed[2]);
          v[b + kHalf] = static_cast<uint8_t>(packed[3]);
        }
      }
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
