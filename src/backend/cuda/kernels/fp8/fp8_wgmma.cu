// The FP8 wgmma GEMM (gemm_fp8.h): y^T = W x_q^T with the e4m3 weights as A (64 rows a consumer
// warpgroup, 128 a block) and the quantized activations as B (the block's tokens), both copied by
// TMA into a ring of 128-byte-swizzled panels of 128 K values, m64nNk32 wgmmas from shared
// memory, each 128-K chunk's sums promoted into fp32 accumulators (fp8_consume). The scales
// multiply fp32 sums, as GemmFp8Params defines: per-token x per-channel once after the last
// chunk, block-wise per chunk. Tiles, their order and the epilogue are the W4A16
// wgmma kernel's (kernels/w4a16/wgmma_*.cuh). Programmatic dependent launch: the first ring
// round's weights are requested before the kernel ahead (the activation quantization) finishes.
#include <cstdint>

#include "backend/cuda/kernels/dynamic_shared_memory.cuh"
#include "backend/cuda/kernels/fp8/fp8_chunk_sums.cuh"
#include "backend/cuda/kernels/fp8/gemm_fp8.h"
#include "backend/cuda/kernels/hopper_async.cuh"
#include "backend/cuda/kernels/hopper_wgmma_fp8_atoms.cuh"
#include "backend/cuda/kernels/pdl.cuh"
#include "backend/cuda/kernels/w4a16/wgmma_epilogue.cuh"
#include "backend/cuda/kernels/w4a16/wgmma_mainloop.cuh"
#include "backend/cuda/kernels/w4a16/wgmma_tile_scheduler.cuh"
#include "backend/cuda/runtime/cuda_check.h"

namespace brisk::cuda {
namespace {

constexpr int kChunkK = 128;  // K values (bytes) of a stage: one swizzled panel row

// A stage: the block's 128 weight rows, then the tokens' x, 128 K values each.
template <int kTokens, int kStages>
struct Fp8Layout {
  static constexpr int kWeightBytes = kW4A16WgmmaBlockRows * kChunkK;
  static constexpr int kXBytes = kTokens * kChunkK;
  static constexpr int kStageBytes = kWeightBytes + kXBytes;
  static constexpr int kBarrierOffset = kStages * kStageBytes;
  static constexpr int kSharedBytes = kBarrierOffset + 2 * kStages * 8 + 1024;  // + alignment slack
  static_assert(kXBytes % 1024 == 0, "panels must stay 1024-byte aligned");
  static_assert(kSharedBytes <= 227 * 1024, "the ring must fit one SM's shared memory");
  static_assert(kBarrierOffset >= 2 * kTokens * 256, "the ring must hold both warpgroups' output tiles");
};
template <int kTokens, int kStages>
using Fp8Ring = StageRing<Fp8Layout<kTokens, kStages>, kStages>;
template <int kTokens>
using Tile = WgmmaTile<kTokens, kChunkK>;

template <int kTokens, int kStages>
__device__ __forceinline__ void fp8_produce(const CUtensorMap* w_map, const CUtensorMap* x_map,
                                            const Fp8Ring<kTokens, kStages>& ring, const Tile<kTokens>& tile) {
  using L = Fp8Layout<kTokens, kStages>;
  hopper::tma_prefetch_descriptor(w_map);
  hopper::tma_prefetch_descriptor(x_map);
  const int row0 = static_cast<int>(tile.work.n_tile * kW4A16WgmmaBlockRows);
  auto copy_weights = [&](int i) {
    const int s = i % kStages;
    const uint32_t bar = ring.full_bar + 8 * s;
    hopper::mbarrier_arrive_expect_tx(bar, L::kStageBytes);
    hopper::tma_load_2d(ring.address + s * L::kStageBytes, w_map, tile.chunk_of(i) * kChunkK, row0, bar);
  };
  const int first_round = min(kStages, tile.num_chunks);
  for (int i = 0; i < first_round; ++i) copy_weights(i);
  pdl_wait();  // x_q and its scales come from the kernel before
  for (int i = 0; i < tile.num_chunks; ++i) {
    const int s = i % kStages;
    if (i >= first_round) {
      hopper::mbarrier_wait(ring.empty_bar + 8 * s, ((i / kStages) & 1) ^ 1);
      copy_weights(i);
    }
    hopper::tma_load_2d(ring.address + s * L::kStageBytes + L::kWeightBytes, x_map, tile.chunk_of(i) * kChunkK,
                        tile.m0, ring.full_bar + 8 * s);
  }
}

// The scales of the thread's accumulators in `group` (0 without blocks): x's of tokens m0 + 8 j +
// 2 t + e (rows past m read row m - 1: their x is zero) and the weights' of rows row[h].
template <int kTokens>
struct Fp8Scales {
  float x[kTokens / 4];
  float w[2];

