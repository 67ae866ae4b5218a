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
// position; the block-table entries of a tile are loaded one tile ahead. A quantized cache's tile
// is dequantized into a 16-bit tile by the whole block first (dequantize_tile). The math per tile
// and the epilogue: mma_mainloop.cuh.
#pragma once

#include <cstdint>

#include "backend/cuda/kernels/dynamic_shared_memory.cuh"
#include "backend/cuda/kernels/paged_kv_tiles.cuh"
#include "backend/cuda/kernels/prefill_attention/mma_mainloop.cuh"
#include "backend/cuda/runtime/cuda_check.h"

namespace brisk::cuda::prefill {

// A quantized cache's tile (K and V codes and their row parameters in `stage`, kv_codes.cuh)
// into the 16-bit f16 {K, V} tile the math reads (swizzled rows): thread tid converts the 16-byte
// code chunks tid + i kThreads of K, then of V. fp8 V is multiplied by its scale here (K's is in
// the softmax scale).
template <typename C>
__device__ __forceinline__ void dequantize_tile(const uint8_t* stage, uint8_t* out, float v_fp8_scale) {
  constexpr KvCodes kCodes = C::kCodes;
  constexpr int kOutChunks = kCodes == KvCodes::kInt4 ? 4 : 2;  // 16-bit chunks per code chunk
  const __half2 v_scale = __float2half2_rn(v_fp8_scale);
  for (int e = threadIdx.x; e < 2 * C::kTileKeys * C::kKvChunks; e += C::kThreads) {
    const int m = e / (C::kTileKeys * C::kKvChunks);  // 0: K, 1: V
    const int r = (e / C::kKvChunks) % C::kTileKeys;
    const int c = e % C::kKvChunks;
    const uint4 v = *reinterpret_cast<const uint4*>(stage + m * C::kTileBytes + kv_swizzled<C::kKvChunks>(r, c));
    const uint32_t words[4] = {v.x, v.y, v.z, v.w};
    __half2 zz, ss;
    if constexpr (C::kRowParams) {
      zz = __half2half2(kv_zero_plus_1024(stage[(m == 0 ? C::kKZeroOffset : C::kVZeroOffset) + r]));
      ss = __half2half2(
          kv_scale(*reinterpret_cast<const uint16_t*>(stage + (m == 0 ? C::kKScaleOffset : C::kVScaleOffset) + 2 * r)));
    }
    uint32_t outs[4 * kOutChunks];
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      uint32_t* o = outs + i * kF16WordsPerCodeWord<kCodes>;
      dequantize_word<kCodes>(words[i], zz, ss, o);
      if constexpr (kCodes == KvCodes::kFp8) {
        if (m == 1) {
#pragma unroll
          for (int j = 0; j < 2; ++j) o[j] = as_u32(__hmul2(as_half2(o[j]), v_scale));
        }
      }
    }
    uint8_t* tile = out + m * C::kFloatTileBytes;
#pragma unroll
    for (int o = 0; o < kOutChunks; ++o) {
      *reinterpret_cast<uint4*>(tile + swizzled<C::kChunks>(r, c * kOutChunks + o)) =
          make_uint4(outs[4 * o], outs[4 * o + 1], outs[4 * o + 2], outs[4 * o + 3]);
    }
  }
}

template <FloatType kKvType, typename C>
__global__ void __launch_bounds__(C::kThreads, C::kBlocksPerSm)
prefill_attention_kernel(const PrefillAttentionArgs a) {
  extern __shared__ __align__(128) uint8_t shared[];
  uint8_t* q_s = shared;                  // [rows, head_dim], swizzled
  uint8_t* ring_s = shared + C::kQBytes;  // kStages x {K tile, V tile}
  uint8_t* dequant_s = ring_s + C::kStages * C::kStageBytes;  // a quantized cache's tile, dequantized
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
    uint8_t* stage = tiles.next_stage(t, table_ids, ring_s);
    if constexpr (C::kCodes != KvCodes::kNone) {
      dequantize_tile<C>(stage, dequant_s, a.quant.v_fp8_scale);
      __syncthreads();  // the 16-bit tile is written (the next iteration's barrier guards its reuse)
      stage = dequant_s;
    }
    mainloop.tile(w.key_base + t * C::kTileKeys, shared_address(stage));
  }
  cp_async_wait<0>();
  mainloop.store(a, w, group);
}

template <FloatType kKvType, KvCodes kCodes, int kHeadDim, int kMTiles, int kTileKeys, int kStages, int kBlocksPerSm>
void launch_prefill_attention_instance(const PrefillAttentionArgs& a, cudaStream_t stream) {
  using Config = PrefillConfig<kHeadDim, kMTiles, kTileKeys, kStages, kBlocksPerSm, kCodes>;
  constexpr auto kernel = prefill_attention_kernel<kKvType, Config>;
  allow_dynamic_shared_memory<kernel>(Config::kSharedBytes);
  const dim3 grid(a.num_kv_heads, a.num_seqs, a.num_row_tiles);
  kernel<<<grid, Config::kThreads, Config::kSharedBytes, stream>>>(a);
  BRISK_CUDA_CHECK_LAUNCH();
}

}  // namespace brisk::cuda::prefill
