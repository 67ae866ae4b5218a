// The stream-K GEMM (gemm_streamk.h). Warp roles as the W4A16 and FP8 wgmma kernels': a producer
// thread fills a ring of stages (a 128-byte K panel of the tile's 128 weight rows and of the
// tokens' x, by TMA) across all of the block's units; two consumer warpgroups run wgmmas from
// shared memory, each over its 64 weight rows, and release a stage once its MMAs completed.
// Programmatic dependent launch: the first ring round's weights are requested before the kernel
// ahead finishes; x, y, the partials and the flags are touched only after it has; the kernel
// after may launch once every block got past that wait.
#include <cstdint>
#include <iterator>
#include <span>

#include "backend/cuda/kernels/dynamic_shared_memory.cuh"
#include "backend/cuda/kernels/float_io.cuh"
#include "backend/cuda/kernels/fp8/fp8_chunk_sums.cuh"
#include "backend/cuda/kernels/hopper_async.cuh"
#include "backend/cuda/kernels/hopper_wgmma_fp8_atoms.cuh"
#include "backend/cuda/kernels/mma_common.cuh"
#include "backend/cuda/kernels/pdl.cuh"
#include "backend/cuda/kernels/streamk/gemm_streamk.h"
#include "backend/cuda/kernels/w4a16/wgmma_mainloop.cuh"
#include "backend/cuda/runtime/cuda_check.h"

namespace brisk::cuda {
namespace {

constexpr int kPanelBytes = kStreamKChunkBytes;  // a row's K values of a unit

template <int kTokens>
struct StreamKLayout {
  static constexpr int kWeightBytes = kStreamKTileRows * kPanelBytes;
  static constexpr int kXBytes = kTokens * kPanelBytes;
  static constexpr int kStageBytes = kWeightBytes + kXBytes;
  static constexpr int kStages = (200 * 1024) / kStageBytes < 12 ? (200 * 1024) / kStageBytes : 12;
  static constexpr int kBarrierOffset = kStages * kStageBytes;
  static constexpr int kSharedBytes = kBarrierOffset + 2 * kStages * 8 + 1024;  // + alignment slack
  static_assert(kXBytes % 1024 == 0, "panels must stay 1024-byte aligned");
  static_assert(kSharedBytes <= 227 * 1024, "the ring must fit one SM's shared memory");
};
template <int kTokens>
using StreamKRing = StageRing<StreamKLayout<kTokens>, StreamKLayout<kTokens>::kStages>;

// The units (tile, chunk), tile-major, and block b's share of them.
struct StreamKUnits {
  int64_t chunks, total;
  int grid;

