// W4A16 for prefill on Hopper tensor cores: y^T = dequant(W) x^T with warpgroup MMAs (wgmma),
// the int4 weights as the A operand taken from registers (dequantized there, never written to
// shared memory in 16 bits) and x as the B operand from shared memory.
//
// A block takes one (128 weight rows, tokens) tile (wgmma_tile_scheduler.cuh), then one K split
// of each split tile: two consumer warpgroups of 64 rows each (the wgmma's M; warp w of one the
// 16-row tile 4 wg + w) multiply by the same x tile (the wgmma's N = tokens per block), fed by a
// producer warpgroup through a ring of stages (wgmma_mainloop.cuh); outputs leave through
// shared memory (wgmma_epilogue.cuh). Split-K (w4a16_wgmma_plan: the tiles past the last whole
// wave, or all of them when they fill less than one) writes fp32 partials that a second kernel
// sums (w4a16_wgmma_reduce_kernel), deterministic and graph safe. Programmatic dependent launch:
// the first ring round's weights are requested before the kernel ahead has finished, and the
// kernel after may launch once every block's MMAs are done. silu_gate (N / 2 % 16 == 0, direct
// x): a block's 64 features take their 4 gate tiles and 4 up tiles, and each warp's rows g and
// g + 8 are one feature's gate and up rows, so each lane computes silu(gate) * up of its own sums.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdint>

#include "backend/cuda/kernels/dynamic_shared_memory.cuh"
#include "backend/cuda/kernels/float_io.cuh"
#include "backend/cuda/kernels/hopper_async.cuh"
#include "backend/cuda/kernels/launch.h"
#include "backend/cuda/kernels/pdl.cuh"
#include "backend/cuda/kernels/silu.cuh"
#include "backend/cuda/kernels/w4a16/w4a16_configs.h"
#include "backend/cuda/kernels/w4a16/w4a16_launch.h"
#include "backend/cuda/kernels/w4a16/w4a16_wgmma.h"
#include "backend/cuda/kernels/w4a16/wgmma_epilogue.cuh"
#include "backend/cuda/kernels/w4a16/wgmma_mainloop.cuh"
#include "backend/cuda/kernels/w4a16/wgmma_reduce.cuh"
#include "backend/cuda/kernels/w4a16/wgmma_tile_scheduler.cuh"
#include "backend/cuda/runtime/cuda_check.h"

