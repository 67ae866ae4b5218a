// The decode attention kernel's mainloop over a quantized cache: the tiles stream as in the 16-bit
// mainloop (decode_mainloop.cuh: warp w takes keys [kKeysPerWarp w, kKeysPerWarp (w + 1)) of each
// tile), and the math runs with keys as the mma's M (decode_quant_tile.cuh): S^T = K Q^T per
// 16-key m-tile and 8-row tile, causal / sliding-window mask, online softmax in log2 units,
// P' rounded to f16 and transposed in registers into P^T's B fragments, O^T += V^T P^T.
//
// Thread layout: lane = 4 g + t4 holds keys g and g + 8 of each m-tile and query rows 2 t4 and
// 2 t4 + 1 of each row tile (slot 2 rt + h: row 8 rt + 2 t4 + h), so a row's max and sums reduce
// over the 8 lanes of one t4. O^T's accumulators hold dims decode_out_dim(g, i, 0 / 8) of the
// lane's rows.
#pragma once

#include <cstdint>

#include "backend/cuda/kernels/decode_attention/decode_config.cuh"
#include "backend/cuda/kernels/decode_attention/decode_quant_tile.cuh"
#include "backend/cuda/kernels/decode_attention/decode_work.cuh"
#include "backend/cuda/kernels/mma_common.cuh"

namespace brisk::cuda::decode {

// The sum (max) of v over the 8 lanes that share lane % 4.
__device__ __forceinline__ float lane_column_sum(float v) {
  v += __shfl_xor_sync(0xFFFFFFFFu, v, 4);
  v += __shfl_xor_sync(0xFFFFFFFFu, v, 8);
  return v + __shfl_xor_sync(0xFFFFFFFFu, v, 16);
}
__device__ __forceinline__ float lane_column_max(float v) {
  v = fmaxf(v, __shfl_xor_sync(0xFFFFFFFFu, v, 4));
  v = fmaxf(v, __shfl_xor_sync(0xFFFFFFFFu, v, 8));
  return fmaxf(v, __shfl_xor_sync(0xFFFFFFFFu, v, 16));
}

template <typename C>
struct DecodeQuantMainloop {
  static constexpr int kHeadDim = C::kHeadDim;
  static constexpr int kKeysPerWarp = C::kKeysPerWarp;
  using Tile = DecodeQuantTile<C>;
  static constexpr int kMTiles = Tile::kMTiles;
  static constexpr int kRowTiles = Tile::kRowTiles;
  static constexpr int kSlots = 2 * kRowTiles;
  static constexpr int kDimTiles = kHeadDim / 16;
  using Kv = KvTraits<FloatType::kF16>;

  int lane, warp, g, t4;
  int row_hi[kSlots], row_lo[kSlots];           // slot s's row sees keys [row_lo, row_hi]
  int last_position, lowest_key;                // the union of every row's keys
  float scale_log2;  // the softmax scale in log2 units (with an fp8 cache: times K's scale, set by the launch)
  float v_fp8_scale;  // fp8: V's scale, applied to O after the last tile
  float m[kSlots];    // running max of the scaled scores (log2 units)
  float l[kSlots];    // this lane's share of the running sums
  float acc[kRowTiles][kDimTiles][4];
  uint32_t q_base;  // q_s's shared address

  __device__ __forceinline__ DecodeQuantMainloop(const DecodeAttentionArgs& a, const DecodeWork& w,
                                                 const DecodeKeys& keys, const uint8_t* q_s) {
    lane = static_cast<int>(threadIdx.x) % 32;
    warp = static_cast<int>(threadIdx.x) / 32;
    g = lane / 4;
    t4 = lane % 4;
#pragma unroll
    for (int s = 0; s < kSlots; ++s) {
      decode_row_keys(a, w, slot_row(s), row_lo[s], row_hi[s]);
      m[s] = -INFINITY;
      l[s] = 0.0f;
    }
    last_position = keys.last_position;
    lowest_key = keys.lowest_key;
    scale_log2 = a.scale * kLog2e;
    v_fp8_scale = a.quant.v_fp8_scale;
#pragma unroll
    for (int rt = 0; rt < kRowTiles; ++rt)
#pragma unroll
      for (int i = 0; i < kDimTiles; ++i) acc[rt][i][0] = acc[rt][i][1] = acc[rt][i][2] = acc[rt][i][3] = 0.0f;
    q_base = shared_address(q_s);
  }

  __device__ __forceinline__ int slot_row(int s) const { return 8 * (s / 2) + 2 * t4 + s % 2; }
  __device__ __forceinline__ bool writes_row_state() const { return g == 0; }

  // q's 16-row A fragment for k-step kk (16 head dims): a0 / a2 are row tile 0's B fragment, a1 /
  // a3 row tile 1's.
  __device__ __forceinline__ void load_q_frag(uint32_t (&frag)[4], int kk) const {
    decode_q_fragment<C>(frag, q_base, lane, kk);
  }

  // After q_s is written and a barrier (q's fragments are re-read from q_s per tile).
  __device__ __forceinline__ void load_q() {}

