// Paged causal attention with grouped-query heads, one thread block per
// (query tile of one sequence, kv head [, chunk of its query heads] [, key split]).
//
// A block owns kRows query rows: Tq consecutive tokens of one sequence times the Gb query heads
// that share the kv head, so every key/value row loaded from the paged cache is reused by all
// of them. Keys go through shared memory in tiles of 32 (converted to fp32); within a warp, lane
// j scores key j of the tile against each of the warp's rows (q rows are broadcast from shared
// memory), then the warp updates its rows' online softmax (running max m, sum l, fp32
// accumulators acc of head_dim / 32 dims per lane). With num_splits > 1 each block covers one
// range of keys and writes unnormalised fp32 partials for attention_combine_kernel.
//
// Scores are computed on CUDA cores in fp32 (no tensor cores yet): exact enough to match the
// CPU reference within bf16 rounding, simple to verify; a tensor-core prefill kernel is the
// next step when prefill attention time matters.
#pragma once

#include <cstdint>

#include "backend/cuda/kernels/float_io.cuh"
#include "backend/cuda/kernels/launch.h"
#include "backend/cuda/kernels/mma_common.cuh"
#include "backend/cuda/kernels/dynamic_shared_memory.cuh"
#include "backend/cuda/runtime/cuda_check.h"

