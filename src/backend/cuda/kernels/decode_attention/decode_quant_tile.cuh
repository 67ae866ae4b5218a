// The decode attention kernel's math over a quantized cache's tile (int8 / int4 / fp8 codes,
// kv_codes.cuh): the K and V fragments of mma.sync are dequantized in registers, straight from the
// codes in the ring (no 16-bit copy of the tile), to f16 (q and P are f16 too).
//
// A dot product does not depend on the order of its terms, so the fragments take the dims in the
// order that makes each lane's codes contiguous:
//  - S = Q K^T: lane (g, t4) reads, for key g of each n-tile, the span of head_dim / 4 dims from
//    t4 head_dim / 4; k-step kk takes 4 of them (decode_q_dim says which), and q's rows are stored
//    in that order (DecodeQuery), so q's fragments load as for a 16-bit cache.
//  - O += P V: lane (g, t4) reads the span of head_dim / 8 dims from g head_dim / 8 of keys 2 t4,
//    2 t4 + 1, 2 t4 + 8 and 2 t4 + 9; n-tile n of O is dim n of every lane's span, so O's column
//    c of n-tile n is dim c head_dim / 8 + n (decode_out_dim).
// Int8 / int4 values are (code - zero) * scale per (key, kv head) row. The fragments hold the
// codes as f16 1024 + code (one byte permute per pair: exact), and the row parameters go where
// they cost a few instructions per key instead of two per value:
//   S = scale_k (q . (1024 + code_k) - (1024 + zero_k) sum(q))            (correct_scores)
//   O = sum_k (p_k scale_k) (1024 + code_k) - sum_k (p_k scale_k)(1024 + zero_k)
// with P' = p scale (rounded to f16) as P V's A operand and the second sum kept per row beside O
// (the mainloop's softmax and finish). fp8 codes convert to f16 exactly; their scales are the
// launch's: K's is in the softmax scale, V's multiplies O at the end.
#pragma once

#include <cstdint>

#include "backend/cuda/kernels/decode_attention/decode_config.cuh"
#include "backend/cuda/kernels/kv_codes.cuh"
#include "backend/cuda/kernels/mma_common.cuh"

namespace brisk::cuda::decode {

// The head dim of column `logical` of q's row for the S fragments (identity for 16-bit caches).
template <KvCodes kCodes, int kHeadDim>
__device__ __forceinline__ int decode_q_dim(int logical) {
  if constexpr (kCodes == KvCodes::kNone) {
    return logical;
  } else {
    const int kk = logical / 16, c = logical % 16;
    const int t4 = (c % 8) / 2;
    const int j = (c % 2) + 2 * (c / 8);  // a0 / a1: j 0, 1; a2 / a3: j 2, 3
    const int offset = kCodes == KvCodes::kInt4 ? 8 * (kk / 2) + 2 * (kk % 2) + j / 2 + 4 * (j % 2) : 4 * kk + j;
    return t4 * (kHeadDim / 4) + offset;
  }
}

// The head dim of O's column `col` (0..7) of n-tile n.
template <KvCodes kCodes, int kHeadDim>
__device__ __forceinline__ int decode_out_dim(int n, int col) {
  if constexpr (kCodes == KvCodes::kNone) {
    return n * 8 + col;
  } else {
    return col * (kHeadDim / 8) + n;
  }
}

template <typename C>
struct DecodeQuantTile {
  static constexpr KvCodes kCodes = C::kCodes;
  static constexpr int kHeadDim = C::kHeadDim;
  static constexpr int kKSpan = C::kKvRowBytes / 4;  // bytes of a lane's K span
  static constexpr int kVSpan = C::kKvRowBytes / 8;  // bytes of a lane's V span
  static constexpr int kKeysPerWarp = C::kKeysPerWarp;
  static constexpr int kNTiles = kKeysPerWarp / 8;  // 8-key n-tiles of the warp's S
  static_assert(kKSpan % 8 == 0 && kVSpan % 4 == 0, "head_dim 64 or more");
  using KvF16 = KvTraits<FloatType::kF16>;

