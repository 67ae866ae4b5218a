// The decode attention kernel's math over a quantized cache's tile (int8 / int4 / fp8 codes,
// kv_codes.cuh): the K and V fragments of mma.sync are dequantized in registers, straight from the
// codes in the ring (no 16-bit copy of the tile), to f16 (q and P are f16 too).
//
// Keys are the mma's M dimension and query rows its N (S^T = K Q^T, O^T = V^T P^T): one m16n8k16
// covers 16 keys of 8 rows, and a block's rows (decode_rows_per_block) are 8-row tiles. A GQA
// group of 4 to 8 with one new token fills one tile: half the mma's, softmax values and O
// accumulators of the layout with keys as N, which pads a group of 4 to 16 rows.
//
// A dot product does not depend on the order of its terms, so the fragments take the dims in the
// order that makes each lane's codes contiguous:
//  - S^T = K Q^T: lane (g, t4) reads, for keys g and g + 8 of each m-tile, the span of
//    head_dim / 4 dims from t4 head_dim / 4; k-step kk takes 4 of them (decode_q_dim says which),
//    and q's rows are stored in that order (DecodeQuery), so q's fragments load as for a 16-bit
//    cache, as 16-row A fragments whose halves are the two row tiles' B fragments.
//  - O^T += V^T P^T: lane (g, t4) reads the span of head_dim / 8 dims from g head_dim / 8 of keys
//    2 t4, 2 t4 + 1, 2 t4 + 8 and 2 t4 + 9; O^T's m-tile i holds dims 2 i (rows g) and 2 i + 1
//    (rows g + 8) of every lane's span (decode_out_dim). P^T's B fragments are S^T's accumulators
//    rounded and transposed in registers (movmatrix).
// Int8 / int4 values are (code - zero) * scale per (key, kv head) row. The codes come out of their
// words as f16 c + code, c = 1024 (int8: one byte permute per pair; int4's pairs of nibbles 0 and
// 2) or 64 (int4's nibbles 1 and 3, u4_high_pair_plus_64), and one f16 subtraction of c + zero
// leaves code - zero exactly; the scales go where they cost one multiply per key:
//   S = scale_k (q . (code_k - zero_k))        O = sum_k (p_k scale_k) (code_k - zero_k)
// with P' = p scale (rounded to f16) as P V's operand. The fragments carry no offset, so the fp32
// accumulators never hold c sum P' against a small O (near zero-mean values cancel c's bits). fp8
// codes convert to f16 exactly; their scales are the launch's: K's is in the softmax scale, V's
// multiplies O at the end.
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

// The head dim of row r (0..15) of O^T's m-tile i for lane group g (above).
template <int kHeadDim>
__device__ __forceinline__ int decode_out_dim(int g, int i, int r) {
  return g * (kHeadDim / 8) + 2 * i + r / 8;
}

template <typename C>
struct DecodeQuantTile {
  static constexpr KvCodes kCodes = C::kCodes;
  static constexpr int kHeadDim = C::kHeadDim;
  static constexpr int kKSpan = C::kKvRowBytes / 4;  // bytes of a lane's K span
  static constexpr int kVSpan = C::kKvRowBytes / 8;  // bytes of a lane's V span
  static constexpr int kKeysPerWarp = C::kKeysPerWarp;
  static constexpr int kMTiles = kKeysPerWarp / 16;  // 16-key m-tiles of the warp's S^T
  static constexpr int kRowTiles = C::kRowsPerBlock / 8;  // 8-row n-tiles of S^T and O^T
  static_assert(kKSpan % 8 == 0 && kVSpan % 4 == 0, "head_dim 64 or more");
  using KvF16 = KvTraits<FloatType::kF16>;
  static constexpr bool kRowParams = C::kRowParams;
  // c (above) minus 1024 of the hi pairs (int4: 64 - 1024), the lo pairs' being 1024.
  static constexpr float kHiShift = kCodes == KvCodes::kInt4 ? -960.0f : 0.0f;

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

  // One code word's pair of K' fragments for k-step kk (dims as decode_q_dim orders them): lo
  // faces q's a0 / a1 dims, hi its a2 / a3 dims.
  __device__ __forceinline__ static void k_pairs(const uint32_t (&words)[kKSpan / 4], int kk, uint32_t& lo,
                                                 uint32_t& hi) {
    if constexpr (kCodes == KvCodes::kInt8) {
      lo = u8_pair_plus_1024(words[kk], false);
      hi = u8_pair_plus_1024(words[kk], true);
    } else if constexpr (kCodes == KvCodes::kInt4) {  // lo: c 1024, hi: c 64
      const uint32_t w = kk % 2 == 0 ? words[kk / 2] : words[kk / 2] >> 8;
      lo = u4_pair_plus_1024(w, 0);
      hi = u4_high_pair_plus_64(w);
    } else {
      lo = e4m3_pair_to_f16(words[kk], false);
      hi = e4m3_pair_to_f16(words[kk], true);
    }
  }

