// The compile-time shape of one decode attention kernel instance (decode_attention.h:
// DecodeKernelShape): its shared-memory plan and the copy mapping of its K / V tiles.
#pragma once

#include "backend/cuda/kernels/decode_attention/decode_attention.h"
#include "backend/cuda/kernels/paged_kv_tiles.cuh"

namespace brisk::cuda::decode {

static_assert(kDecodeRowsPerBlock == 16);

template <int kHeadDimArg, int kWarpsArg, int kStagesArg, int kBlocksPerSmArg, KvCodes kCodesArg = KvCodes::kNone>
struct DecodeConfig
    : KvRingLayout<kHeadDimArg, kWarpsArg * decode_keys_per_warp(kCodesArg, kHeadDimArg), kWarpsArg * 32, kCodesArg> {
  using Ring =
      KvRingLayout<kHeadDimArg, kWarpsArg * decode_keys_per_warp(kCodesArg, kHeadDimArg), kWarpsArg * 32, kCodesArg>;
  static constexpr int kHeadDim = kHeadDimArg;
  static constexpr int kWarps = kWarpsArg;
  static constexpr int kThreads = kWarps * 32;
  static constexpr int kKeysPerWarp = decode_keys_per_warp(kCodesArg, kHeadDimArg);  // of every tile
  static constexpr int kRowsPerBlock = decode_rows_per_block(kCodesArg);  // of q_s's kDecodeRowsPerBlock
  static constexpr int kKeySteps = kKeysPerWarp / 16;  // 16-key k-steps of P V (m16n8k16 S tile pairs)
  static constexpr int kTileKeys = kWarps * kKeysPerWarp;  // keys per pipeline stage
  static constexpr int kStages = kStagesArg;
  static constexpr int kBlocksPerSm = kBlocksPerSmArg;
  static constexpr int kChunks = kHeadDim / 8;  // 16-byte chunks of a 16-bit row (q; K / V when not quantized)
  static constexpr int kStageBytes = Ring::kStageBytes;
  static constexpr int kPipeBytes = kStages * kStageBytes;
  static constexpr int kQBytes = kDecodeRowsPerBlock * kHeadDim * 2;
  static constexpr int kReduceStride = kHeadDim + 4;  // floats; padding against bank conflicts
  static constexpr int kReduceBytes = kWarps * kDecodeRowsPerBlock * kReduceStride * 4;
  // The ring holds the pipeline, then the epilogue's warp reduction, then the split merge's buffer.
  static constexpr int kRingBytes = kPipeBytes > kReduceBytes ? kPipeBytes : kReduceBytes;
  static constexpr int kMlBytes = kWarps * kDecodeRowsPerBlock * 2 * 4;
  static constexpr int kSharedBytes = kQBytes + kRingBytes + kMlBytes;
  static_assert(kStages >= 2);
  static constexpr int kQLoadsPerThread = kDecodeRowsPerBlock * kChunks / kThreads;  // 8-element runs of q
  static_assert(kQLoadsPerThread * kThreads == kDecodeRowsPerBlock * kChunks);
  // The 16-bit mainloop keeps q's A fragments in registers up to head_dim 128; at 256 they would
  // push O's 128 accumulators into spills, so they are re-read from shared memory per tile, as the
  // quantized mainloop always does.
  static constexpr bool kQInRegisters = kHeadDim <= 128;
  // Tiles each block prefetches into L2 before its PDL wait: 128 KB of K and V per SM in all
  // (2 tiles at head_dim 128); fewer or more were slower (docs/perf/decode_attention.md).
  static constexpr int kPrefetchTiles = 128 * 1024 / (kBlocksPerSm * kStageBytes);
  // K / V copies with an L2 evict-first policy: read once, their lines are the first to make
  // room, so they do not push out the lines prefetched for the tiles ahead, nor anything else in
  // L2. Not in the 2-warp, head_dim 256 and quantized shapes: there ptxas 13.0 emits some hinted
  // copies with a uniform-register descriptor it never writes (an illegal instruction at run time).
  static constexpr bool kKvEvictFirst = kWarps == 4 && kHeadDim <= 128 && kCodesArg == KvCodes::kNone;
  static_assert(kBlocksPerSm * (kSharedBytes + 1024) <= 228 * 1024);
};

// q's 16-row A fragment for k-step kk (16 head dims) from q_s (at shared address q_base).
template <typename C>
__device__ __forceinline__ void decode_q_fragment(uint32_t (&frag)[4], uint32_t q_base, int lane, int kk) {
  const int matrix = lane / 8;
  ldmatrix_x4(frag, q_base + swizzled<C::kChunks>((matrix & 1) * 8 + lane % 8, kk * 2 + (matrix >> 1)));
}

}  // namespace brisk::cuda::decode