  const uint8_t* stage;  // the tile's {K, V, row params} in the ring
  int warp, g, t4;

  // Loads `bytes` (4, 8 or a multiple of 16) of key row `row` from byte `offset` into words.
  template <int kBytes>
  __device__ __forceinline__ void load_span(const uint8_t* tile, int row, int offset, uint32_t (&words)[kBytes / 4]) const {
    if constexpr (kBytes >= 16) {
#pragma unroll
      for (int p = 0; p < kBytes / 16; ++p) {
        const uint4 v = *reinterpret_cast<const uint4*>(tile + kv_swizzled<C::kKvChunks>(row, offset / 16 + p));
        words[4 * p] = v.x;
        words[4 * p + 1] = v.y;
        words[4 * p + 2] = v.z;
        words[4 * p + 3] = v.w;
      }
    } else if constexpr (kBytes == 8) {
      const uint2 v = *reinterpret_cast<const uint2*>(tile + kv_swizzled<C::kKvChunks>(row, offset / 16) + offset % 16);
      words[0] = v.x;
      words[1] = v.y;
    } else {
      words[0] = *reinterpret_cast<const uint32_t*>(tile + kv_swizzled<C::kKvChunks>(row, offset / 16) + offset % 16);
    }
  }

  // Raw S = Q K'^T for the warp's keys (n-tile n: keys 8 n ..), K' the f16 (1024 +) codes;
  // q_frag(kk) gives q's A fragment of k-step kk.
  template <typename QFrag>
  __device__ __forceinline__ void scores(float (&s)[kNTiles][4], QFrag&& q_frag) const {
    uint32_t words[kNTiles][kKSpan / 4];  // n-tile h: key 8 h + g
#pragma unroll
    for (int h = 0; h < kNTiles; ++h) load_span<kKSpan>(stage, warp * kKeysPerWarp + 8 * h + g, t4 * kKSpan, words[h]);
#pragma unroll
    for (int kk = 0; kk < kHeadDim / 16; ++kk) {
      uint32_t qa[4];
      q_frag(qa, kk);
#pragma unroll
      for (int h = 0; h < kNTiles; ++h) {
        uint32_t b0, b1;
        if constexpr (kCodes == KvCodes::kInt8) {
          b0 = u8_pair_plus_1024(words[h][kk], false);
          b1 = u8_pair_plus_1024(words[h][kk], true);
        } else if constexpr (kCodes == KvCodes::kInt4) {
          const int k = 2 * (kk % 2);
          b0 = u4_pair_plus_1024(words[h][kk / 2], k);
          b1 = u4_pair_plus_1024(words[h][kk / 2], k + 1);
        } else {
          b0 = e4m3_pair_to_f16(words[h][kk], false);
          b1 = e4m3_pair_to_f16(words[h][kk], true);
        }
        KvF16::mma(s[h], qa, b0, b1);
      }
    }
  }

  // The scores of raw S (int8 / int4): element e of n-tile n is key 8 n + 2 t4 + e % 2 of row
  // g + 8 (e / 2); q_sum[h] is row g + 8 h's sum of q.
  __device__ __forceinline__ void correct_scores(float (&s)[kNTiles][4], const float (&q_sum)[2]) const {
#pragma unroll
    for (int n = 0; n < kNTiles; ++n) {
      const int key = warp * kKeysPerWarp + 8 * n + 2 * t4;
      const __half2 scale = as_half2(*reinterpret_cast<const uint32_t*>(stage + C::kKScaleOffset + 2 * key));
      const uint16_t zeros = *reinterpret_cast<const uint16_t*>(stage + C::kKZeroOffset + key);
      const float2 sc = __half22float2(scale);
      const float z[2] = {1024.0f + (zeros & 0xFF), 1024.0f + (zeros >> 8)};
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float k_scale = e % 2 == 0 ? sc.x : sc.y;
        s[n][e] = k_scale * fmaf(-z[e % 2], q_sum[e / 2], s[n][e]);
      }
    }
  }