  // (c + zero) of the lo and hi pairs (k_pairs' and the V fragments') for the zero bytes z0, z1 of
  // two keys: f16 pairs, exact.
  __device__ __forceinline__ static void zero_pairs(uint32_t z0, uint32_t z1, uint32_t& lo, uint32_t& hi) {
    lo = u8_pair_plus_1024(z0 | (z1 << 8), false);
    hi = kHiShift == 0.0f ? lo : as_u32(__hadd2(as_half2(lo), __float2half2_rn(kHiShift)));
  }

  // Raw S^T = K'' Q^T for the warp's keys (K'' the f16 code - zero; fp8 values): s[rt][j] is keys
  // 16 j .. 16 j + 15 (the mma's M) against query rows 8 rt .. 8 rt + 7 (its N). q_frag(kk) gives
  // q's 16-row A fragment of k-step kk, whose a0 / a2 (a1 / a3) are row tile 0's (1's) B fragment.
  template <typename QFrag>
  __device__ __forceinline__ void scores(float (&s)[kRowTiles][kMTiles][4], QFrag&& q_frag) const {
    uint32_t words[2 * kMTiles][kKSpan / 4];  // [h]: key 8 h + g
    uint32_t zlo[2 * kMTiles], zhi[2 * kMTiles];  // int8 / int4: c + zero of key 8 h + g, both halves
#pragma unroll
    for (int h = 0; h < 2 * kMTiles; ++h) {
      const int key = warp * kKeysPerWarp + 8 * h + g;
      load_span<kKSpan>(stage, key, t4 * kKSpan, words[h]);
      if constexpr (kRowParams) {
        const uint32_t z = stage[C::kKZeroOffset + key];
        zero_pairs(z, z, zlo[h], zhi[h]);
      }
    }
#pragma unroll
    for (int kk = 0; kk < kHeadDim / 16; ++kk) {
      uint32_t qa[4];
      q_frag(qa, kk);
#pragma unroll
      for (int j = 0; j < kMTiles; ++j) {
        uint32_t a[4];  // a0 / a2: key 16 j + g, a1 / a3: key 16 j + 8 + g
        k_pairs(words[2 * j], kk, a[0], a[2]);
        k_pairs(words[2 * j + 1], kk, a[1], a[3]);
        if constexpr (kRowParams) {
#pragma unroll
          for (int r = 0; r < 4; ++r) a[r] = hsub2(a[r], (r < 2 ? zlo : zhi)[2 * j + r % 2]);
        }
#pragma unroll
        for (int rt = 0; rt < kRowTiles; ++rt) KvF16::mma(s[rt][j], a, qa[rt], qa[rt + 2]);
      }
    }
  }

