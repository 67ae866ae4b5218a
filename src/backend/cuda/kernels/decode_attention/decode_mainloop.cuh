// The decode attention kernel's mainloop: key tiles of kTileKeys keys (K and V) stream through a
// kStages-deep shared-memory ring (paged_kv_tiles.cuh: 16-byte cp.async with zero fill, rows
// XOR-swizzled for conflict-free ldmatrix), so (kStages - 1) tiles per block are in flight. The
// block-table entries of a tile are loaded one tile ahead, so issuing copies never waits on them.
// Warp w takes keys [kKeysPerWarp w, kKeysPerWarp (w + 1)) of each tile (decode_keys_per_warp):
// S = Q K^T (16 x kKeysPerWarp, fp32 accumulators), causal / sliding-window mask per row, online
// softmax in log2 units, P rounded to the KV dtype, O += P V (16 x head_dim, fp32) in 16-key k-steps.
// This is the mainloop of 16-bit caches; a quantized cache's is decode_quant_mainloop.cuh, and
// decode_run_mainloop streams the tiles through either.
//
// Thread layout (mma.sync m16n8k16): lane = 4 g + t4 holds rows g and g + 8 of S and O (slots 0
// and 1).
#pragma once

#include <cstdint>

#include "backend/cuda/kernels/decode_attention/decode_config.cuh"
#include "backend/cuda/kernels/decode_attention/decode_work.cuh"
#include "backend/cuda/kernels/mma_common.cuh"

namespace brisk::cuda::decode {

template <FloatType kKvType, typename C>
struct DecodeMainloop {
  static constexpr int kHeadDim = C::kHeadDim;
  static constexpr int kKeysPerWarp = C::kKeysPerWarp;
  static constexpr int kKeySteps = C::kKeySteps;
  using Kv = KvTraits<kKvType>;

  int lane, warp, g, t4;
  int row_hi[2], row_lo[2];       // rows g, g + 8 see keys [row_lo, row_hi]
  int last_position, lowest_key;  // the union of every row's keys
  float scale_log2;               // the softmax scale in log2 units
  static constexpr int kSlots = 2;
  float m[2];  // running max of the scaled scores (log2 units)
  float l[2];  // this thread's share of the running sums
  float acc[kHeadDim / 8][4];
  uint32_t q_base;  // q_s's shared address
  uint32_t q_frag[C::kQInRegisters ? kHeadDim / 16 : 1][4];

  __device__ __forceinline__ DecodeMainloop(const DecodeAttentionArgs& a, const DecodeWork& w, const DecodeKeys& keys,
                                            const uint8_t* q_s) {
    lane = static_cast<int>(threadIdx.x) % 32;
    warp = static_cast<int>(threadIdx.x) / 32;
    g = lane / 4;
    t4 = lane % 4;
#pragma unroll
    for (int h = 0; h < 2; ++h) decode_row_keys(a, w, slot_row(h), row_lo[h], row_hi[h]);
    last_position = keys.last_position;
    lowest_key = keys.lowest_key;
    scale_log2 = a.scale * kLog2e;
    m[0] = m[1] = -INFINITY;
    l[0] = l[1] = 0.0f;
#pragma unroll
    for (int n = 0; n < kHeadDim / 8; ++n) acc[n][0] = acc[n][1] = acc[n][2] = acc[n][3] = 0.0f;
    q_base = shared_address(q_s);
  }

  // A fragment of q for k-step kk (16 head dims).
  __device__ __forceinline__ void load_q_frag(uint32_t (&frag)[4], int kk) const {
    decode_q_fragment<C>(frag, q_base, lane, kk);
  }

  // After q_s is written and a barrier.
  __device__ __forceinline__ void load_q() {
    if constexpr (C::kQInRegisters) {
#pragma unroll
      for (int kk = 0; kk < kHeadDim / 16; ++kk) load_q_frag(q_frag[kk], kk);
    }
  }

  __device__ __forceinline__ void finish() {}