  // V's row parameters of the keys of P's fragments (e: key 8 (e / 2) + 2 t4 + e % 2, as the
  // mainloop's softmax numbers them): scale and 1024 + zero.
  __device__ __forceinline__ void v_params(float (&scale)[2 * kNTiles], float (&zero)[2 * kNTiles]) const {
#pragma unroll
    for (int n = 0; n < kNTiles; ++n) {
      const int key = warp * kKeysPerWarp + 8 * n + 2 * t4;
      const float2 sc =
          __half22float2(as_half2(*reinterpret_cast<const uint32_t*>(stage + C::kVScaleOffset + 2 * key)));
      const uint16_t zeros = *reinterpret_cast<const uint16_t*>(stage + C::kVZeroOffset + key);
      scale[2 * n] = sc.x;
      scale[2 * n + 1] = sc.y;
      zero[2 * n] = 1024.0f + (zeros & 0xFF);
      zero[2 * n + 1] = 1024.0f + (zeros >> 8);
    }
  }

  // O += P V' (V' the f16 (1024 +) codes); acc[n] is n-tile n of O (decode_out_dim).
  __device__ __forceinline__ void accumulate(float (&acc)[kHeadDim / 8][4],
                                             const uint32_t (&p_frag)[C::kKeySteps][4]) const {
#pragma unroll
    for (int j = 0; j < C::kKeySteps; ++j) accumulate_step(acc, p_frag[j], warp * kKeysPerWarp + 16 * j + 2 * t4);
  }

  // One 16-key k-step: keys key0, key0 + 1, key0 + 8, key0 + 9 of the lane.
  __device__ __forceinline__ void accumulate_step(float (&acc)[kHeadDim / 8][4], const uint32_t (&p_frag)[4],
                                                  int key0) const {
    const uint8_t* v_tile = stage + C::kTileBytes;
    uint32_t w[4][kVSpan / 4];
#pragma unroll
    for (int m = 0; m < 4; ++m) load_span<kVSpan>(v_tile, key0 + (m % 2) + 8 * (m / 2), g * kVSpan, w[m]);
#pragma unroll
    for (int i = 0; i < kVSpan / 4; ++i) {
      if constexpr (kCodes == KvCodes::kInt4) {  // 8 dims per word
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const uint32_t sel = half == 0 ? 0x5410u : 0x7632u;
          const uint32_t x0 = byte_perm(w[0][i], w[1][i], sel);  // keys key0, key0 + 1: 4 dims each
          const uint32_t x1 = byte_perm(w[2][i], w[3][i], sel);
#pragma unroll
          for (int k = 0; k < 4; ++k) {
            const uint32_t b0 = u4_pair_plus_1024(x0, k);
            const uint32_t b1 = u4_pair_plus_1024(x1, k);
            KvF16::mma(acc[8 * i + 4 * half + k], p_frag, b0, b1);
          }
        }
      } else {  // 4 dims per word
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const uint32_t sel = half == 0 ? 0x5140u : 0x7362u;
          const uint32_t x0 = byte_perm(w[0][i], w[1][i], sel);  // dims 2 half, 2 half + 1 of both keys
          const uint32_t x1 = byte_perm(w[2][i], w[3][i], sel);
#pragma unroll
          for (int e = 0; e < 2; ++e) {
            uint32_t b0, b1;
            if constexpr (kCodes == KvCodes::kInt8) {
              b0 = u8_pair_plus_1024(x0, e == 1);
              b1 = u8_pair_plus_1024(x1, e == 1);
            } else {
              b0 = e4m3_pair_to_f16(x0, e == 1);
              b1 = e4m3_pair_to_f16(x1, e == 1);
            }
            KvF16::mma(acc[4 * i + 2 * half + e], p_frag, b0, b1);
          }
        }
      }
    }
  }
};

}  // namespace brisk::cuda::decode