namespace brisk::cuda {
namespace {

template <FloatType kType, FloatType kScale, int kTokens, int kStages, bool kPermutedX, bool kSiluGate>
__global__ void __launch_bounds__(kWgmmaThreads, 1)
    w4a16_wgmma_kernel(const W4A16Args a, const __grid_constant__ CUtensorMap x_map) {
  extern __shared__ uint8_t shared_raw[];
  const WgmmaRing<kTokens, kStages> ring(shared_raw);
  const int tid = threadIdx.x;
  const WgmmaTile<kTokens> tile(a);
  if (tid == 0) ring.init();
  __syncthreads();

  if (tid >= 256) {  // the producer warpgroup: one thread issues the copies
    hopper::registers_decrease<kWgmmaProducerRegisters>();
    if (tid != 256) return;
    wgmma_produce<kTokens, kStages, kSiluGate>(a, &x_map, ring, tile);
    return;
  }

  hopper::registers_increase<kWgmmaConsumerRegisters>();
  const WgmmaWarpRows<kSiluGate> rows(a, tile.tile0);
  const WgmmaConsumer<kType, kScale, kTokens, kStages, kPermutedX, kSiluGate> consumer(a, ring, tile, rows);
  float acc[kTokens / 2];
#pragma unroll
  for (int i = 0; i < kTokens / 2; ++i) acc[i] = 0.0f;
  consumer.run(acc);
  hopper::wgmma_wait<0>();
  hopper::fence_registers(acc);
  // The kernel after this one may launch (its blocks start as this one's leave), and the
  // outputs wait for the kernel before this one (it may still read them).
  pdl_wait();
  pdl_release();
  wgmma_store<kTokens, kSiluGate>(a, acc, ring.address, tile, rows);
}

// x [m, k] -> out [m, k] with each 128-column chunk in the wgmma's K order (wgmma_mainloop.cuh): the
// 16 bytes of physical K 32 t + 8 w .. + 7 become four pairs at logical 16 (2 w + hf) + 8 b + 2 t.
__global__ void w4a16_permute_x_kernel(const uint16_t* x, int64_t x_stride, uint16_t* out, int m, int64_t k) {
  const int64_t units_per_row = k / 8;
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < m * units_per_row;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t r = i / units_per_row, u = i % units_per_row;
    const int p = static_cast<int>(u % 16), w = p % 4, t = p / 4;
    const uint4 v = *reinterpret_cast<const uint4*>(x + r * x_stride + 8 * u);
    // Pairs (0, 4), (1, 5), (2, 6), (3, 7): (hf, b) = (0, 0), (0, 1), (1, 0), (1, 1).
    uint32_t* dst = reinterpret_cast<uint32_t*>(out + r * k + (u / 16) * kW4A16WgmmaChunkK + 32 * w + 2 * t);
    dst[0] = __byte_perm(v.x, v.z, 0x5410);
    dst[4] = __byte_perm(v.x, v.z, 0x7632);
    dst[8] = __byte_perm(v.y, v.w, 0x5410);
    dst[12] = __byte_perm(v.y, v.w, 0x7632);
  }
}

template <FloatType kType, FloatType kScale, int kIndex, bool kSiluGate>
void launch_kernel(const W4A16Args& a, const CUtensorMap& map, cudaStream_t stream) {
  constexpr W4A16WgmmaConfig kCfg = kW4A16WgmmaConfigs[kIndex];
  using L = WgmmaLayout<kCfg.tokens, kCfg.stages>;
  constexpr auto kernel = w4a16_wgmma_kernel<kType, kScale, kCfg.tokens, kCfg.stages, kCfg.permuted_x, kSiluGate>;
  allow_dynamic_shared_memory<kernel>(L::kSharedBytes);
  const int64_t blocks = a.split_from_tile + (w4a16_wgmma_tiles(a, kCfg.tokens) - a.split_from_tile) * a.num_splits;
  launch_pdl(kernel, dim3(static_cast<unsigned>(blocks)), dim3(kWgmmaThreads), L::kSharedBytes, stream, a, map);
}

// silu_gate: instantiated for the direct-x configurations only (w4a16_wgmma_fuses_silu_gate).
template <FloatType kType, FloatType kScale, int kIndex>
void launch_config(const W4A16Args& a, const CUtensorMap& map, cudaStream_t stream) {
  if constexpr (!kW4A16WgmmaConfigs[kIndex].permuted_x) {
    if (a.silu_gate) {
      launch_kernel<kType, kScale, kIndex, true>(a, map, stream);
      return;
    }
  }
  if (a.silu_gate) check(cudaErrorInvalidValue, "w4a16 wgmma: silu_gate with permuted x", __FILE__, __LINE__);
  launch_kernel<kType, kScale, kIndex, false>(a, map, stream);
}

template <FloatType kType, int kIndex>
void launch_index(const W4A16Args& a, const CUtensorMap& map, int index, cudaStream_t stream) {
  if constexpr (kIndex < kW4A16WgmmaNumConfigs) {
    if (index != kIndex) {
      launch_index<kType, kIndex + 1>(a, map, index, stream);
    } else if (a.scale_type == FloatType::kF32) {
      launch_config<kType, FloatType::kF32, kIndex>(a, map, stream);
    } else if (a.scale_type == FloatType::kBF16) {
      launch_config<kType, FloatType::kBF16, kIndex>(a, map, stream);
    } else {
      launch_config<kType, FloatType::kF16, kIndex>(a, map, stream);
    }
  }
}

}  // namespace

void launch_w4a16_wgmma(const W4A16Args& a, void* x_perm, cudaStream_t stream) {
  if (a.m == 0 || a.n == 0) return;
  const int index = a.wgmma_config;
  if (index < 0 || index >= kW4A16WgmmaNumConfigs) {
    check(cudaErrorInvalidValue, "w4a16 wgmma: no configuration planned", __FILE__, __LINE__);
  }
  const W4A16WgmmaConfig cfg = kW4A16WgmmaConfigs[index];
  if (cfg.permuted_x) {
    const int64_t units = int64_t{a.m} * (a.k / 8);
    const unsigned blocks = static_cast<unsigned>(std::clamp<int64_t>((units + 255) / 256, 1, 65536));
    w4a16_permute_x_kernel<<<blocks, 256, 0, stream>>>(static_cast<const uint16_t*>(a.x), a.x_stride,
                                                       static_cast<uint16_t*>(x_perm), a.m, a.k);
    BRISK_CUDA_CHECK(cudaGetLastError());
  }
  const CUtensorMap map = cfg.permuted_x ? w4a16_x_tensor_map(x_perm, a.x_type, a.m, a.k, a.k, cfg.tokens)
                                         : w4a16_x_tensor_map(a.x, a.x_type, a.m, a.k, a.x_stride, cfg.tokens);
  if (a.x_type == FloatType::kF16) {
    launch_index<FloatType::kF16, 0>(a, map, index, stream);
  } else {
    launch_index<FloatType::kBF16, 0>(a, map, index, stream);
  }
  BRISK_CUDA_CHECK(cudaGetLastError());
  if (a.num_splits > 1) launch_wgmma_reduce(a, cfg.tokens, stream);
}

}  // namespace brisk::cuda
