// W4A16 for decode-sized M (<= 16): y = x * dequant(w)^T, bandwidth-bound, every weight byte
// read once. Layout: brisk's int4 rows (model/int4_weight.h), K values of one output row
// contiguous, two per byte, low nibble first.
//
// Work split: a warp owns kCols consecutive weight rows (output columns n) and walks its split's
// K range 1024 values at a time: lane l takes K values [base + 32 l, base + 32 l + 32), one
// 16-byte load per row (the warp reads 512 contiguous bytes of each row: coalesced). 32 values
// lie in one quantization group (group sizes are multiples of 32), so a lane needs one scale and
// one zero point per row and step. x rows come through L1 (all warps read the same x); weights
// bypass L1 (read once).
//
// Dequantization in registers: OR-ing a nibble into the mantissa of bf16 128.0 (0x4300) gives
// 128 + q exactly, two values per 32-bit LOP3; a shift or mask turns each half into fp32. For
// M <= 2 the zero point is folded out of the inner loop:
//   sum_k (q_k - z) s x_k = s (sum_k (128 + q_k) x_k - (128 + z) sum_k x_k),
// where sum_k x_k is shared by the kCols rows (fp32 cancellation here costs ~7 of 24 bits, far
// below the bf16 output rounding). For larger M the exact q - z is formed once per weight and
// shared by the M rows instead. Accumulation is fp32 throughout; lanes combine by shuffles.
#include <algorithm>
#include <cstdint>

#include "backend/cuda/kernels/float_io.cuh"
#include "backend/cuda/kernels/launch.h"
#include "backend/cuda/kernels/pdl.cuh"
#include "backend/cuda/kernels/silu.cuh"
#include "backend/cuda/kernels/w4a16/w4a16_launch.h"
#include "backend/cuda/kernels/w4a16/streaming_load.cuh"
#include "backend/cuda/runtime/cuda_check.h"

namespace brisk::cuda {
namespace {

constexpr int kLaneK = 32;                // K values per lane and step (one 16-byte load)
constexpr int kWarpK = 32 * kLaneK;       // K values per warp and step
constexpr int kWarpsPerBlock = 8;
constexpr int kThreads = 32 * kWarpsPerBlock;

// Weight rows per warp: more rows share each x load and (for M <= 2) each x sum; fewer keep the
// accumulators of larger M in registers (kRows * kCols <= 32 so one lane writes each output).
template <int kRows>
constexpr int cols_for_rows() { return kRows <= 2 ? 4 : (kRows <= 8 ? 2 : 1); }

// The 8 nibbles of a word (nibble i = K offset i) as fp32 128 + q.
__device__ __forceinline__ void decode8(uint32_t word, float (&f)[8]) {
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const uint32_t pair = ((word >> (4 * i)) & 0x000F000Fu) | 0x43004300u;  // bf16 128+q_i | 128+q_{i+4}
    f[i] = __uint_as_float(pair << 16);
    f[i + 4] = __uint_as_float(pair & 0xFFFF0000u);
  }
}

template <int kRows>
__global__ void __launch_bounds__(kThreads) w4a16_small_m_kernel(W4A16Args a) {
  constexpr int kCols = cols_for_rows<kRows>();
  constexpr bool kFoldZero = kRows <= 2;
  const int lane = threadIdx.x % 32;
  const int64_t n0 = (int64_t{blockIdx.x} * kWarpsPerBlock + threadIdx.x / 32) * kCols;
  if (n0 >= a.n) return;  // uniform per warp
  const int64_t k_begin = int64_t{blockIdx.y} * a.k_per_split;
  const int64_t k_end = min(a.k, k_begin + a.k_per_split);
  const int64_t row_bytes = a.k / 2;
  const int64_t num_groups = a.k / a.group_size;

  float acc[kRows][kCols];
#pragma unroll
  for (int r = 0; r < kRows; ++r)
#pragma unroll
    for (int c = 0; c < kCols; ++c) acc[r][c] = 0.0f;

  for (int64_t k0 = k_begin + lane * kLaneK; k0 < k_end; k0 += kWarpK) {
    uint4 w[kCols];
    float scale[kCols], zero128[kCols];
#pragma unroll
    for (int c = 0; c < kCols; ++c) {  // all loads first: kCols * 16 bytes in flight per lane
      const int64_t n = min(n0 + c, a.n - 1);  // a clamped row is computed but never written
      const int64_t g = n * num_groups + k0 / a.group_size;
      w[c] = load_streaming(a.qweight + n * row_bytes + k0 / 2);
      scale[c] = load_one(a.scales, a.scale_type, g);
      zero128[c] = 128.0f + (a.zeros != nullptr ? static_cast<float>(a.zeros[g]) : 8.0f);
    }
    float part[kRows][kCols], xsum[kRows];
#pragma unroll
    for (int r = 0; r < kRows; ++r) {
      xsum[r] = 0.0f;
#pragma unroll
      for (int c = 0; c < kCols; ++c) part[r][c] = 0.0f;
    }
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      float f[kCols][8];
#pragma unroll
      for (int c = 0; c < kCols; ++c) {
        decode8(word_of(w[c], j), f[c]);
        if constexpr (!kFoldZero) {
#pragma unroll
          for (int i = 0; i < 8; ++i) f[c][i] -= zero128[c];  // exact: q - z
        }
      }
#pragma unroll
      for (int r = 0; r < kRows; ++r) {
        if (r >= a.m) break;
        float xv[8];
        load8(row_ptr(a.x, a.x_type, r, a.x_stride), a.x_type, k0 + 8 * j, xv);
#pragma unroll
        for (int i = 0; i < 8; ++i) {
          if constexpr (kFoldZero) xsum[r] += xv[i];
#pragma unroll
          for (int c = 0; c < kCols; ++c) part[r][c] = fmaf(f[c][i], xv[i], part[r][c]);
        }
      }
    }
#pragma unroll
    for (int r = 0; r < kRows; ++r)
#pragma unroll
      for (int c = 0; c < kCols; ++c) {
        const float dot = kFoldZero ? fmaf(-zero128[c], xsum[r], part[r][c]) : part[r][c];
        acc[r][c] = fmaf(scale[c], dot, acc[r][c]);
      }
  }

#pragma unroll
  for (int r = 0; r < kRows; ++r)
#pragma unroll
    for (int c = 0; c < kCols; ++c)
#pragma unroll
      for (int offset = 16; offset > 0; offset >>= 1)
        acc[r][c] += __shfl_xor_sync(0xFFFFFFFFu, acc[r][c], offset);

#pragma unroll
  for (int r = 0; r < kRows; ++r) {
#pragma unroll
    for (int c = 0; c < kCols; ++c) {
      const int64_t n = n0 + c;
      if (lane != r * kCols + c || r >= a.m || n >= a.n) continue;
      if (a.num_splits > 1) {
        a.partials[(int64_t{blockIdx.y} * a.m + r) * a.n + n] = acc[r][c];
      } else {
        const float bias = a.bias != nullptr ? load_one(a.bias, a.bias_type, n) : 0.0f;
        store_one(row_ptr(a.y, a.y_type, r, a.y_stride), a.y_type, n, acc[r][c] + bias);
      }
    }
  }
}