  // The warp's kKeysPerWarp keys of one tile, from warp_key0; stage: the tile's {K, V, row params}.
  __device__ __forceinline__ void tile(int warp_key0, const uint8_t* stage) {
    if (warp_key0 > last_position || warp_key0 + kKeysPerWarp - 1 < lowest_key) return;  // no row sees them
    const Tile quant{stage, warp, g, t4};
    float s[kRowTiles][kMTiles][4] = {};
    quant.scores(s, [this](uint32_t(&qa)[4], int kk) { load_q_frag(qa, kk); });
    float v_scale[2 * kMTiles];
    if constexpr (C::kRowParams) {
      quant.scale_scores(s);
      quant.v_scales(v_scale);
    }
    uint32_t pb[kMTiles][kRowTiles][2];
    const bool all_visible = __all_sync(0xFFFFFFFFu, warp_key0 >= max_row_lo() &&
                                                         warp_key0 + kKeysPerWarp - 1 <= min_row_hi());
#pragma unroll
    for (int rt = 0; rt < kRowTiles; ++rt) softmax(rt, s[rt], warp_key0, all_visible, pb, v_scale);
    quant.accumulate(acc, pb);
  }

  __device__ __forceinline__ int max_row_lo() const {
    int v = row_lo[0];
#pragma unroll
    for (int s = 1; s < kSlots; ++s) v = max(v, row_lo[s]);
    return v;
  }
  __device__ __forceinline__ int min_row_hi() const {
    int v = row_hi[0];
#pragma unroll
    for (int s = 1; s < kSlots; ++s) v = min(v, row_hi[s]);
    return v;
  }

  // Row tile rt: mask, online softmax (log2 units), O^T rescaled, P' = P times V's row scales
  // (int8 / int4) rounded to f16 and transposed into pb[j][rt]. Element i of x is key 8 i + g of
  // the warp's (m-tile i / 2, accumulators 2 (i % 2) + h).
  __device__ __forceinline__ void softmax(int rt, const float (&s)[kMTiles][4], int warp_key0, bool all_visible,
                                          uint32_t (&pb)[kMTiles][kRowTiles][2], const float (&v_scale)[2 * kMTiles]) {
    constexpr int kValues = 2 * kMTiles;
    float x[2][kValues], alpha[2], base[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int slot = 2 * rt + h;
#pragma unroll
      for (int i = 0; i < kValues; ++i) {
        const float v = s[i / 2][2 * (i % 2) + h] * scale_log2;
        const int key = warp_key0 + 8 * i + g;
        x[h][i] = all_visible || (key <= row_hi[slot] && key >= row_lo[slot]) ? v : -INFINITY;
      }
      float tile_max = x[h][0];
#pragma unroll
      for (int i = 1; i < kValues; ++i) tile_max = fmaxf(tile_max, x[h][i]);
      tile_max = lane_column_max(tile_max);
      const float m_new = fmaxf(m[slot], tile_max);
      base[h] = m_new == -INFINITY ? 0.0f : m_new;
      alpha[h] = exp2f(m[slot] - base[h]);  // 0 while nothing was visible, 1 when the max held
      m[slot] = m_new;
    }
    float l_tile[2] = {0.0f, 0.0f};
    uint32_t packed[kValues];  // key 8 i + g: rows 2 t4, 2 t4 + 1 (S^T's fragment layout)
#pragma unroll
    for (int i = 0; i < kValues; ++i) {
      const float p0 = exp2f(x[0][i] - base[0]), p1 = exp2f(x[1][i] - base[1]);
      if constexpr (C::kRowParams) {  // the sums of P use the unrounded weights: P' is P times the scales
        packed[i] = Kv::pack(p0 * v_scale[i], p1 * v_scale[i]);
        l_tile[0] += p0;
        l_tile[1] += p1;
      } else {
        float r0, r1;
        packed[i] = Kv::pack(p0, p1, r0, r1);
        l_tile[0] += r0;
        l_tile[1] += r1;
      }
    }
#pragma unroll
    for (int j = 0; j < kMTiles; ++j) {  // b0: keys 16 j + 2 t4, + 1 of row g; b1: the same + 8
      pb[j][rt][0] = movmatrix_trans(packed[2 * j]);
      pb[j][rt][1] = movmatrix_trans(packed[2 * j + 1]);
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int slot = 2 * rt + h;
      l[slot] = l[slot] * alpha[h] + l_tile[h];
    }
    // O^T rescaled only when some row of the warp saw a new max (rarely after the first tiles).
    if (__any_sync(0xFFFFFFFFu, alpha[0] != 1.0f || alpha[1] != 1.0f)) {
#pragma unroll
      for (int i = 0; i < kDimTiles; ++i)
#pragma unroll
        for (int e = 0; e < 4; ++e) acc[rt][i][e] *= alpha[e % 2];
    }
  }

  // fp8: O *= V's scale (int8 / int4 scaled P' instead).
  __device__ __forceinline__ void finish() {
    if constexpr (C::kCodes == KvCodes::kFp8) {
#pragma unroll
      for (int rt = 0; rt < kRowTiles; ++rt)
#pragma unroll
        for (int i = 0; i < kDimTiles; ++i)
#pragma unroll
          for (int e = 0; e < 4; ++e) acc[rt][i][e] *= v_fp8_scale;
    }
  }

  // For the epilogue (decode_epilogue.cuh): the rows' whole sums, and the slot's O as pairs of
  // adjacent dims f(dim, O[dim], O[dim + 1]).
  __device__ __forceinline__ void reduce_sums() {
#pragma unroll
    for (int s = 0; s < kSlots; ++s) l[s] = lane_column_sum(l[s]);
  }
  template <typename F>
  __device__ __forceinline__ void for_each_o_pair(int s, F&& f) const {
#pragma unroll
    for (int i = 0; i < kDimTiles; ++i)
      f(decode_out_dim<kHeadDim>(g, i, 0), acc[s / 2][i][s % 2], acc[s / 2][i][s % 2 + 2]);
  }
};

}  // namespace brisk::cuda::decode