namespace brisk::cuda {

constexpr int kAttentionWarps = 8;
constexpr int kAttentionThreads = kAttentionWarps * 32;
constexpr int kAttentionKeys = 32;  // keys per shared-memory tile: one per lane

template <int kHeadDim>
struct AttentionConfig {
  static constexpr int kRowsPerWarp = kHeadDim <= 128 ? 8 : 4;
  static constexpr int kRows = kAttentionWarps * kRowsPerWarp;  // query rows per block
  static constexpr int kDimsPerLane = kHeadDim / 32;
  static constexpr int kKeyStride = kHeadDim + 4;  // padding: conflict-free float4 row reads
  static constexpr size_t kQFloats = size_t{kRows} * kHeadDim;
  static constexpr size_t kKFloats = size_t{kAttentionKeys} * kKeyStride;
  static constexpr size_t kVFloats = size_t{kAttentionKeys} * kHeadDim;
  static constexpr size_t kPFloats = size_t{kAttentionWarps} * kRowsPerWarp * kAttentionKeys;
  static constexpr size_t kSharedBytes = (kQFloats + kKFloats + kVFloats + kPFloats) * sizeof(float);
};

// The shape of the work: how query rows map to blocks. Shared by the launcher and the kernel.
struct AttentionTiling {
  int heads_per_block;  // Gb: query heads of one kv head handled together
  int tokens_per_block; // Tq
  int num_head_chunks;  // ceil(group_size / Gb)
  int num_query_tiles;  // ceil(max_query_len / Tq)
};

inline AttentionTiling attention_tiling(const AttentionArgs& a, int rows_per_block) {
  AttentionTiling t;
  const int group = a.num_heads / a.num_kv_heads;
  t.heads_per_block = group < rows_per_block ? group : rows_per_block;
  t.tokens_per_block = rows_per_block / t.heads_per_block;
  t.num_head_chunks = (group + t.heads_per_block - 1) / t.heads_per_block;
  const int max_query = a.max_query_len > 0 ? a.max_query_len : a.num_tokens;
  t.num_query_tiles = (max_query + t.tokens_per_block - 1) / t.tokens_per_block;
  return t;
}

template <int kHeadDim>
__global__ void __launch_bounds__(kAttentionThreads)
attention_kernel(AttentionArgs a, AttentionTiling tiling) {
  using Config = AttentionConfig<kHeadDim>;
  constexpr int kRowsPerWarp = Config::kRowsPerWarp;
  constexpr int kDimsPerLane = Config::kDimsPerLane;
  extern __shared__ float4 shared_raw[];
  float* q_s = reinterpret_cast<float*>(shared_raw);  // [kRows, kHeadDim]
  float* k_s = q_s + Config::kQFloats;                // [kKeys, kKeyStride]
  float* v_s = k_s + Config::kKFloats;                // [kKeys, kHeadDim]
  float* p_s = v_s + Config::kVFloats;                // [kWarps, kRowsPerWarp, kKeys]

  const int lane = threadIdx.x % 32;
  const int warp = threadIdx.x / 32;
  const int seq = blockIdx.y;
  const int group = a.num_heads / a.num_kv_heads;
  const int split = blockIdx.z % a.num_splits;
  const int head_chunk = (blockIdx.z / a.num_splits) % tiling.num_head_chunks;
  const int kv_head = blockIdx.z / a.num_splits / tiling.num_head_chunks;

  const int q_begin = a.query_start[seq];
  const int q_len = a.query_start[seq + 1] - q_begin;
  const int context_len = a.context_lens[seq];
  const int tile_token0 = blockIdx.x * tiling.tokens_per_block;
  if (tile_token0 >= q_len) return;  // uniform over the block: before any barrier
  const int num_tile_tokens = min(tiling.tokens_per_block, q_len - tile_token0);
  const int first_head = kv_head * group + head_chunk * tiling.heads_per_block;
  const int num_chunk_heads = min(tiling.heads_per_block, group - head_chunk * tiling.heads_per_block);
  const int first_position = context_len - q_len + tile_token0;
  const int num_used_rows = num_tile_tokens * tiling.heads_per_block;

  // Keys this block covers: causal end of the last token, window start of the first one.
  int key_begin = a.sliding_window > 0 ? max(0, first_position - a.sliding_window + 1) : 0;
  int key_end = first_position + num_tile_tokens;
  if (a.num_splits > 1) {
    const int per_split = ((key_end - key_begin + a.num_splits - 1) / a.num_splits +
                           kAttentionKeys - 1) / kAttentionKeys * kAttentionKeys;
    key_begin = min(key_end, key_begin + split * per_split);
    key_end = min(key_end, key_begin + per_split);
  }

  // Row r of the block = (token r / Gb of the tile, head r % Gb of the chunk); warp w owns rows
  // i * kWarps + w, so a decode step's few rows spread over the warps.
  bool row_valid[kRowsPerWarp];
  int row_position[kRowsPerWarp];
  int warp_rows = 0;  // rows i < warp_rows may be valid; the rest are skipped
#pragma unroll
  for (int i = 0; i < kRowsPerWarp; ++i) {
    const int r = i * kAttentionWarps + warp;
    row_valid[i] = r < num_used_rows && r % tiling.heads_per_block < num_chunk_heads;
    row_position[i] = first_position + r / tiling.heads_per_block;
    if (r < num_used_rows) warp_rows = i + 1;
  }

  for (int e = threadIdx.x; e < Config::kRows * kHeadDim; e += blockDim.x) {
    const int r = e / kHeadDim;
    const int d = e % kHeadDim;
    float value = 0.0f;
    if (r < num_used_rows && r % tiling.heads_per_block < num_chunk_heads) {
      const int64_t token = q_begin + tile_token0 + r / tiling.heads_per_block;
      const int64_t head = first_head + r % tiling.heads_per_block;
      value = load_one(a.q, a.q_type, token * a.q_stride + head * kHeadDim + d);
    }
    q_s[e] = value;
  }

  float m[kRowsPerWarp], l[kRowsPerWarp], acc[kRowsPerWarp][kDimsPerLane];
#pragma unroll
  for (int i = 0; i < kRowsPerWarp; ++i) {
    m[i] = -INFINITY;
    l[i] = 0.0f;
#pragma unroll
    for (int c = 0; c < kDimsPerLane; ++c) acc[i][c] = 0.0f;
  }

  const int32_t* block_table = a.block_tables + int64_t{seq} * a.max_blocks_per_seq;
  for (int tile = key_begin; tile < key_end; tile += kAttentionKeys) {
    __syncthreads();  // the previous tile's readers are done (and q_s is written, first time)
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
              ((int64_t{block} * a.num_kv_heads + kv_head) * a.block_size + j % a.block_size) *
                  kHeadDim + d;
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
    __syncthreads();
    if (warp_rows == 0) continue;  // uniform over the warp; barriers are outside

    // Scores: lane = key of the tile.
    float score[kRowsPerWarp];
#pragma unroll
    for (int i = 0; i < kRowsPerWarp; ++i) score[i] = 0.0f;
    const float* k_row = k_s + lane * Config::kKeyStride;
#pragma unroll 4
    for (int d = 0; d < kHeadDim; d += 4) {
      const float4 k4 = *reinterpret_cast<const float4*>(k_row + d);
#pragma unroll
      for (int i = 0; i < kRowsPerWarp; ++i) {
        if (i < warp_rows) {
          const float4 q4 = *reinterpret_cast<const float4*>(
              q_s + (i * kAttentionWarps + warp) * kHeadDim + d);
          score[i] += q4.x * k4.x + q4.y * k4.y + q4.z * k4.z + q4.w * k4.w;
        }
      }
    }

    // Online softmax per row; p goes to shared memory for the value pass.
    const int j = tile + lane;
    float* p_warp = p_s + warp * kRowsPerWarp * kAttentionKeys;
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
    __syncwarp();

    // acc += p . V: lane owns dims lane + 32 c.
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
    __syncwarp();
  }

  // Results of the warp's valid rows.
#pragma unroll
  for (int i = 0; i < kRowsPerWarp; ++i) {
    if (!row_valid[i]) continue;
    const int r = i * kAttentionWarps + warp;
    const int64_t token = q_begin + tile_token0 + r / tiling.heads_per_block;
    const int64_t head = first_head + r % tiling.heads_per_block;
    if (a.num_splits == 1) {
      const float inv_sum = l[i] > 0.0f ? 1.0f / l[i] : 0.0f;
      void* out_row = row_ptr(a.out, a.out_type, token, a.out_stride);
#pragma unroll
      for (int c = 0; c < kDimsPerLane; ++c)
        store_one(out_row, a.out_type, head * kHeadDim + lane + 32 * c, acc[i][c] * inv_sum);
    } else {
      const int64_t item = (int64_t{split} * a.num_tokens + token) * a.num_heads + head;
#pragma unroll
      for (int c = 0; c < kDimsPerLane; ++c) a.partial_acc[item * kHeadDim + lane + 32 * c] = acc[i][c];
      if (lane == 0) {
        a.partial_ml[item * 2] = m[i];
        a.partial_ml[item * 2 + 1] = l[i];
      }
    }
  }
}

template <int kHeadDim>
void launch_attention_head_dim(const AttentionArgs& a, cudaStream_t stream) {
  using Config = AttentionConfig<kHeadDim>;
  allow_dynamic_shared_memory<attention_kernel<kHeadDim>>(static_cast<int>(Config::kSharedBytes));
  const AttentionTiling tiling = attention_tiling(a, Config::kRows);
  const dim3 grid(tiling.num_query_tiles, a.num_seqs,
                  a.num_kv_heads * tiling.num_head_chunks * a.num_splits);
  attention_kernel<kHeadDim><<<grid, kAttentionThreads, Config::kSharedBytes, stream>>>(a, tiling);
  BRISK_CUDA_CHECK_LAUNCH();
}

}  // namespace brisk::cuda
