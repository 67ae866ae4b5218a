// The FP8 decode GEMM (gemm_fp8.h), M <= kFp8MmaMaxRows: bound by the weight reads, so every
// byte of the e4m3 weights is read once, straight into registers, and multiplied by x_q with
// mma.sync m16n8k32 e4m3 (weights as A: a block's 16 rows; tokens as B: 8 a token tile).
//
// A block's 8 warps split K: warp w takes the 128-K groups w, w + 8, ... of the block's rows,
// kUnroll groups in flight (a register ring refilled as each group is consumed). In a group a
// lane loads 16 bytes at 16 t and at 64 + 16 t of rows g and g + 8 (g = lane / 4, t = lane % 4):
// the MMA's k order is a permutation of K, so the lane reads x_q at the same offsets and each
// 16-byte pair of loads feeds two MMAs without any shuffling. A group's four MMAs sum into a
// fresh accumulator that is then added in fp32 (the tensor cores keep FP8 sums to fewer bits,
// as fp8_wgmma.cu says), scaled by its x and weight scales first when they are block-wise; the
// warps' sums meet in shared memory. Programmatic dependent launch: the first round of weights
// is written before pdl_wait, but ptxas puts the wait above these read-only loads, so they are
// requested once the kernel ahead (the activation quantization) has finished
// (docs/perf/low_batch_decode.md, "What the SASS shows").
#include <cstdint>

#include "backend/cuda/kernels/float_io.cuh"
#include "backend/cuda/kernels/fp8/gemm_fp8.h"
#include "backend/cuda/kernels/pdl.cuh"
#include "backend/cuda/kernels/w4a16/streaming_load.cuh"
#include "backend/cuda/runtime/cuda_check.h"

namespace brisk::cuda {
namespace {

constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr int kRows = 16;     // weight rows (outputs) of a block: the MMA's 16
constexpr int kGroupK = 128;  // K values of a warp's step: one block-wise scale group

__device__ __forceinline__ void mma_e4m3(float (&c)[4], uint32_t a0, uint32_t a1, uint32_t a2, uint32_t a3,
                                         uint32_t b0, uint32_t b1) {
  asm volatile(
      "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
      "{%0,%1,%2,%3};\n"
      : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// A lane's weights of one group: [half h: bytes 64 h + 16 t][row g, row g + 8].
struct GroupWeights {
  uint4 v[2][2];
};

// sum += the group's products for each token tile: per half, the 16 x_q bytes at the weights'
// offsets give B of two MMAs (bytes 0-7 and 8-15), as the weights' bytes give their A.
template <int kTokenTiles>
__device__ __forceinline__ void group_products(float (&sum)[kTokenTiles][4], const GroupWeights& w,
                                               const uint8_t* const (&x)[kTokenTiles], int64_t offset) {
#pragma unroll
  for (int j = 0; j < kTokenTiles; ++j) {
#pragma unroll
    for (int i = 0; i < 4; ++i) sum[j][i] = 0.0f;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const uint4 xv = __ldg(reinterpret_cast<const uint4*>(x[j] + offset + 64 * h));
      const uint4 lo = w.v[h][0], hi = w.v[h][1];
      mma_e4m3(sum[j], lo.x, hi.x, lo.y, hi.y, xv.x, xv.y);
      mma_e4m3(sum[j], lo.z, hi.z, lo.w, hi.w, xv.z, xv.w);
    }
  }
}

template <int kTokenTiles, bool kBlocks, int kUnroll>
__global__ void __launch_bounds__(kThreads) fp8_mma_kernel(const GemmFp8Args a) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
  const int64_t row0 = int64_t{blockIdx.x} * kRows;
  const int groups = static_cast<int>(a.k / kGroupK);
  const uint8_t* w_row = a.weight + (row0 + g) * a.k + 16 * t;
  const int64_t w_next = 8 * a.k;  // row g + 8

  GroupWeights ring[kUnroll];
  auto load = [&](GroupWeights& dst, int group) {
    if (group >= groups) return;
    const uint8_t* p = w_row + int64_t{group} * kGroupK;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      dst.v[h][0] = load_streaming(p + 64 * h);
      dst.v[h][1] = load_streaming(p + w_next + 64 * h);
    }
  };
#pragma unroll
  for (int u = 0; u < kUnroll; ++u) load(ring[u], warp + u * kWarps);

