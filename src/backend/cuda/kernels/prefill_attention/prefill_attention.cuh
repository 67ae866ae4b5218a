// Paged causal GQA prefill attention on tensor cores (mma.sync m16n8k16, bf16 / f16),
// FlashAttention-2 style: the kernel for what the Hopper one (prefill_attention_hopper.cuh) does
// not take (head_dim 256, block sizes under 8).
//
// Work split: one thread block of 4 warps per (kv head, sequence, row tile). The block's rows are
// (token, head) pairs of one sequence that share the kv head, token-major (row = token * group +
// head in group), so every K/V tile read from the cache serves the whole GQA group, and a chunk
// of few tokens still fills the rows. Warp w owns rows [w * 16 m_tiles, (w + 1) * 16 m_tiles).
//
// K and V stream from the paged cache with 16-byte cp.async (zero fill past the end, rows
// XOR-swizzled for conflict-free ldmatrix) through a kStages-deep ring (paged_kv_tiles.cuh), key
// tiles of kTileKeys keys from the lowest key any row sees (sliding window) to the last row's
// position; the block-table entries of a tile are loaded one tile ahead. The math per tile and
// the epilogue: mma_mainloop.cuh.
#pragma once

#include <cstdint>

#include "backend/cuda/kernels/dynamic_shared_memory.cuh"
#include "backend/cuda/kernels/paged_kv_tiles.cuh"
#include "backend/cuda/kernels/prefill_attention/mma_mainloop.cuh"
#include "backend/cuda/runtime/cuda_check.h"

namespace brisk::cuda::prefill {

template <FloatType kKvType, typename C>
__global__ void __launch_bounds__(C::kThreads, C::kBlocksPerSm)
prefill_attention_kernel(const PrefillAttentionArgs a) {
  extern __shared__ __align__(128) uint8_t shared[];
  uint8_t* q_s = shared;                  // [rows, head_dim], swizzled
  uint8_t* ring_s = shared + C::kQBytes;  // kStages x {K tile, V tile}
  const int group = a.num_heads / a.num_kv_heads;
  const MmaWork w = mma_work<C>(a, group);
  if (w.num_rows <= 0) return;  // uniform over the block, before any barrier

  // The pipeline is filled first, then q is staged meanwhile.
  const PagedKvTiles<C, PrefillAttentionArgs> tiles(a, w.seq, w.kv_head, w.key_base, w.key_end, w.num_tiles);
  int table_ids[C::kLoadsPerThread];  // ids of the next tile to issue, loaded one tile ahead
  tiles.fill(ring_s, table_ids);
  mma_stage_q<kKvType, C>(a, w, group, q_s);
  MmaMainloop<kKvType, C> mainloop(a, w, group);
  __syncthreads();  // q_s is written
  mainloop.load_q(q_s);

  for (int t = 0; t < w.num_tiles; ++t) {
    cp_async_wait<C::kStages - 2>();
    __syncthreads();  // tile t landed for every thread; everyone is done with tile t - 1's slot
    tiles.issue(t + C::kStages - 1, table_ids, ring_s);
    cp_async_commit();
    tiles.fetch_ids(t + C::kStages, table_ids);
    mainloop.tile(w.key_base + t * C::kTileKeys, shared_address(ring_s + (t % C::kStages) * C::kStageBytes));
  }
  cp_async_wait<0>();
  mainloop.store(a, w, group);
}

template <FloatType kKvType, int kHeadDim, int kMTiles, int kTileKeys, int kStages, int kBlocksPerSm>
void launch_prefill_attention_instance(const PrefillAttentionArgs& a, cudaStream_t stream) {
  using Config = PrefillConfig<kHeadDim, kMTiles, kTileKeys, kStages, kBlocksPerSm>;
  constexpr auto kernel = prefill_attention_kernel<kKvType, Config>;
  allow_dynamic_shared_memory<kernel>(Config::kSharedBytes);
  const dim3 grid(a.num_kv_heads, a.num_seqs, a.num_row_tiles);
  kernel<<<grid, Config::kThreads, Config::kSharedBytes, stream>>>(a);
  BRISK_CUDA_CHECK_LAUNCH();
}

}  // namespace brisk::cuda::prefill