  __device__ __forceinline__ void load(const Fp8WgmmaArgs& a, int m0, const WgmmaWarpRows<false>& rows,
                                       int64_t groups, int group) {
    w[0] = a.weight_scale[rows.row[0] * groups + group];
    w[1] = a.weight_scale[rows.row[1] * groups + group];
#pragma unroll
    for (int j = 0; j < kTokens / 8; ++j)
#pragma unroll
      for (int e = 0; e < 2; ++e)
        x[2 * j + e] = a.x_scale[int64_t{min(m0 + 8 * j + 2 * rows.t + e, a.m - 1)} * groups + group];
  }
  // acc[i] = sum[i] * (x * w) (add: acc[i] += ...), GemmFp8Params' order of operations.
  __device__ __forceinline__ void apply(float (&acc)[kTokens / 2], const float (&sum)[kTokens / 2], bool add) const {
#pragma unroll
    for (int j = 0; j < kTokens / 8; ++j)
#pragma unroll
      for (int h = 0; h < 2; ++h)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int i = 4 * j + 2 * h + e;
          const float v = sum[i] * (x[2 * j + e] * w[h]);
          acc[i] = add ? acc[i] + v : v;
        }
  }
};

// A consumer warpgroup's chunks into acc: per chunk, 4 k-steps of m64nNk32 (its 64 rows of the
// weight panel by the x panel) into a chunk accumulator, which is then added to acc in fp32
// registers. The tensor cores keep FP8 sums to fewer bits than fp32, so each 128-K chunk's sum is
// promoted (as CUTLASS's FP8 kernels do every 4 MMAs; accumulating all of K there put 3% of
// outputs of K 1024-4096 one or more bf16 steps off). Per channel, two chunk accumulators
// alternate, so that chunk i's MMAs run while chunk i - 1's sum is promoted and its stage
// released, and acc is scaled once at the end. Blocks: each chunk's sum is scaled by its x and
// weight scales as it is added (their loads issued before the MMAs), one chunk at a time.
template <int kTokens, int kStages, bool kBlocks>
__device__ __forceinline__ void fp8_consume(const Fp8WgmmaArgs& a, const Fp8Ring<kTokens, kStages>& ring,
                                            const Tile<kTokens>& tile, const WgmmaWarpRows<false>& rows,
                                            float (&acc)[kTokens / 2]) {
  using L = Fp8Layout<kTokens, kStages>;
  const int wg = threadIdx.x / 128, lane = threadIdx.x % 32;
  const int64_t groups = kBlocks ? a.k / kChunkK : 1;
  Fp8Scales<kTokens> scales;  // a chunk's with blocks (one chunk at a time), else the channels'
  // Queues chunk i's MMAs into p.
  auto issue = [&](int i, float (&p)[kTokens / 2]) {
    const int s = i % kStages;
    const uint32_t stage = ring.address + s * L::kStageBytes;
    if constexpr (kBlocks) scales.load(a, tile.m0, rows, groups, tile.chunk_of(i));
    hopper::mbarrier_wait(ring.full_bar + 8 * s, (i / kStages) & 1);
    const uint64_t w_desc = hopper::smem_descriptor(stage + wg * 64 * kChunkK, 16, 1024);
    const uint64_t x_desc = hopper::smem_descriptor(stage + L::kWeightBytes, 16, 1024);
    hopper::wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < 4; ++ks) {
      hopper::WgmmaFp8<kTokens>::ss(p, hopper::smem_descriptor_advance(w_desc, ks * 32),
                                    hopper::smem_descriptor_advance(x_desc, ks * 32), ks > 0);
    }
    hopper::wgmma_commit();
  };
  // Adds chunk i's finished sum (its MMAs waited for) to acc and frees its stage.
  auto promote = [&](int i, float (&p)[kTokens / 2]) {
    hopper::fence_registers(p);
    __syncwarp();
    if (lane == 0) hopper::mbarrier_arrive(ring.empty_bar + 8 * (i % kStages));  // the stage may be refilled
    if constexpr (kBlocks) {
      scales.apply(acc, p, i > 0);
    } else {
#pragma unroll
      for (int j = 0; j < kTokens / 2; ++j) acc[j] = i > 0 ? acc[j] + p[j] : p[j];
    }
  };
  const int n = tile.num_chunks;
  if constexpr (kBlocks) {  // two sets of chunk scales and sums would spill: one chunk at a time
    float part[kTokens / 2];
    for (int i = 0; i < n; ++i) {
      issue(i, part);
      hopper::wgmma_wait<0>();
      promote(i, part);
    }
    return;
  }
  fp8::alternating_chunk_sums<kTokens / 2>(n, issue, promote);
  scales.load(a, tile.m0, rows, 1, 0);
  scales.apply(acc, acc, false);
}