  // For the epilogue (decode_epilogue.cuh): slot h is row g + 8 h; the rows' whole sums, and the
  // slot's O as pairs of adjacent dims f(dim, O[dim], O[dim + 1]).
  __device__ __forceinline__ int slot_row(int s) const { return g + 8 * s; }
  __device__ __forceinline__ bool writes_row_state() const { return t4 == 0; }
  __device__ __forceinline__ void reduce_sums() {
    l[0] = quad_sum(l[0]);
    l[1] = quad_sum(l[1]);
  }
  template <typename F>
  __device__ __forceinline__ void for_each_o_pair(int s, F&& f) const {
#pragma unroll
    for (int n = 0; n < kHeadDim / 8; ++n) f(n * 8 + 2 * t4, acc[n][2 * s], acc[n][2 * s + 1]);
  }

  // The warp's kKeysPerWarp keys of one tile, from warp_key0; stage: the tile's {K, V} in the ring.
  __device__ __forceinline__ void tile(int warp_key0, const uint8_t* stage) {
    if (warp_key0 > last_position || warp_key0 + kKeysPerWarp - 1 < lowest_key) return;  // no row sees them
    float s[2 * kKeySteps][4] = {};
    uint32_t p_frag[kKeySteps][4];
    const uint32_t k_base = shared_address(stage);
    scores(s, k_base);
    softmax(s, warp_key0, p_frag);
    accumulate_pv(p_frag, k_base + C::kTileBytes);
  }

  __device__ __forceinline__ void q_fragment(uint32_t (&qa)[4], int kk) const {
    if constexpr (C::kQInRegisters) {
      qa[0] = q_frag[kk][0];
      qa[1] = q_frag[kk][1];
      qa[2] = q_frag[kk][2];
      qa[3] = q_frag[kk][3];
    } else {
      load_q_frag(qa, kk);
    }
  }

  // S = Q K^T for the warp's keys: n-tile n = keys 8 n .. 8 n + 7.
  __device__ __forceinline__ void scores(float (&s)[2 * kKeySteps][4], uint32_t k_base) const {
    const int matrix = lane / 8;
#pragma unroll
    for (int kk = 0; kk < kHeadDim / 16; ++kk) {
      uint32_t qa[4];
      q_fragment(qa, kk);
#pragma unroll
      for (int j = 0; j < kKeySteps; ++j) {
        uint32_t b[4];
        ldmatrix_x4(b, k_base + swizzled<C::kChunks>(warp * kKeysPerWarp + 16 * j + (matrix >> 1) * 8 + lane % 8,
                                                     kk * 2 + (matrix & 1)));
        Kv::mma(s[2 * j], qa, b[0], b[1]);
        Kv::mma(s[2 * j + 1], qa, b[2], b[3]);
      }
    }
  }