  // The scores of raw S^T (int8 / int4): element e of s[rt][j] is key 16 j + 8 (e / 2) + g of row
  // 8 rt + 2 t4 + e % 2, times its key's scale.
  __device__ __forceinline__ void scale_scores(float (&s)[kRowTiles][kMTiles][4]) const {
#pragma unroll
    for (int j = 0; j < kMTiles; ++j)
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        const int key = warp * kKeysPerWarp + 16 * j + 8 * half + g;
        const float k_scale = __half2float(*reinterpret_cast<const __half*>(stage + C::kKScaleOffset + 2 * key));
#pragma unroll
        for (int rt = 0; rt < kRowTiles; ++rt)
#pragma unroll
          for (int h = 0; h < 2; ++h) s[rt][j][2 * half + h] *= k_scale;
      }
  }

  // V's scales of the lane's keys 16 j + 8 half + g (index 2 j + half).
  __device__ __forceinline__ void v_scales(float (&scale)[2 * kMTiles]) const {
#pragma unroll
    for (int i = 0; i < 2 * kMTiles; ++i) {
      const int key = warp * kKeysPerWarp + 8 * i + g;
      scale[i] = __half2float(*reinterpret_cast<const __half*>(stage + C::kVScaleOffset + 2 * key));
    }
  }

  // O^T += V''^T P'^T (V'' the f16 code - zero; fp8 values): acc[rt][i] is O^T's m-tile i (rows: dims
  // decode_out_dim(g, i, 0 / 8), columns: query rows 8 rt + 2 t4, + 1); pb[j][rt] is P'^T's B
  // fragment of k-step j (keys 16 j ..) for row tile rt.
  __device__ __forceinline__ void accumulate(float (&acc)[kRowTiles][kHeadDim / 16][4],
                                             const uint32_t (&pb)[kMTiles][kRowTiles][2]) const {
#pragma unroll
    for (int j = 0; j < kMTiles; ++j) accumulate_step(acc, pb[j], warp * kKeysPerWarp + 16 * j + 2 * t4);
  }

  // One 16-key k-step: the lane's A fragments hold keys key0, key0 + 1 (a0 / a1) and key0 + 8,
  // key0 + 9 (a2 / a3) of two dims of its span (a0 / a2 the even one).
  __device__ __forceinline__ void accumulate_step(float (&acc)[kRowTiles][kHeadDim / 16][4],
                                                  const uint32_t (&pb)[kRowTiles][2], int key0) const {
    const uint8_t* v_tile = stage + C::kTileBytes;
    uint32_t w[4][kVSpan / 4];
#pragma unroll
    for (int m = 0; m < 4; ++m) load_span<kVSpan>(v_tile, key0 + (m % 2) + 8 * (m / 2), g * kVSpan, w[m]);
    uint32_t zlo[2], zhi[2];  // int8 / int4: c + zero of keys key0, key0 + 1 ([0]) and key0 + 8, key0 + 9
    if constexpr (kRowParams) {
#pragma unroll
      for (int m = 0; m < 2; ++m) {
        const uint16_t z = *reinterpret_cast<const uint16_t*>(stage + C::kVZeroOffset + key0 + 8 * m);
        zero_pairs(z & 0xFFu, z >> 8, zlo[m], zhi[m]);
      }
    }
    const auto mma = [&](int i, uint32_t(&a)[4]) {  // a0 / a2: lo pairs, a1 / a3: hi pairs
      if constexpr (kRowParams) {
#pragma unroll
        for (int r = 0; r < 4; ++r) a[r] = hsub2(a[r], r % 2 == 0 ? zlo[r / 2] : zhi[r / 2]);
      }
#pragma unroll
      for (int rt = 0; rt < kRowTiles; ++rt) KvF16::mma(acc[rt][i], a, pb[rt][0], pb[rt][1]);
    };
#pragma unroll
    for (int i = 0; i < kVSpan / 4; ++i) {
      if constexpr (kCodes == KvCodes::kInt4) {  // 8 dims per word
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const uint32_t sel = half == 0 ? 0x5410u : 0x7632u;
          const uint32_t x0 = byte_perm(w[0][i], w[1][i], sel);  // keys key0, key0 + 1: 4 dims each
          const uint32_t x1 = byte_perm(w[2][i], w[3][i], sel);
#pragma unroll
          for (int k = 0; k < 2; ++k) {  // nibble pairs 2 k (c 1024: a0 / a2) and 2 k + 1 (c 64: a1 / a3)
            const uint32_t y0 = k == 0 ? x0 : x0 >> 8, y1 = k == 0 ? x1 : x1 >> 8;
            uint32_t a[4] = {u4_pair_plus_1024(y0, 0), u4_high_pair_plus_64(y0), u4_pair_plus_1024(y1, 0),
                             u4_high_pair_plus_64(y1)};
            mma(4 * i + 2 * half + k, a);
          }
        }
      } else {  // 4 dims per word
#pragma unroll
        for (int half = 0; half < 2; ++half) {
          const uint32_t sel = half == 0 ? 0x5140u : 0x7362u;
          const uint32_t x0 = byte_perm(w[0][i], w[1][i], sel);  // dims 2 half, 2 half + 1 of both keys
          const uint32_t x1 = byte_perm(w[2][i], w[3][i], sel);
          uint32_t a[4];
          if constexpr (kCodes == KvCodes::kInt8) {
            a[0] = u8_pair_plus_1024(x0, false);
            a[1] = u8_pair_plus_1024(x0, true);
            a[2] = u8_pair_plus_1024(x1, false);
            a[3] = u8_pair_plus_1024(x1, true);
          } else {
            a[0] = e4m3_pair_to_f16(x0, false);
            a[1] = e4m3_pair_to_f16(x0, true);
            a[2] = e4m3_pair_to_f16(x1, false);
            a[3] = e4m3_pair_to_f16(x1, true);
          }
          mma(2 * i + half, a);
        }
      }
    }
  }
};

}  // namespace brisk::cuda::decode
