// The generic attention kernel's mainloop: keys go through shared memory in tiles of 32
// (converted to fp32); within a warp, lane j scores key j of the tile against each of the warp's
// rows (q rows are broadcast from shared memory), then the warp updates its rows' online softmax
// (running max m, sum l, fp32 accumulators acc of head_dim / 32 dims per lane) and adds p V.
#pragma once

#include <cstdint>

#include "backend/cuda/kernels/float_io.cuh"
#include "backend/cuda/kernels/generic_attention/attention_config.h"
#include "backend/cuda/kernels/generic_attention/attention_work.cuh"
#include "backend/cuda/kernels/launch.h"
#include "backend/cuda/kernels/mma_common.cuh"

namespace brisk::cuda {

// The block's q rows -> q_s (fp32, [kRows, kHeadDim]); rows the block does not use are zeros.
template <int kHeadDim>
__device__ __forceinline__ void attention_stage_q(const AttentionArgs& a, const AttentionTiling& tiling,
                                                  const AttentionWork& w, const AttentionRows& rows, float* q_s) {
  for (int e = threadIdx.x; e < AttentionConfig<kHeadDim>::kRows * kHeadDim; e += blockDim.x) {
    const int r = e / kHeadDim;
    const int d = e % kHeadDim;
    float value = 0.0f;
    if (r < rows.num_used_rows && r % tiling.heads_per_block < rows.num_chunk_heads) {
      const int64_t token = w.q_begin + w.tile_token0 + r / tiling.heads_per_block;
      const int64_t head = rows.first_head + r % tiling.heads_per_block;
      value = load_one(a.q, a.q_type, token * a.q_stride + head * kHeadDim + d);
    }
    q_s[e] = value;
  }
}

// The K / V of keys [tile, tile + 32) -> k_s, v_s (fp32); keys at or past key_end, or outside the
// block table or the cache, as zeros.
template <int kHeadDim>
__device__ __forceinline__ void attention_load_tile(const AttentionArgs& a, const AttentionWork& w,
                                                    const int32_t* block_table, int tile, int key_end, float* k_s,
                                                    float* v_s) {
  using Config = AttentionConfig<kHeadDim>;
  constexpr int kChunksPerKey = kHeadDim / 8;
  for (int e = threadIdx.x; e < kAttentionKeys * kChunksPerKey; e += blockDim.x) {
    const int key = e / kChunksPerKey;
    const int d = (e % kChunksPerKey) * 8;
    const int j = tile + key;
    float k8[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    float v8[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    if (j < key_end && j / a.block_size < a.max_blocks_per_seq) {
      const int32_t block = block_table[j / a.block_size];
      if (block >= 0 && block < a.num_cache_blocks) {
        const int64_t index =
            ((int64_t{block} * a.num_kv_heads + w.kv_head) * a.block_size + j % a.block_size) * kHeadDim + d;
        load8(a.k_cache, a.k_type, index, k8);
        load8(a.v_cache, a.v_type, index, v8);
      }
    }
    float4* k_row = reinterpret_cast<float4*>(k_s + key * Config::kKeyStride + d);
    k_row[0] = make_float4(k8[0], k8[1], k8[2], k8[3]);
    k_row[1] = make_float4(k8[4], k8[5], k8[6], k8[7]);
    float4* v_row = reinterpret_cast<float4*>(v_s + key * kHeadDim + d);
    v_row[0] = make_float4(v8[0], v8[1], v8[2], v8[3]);
    v_row[1] = make_float4(v8[4], v8[5], v8[6], v8[7]);
  }
}

// One warp's rows: warp w owns rows i * kWarps + w, so a decode step's few rows spread over the
// warps.
template <int kHeadDim>
struct AttentionMainloop {
  using Config = AttentionConfig<kHeadDim>;
  static constexpr int kRowsPerWarp = Config::kRowsPerWarp;
  static constexpr int kDimsPerLane = Config::kDimsPerLane;

  int lane, warp;
  bool row_valid[kRowsPerWarp];
  int row_position[kRowsPerWarp];
  int warp_rows;  // rows i < warp_rows may be valid; the rest are skipped
  float m[kRowsPerWarp], l[kRowsPerWarp], acc[kRowsPerWarp][kDimsPerLane];  // acc: dims lane + 32 c

  __device__ __forceinline__ AttentionMainloop(const AttentionTiling& tiling, const AttentionRows& rows) {
    lane = threadIdx.x % 32;
    warp = threadIdx.x / 32;
    warp_rows = 0;
#pragma unroll
    for (int i = 0; i < kRowsPerWarp; ++i) {
      const int r = i * kAttentionWarps + warp;
      row_valid[i] = r < rows.num_used_rows && r % tiling.heads_per_block < rows.num_chunk_heads;
      row_position[i] = rows.first_position + r / tiling.heads_per_block;
      if (r < rows.num_used_rows) warp_rows = i + 1;
      m[i] = -INFINITY;
      l[i] = 0.0f;
#pragma unroll
      for (int c = 0; c < kDimsPerLane; ++c) acc[i][c] = 0.0f;
    }
  }

  // The block's keys, q_s written. Every thread of the block calls it (block-wide barriers).
  __device__ __forceinline__ void run(const AttentionArgs& a, const AttentionWork& w, const AttentionRows& rows,
                                      const float* q_s, float* k_s, float* v_s, float* p_s) {
    const int32_t* block_table = a.block_tables + int64_t{w.seq} * a.max_blocks_per_seq;
    for (int tile = rows.key_begin; tile < rows.key_end; tile += kAttentionKeys) {
      __syncthreads();  // the previous tile's readers are done (and q_s is written, first time)
      attention_load_tile<kHeadDim>(a, w, block_table, tile, rows.key_end, k_s, v_s);
      __syncthreads();
      if (warp_rows == 0) continue;  // uniform over the warp; barriers are outside
      float score[kRowsPerWarp];
      scores(q_s, k_s, score);
      float* p_warp = p_s + warp * kRowsPerWarp * kAttentionKeys;
      softmax(a, tile, rows.key_end, score, p_warp);
      __syncwarp();
      accumulate_pv(p_warp, v_s);
      __syncwarp();
    }
  }

  // Scores: lane = key of the tile.
  __device__ __forceinline__ void scores(const float* q_s, const float* k_s, float (&score)[kRowsPerWarp]) const {
#pragma unroll
    for (int i = 0; i < kRowsPerWarp; ++i) score[i] = 0.0f;
    const float* k_row = k_s + lane * Config::kKeyStride;
#pragma unroll 4
    for (int d = 0; d < kHeadDim; d += 4) {
      const float4 k4 = *reinterpret_cast<const float4*>(k_row + d);
#pragma unroll
      for (int i = 0; i < kRowsPerWarp; ++i) {
        if (i < warp_rows) {
          const float4 q4 = *reinterpret_cast<const float4*>(q_s + (i * kAttentionWarps + warp) * kHeadDim + d);
          score[i] += q4.x * k4.x + q4.y * k4.y + q4.z * k4.z + q4.w * k4.w;
        }
      }
    }
  }

  // Online softmax per row; p goes to shared memory for the value pass.
  __device__ __forceinline__ void softmax(const AttentionArgs& a, int tile, int key_end,
                                          const float (&score)[kRowsPerWarp], float* p_warp) {
    const int j = tile + lane;
#pragma unroll
    for (int i = 0; i < kRowsPerWarp; ++i) {
      if (i >= warp_rows) continue;
      const int first_key = a.sliding_window > 0 ? row_position[i] - a.sliding_window + 1 : 0;
      const bool visible = row_valid[i] && j < key_end && j <= row_position[i] && j >= first_key;
      const float s = visible ? score[i] * a.scale : -INFINITY;
      const float m_new = fmaxf(m[i], warp_max(s));
      float p = 0.0f;
      float alpha = 1.0f;
      if (m_new != -INFINITY) {  // uniform: m_new is the same in every lane
        alpha = expf(m[i] - m_new);  // m[i] == -inf gives 0: nothing accumulated yet
        p = expf(s - m_new);
      }
      l[i] = l[i] * alpha + warp_sum(p);
      m[i] = m_new;
#pragma unroll
      for (int c = 0; c < kDimsPerLane; ++c) acc[i][c] *= alpha;
      p_warp[i * kAttentionKeys + lane] = p;
    }
  }

  // acc += p . V: lane owns dims lane + 32 c.
  __device__ __forceinline__ void accumulate_pv(const float* p_warp, const float* v_s) {
#pragma unroll 2
    for (int key = 0; key < kAttentionKeys; key += 4) {
      float v[4][kDimsPerLane];
#pragma unroll
      for (int u = 0; u < 4; ++u) {
#pragma unroll
        for (int c = 0; c < kDimsPerLane; ++c) v[u][c] = v_s[(key + u) * kHeadDim + lane + 32 * c];
      }
#pragma unroll
      for (int i = 0; i < kRowsPerWarp; ++i) {
        if (i < warp_rows) {
          const float4 p4 = *reinterpret_cast<const float4*>(p_warp + i * kAttentionKeys + key);
#pragma unroll
          for (int c = 0; c < kDimsPerLane; ++c)
            acc[i][c] += p4.x * v[0][c] + p4.y * v[1][c] + p4.z * v[2][c] + p4.w * v[3][c];
        }
      }
    }
  }
};

}  // namespace brisk::cuda
