// gemm_fp8's activation quantization and CUDA-core product (gemm_fp8.h): a kernel quantizes x
// (one block per row: each group's max by a reduction, then cvt to e4m3 with saturation, round
// to nearest even, as float_to_e4m3); a warp per (row, output) sums each group's exact
// products in fp32 and scales them, as the CPU reference does.
#include "backend/cuda/kernels/fp8/gemm_fp8.h"

#include <cuda_fp8.h>

#include "backend/cuda/kernels/float_io.cuh"
#include "backend/cuda/kernels/pdl.cuh"
#include "backend/cuda/runtime/cuda_check.h"

namespace brisk::cuda {
namespace {

constexpr int kThreads = 256;

// Where group g of row m's scale goes (GemmFp8Args::x_scale_ld).
__device__ __forceinline__ int64_t scale_index(const GemmFp8Args& a, int64_t m, int64_t g, int64_t groups) {
  return a.x_scale_ld > 0 ? g * a.x_scale_ld + m : m * groups + g;
}

__device__ __forceinline__ float e4m3_value(uint8_t bits) {
  __nv_fp8_e4m3 v;
  v.__x = bits;
  return static_cast<float>(v);
}

__device__ float block_max(float v) {
  __shared__ float warp_max[kThreads / 32];
  for (int offset = 16; offset > 0; offset /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  if (threadIdx.x % 32 == 0) warp_max[threadIdx.x / 32] = v;
  __syncthreads();
  float m = 0.0f;
  for (int w = 0; w < kThreads / 32; ++w) m = fmaxf(m, warp_max[w]);
  __syncthreads();  // warp_max is reused by the next group
  return m;
}

__global__ void __launch_bounds__(kThreads) quantize_rows_kernel(GemmFp8Args a) {
  pdl_wait();  // x comes from the kernel before
  pdl_release();
  const int64_t m = blockIdx.x, group = a.block_size > 0 ? a.block_size : a.k;
  const int64_t groups = (a.k + group - 1) / group;
  const void* row = row_ptr(a.x, a.x_type, m, a.x_stride);
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t k0 = g * group, k1 = min(a.k, k0 + group);
    float scale = a.input_scale != nullptr ? *a.input_scale : 0.0f;
    if (a.input_scale == nullptr) {
      float amax = 0.0f;
      for (int64_t i = k0 + threadIdx.x; i < k1; i += kThreads) amax = fmaxf(amax, fabsf(load_one(row, a.x_type, i)));
      amax = block_max(amax);
      scale = amax > 0.0f ? amax / 448.0f : 1.0f;
    }
    if (threadIdx.x == 0) a.x_scale[scale_index(a, m, g, groups)] = scale;
    for (int64_t i = k0 + threadIdx.x; i < k1; i += kThreads) {
      a.x_q[m * a.k + i] = __nv_cvt_float_to_fp8(__fdiv_rn(load_one(row, a.x_type, i), scale), __NV_SATFINITE, __NV_E4M3);
    }
  }
}

// The same for rows of up to 8 * kThreads * kChunks values, per-row or 128-value groups: a
// thread holds chunks of 8 consecutive values (16-byte loads, all issued at once), so the row is
// read in about one memory latency instead of a load-and-wait per value a thread.
constexpr int kMaxVectorChunks = 8;

template <int kChunks>
__global__ void __launch_bounds__(kThreads) quantize_rows_vector_kernel(GemmFp8Args a) {
  pdl_wait();  // x comes from the kernel before
  pdl_release();
  const int64_t m = blockIdx.x, chunks = a.k / 8;
  const int64_t groups = a.block_size > 0 ? (a.k + a.block_size - 1) / a.block_size : 1;
  const void* row = row_ptr(a.x, a.x_type, m, a.x_stride);
  float v[kChunks][8];
#pragma unroll
  for (int i = 0; i < kChunks; ++i) {
    const int64_t c = threadIdx.x + int64_t{i} * kThreads;
    if (c < chunks) {
      load8(row, a.x_type, 8 * c, v[i]);
    } else {
#pragma unroll
      for (int j = 0; j < 8; ++j) v[i][j] = 0.0f;
    }
  }
  // A chunk's scale: the static one, the row's, or its group's (16 chunks on 16 adjacent lanes).
  auto chunk_amax = [&](int i) {
    float amax = 0.0f;
#pragma unroll
    for (int j = 0; j < 8; ++j) amax = fmaxf(amax, fabsf(v[i][j]));
    return amax;
  };
  auto scale_of = [](float amax) { return amax > 0.0f ? amax / 448.0f : 1.0f; };
  float scale[kChunks];
  if (a.input_scale != nullptr || a.block_size == 0) {
    float s = 0.0f;
    if (a.input_scale != nullptr) {
      s = *a.input_scale;
    } else {
      float amax = 0.0f;
#pragma unroll
      for (int i = 0; i < kChunks; ++i) amax = fmaxf(amax, chunk_amax(i));
      s = scale_of(block_max(amax));
    }
#pragma unroll
    for (int i = 0; i < kChunks; ++i) scale[i] = s;
  } else {
#pragma unroll
    for (int i = 0; i < kChunks; ++i) {
      float amax = chunk_amax(i);
      for (int offset = 8; offset > 0; offset /= 2) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, offset));
      scale[i] = scale_of(amax);
    }
  }
#pragma unroll
  for (int i = 0; i < kChunks; ++i) {
    const int64_t c = threadIdx.x + int64_t{i} * kThreads;
    if (c >= chunks) continue;
    if (a.block_size > 0 ? c % 16 == 0 : c == 0)
      a.x_scale[scale_index(a, m, a.block_size > 0 ? c / 16 : 0, groups)] = scale[i];
    uint32_t packed[2] = {0, 0};
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const uint32_t q = __nv_cvt_float_to_fp8(__fdiv_rn(v[i][j], scale[i]), __NV_SATFINITE, __NV_E4M3);
      packed[j / 4] |= q << (8 * (j % 4));
    }
    *reinterpret_cast<uint2*>(a.x_q + m * a.k + 8 * c) = make_uint2(packed[0], packed[1]);
  }
}

