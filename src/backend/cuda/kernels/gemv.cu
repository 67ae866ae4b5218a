// Small-M gemm (decode steps): y = x w^T (+ bias) for M <= kGemvMaxM rows of 16-bit x and w of
// the same dtype. Bandwidth-bound: every weight byte is read once with 16-byte streaming loads,
// four k-steps a loop trip; x (a few KB) is served from L1. Each warp owns kCols output
// columns (rows of w) for all M rows, accumulating in fp32; a warp reduction ends the dot
// products and y is rounded once. It matches cuBLASLt at M = 1 (docs/perf/gemm.md) and, unlike
// it, can be launched as a programmatic dependent inside decode graphs.
#include <cstdint>

#include "backend/cuda/kernels/float_io.cuh"
#include "backend/cuda/kernels/launch.h"
#include "backend/cuda/kernels/pdl.cuh"
#include "backend/cuda/runtime/cuda_check.h"

namespace brisk::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kCols = 2;     // output columns per warp
constexpr int kKStep = 256;  // k elements per warp per step: 8 per lane
constexpr int kSteps = 4;    // k-steps per loop iteration

__device__ __forceinline__ uint4 load_stream(const uint16_t* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "l"(p));
  return v;
}

template <bool kHalf>
__device__ __forceinline__ float2 to_float2(uint32_t word) {
  if constexpr (kHalf) {
    return __half22float2(*reinterpret_cast<const __half2*>(&word));
  } else {
    return make_float2(__uint_as_float(word << 16), __uint_as_float(word & 0xFFFF0000u));
  }
}

template <bool kHalf>
__device__ __forceinline__ float dot8(uint4 a, uint4 b, float acc) {
  const uint32_t wa[4] = {a.x, a.y, a.z, a.w};
  const uint32_t wb[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const float2 fa = to_float2<kHalf>(wa[j]);
    const float2 fb = to_float2<kHalf>(wb[j]);
    acc = fmaf(fa.x, fb.x, acc);
    acc = fmaf(fa.y, fb.y, acc);
  }
  return acc;
}

template <bool kHalf, int kMaxM>
__global__ void __launch_bounds__(kThreads) gemv_kernel(GemvArgs a) {
  pdl_wait();
  pdl_release();
  const int lane = threadIdx.x % 32;
  const int64_t warp = int64_t{blockIdx.x} * kWarps + threadIdx.x / 32;
  const int64_t n0 = warp * kCols;
  if (n0 >= a.n) return;
  const auto* w = static_cast<const uint16_t*>(a.w);
  const auto* x = static_cast<const uint16_t*>(a.x);
  float acc[kCols][kMaxM] = {};
  const uint16_t* w_rows[kCols];
#pragma unroll
  for (int c = 0; c < kCols; ++c) w_rows[c] = w + min(n0 + c, a.n - 1) * a.w_stride;  // clamp: no branch in the loop
  // kSteps k-steps of loads a trip, then the tail one step at a time. ptxas moves each load
  // down beside the FMAs of the step before it: 2-3 loads a lane in flight, not kSteps x kCols
  // (docs/perf/low_batch_decode.md, "What the SASS shows").
  int64_t k = int64_t{lane} * 8;
  for (; k + (kSteps - 1) * kKStep < a.k; k += kSteps * kKStep) {
    uint4 wv[kSteps][kCols];
#pragma unroll
    for (int i = 0; i < kSteps; ++i)
#pragma unroll
      for (int c = 0; c < kCols; ++c) wv[i][c] = load_stream(w_rows[c] + k + i * kKStep);
#pragma unroll
    for (int m = 0; m < kMaxM; ++m) {
      if (m >= a.m) break;
#pragma unroll
      for (int i = 0; i < kSteps; ++i) {
        const uint4 xv = __ldg(reinterpret_cast<const uint4*>(x + m * a.x_stride + k + i * kKStep));
#pragma unroll
        for (int c = 0; c < kCols; ++c) acc[c][m] = dot8<kHalf>(wv[i][c], xv, acc[c][m]);
      }
    }
  }
  for (; k < a.k; k += kKStep) {
    uint4 wv[kCols];
#pragma unroll
    for (int c = 0; c < kCols; ++c) wv[c] = load_stream(w_rows[c] + k);
#pragma unroll
    for (int m = 0; m < kMaxM; ++m) {
      if (m >= a.m) break;
      const uint4 x0 = __ldg(reinterpret_cast<const uint4*>(x + m * a.x_stride + k));
#pragma unroll
      for (int c = 0; c < kCols; ++c) acc[c][m] = dot8<kHalf>(wv[c], x0, acc[c][m]);
    }
  }
#pragma unroll
  for (int c = 0; c < kCols; ++c) {
#pragma unroll
    for (int m = 0; m < kMaxM; ++m) {
#pragma unroll
      for (int offset = 16; offset > 0; offset >>= 1) acc[c][m] += __shfl_xor_sync(0xFFFFFFFFu, acc[c][m], offset);
    }
  }
  if (lane != 0) return;
#pragma unroll
  for (int c = 0; c < kCols; ++c) {
    const int64_t n = n0 + c;
    if (n >= a.n) break;
    const float bias = a.bias != nullptr ? load_one(a.bias, a.bias_type, n) : 0.0f;
#pragma unroll
    for (int m = 0; m < kMaxM; ++m) {
      if (m >= a.m) break;
      store_one(row_ptr(a.y, a.y_type, m, a.y_stride), a.y_type, n, acc[c][m] + bias);
    }
  }
}

template <bool kHalf>
void launch_for_type(const GemvArgs& a, dim3 grid, cudaStream_t stream) {
  if (a.m <= 1) {
    launch_pdl(gemv_kernel<kHalf, 1>, grid, kThreads, 0, stream, a);
  } else {
    launch_pdl(gemv_kernel<kHalf, kGemvMaxM>, grid, kThreads, 0, stream, a);
  }
}

}  // namespace

void launch_gemv(const GemvArgs& a, cudaStream_t stream) {
  if (a.m == 0 || a.n == 0) return;
  const int64_t num_warps = (a.n + kCols - 1) / kCols;
  const dim3 grid(static_cast<unsigned>((num_warps + kWarps - 1) / kWarps));
  if (a.w_type == FloatType::kF16) {
    launch_for_type<true>(a, grid, stream);
  } else {
    launch_for_type<false>(a, grid, stream);
  }
}

}  // namespace brisk::cuda