  // Mask, online softmax (log2 units), O rescaled, P in the KV dtype as the A operand of P V
  // (p_frag[j]: k-step j, keys 16 j ..).
  __device__ __forceinline__ void softmax(const float (&s)[2 * kKeySteps][4], int warp_key0,
                                          uint32_t (&p_frag)[kKeySteps][4]) {
    constexpr int kValues = 4 * kKeySteps;  // of each of the thread's two rows
    // Whether every row sees all the warp's keys (the mask is then skipped; uniform over the warp).
    const bool all_visible = __all_sync(0xFFFFFFFFu, warp_key0 >= max(row_lo[0], row_lo[1]) &&
                                                         warp_key0 + kKeysPerWarp - 1 <= min(row_hi[0], row_hi[1]));
    float alpha[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      // x[e]: key 8 (e / 2) + 2 t4 + e % 2 of row g + 8 h.
      float x[kValues];
      if (all_visible) {
#pragma unroll
        for (int e = 0; e < kValues; ++e) x[e] = s[e >> 1][2 * h + (e & 1)] * scale_log2;
      } else {
#pragma unroll
        for (int e = 0; e < kValues; ++e) {
          const int key = warp_key0 + (e >> 1) * 8 + 2 * t4 + (e & 1);
          const bool visible = key <= row_hi[h] && key >= row_lo[h];
          x[e] = visible ? s[e >> 1][2 * h + (e & 1)] * scale_log2 : -INFINITY;
        }
      }
      float tile_max = fmaxf(fmaxf(x[0], x[1]), fmaxf(x[2], x[3]));
#pragma unroll
      for (int e = 4; e < kValues; e += 4) {
        tile_max = fmaxf(tile_max, fmaxf(fmaxf(x[e], x[e + 1]), fmaxf(x[e + 2], x[e + 3])));
      }
      tile_max = quad_max(tile_max);
      const float m_new = fmaxf(m[h], tile_max);
      const float base = m_new == -INFINITY ? 0.0f : m_new;
      alpha[h] = exp2f(m[h] - base);  // 0 while nothing was visible, 1 when the max held
      m[h] = m_new;
      float p[kValues];
#pragma unroll
      for (int e = 0; e < kValues; ++e) p[e] = exp2f(x[e] - base);
      // Of k-step j, a0 / a2: row g, keys 2 t4 (+8); a1 / a3: row g + 8. Sums use the rounded
      // weights.
      float l_tile = 0.0f;
#pragma unroll
      for (int j = 0; j < kKeySteps; ++j) {
        const float* pj = p + 4 * j;
        float r0, r1, r2, r3;
        p_frag[j][h] = Kv::pack(pj[0], pj[1], r0, r1);
        p_frag[j][h + 2] = Kv::pack(pj[2], pj[3], r2, r3);
        l_tile += (r0 + r1) + (r2 + r3);
      }
      l[h] = l[h] * alpha[h] + l_tile;
    }
    // O rescaled only when some row of the warp saw a new max (rarely after the first tiles).
    if (__any_sync(0xFFFFFFFFu, alpha[0] != 1.0f || alpha[1] != 1.0f)) {
#pragma unroll
      for (int n = 0; n < kHeadDim / 8; ++n) {
        acc[n][0] *= alpha[0];
        acc[n][1] *= alpha[0];
        acc[n][2] *= alpha[1];
        acc[n][3] *= alpha[1];
      }
    }
  }

  // O += P V: V rows are keys (k), columns head dims (n), read transposed.
  __device__ __forceinline__ void accumulate_pv(const uint32_t (&p_frag)[kKeySteps][4], uint32_t v_base) {
    const int matrix = lane / 8;
#pragma unroll
    for (int j = 0; j < kKeySteps; ++j) {
#pragma unroll
      for (int dn = 0; dn < kHeadDim / 16; ++dn) {
        uint32_t b[4];
        ldmatrix_x4_trans(b, v_base + swizzled<C::kChunks>(warp * kKeysPerWarp + 16 * j + (matrix & 1) * 8 + lane % 8,
                                                           dn * 2 + (matrix >> 1)));
        Kv::mma(acc[2 * dn], p_frag[j], b[0], b[1]);
        Kv::mma(acc[2 * dn + 1], p_frag[j], b[2], b[3]);
      }
    }
  }
};

// The split's tiles through `mainloop` (DecodeMainloop or DecodeQuantMainloop), the pipeline
// filled (PagedKvTiles::issue_fill) and ids the ids of tile kStages - 1.
template <typename C, typename Mainloop, typename Tiles>
__device__ __forceinline__ void decode_run_mainloop(Mainloop& mainloop, const Tiles& tiles,
                                                    int (&ids)[C::kLoadsPerThread], uint8_t* ring_s,
                                                    const DecodeKeys& keys) {
  for (int t = 0; t < keys.num_tiles; ++t) {
    uint8_t* stage = tiles.next_stage(t, ids, ring_s);
    mainloop.tile(keys.split_key0 + t * C::kTileKeys + mainloop.warp * C::kKeysPerWarp, stage);
  }
  mainloop.finish();
}

}  // namespace brisk::cuda::decode
