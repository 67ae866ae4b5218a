// The decode attention kernel's q rows: loaded (and, with the fused append, rotated) into
// registers, then stored to shared memory in the KV dtype, XOR-swizzled for ldmatrix. Thread
// tid takes the 8-element runs e = tid + i * kThreads (row e / kChunks, chunk e % kChunks).
#pragma once

#include <cstdint>

#include "backend/cuda/kernels/decode_attention/decode_attention.h"
#include "backend/cuda/kernels/decode_attention/decode_rope_append.cuh"
#include "backend/cuda/kernels/decode_attention/decode_quant_tile.cuh"
#include "backend/cuda/kernels/decode_attention/decode_work.cuh"
#include "backend/cuda/kernels/float_io.cuh"
#include "backend/cuda/kernels/mma_common.cuh"

namespace brisk::cuda::decode {

template <FloatType kKvType, typename C>
struct DecodeQuery {
  static constexpr int kRuns = C::kQLoadsPerThread;
  int position[kRuns];  // the RoPE position of each run's token (-1: none)
  float values[kRuns][8];

  // The positions are host-written: read before the PDL wait.
  __device__ __forceinline__ void prepare(const DecodeAttentionArgs& a, const DecodeWork& w) {
#pragma unroll
    for (int i = 0; i < kRuns; ++i) {
      const int r = (static_cast<int>(threadIdx.x) + i * C::kThreads) / C::kChunks;
      position[i] = -1;
      if (a.rope.qkv != nullptr && r < w.num_rows) {
        const int p = a.rope.positions[w.q_begin + (w.row0 + r) / w.group];
        if (p >= 0 && p < a.rope.num_positions) position[i] = p;
      }
    }
  }

  // q itself (the previous kernel's output): after the PDL wait. Rows past num_rows are zeros.
  __device__ __forceinline__ void load(const DecodeAttentionArgs& a, const DecodeWork& w) {
#pragma unroll
    for (int i = 0; i < kRuns; ++i) {
      const int e = static_cast<int>(threadIdx.x) + i * C::kThreads;
      const int r = e / C::kChunks;
      const int c = e % C::kChunks;
#pragma unroll
      for (int j = 0; j < 8; ++j) values[i][j] = 0.0f;
      if (r < w.num_rows) {
        const int64_t token = w.q_begin + (w.row0 + r) / w.group;
        const int64_t head = int64_t{w.kv_head} * w.group + (w.row0 + r) % w.group;
        const int64_t base = token * a.q_stride + head * C::kHeadDim + c * 8;
        if constexpr (C::kCodes == KvCodes::kNone) {
#pragma unroll
          for (int j = 0; j < 8; ++j) values[i][j] = load_one(a.q, a.q_type, base + j);
          rotate_q<C::kHeadDim>(a, position[i], base, c, values[i]);
        } else {  // in the order of the quantized cache's S fragments
          const int64_t row = base - c * 8;
#pragma unroll
          for (int j = 0; j < 8; ++j)
            values[i][j] = load_one(a.q, a.q_type, row + decode_q_dim<C::kCodes, C::kHeadDim>(c * 8 + j));
          if (position[i] >= 0) rotate_q_permuted(a, position[i], row, c, values[i]);
        }
      }
    }
  }

  // The fused RoPE of a quantized cache's q run: value j (head dim decode_q_dim(c 8 + j)) rotated
  // with its partner as rotate_q does.
  __device__ __forceinline__ static void rotate_q_permuted(const DecodeAttentionArgs& a, int position, int64_t row,
                                                           int c, float (&v)[8]) {
    constexpr int kHalf = C::kHeadDim / 2;
    const float* angles = a.rope.cos_sin + position * a.rope.cos_sin_stride;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const int d = decode_q_dim<C::kCodes, C::kHeadDim>(c * 8 + j);
      const bool first = d < kHalf;
      const float partner = load_one(a.q, a.q_type, row + (first ? d + kHalf : d - kHalf));
      const float cs = angles[d % kHalf], sn = angles[kHalf + d % kHalf];
      v[j] = round_to(first ? rope_first_half(v[j], partner, cs, sn) : rope_second_half(partner, v[j], cs, sn),
                      a.rope.qkv_type);
    }
  }

  __device__ __forceinline__ void store(uint8_t* q_s) const {
#pragma unroll
    for (int i = 0; i < kRuns; ++i) {
      const int e = static_cast<int>(threadIdx.x) + i * C::kThreads;
      uint32_t words[4];
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        words[j] = float_to_bits(values[i][2 * j], kKvType) |
                   (uint32_t{float_to_bits(values[i][2 * j + 1], kKvType)} << 16);
      }
      *reinterpret_cast<uint4*>(q_s + swizzled<C::kChunks>(e / C::kChunks, e % C::kChunks)) =
          make_uint4(words[0], words[1], words[2], words[3]);
    }
  }
};

}  // namespace brisk::cuda::decode