// Warp w of block (x, m): output n = 8 x + w of row m.
__global__ void __launch_bounds__(kThreads) gemm_fp8_kernel(GemmFp8Args a) {
  const int64_t n = int64_t{blockIdx.x} * (kThreads / 32) + threadIdx.x / 32, m = blockIdx.y;
  const int lane = threadIdx.x % 32;
  if (n >= a.n) return;
  const int64_t group = a.block_size > 0 ? a.block_size : a.k;
  const int64_t groups = (a.k + group - 1) / group;
  const uint8_t* x = a.x_q + m * a.k;
  const uint8_t* w = a.weight + n * a.k;
  float sum = 0.0f;
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t k0 = g * group, k1 = min(a.k, k0 + group);
    float part = 0.0f;
    for (int64_t i = k0 + lane; i < k1; i += 32) part += e4m3_value(x[i]) * e4m3_value(w[i]);
    for (int offset = 16; offset > 0; offset /= 2) part += __shfl_xor_sync(0xffffffffu, part, offset);
    sum += part * (a.x_scale[m * groups + g] * a.weight_scale[n * groups + g]);
  }
  if (lane == 0) {
    const float bias = a.bias != nullptr ? load_one(a.bias, a.bias_type, n) : 0.0f;
    store_one(row_ptr(a.y, a.y_type, m, a.y_stride), a.y_type, n, sum + bias);
  }
}

__global__ void block_scales_kernel(const float* weight_scale, int64_t groups, float* block_scale) {
  const int64_t b = blockIdx.x;
  for (int64_t g = threadIdx.x; g < groups; g += blockDim.x)
    block_scale[b * groups + g] = weight_scale[b * 128 * groups + g];
}

}  // namespace

void launch_fp8_block_scales(const float* weight_scale, int64_t n, int64_t groups, float* block_scale,
                             cudaStream_t stream) {
  block_scales_kernel<<<static_cast<unsigned>((n + 127) / 128), 128, 0, stream>>>(weight_scale, groups, block_scale);
  BRISK_CUDA_CHECK(cudaGetLastError());
}

void launch_quantize_fp8_rows(const GemmFp8Args& a, cudaStream_t stream) {
  if (a.m == 0) return;
  const int64_t chunks = a.k / 8, rounds = (chunks + kThreads - 1) / kThreads;
  const bool vector = a.k % 8 == 0 && (a.block_size == 0 || a.block_size == 128) && rounds <= kMaxVectorChunks &&
                      reinterpret_cast<uintptr_t>(a.x) % 16 == 0 && a.x_stride % 8 == 0;
  if (!vector) {
    launch_pdl(quantize_rows_kernel, dim3(a.m), dim3(kThreads), 0, stream, a);
  } else if (rounds <= 1) {
    launch_pdl(quantize_rows_vector_kernel<1>, dim3(a.m), dim3(kThreads), 0, stream, a);
  } else if (rounds <= 2) {
    launch_pdl(quantize_rows_vector_kernel<2>, dim3(a.m), dim3(kThreads), 0, stream, a);
  } else if (rounds <= 4) {
    launch_pdl(quantize_rows_vector_kernel<4>, dim3(a.m), dim3(kThreads), 0, stream, a);
  } else {
    launch_pdl(quantize_rows_vector_kernel<kMaxVectorChunks>, dim3(a.m), dim3(kThreads), 0, stream, a);
  }
  BRISK_CUDA_CHECK(cudaGetLastError());
}

void launch_gemm_fp8_cuda_cores(const GemmFp8Args& a, cudaStream_t stream) {
  if (a.m == 0 || a.n == 0) return;
  const dim3 grid(static_cast<unsigned>((a.n + kThreads / 32 - 1) / (kThreads / 32)), static_cast<unsigned>(a.m));
  gemm_fp8_kernel<<<grid, kThreads, 0, stream>>>(a);
  BRISK_CUDA_CHECK(cudaGetLastError());
}

}  // namespace brisk::cuda
