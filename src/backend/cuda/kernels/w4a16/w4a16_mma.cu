// W4A16 on tensor cores for small and medium M (decode, short prefills): y = x * dequant(w)^T
// with mma.sync m16n8k16, the dequantized weights as the A operand (16 output features) and x as
// B (8 tokens), so one fragment serves M <= 8 and m_tiles fragments M <= 8 m_tiles. Weights in
// brisk's int4 row layout (model/int4_weight.h) or, faster, in the tile layout
// (Int4Layout::kTiles16, backend.h) that Backend::repack_int4 makes at load time: the same 16
// bytes per lane, stored so that the warps side by side stream one contiguous run.
//
// The pieces: mma_tile_scheduler.cuh (a warp's rows and K range), mma_x.cuh (where x comes from),
// mma_mainloop.cuh (the register ring of weight loads, dequantization and MMAs), mma_epilogue.cuh
// (the stores). Split-K (when N alone gives too few warps, w4a16_plan.cc) writes fp32 partials
// that launch_w4a16_reduce sums: deterministic and graph safe. The kernels are programmatic
// dependents (pdl.cuh).
#include <algorithm>
#include <cstdint>

#include "backend/cuda/kernels/dynamic_shared_memory.cuh"
#include "backend/cuda/kernels/float_io.cuh"
#include "backend/cuda/kernels/launch.h"
#include "backend/cuda/kernels/pdl.cuh"
#include "backend/cuda/kernels/w4a16/int4_pairs.cuh"
#include "backend/cuda/kernels/w4a16/mma_epilogue.cuh"
#include "backend/cuda/kernels/w4a16/mma_mainloop.cuh"
#include "backend/cuda/kernels/w4a16/mma_tile_scheduler.cuh"
#include "backend/cuda/kernels/w4a16/mma_x.cuh"
#include "backend/cuda/kernels/w4a16/w4a16_configs.h"
#include "backend/cuda/kernels/w4a16/w4a16_launch.h"
#include "backend/cuda/runtime/cuda_check.h"

