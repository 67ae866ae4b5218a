// GQA-aware paged decode attention on tensor cores (mma.sync m16n8k16, bf16 / f16), composed of
// its scheduler (decode_work.cuh), q rows (decode_query.cuh), K / V tiles (paged_kv_tiles.cuh),
// mainloop (decode_mainloop.cuh; decode_quant_mainloop.cuh over a quantized cache), epilogue with
// the split-KV merge (decode_epilogue.cuh, decode_merge.cuh) and the fused RoPE and KV append
// (decode_rope_append.cuh).
//
// One thread block per (key split, kv head x row chunk, sequence): its query rows (16; 8 over a
// quantized cache, decode_rows_per_block) share the kv head, so each K / V tile is read from HBM
// once for all of them. Padding rows (a group of 4 fills 4 of them) cost only tensor-core time.
//
// Start-up decides the single-wave shapes, where every block starts at once: the ragged layout,
// the block table and an L2 prefetch of the split's first keys are issued before the
// programmatic-dependent wait, so they overlap the previous kernel's tail, and so does the
// pipeline fill unless it holds new tokens' keys (with the fused append: only in a grid of
// several waves, decode_startup). In a single wave a fill issued after the wait goes after q:
// loads queue in issue order, and behind the burst of every block's fill q would hold the first
// tile's math back. In a grid of several waves most blocks start alone and the fill goes first.
#pragma once

#include <cstdint>
#include <type_traits>

#include "backend/cuda/kernels/decode_attention/decode_attention.h"
#include "backend/cuda/kernels/decode_attention/decode_config.cuh"
#include "backend/cuda/kernels/decode_attention/decode_epilogue.cuh"
#include "backend/cuda/kernels/decode_attention/decode_mainloop.cuh"
#include "backend/cuda/kernels/decode_attention/decode_quant_mainloop.cuh"
#include "backend/cuda/kernels/decode_attention/decode_query.cuh"
#include "backend/cuda/kernels/decode_attention/decode_rope_append.cuh"
#include "backend/cuda/kernels/decode_attention/decode_work.cuh"
#include "backend/cuda/kernels/dynamic_shared_memory.cuh"
#include "backend/cuda/kernels/paged_kv_tiles.cuh"
#include "backend/cuda/kernels/pdl.cuh"
#include "backend/cuda/runtime/cuda_check.h"

namespace brisk::cuda::decode {

template <FloatType kKvType, typename C>
__global__ void __launch_bounds__(C::kThreads, C::kBlocksPerSm)
decode_attention_kernel(const DecodeAttentionArgs a) {
  extern __shared__ __align__(128) uint8_t shared[];
  uint8_t* q_s = shared;                                           // [16, head_dim], swizzled
  uint8_t* ring_s = shared + C::kQBytes;                           // kStages x {K tile, V tile}
  float* ml_s = reinterpret_cast<float*>(ring_s + C::kRingBytes);  // [warps, 16, 2]

  // Launched as a programmatic dependent (pdl.cuh). Up to pdl_wait() the block reads only the
  // ragged layout and the block table, which host copies (or kernels before the previous one)
  // wrote, never the previous kernel (attention.cc states this contract), and prefetches K / V
  // into L2, which is coherent (a line that kernel then writes is updated there).
  const DecodeWork w = decode_work<C>(a);
  if (w.num_rows <= 0) return;  // uniform over the block, before any barrier
  const DecodeKeys keys = decode_keys<C>(a, w);
  const PagedKvTiles<C, DecodeAttentionArgs, C::kKvEvictFirst> tiles(a, w.seq, w.kv_head, keys.split_key0, keys.end,
                                                                     keys.num_tiles);
  tiles.prefetch_l2(C::kPrefetchTiles);  // the fill's tiles too: a prefetch starting after them lost
  int fill_ids[C::kStages - 1][C::kLoadsPerThread];  // ids of the pipeline fill's tiles
  int table_ids[C::kLoadsPerThread];                 // ids of the next tile to issue, loaded one tile ahead
  tiles.fetch_fill_ids(fill_ids, table_ids);
  const DecodeStartup start = decode_startup<C>(a, w, keys);
  if (start.fill_early) tiles.issue_fill(ring_s, fill_ids);
  NewKv<C::kHeadDim, C::kThreads, C::kCodes> new_kv;
  if (start.appends) new_kv.prepare(a, w.q_begin, w.q_len);
  DecodeQuery<kKvType, C> query;
  query.prepare(a, w);

  // Wait for the previous kernel's writes (q, and without the fused append the new tokens' K / V),
  // then let the next kernel launch early; it waits for this grid's completion before reading.
  pdl_wait();
  pdl_release();

  if (start.appends) new_kv.load(a, w.q_begin, w.kv_head);
  if (start.append_first) {
    new_kv.store(a, w.kv_head);
    __syncthreads();
  }
  // The fill goes out before q, except in a single wave (above).
  if (!a.single_wave && !start.fill_early) tiles.issue_fill(ring_s, fill_ids);
  query.load(a, w);
  asm volatile("" ::: "memory");  // the q loads are issued here, ahead of a single wave's fill
  if (a.single_wave && !start.fill_early) tiles.issue_fill(ring_s, fill_ids);
  query.store(q_s);

  using Mainloop =
      std::conditional_t<C::kCodes == KvCodes::kNone, DecodeMainloop<kKvType, C>, DecodeQuantMainloop<C>>;
  Mainloop mainloop(a, w, keys, q_s);
  if (start.appends && !start.append_first) new_kv.store(a, w.kv_head);
  __syncthreads();  // q_s is written (and the new keys, for the tiles issued from here on)
  mainloop.load_q();
  decode_run_mainloop<C>(mainloop, tiles, table_ids, ring_s, keys);

  DecodeEpilogue<C> epilogue(ring_s, ml_s);
  epilogue.merge_warps(mainloop);
  epilogue.store(a, w);
  if (a.num_splits == 1) return;
  epilogue.merge_splits_if_last(a, w, ring_s);
}

template <FloatType kKvType, KvCodes kCodes, int kHeadDim, int kWarps, int kStages, int kBlocksPerSm>
void launch_decode_attention_instance(const DecodeAttentionArgs& a, cudaStream_t stream) {
  using Config = DecodeConfig<kHeadDim, kWarps, kStages, kBlocksPerSm, kCodes>;
  constexpr auto kernel = decode_attention_kernel<kKvType, Config>;
  allow_dynamic_shared_memory<kernel>(Config::kSharedBytes);
  const dim3 grid(a.num_splits, a.num_kv_heads * a.num_row_chunks, a.num_seqs);
  launch_pdl(kernel, grid, Config::kThreads, Config::kSharedBytes, stream, a);
}

}  // namespace brisk::cuda::decode
