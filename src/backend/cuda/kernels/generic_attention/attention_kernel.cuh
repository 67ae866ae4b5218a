// Paged causal attention with grouped-query heads on CUDA cores, for what the tensor-core
// kernels (decode_attention/, prefill_attention/) do not take: fp32 KV, head_dim 32, block sizes
// that are not a power of two. Scores and softmax in fp32: exact enough to match the CPU reference
// within bf16 rounding, simple to verify.
//
// One thread block per (query tile of one sequence, kv head [, chunk of its query heads] [, key
// split]) (attention_work.cuh). A block owns kRows query rows: Tq consecutive tokens of one
// sequence times the Gb query heads that share the kv head, so every key / value row loaded from
// the paged cache is reused by all of them. The mainloop (attention_mainloop.cuh) streams the
// block's keys through shared memory; the epilogue (attention_epilogue.cuh) writes out, or with
// num_splits > 1 each block covers one range of keys and writes unnormalised fp32 partials for
// attention_combine_kernel (attention.cu).
#pragma once

#include <cstdint>

#include "backend/cuda/kernels/dynamic_shared_memory.cuh"
#include "backend/cuda/kernels/generic_attention/attention_config.h"
#include "backend/cuda/kernels/generic_attention/attention_epilogue.cuh"
#include "backend/cuda/kernels/generic_attention/attention_mainloop.cuh"
#include "backend/cuda/kernels/generic_attention/attention_work.cuh"
#include "backend/cuda/kernels/launch.h"
#include "backend/cuda/runtime/cuda_check.h"

namespace brisk::cuda {

template <int kHeadDim>
__global__ void __launch_bounds__(kAttentionThreads)
attention_kernel(AttentionArgs a, AttentionTiling tiling) {
  using Config = AttentionConfig<kHeadDim>;
  extern __shared__ float4 shared_raw[];
  float* q_s = reinterpret_cast<float*>(shared_raw);  // [kRows, kHeadDim]
  float* k_s = q_s + Config::kQFloats;                // [kKeys, kKeyStride]
  float* v_s = k_s + Config::kKFloats;                // [kKeys, kHeadDim]
  float* p_s = v_s + Config::kVFloats;                // [kWarps, kRowsPerWarp, kKeys]

  const AttentionWork w = attention_work(a, tiling);
  if (w.tile_token0 >= w.q_len) return;  // uniform over the block: before any barrier
  const AttentionRows rows = attention_rows(a, tiling, w);
  AttentionMainloop<kHeadDim> mainloop(tiling, rows);
  attention_stage_q<kHeadDim>(a, tiling, w, rows, q_s);
  mainloop.run(a, w, rows, q_s, k_s, v_s, p_s);
  attention_store<kHeadDim>(a, tiling, w, rows, mainloop);
}

template <int kHeadDim>
void launch_attention_head_dim(const AttentionArgs& a, cudaStream_t stream) {
  using Config = AttentionConfig<kHeadDim>;
  allow_dynamic_shared_memory<attention_kernel<kHeadDim>>(static_cast<int>(Config::kSharedBytes));
  const AttentionTiling tiling = attention_tiling(a, Config::kRows);
  const dim3 grid(tiling.num_query_tiles, a.num_seqs, a.num_kv_heads * tiling.num_head_chunks * a.num_splits);
  attention_kernel<kHeadDim><<<grid, kAttentionThreads, Config::kSharedBytes, stream>>>(a, tiling);
  BRISK_CUDA_CHECK_LAUNCH();
}

}  // namespace brisk::cuda