  __device__ __forceinline__ explicit StreamKUnits(const StreamKArgs& a)
      : chunks((a.k + streamk_chunk_k(a.operands) - 1) / streamk_chunk_k(a.operands)),
        total((a.n + kStreamKTileRows - 1) / kStreamKTileRows * chunks),
        grid(a.grid) {}
  __device__ __forceinline__ int64_t begin(int64_t b) const { return total * b / grid; }
  // f(tile, first chunk, end chunk) for each tile the block's units touch, in order.
  template <class F>
  __device__ __forceinline__ void for_each_segment(int b, F f) const {
    const int64_t end = begin(b + 1);
    for (int64_t u = begin(b); u < end;) {
      const int64_t tile = u / chunks;
      const int c0 = static_cast<int>(u - tile * chunks);
      const int c1 = static_cast<int>(min(chunks, c0 + (end - u)));
      f(tile, c0, c1);
      u += c1 - c0;
    }
  }
};

template <int kTokens, StreamKOperands kOperands>
__device__ __forceinline__ void streamk_produce(const CUtensorMap* w_map, const CUtensorMap* x_map,
                                                const StreamKRing<kTokens>& ring, const StreamKUnits& units) {
  using L = StreamKLayout<kTokens>;
  constexpr int kChunkK = streamk_chunk_k(kOperands);
  hopper::tma_prefetch_descriptor(w_map);
  hopper::tma_prefetch_descriptor(x_map);
  // Pass 0: the first ring round's weights (independent of the kernel ahead); pass 1: x for
  // those, then both for the rest, each stage once its consumers released it.
  for (int pass = 0; pass < 2; ++pass) {
    if (pass == 1) pdl_wait();
    int i = 0;
    units.for_each_segment(blockIdx.x, [&](int64_t tile, int c0, int c1) {
      for (int c = c0; c < c1; ++c, ++i) {
        const int s = i % L::kStages;
        const uint32_t stage = ring.address + s * L::kStageBytes, bar = ring.full_bar + 8 * s;
        const bool first_round = i < L::kStages;
        if (pass == 0 && !first_round) return;
        if (pass == 0 || !first_round) {
          if (!first_round) hopper::mbarrier_wait(ring.empty_bar + 8 * s, ((i / L::kStages) & 1) ^ 1);
          hopper::mbarrier_arrive_expect_tx(bar, L::kStageBytes);
          hopper::tma_load_2d(stage, w_map, c * kChunkK, static_cast<int>(tile * kStreamKTileRows), bar);
        }
        if (pass == 1) hopper::tma_load_2d(stage + L::kWeightBytes, x_map, c * kChunkK, 0, bar);
      }
    });
  }
}

__device__ __forceinline__ void release_flag(int* flag) {
  asm volatile("st.release.gpu.global.b32 [%0], %1;" ::"l"(flag), "r"(1) : "memory");
}
__device__ __forceinline__ int acquire_flag(const int* flag) {
  int v;
  asm volatile("ld.acquire.gpu.global.b32 %0, [%1];" : "=r"(v) : "l"(flag) : "memory");
  return v;
}

// The consumers' epilogue of a segment of `tile`: a block that did not start the tile hands its
// sums to the tile's finisher; the finisher (chunk 0 on) adds the partials of the blocks after
// it that share the tile and stores y. Consumer thread ct holds acc[i] at partials[i * 256 + ct].
template <int kTokens, StreamKOperands kOperands>
__device__ __forceinline__ void streamk_finish(const StreamKArgs& a, const StreamKUnits& units, int64_t tile,
                                               int c0, int c1, float (&acc)[kTokens / 2]) {
  constexpr bool kScaled = kOperands == StreamKOperands::kE4M3;
  constexpr int kValues = kTokens / 2;
  const int ct = threadIdx.x;  // 0..255
  const int64_t partial_floats = gemm_streamk_partial_floats(kTokens);
  if (c0 > 0) {
    float* out = a.partials + blockIdx.x * partial_floats;
#pragma unroll
    for (int i = 0; i < kValues; ++i) __stcg(out + i * 256 + ct, acc[i]);
    hopper::named_barrier_sync(1, 256);  // every consumer's stores precede the release (cumulative)
    if (ct == 0) release_flag(a.flags + blockIdx.x);
    return;
  }
  if (c1 < units.chunks) {
    // The blocks after this one whose units start inside the tile: all flags first, then their
    // partials in block order.
    const int64_t tile_end = (tile + 1) * units.chunks;
    int last = blockIdx.x;
    while (last + 1 < units.grid && units.begin(last + 1) < tile_end) ++last;
    if (ct == 0) {
      for (int b = blockIdx.x + 1; b <= last; ++b) {
        while (acquire_flag(a.flags + b) == 0) {
        }
        a.flags[b] = 0;  // for the next launch, which touches flags only after this one completed
      }
    }
    hopper::named_barrier_sync(1, 256);
    for (int b = blockIdx.x + 1; b <= last; ++b) {
      const float* in = a.partials + b * partial_floats;
#pragma unroll
      for (int i = 0; i < kValues; ++i) acc[i] += __ldcg(in + i * 256 + ct);
    }
  }
  // acc[4 j + 2 h + e]: weight row 16 warp + 8 h + g of the warpgroup's 64, token 8 j + 2 t + e.
  // The rows' addresses advance by 8 tokens a step (materialising every token's address spills).
  const int wg = ct / 128, warp = (ct / 32) % 4, lane = ct % 32, g = lane / 4, t = lane % 4;
  const int64_t row0 = tile * kStreamKTileRows + 64 * wg + 16 * warp + g;
  const int64_t token_bytes = a.y_stride * float_type_bytes(a.y_type);
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int64_t row = row0 + 8 * h;
    if (row >= a.n) continue;
    const float bias = a.bias != nullptr ? load_one(a.bias, a.bias_type, row) : 0.0f;
    const float w_scale = kScaled ? a.w_scale[row] : 1.0f;
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      char* p = static_cast<char*>(a.y) + (2 * t + e) * token_bytes;
#pragma unroll
      for (int j = 0; j < kTokens / 8; ++j) {
        const int token = 8 * j + 2 * t + e;
        if (token < a.m) {
          const float sum = acc[4 * j + 2 * h + e];  // GemmFp8Params: sum * (x_scale * w_scale) + bias
          store_one(p, a.y_type, row, (kScaled ? sum * (a.x_scale[token] * w_scale) : sum) + bias);
        }
        p += 8 * token_bytes;
      }
    }
  }
}

