// The int4 weight layouts' kernels: brisk's row layout into the tile layout (Int4Layout::kTiles16,
// backend.h) at load time, and the weight dequantized into scratch in either layout (the large-M
// path: dequantize, then a dense GEMM).
#include <algorithm>
#include <cstdint>

#include "backend/cuda/kernels/float_io.cuh"
#include "backend/cuda/kernels/launch.h"
#include "backend/cuda/kernels/w4a16/int4_pairs.cuh"
#include "backend/cuda/kernels/w4a16/w4a16_launch.h"
#include "backend/cuda/runtime/cuda_check.h"

namespace brisk::cuda {
namespace {

// The word (8 values) of row n at K offset k0 (a multiple of 8) of a weight with num_rows rows:
// its index in the tile layout (backend.h, Int4Layout).
__device__ __forceinline__ int64_t tile_word(int64_t n, int64_t k0, int64_t num_rows) {
  const int64_t unit =
      (((k0 / 128) * (num_rows / 16) + n / 16) * 2 + (n % 16) / 8) * 32 + (n % 8) * 4 + (k0 % 128) / 32;
  return unit * 4 + (k0 % 32) / 8;
}

__global__ void dequantize_int4_kernel(DequantizeInt4Args a, bool tiles) {
  const int64_t words_per_row = a.k / 8;
  const int64_t num_groups = a.k / a.group_size;
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < a.n * words_per_row;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t n = i / words_per_row, k0 = (i % words_per_row) * 8;
    const int64_t word = tiles ? tile_word(n, k0, a.n) : i;
    const int64_t g = n * num_groups + k0 / a.group_size;
    const float scale = load_one(a.scales, a.scale_type, g);
    const float zero128 = 128.0f + (a.zeros != nullptr ? static_cast<float>(a.zeros[g]) : 8.0f);
    float f[8];
    decode8(reinterpret_cast<const uint32_t*>(a.qweight)[word], f);
#pragma unroll
    for (int j = 0; j < 8; ++j) f[j] = (f[j] - zero128) * scale;
    store8(a.out, a.out_type, n * a.k + k0, f);
  }
}

__global__ void int4_rows_to_tiles_kernel(const uint8_t* src, uint8_t* dst, int64_t n, int64_t k) {
  const int64_t words_per_row = k / 8;
  for (int64_t i = int64_t{blockIdx.x} * blockDim.x + threadIdx.x; i < n * words_per_row;
       i += int64_t{gridDim.x} * blockDim.x) {
    const int64_t row = i / words_per_row, k0 = (i % words_per_row) * 8;
    reinterpret_cast<uint32_t*>(dst)[tile_word(row, k0, n)] = reinterpret_cast<const uint32_t*>(src)[i];
  }
}

}  // namespace

void launch_dequantize_int4(const DequantizeInt4Args& a, cudaStream_t stream) {
  launch_dequantize_int4(a, false, stream);
}

void launch_dequantize_int4(const DequantizeInt4Args& a, bool tiles, cudaStream_t stream) {
  const int64_t words = a.n * (a.k / 8);
  if (words == 0) return;
  const unsigned blocks = static_cast<unsigned>(std::clamp<int64_t>((words + 255) / 256, 1, 65536));
  dequantize_int4_kernel<<<blocks, 256, 0, stream>>>(a, tiles);
  BRISK_CUDA_CHECK(cudaGetLastError());
}

void launch_int4_rows_to_tiles(const uint8_t* src, uint8_t* dst, int64_t n, int64_t k, cudaStream_t stream) {
  const int64_t words = n * (k / 8);
  if (words == 0) return;
  const unsigned blocks = static_cast<unsigned>(std::clamp<int64_t>((words + 255) / 256, 1, 65536));
  int4_rows_to_tiles_kernel<<<blocks, 256, 0, stream>>>(src, dst, n, k);
  BRISK_CUDA_CHECK(cudaGetLastError());
}

}  // namespace brisk::cuda