// y[r, n] = sum over splits of partials + bias (with silu_gate: of gate column n and up column
// n + N / 2, then silu(gate) * up); block (x, y): 256 outputs of row y.
__global__ void w4a16_reduce_kernel(W4A16Args a) {
  pdl_wait();  // the partials of the kernel before
  pdl_release();
  const int64_t total = int64_t{a.m} * a.n, cols = w4a16_y_cols(a);
  const int64_t r = blockIdx.y, n = int64_t{blockIdx.x} * blockDim.x + threadIdx.x;  // row, output
  if (n >= cols) return;
  auto sum_of = [&](int64_t col) {
    float sum = a.bias != nullptr ? load_one(a.bias, a.bias_type, col) : 0.0f;
    for (int s = 0; s < a.num_splits; ++s) sum += a.partials[int64_t{s} * total + r * a.n + col];
    return sum;
  };
  const float v = a.silu_gate ? silu_times(sum_of(n), sum_of(cols + n)) : sum_of(n);
  store_one(row_ptr(a.y, a.y_type, r, a.y_stride), a.y_type, n, v);
}

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

template <int kRows>
void launch_rows(const W4A16Args& a, cudaStream_t stream) {
  constexpr int kCols = cols_for_rows<kRows>();
  const int64_t num_warps = (a.n + kCols - 1) / kCols;
  const dim3 grid(static_cast<unsigned>((num_warps + kWarpsPerBlock - 1) / kWarpsPerBlock),
                  static_cast<unsigned>(a.num_splits));
  w4a16_small_m_kernel<kRows><<<grid, kThreads, 0, stream>>>(a);
}

int cols_for(int m) {
  if (m <= 1) return cols_for_rows<1>();
  if (m <= 2) return cols_for_rows<2>();
  if (m <= 4) return cols_for_rows<4>();
  if (m <= 8) return cols_for_rows<8>();
  return cols_for_rows<16>();
}

}  // namespace

void w4a16_plan_splits(W4A16Args& a, int num_sms) {
  // About 24 warps per SM keep enough 16-byte loads in flight to cover DRAM latency; split K
  // only when N alone gives fewer, and never below one warp step of K per split.
  const int64_t num_warps = (a.n + cols_for(a.m) - 1) / cols_for(a.m);
  const int64_t wanted_warps = int64_t{std::max(num_sms, 1)} * 24;
  const int64_t steps = (a.k + kWarpK - 1) / kWarpK;
  const int64_t splits = std::clamp<int64_t>((wanted_warps + num_warps - 1) / num_warps, 1, std::min<int64_t>(steps, 64));
  const int64_t steps_per_split = (steps + splits - 1) / splits;
  a.k_per_split = steps_per_split * kWarpK;
  a.num_splits = static_cast<int>((steps + steps_per_split - 1) / steps_per_split);
}

void launch_w4a16_small_m(const W4A16Args& a, cudaStream_t stream) {
  if (a.m == 0 || a.n == 0) return;
  if (a.m <= 1) {
    launch_rows<1>(a, stream);
  } else if (a.m <= 2) {
    launch_rows<2>(a, stream);
  } else if (a.m <= 4) {
    launch_rows<4>(a, stream);
  } else if (a.m <= 8) {
    launch_rows<8>(a, stream);
  } else {
    launch_rows<16>(a, stream);
  }
  BRISK_CUDA_CHECK(cudaGetLastError());
  if (a.num_splits > 1) launch_w4a16_reduce(a, stream);
}

void launch_w4a16_reduce(const W4A16Args& a, cudaStream_t stream) {
  // A row of blocks for each row of y (the kernels that split take at most
  // kW4A16MmaMultiPassMaxRows rows), 256 outputs a block.
  if (a.m > 65535) check(cudaErrorInvalidValue, "w4a16 reduce: more rows than a grid's y", __FILE__, __LINE__);
  const dim3 grid(static_cast<unsigned>((w4a16_y_cols(a) + 255) / 256), static_cast<unsigned>(a.m));
  launch_pdl(w4a16_reduce_kernel, grid, dim3(256), 0, stream, a);
  BRISK_CUDA_CHECK(cudaGetLastError());
}

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