  pdl_wait();  // x_q and its scales come from the kernel before
  pdl_release();
  // The lane's B tokens: g + 8 j (rows past m read row m - 1; their outputs are not stored).
  const uint8_t* x[kTokenTiles];
#pragma unroll
  for (int j = 0; j < kTokenTiles; ++j) x[j] = a.x_q + int64_t{min(g + 8 * j, a.m - 1)} * a.k + 16 * t;

  float acc[kTokenTiles][4] = {};
  for (int group0 = warp; group0 < groups; group0 += kUnroll * kWarps) {
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int group = group0 + u * kWarps;
      if (group < groups) {
        float sum[kTokenTiles][4];
        group_products<kTokenTiles>(sum, ring[u], x, int64_t{group} * kGroupK);
        if constexpr (kBlocks) {
          const float w0 = a.weight_scale[(row0 + g) * groups + group];
          const float w8 = a.weight_scale[(row0 + g + 8) * groups + group];
#pragma unroll
          for (int j = 0; j < kTokenTiles; ++j)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
              const float xs = a.x_scale[int64_t{min(8 * j + 2 * t + e, a.m - 1)} * groups + group];
              acc[j][e] += sum[j][e] * (xs * w0);
              acc[j][2 + e] += sum[j][2 + e] * (xs * w8);
            }
        } else {
#pragma unroll
          for (int j = 0; j < kTokenTiles; ++j)
#pragma unroll
            for (int i = 0; i < 4; ++i) acc[j][i] += sum[j][i];
        }
      }
      load(ring[u], group + kUnroll * kWarps);
    }
  }

  // The warps' sums: [value][warp][lane], then thread (value, lane) adds them and stores.
  __shared__ float partial[kTokenTiles * 4][kWarps][32];
#pragma unroll
  for (int j = 0; j < kTokenTiles; ++j)
#pragma unroll
    for (int i = 0; i < 4; ++i) partial[4 * j + i][warp][lane] = acc[j][i];
  __syncthreads();
  for (int v = threadIdx.x; v < kTokenTiles * 4 * 32; v += kThreads) {
    const int value = v / 32, j = value / 4, i = value % 4, l = v % 32;
    const int64_t n = row0 + l / 4 + (i >= 2 ? 8 : 0);
    const int m = 8 * j + 2 * (l % 4) + (i & 1);
    if (m >= a.m) continue;
    float y = 0.0f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) y += partial[value][w][l];
    if constexpr (!kBlocks) y *= a.x_scale[m] * a.weight_scale[n];
    if (a.bias != nullptr) y += load_one(a.bias, a.bias_type, n);
    store_one(row_ptr(a.y, a.y_type, m, a.y_stride), a.y_type, n, y);
  }
}

template <bool kBlocks>
void launch(const GemmFp8Args& a, cudaStream_t stream) {
  constexpr int kTokenTiles = (kFp8MmaMaxRows + 7) / 8, kUnroll = 4;
  launch_pdl(fp8_mma_kernel<kTokenTiles, kBlocks, kUnroll>, dim3(static_cast<unsigned>(a.n / kRows)), dim3(kThreads),
             0, stream, a);
}

}  // namespace

void launch_fp8_mma(const GemmFp8Args& a, cudaStream_t stream) {
  if (a.m == 0 || a.n == 0) return;
  if (!fp8_mma_supports(a.m, a.n, a.k)) check(cudaErrorInvalidValue, "fp8 mma: sizes not supported", __FILE__, __LINE__);
  if (a.block_size > 0) {
    launch<true>(a, stream);
  } else {
    launch<false>(a, stream);
  }
  BRISK_CUDA_CHECK(cudaGetLastError());
}

}  // namespace brisk::cuda