// A consumer's view of the stage of ring index i, once full: the descriptors of its warpgroup's 64
// weight rows and of x's panel.
struct StagePanels {
  uint64_t w, x;
};
template <int kTokens>
__device__ __forceinline__ StagePanels wait_stage(const StreamKRing<kTokens>& ring, int i) {
  using L = StreamKLayout<kTokens>;
  const int s = i % L::kStages;
  const uint32_t stage = ring.address + s * L::kStageBytes;
  hopper::mbarrier_wait(ring.full_bar + 8 * s, (i / L::kStages) & 1);
  return {hopper::smem_descriptor(stage + threadIdx.x / 128 * 64 * kPanelBytes, 16, 1024),
          hopper::smem_descriptor(stage + L::kWeightBytes, 16, 1024)};
}
// Hands the stage of ring index i back to the producer (its MMAs completed).
template <int kTokens>
__device__ __forceinline__ void free_stage(const StreamKRing<kTokens>& ring, int i) {
  __syncwarp();
  if (threadIdx.x % 32 == 0) hopper::mbarrier_arrive(ring.empty_bar + 8 * (i % StreamKLayout<kTokens>::kStages));
}

// A unit's MMAs into acc: four k16 steps of the 128-byte panels (16-bit operands).
template <int kTokens, StreamKOperands kOperands>
struct StreamKMma {
  __device__ __forceinline__ static void run(float (&acc)[kTokens / 2], uint64_t w_desc, uint64_t x_desc, bool first) {
    constexpr FloatType kType = kOperands == StreamKOperands::kF16 ? FloatType::kF16 : FloatType::kBF16;
    hopper::wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < 4; ++ks) {
      hopper::Wgmma<kTokens, kType>::ss(acc, hopper::smem_descriptor_advance(w_desc, ks * 32),
                                        hopper::smem_descriptor_advance(x_desc, ks * 32), !first || ks > 0);
    }
    hopper::wgmma_commit();
  }
};

// The e4m3 units of a segment (ring indices i0, i0 + 1, ...), their sums promoted to fp32 per
// chunk (fp8_chunk_sums.cuh).
template <int kTokens>
__device__ __forceinline__ void streamk_consume_e4m3(const StreamKRing<kTokens>& ring, int i0, int n,
                                                     float (&acc)[kTokens / 2]) {
  auto issue = [&](int j, float (&p)[kTokens / 2]) {
    const StagePanels d = wait_stage(ring, i0 + j);
    hopper::wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < 4; ++ks) {
      hopper::WgmmaFp8<kTokens>::ss(p, hopper::smem_descriptor_advance(d.w, ks * 32),
                                    hopper::smem_descriptor_advance(d.x, ks * 32), ks > 0);
    }
    hopper::wgmma_commit();
  };
  auto promote = [&](int j, float (&p)[kTokens / 2]) {
    hopper::fence_registers(p);
    free_stage(ring, i0 + j);
#pragma unroll
    for (int v = 0; v < kTokens / 2; ++v) acc[v] = j > 0 ? acc[v] + p[v] : p[v];
  };
  fp8::alternating_chunk_sums<kTokens / 2>(n, issue, promote);
}

template <int kTokens, StreamKOperands kOperands>
__global__ void __launch_bounds__(kWgmmaThreads, 1)
    gemm_streamk_kernel(const StreamKArgs a, const __grid_constant__ CUtensorMap w_map,
                        const __grid_constant__ CUtensorMap x_map) {
  extern __shared__ uint8_t shared_raw[];
  const StreamKRing<kTokens> ring(shared_raw);
  const StreamKUnits units(a);
  if (threadIdx.x == 0) ring.init();
  __syncthreads();

  if (threadIdx.x >= 256) {  // the producer warpgroup: one thread issues the copies
    hopper::registers_decrease<kWgmmaProducerRegisters>();
    if (threadIdx.x == 256) streamk_produce<kTokens, kOperands>(&w_map, &x_map, ring, units);
    return;
  }

  hopper::registers_increase<kWgmmaConsumerRegisters>();
  pdl_wait();  // y and the partials
  // The next kernel may launch now: its blocks take an SM as soon as this kernel's block there
  // exits (one block an SM: the ring and the registers), not after the last block's MMAs.
  pdl_release();
  int i = 0;
  units.for_each_segment(blockIdx.x, [&](int64_t tile, int c0, int c1) {
    float acc[kTokens / 2];
    if constexpr (kOperands == StreamKOperands::kE4M3) {
      streamk_consume_e4m3<kTokens>(ring, i, c1 - c0, acc);
      i += c1 - c0;
    } else {
      auto release = [&](int chunk_index) {
        hopper::fence_registers(acc);
        free_stage(ring, chunk_index);
      };
      for (int c = c0; c < c1; ++c, ++i) {
        const StagePanels d = wait_stage(ring, i);
        StreamKMma<kTokens, kOperands>::run(acc, d.w, d.x, c == c0);
        if (c > c0) {
          hopper::wgmma_wait<1>();
          release(i - 1);
        }
      }
      hopper::wgmma_wait<0>();
      release(i - 1);
    }
    streamk_finish<kTokens, kOperands>(a, units, tile, c0, c1, acc);
  });
}