template <int kTokens, int kStages, bool kBlocks>
__global__ void __launch_bounds__(kWgmmaThreads, 1)
    fp8_wgmma_kernel(const Fp8WgmmaArgs a, const __grid_constant__ CUtensorMap w_map,
                     const __grid_constant__ CUtensorMap x_map) {
  extern __shared__ uint8_t shared_raw[];
  const Fp8Ring<kTokens, kStages> ring(shared_raw);
  const Tile<kTokens> tile(a);
  if (threadIdx.x == 0) ring.init();
  __syncthreads();

  if (threadIdx.x >= 256) {  // the producer warpgroup: one thread issues the copies
    hopper::registers_decrease<kWgmmaProducerRegisters>();
    if (threadIdx.x == 256) fp8_produce<kTokens, kStages>(&w_map, &x_map, ring, tile);
    return;
  }

  hopper::registers_increase<kWgmmaConsumerRegisters>();
  const WgmmaWarpRows<false> rows(a, tile.tile0);
  float acc[kTokens / 2];
#pragma unroll
  for (int i = 0; i < kTokens / 2; ++i) acc[i] = 0.0f;
  pdl_wait();  // block scales of x_q are read from global memory as the chunks are consumed
  fp8_consume<kTokens, kStages, kBlocks>(a, ring, tile, rows, acc);
  pdl_release();  // the kernel after this one may launch
  wgmma_store<kTokens, false>(a, acc, ring.address, tile, rows);
}

template <int kTokens, int kStages, bool kBlocks>
void launch(const Fp8WgmmaArgs& a, const CUtensorMap& w_map, const CUtensorMap& x_map, cudaStream_t stream) {
  using L = Fp8Layout<kTokens, kStages>;
  constexpr auto kernel = fp8_wgmma_kernel<kTokens, kStages, kBlocks>;
  allow_dynamic_shared_memory<kernel>(L::kSharedBytes);
  const int64_t blocks = w4a16_wgmma_tiles(a, kTokens);
  launch_pdl(kernel, dim3(static_cast<unsigned>(blocks)), dim3(kWgmmaThreads), L::kSharedBytes, stream, a, w_map,
             x_map);
}

}  // namespace

void launch_fp8_wgmma(const Fp8WgmmaArgs& a, const CUtensorMap& w_map, const CUtensorMap& x_map, cudaStream_t stream) {
  if (a.m == 0 || a.n == 0) return;
  if (a.tokens != fp8_wgmma_tokens(a.m, a.block_size) || a.num_splits != 1) {
    check(cudaErrorInvalidValue, "fp8 wgmma: tokens or splits not as planned", __FILE__, __LINE__);
  }
  if (a.block_size > 0) {
    launch<64, 8, true>(a, w_map, x_map, stream);
  } else if (a.tokens == 64) {
    launch<64, 8, false>(a, w_map, x_map, stream);
  } else {
    launch<128, 6, false>(a, w_map, x_map, stream);
  }
  BRISK_CUDA_CHECK(cudaGetLastError());
}

}  // namespace brisk::cuda