namespace brisk::cuda {
namespace {

template <FloatType kType, FloatType kScale, int kIndex, bool kScaleAfter, bool kSiluGate>
__global__ void __launch_bounds__(kW4A16MmaThreads, kW4A16MmaConfigs[kIndex].min_blocks)
    w4a16_mma_kernel(W4A16Args a, bool tiles, const uint4* xp, const float* xsum) {
  using Mainloop = MmaMainloop<kType, kScale, kIndex, kScaleAfter, kSiluGate>;
  constexpr int kMTiles = Mainloop::kMTiles, kNTiles = Mainloop::kNTiles;
  constexpr bool kShared = Mainloop::kCfg.x == W4A16XSource::kShared;
  const int lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const MmaWarpTile<kNTiles, kSiluGate> tile(a);
  if (!kShared && !tile.active) return;  // (shared x: the warp helps fill it first)
  const MmaKSplit k(a);

  MmaWeightRows<kNTiles> rows;
  typename Mainloop::Step ring[Mainloop::kStages];
  Mainloop mainloop(a, tile, k, tiles, lane, rows);
  if (tile.active) mainloop.load_prologue(k.begin, ring);
  // Programmatic dependent launch: the weights, scales and zero points (the model's, written at
  // load time) are on their way while the kernel before this one finishes; x, its permuted copy
  // and the outputs wait for it.
  pdl_wait();

  extern __shared__ uint4 x_shared[];
  const MmaSharedXLayout shared_x(a, x_shared, k.begin, k.end);
  if constexpr (kShared) {
    shared_x.fill<kW4A16MmaThreads>(a, k.begin);
    __syncthreads();
    if (!tile.active) return;
  }

  float acc[kMTiles][kNTiles][4];
#pragma unroll
  for (int mt = 0; mt < kMTiles; ++mt)
#pragma unroll
    for (int nt = 0; nt < kNTiles; ++nt)
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[mt][nt][i] = 0.0f;
  if constexpr (kShared) {
    mainloop.run(k.begin, ring, MmaSharedX<kMTiles, Mainloop::kChunks>(a, shared_x, k.begin, g, t), acc);
  } else {
    mainloop.run(k.begin, ring, MmaPermutedX<kMTiles>{xp, xsum, mainloop.chunks_per_row, lane, t}, acc);
  }
  // The kernel after this one may start as the blocks finish (each block's exit counts too):
  // released before the stores, not ahead of the main loop, where the next kernel's early blocks
  // would take bandwidth and SM room from this one's.
  pdl_release();
  mma_store(a, acc, tile, g, t);
}

// x [m, k] (16-bit) into fragment order for m_tiles * 8 tokens (zeros past m), and the sum of
// each token's x over each 128-K chunk: xsum [k / 128, m_tiles * 8] (mma_x.cuh). A block of 128
// threads handles one (tile, chunk): thread = word w * 32 + lane.
__global__ void __launch_bounds__(128) w4a16_permute_x_kernel(W4A16Args a, int m_tiles, uint4* out, float* xsum) {
  __shared__ float sums[4][8];
  pdl_wait();  // x comes from the kernel before
  pdl_release();
  const int64_t chunks_per_row = a.k / 128;
  const int lane = threadIdx.x % 32, w = threadIdx.x / 32, g = lane / 4, t = lane % 4;
  for (int64_t block = blockIdx.x; block < m_tiles * chunks_per_row; block += gridDim.x) {
    const int64_t chunk = block % chunks_per_row, mt = block / chunks_per_row;
    const int64_t token = 8 * mt + g;
    uint4 v = make_uint4(0, 0, 0, 0);
    if (token < a.m) {
      const uint16_t* xr = static_cast<const uint16_t*>(a.x) + token * a.x_stride + chunk * 128 + 32 * t + 8 * w;
      v = *reinterpret_cast<const uint4*>(xr);
    }
    out[block * 128 + threadIdx.x] = pair_halves(v);
    float sum = sum8(v, a.x_type);
    sum += __shfl_xor_sync(0xFFFFFFFFu, sum, 1);
    sum += __shfl_xor_sync(0xFFFFFFFFu, sum, 2);
    if (t == 0) sums[w][g] = sum;
    __syncthreads();
    if (threadIdx.x < 8) {
      xsum[chunk * (8 * m_tiles) + 8 * mt + threadIdx.x] =
          (sums[0][threadIdx.x] + sums[1][threadIdx.x]) + (sums[2][threadIdx.x] + sums[3][threadIdx.x]);
    }
    __syncthreads();
  }
}

template <FloatType kType, FloatType kScale, int kIndex, bool kScaleAfter, bool kSiluGate>
void launch_config(const W4A16Args& a, bool tiles, const uint4* xp, const float* xsum, cudaStream_t stream) {
  constexpr W4A16MmaConfig kCfg = kW4A16MmaConfigs[kIndex];
  constexpr auto kernel = w4a16_mma_kernel<kType, kScale, kIndex, kScaleAfter, kSiluGate>;
  const int64_t num_warps = (a.n + 16 * kCfg.n_tiles - 1) / (16 * kCfg.n_tiles);  // (silu_gate: N / 2 by 8)
  const dim3 grid(static_cast<unsigned>((num_warps + kW4A16MmaWarps - 1) / kW4A16MmaWarps),
                  static_cast<unsigned>(a.num_splits));
  int shared = 0;
  if constexpr (kCfg.x == W4A16XSource::kShared) {
    allow_dynamic_shared_memory<kernel>(static_cast<int>(kW4A16MmaMaxSharedX));
    shared = static_cast<int>(w4a16_shared_x_bytes(a.m, a.k_per_split));
  }
  launch_pdl(kernel, grid, dim3(kW4A16MmaThreads), shared, stream, a, tiles, xp, xsum);
}

// Scales applied after the MMA where each 128-K chunk lies in one group (a power of two from
// 128); only these instantiations fuse silu_gate.
template <FloatType kType, FloatType kScale, int kIndex>
void launch_scales(const W4A16Args& a, bool tiles, const uint4* xp, const float* xsum, cudaStream_t stream) {
  if (a.silu_gate) {
    launch_config<kType, kScale, kIndex, true, true>(a, tiles, xp, xsum, stream);
  } else if (w4a16_mma_scales_after(a.group_size)) {
    launch_config<kType, kScale, kIndex, true, false>(a, tiles, xp, xsum, stream);
  } else {
    launch_config<kType, kScale, kIndex, false, false>(a, tiles, xp, xsum, stream);
  }
}

template <FloatType kType, int kIndex>
void launch_index(const W4A16Args& a, bool tiles, const uint4* xp, const float* xsum, int index, cudaStream_t stream) {
  if constexpr (kIndex < kW4A16MmaNumConfigs) {
    if (index != kIndex) {
      launch_index<kType, kIndex + 1>(a, tiles, xp, xsum, index, stream);
    } else if (a.scale_type == FloatType::kF32) {
      launch_scales<kType, FloatType::kF32, kIndex>(a, tiles, xp, xsum, stream);
    } else if (a.scale_type == FloatType::kBF16) {
      launch_scales<kType, FloatType::kBF16, kIndex>(a, tiles, xp, xsum, stream);
    } else {
      launch_scales<kType, FloatType::kF16, kIndex>(a, tiles, xp, xsum, stream);
    }
  }
}

}  // namespace

void launch_w4a16_mma(const W4A16Args& a, bool tiles, void* x_frag, cudaStream_t stream) {
  if (a.m == 0 || a.n == 0) return;
  const int index = a.mma_config;
  const W4A16MmaConfig cfg = kW4A16MmaConfigs[index];
  const uint4* xp = nullptr;
  const float* xsum = nullptr;
  if (cfg.x == W4A16XSource::kPermuted) {
    const int64_t tokens = 8 * cfg.m_tiles;
    uint4* frag = static_cast<uint4*>(x_frag);
    float* sums = reinterpret_cast<float*>(static_cast<char*>(x_frag) + tokens * a.k * 2);
    const unsigned blocks = static_cast<unsigned>(std::clamp<int64_t>(cfg.m_tiles * (a.k / 128), 1, 65535));
    launch_pdl(w4a16_permute_x_kernel, dim3(blocks), dim3(128), 0, stream, a, cfg.m_tiles, frag, sums);
    BRISK_CUDA_CHECK(cudaGetLastError());
    xp = frag;
    xsum = sums;
  }
  if (a.x_type == FloatType::kF16) {
    launch_index<FloatType::kF16, 0>(a, tiles, xp, xsum, index, stream);
  } else {
    launch_index<FloatType::kBF16, 0>(a, tiles, xp, xsum, index, stream);
  }
  BRISK_CUDA_CHECK(cudaGetLastError());
  if (a.num_splits > 1) launch_w4a16_reduce(a, stream);
}

}  // namespace brisk::cuda