template <int kTokens, StreamKOperands kOperands>
void launch_instance(const StreamKArgs& a, const CUtensorMap& w_map, const CUtensorMap& x_map, cudaStream_t stream) {
  constexpr auto kernel = gemm_streamk_kernel<kTokens, kOperands>;
  allow_dynamic_shared_memory<kernel>(StreamKLayout<kTokens>::kSharedBytes);
  launch_pdl(kernel, dim3(static_cast<unsigned>(a.grid)), dim3(kWgmmaThreads), StreamKLayout<kTokens>::kSharedBytes,
             stream, a, w_map, x_map);
}

// The token tiles of each operand kind: 16-bit ones to M 64 (past it cuBLASLt's tiles are faster,
// docs/perf/gemm.md); e4m3 at M 9-16 only (past it the FP8 wgmma kernel and cuBLASLt are faster:
// docs/perf/fp8.md).
constexpr int k16BitTokens[] = {16, 32, 64};
constexpr int kE4M3Tokens[] = {16};

template <StreamKOperands kOperands>
void launch_for_type(const StreamKArgs& a, const CUtensorMap& w_map, const CUtensorMap& x_map, cudaStream_t stream) {
  if constexpr (kOperands == StreamKOperands::kE4M3) {
    return launch_instance<16, kOperands>(a, w_map, x_map, stream);
  } else {
    switch (a.tokens) {
      case 16: return launch_instance<16, kOperands>(a, w_map, x_map, stream);
      case 32: return launch_instance<32, kOperands>(a, w_map, x_map, stream);
      default: return launch_instance<64, kOperands>(a, w_map, x_map, stream);
    }
  }
}

}  // namespace

int64_t gemm_streamk_max_m(StreamKOperands operands) {
  return operands == StreamKOperands::kE4M3 ? kE4M3Tokens[std::size(kE4M3Tokens) - 1]
                                            : k16BitTokens[std::size(k16BitTokens) - 1];
}

int gemm_streamk_tokens(int64_t m, StreamKOperands operands) {
  const std::span<const int> tiles =
      operands == StreamKOperands::kE4M3 ? std::span<const int>(kE4M3Tokens) : std::span<const int>(k16BitTokens);
  for (int tokens : tiles)
    if (m <= tokens) return tokens;
  return 0;
}

int gemm_streamk_grid(int64_t n, int64_t k, StreamKOperands operands, int num_sms) {
  const int64_t chunk_k = streamk_chunk_k(operands);
  const int64_t units = (n + kStreamKTileRows - 1) / kStreamKTileRows * ((k + chunk_k - 1) / chunk_k);
  return static_cast<int>(units < num_sms ? units : num_sms);
}

void launch_gemm_streamk(const StreamKArgs& a, const CUtensorMap& w_map, const CUtensorMap& x_map,
                         cudaStream_t stream) {
  if (a.m == 0 || a.n == 0) return;
  if (a.tokens != gemm_streamk_tokens(a.m, a.operands) || a.grid <= 0) {
    check(cudaErrorInvalidValue, "gemm stream-K: tokens or grid not as planned", __FILE__, __LINE__);
  }
  switch (a.operands) {
    case StreamKOperands::kBF16: launch_for_type<StreamKOperands::kBF16>(a, w_map, x_map, stream); break;
    case StreamKOperands::kF16: launch_for_type<StreamKOperands::kF16>(a, w_map, x_map, stream); break;
    case StreamKOperands::kE4M3: launch_for_type<StreamKOperands::kE4M3>(a, w_map, x_map, stream); break;
  }
  BRISK_CUDA_CHECK(cudaGetLastError());
}

}  // namespace brisk::cuda
