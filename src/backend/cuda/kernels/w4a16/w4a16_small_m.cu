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
// Dequantization in registers to fp32 128 + q (decode8, int4_pairs.cuh). For M <= 2 the zero
// point is folded out of the inner loop:
//   sum_k (q_k - z) s x_k = s (sum_k (128 + q_k) x_k - (128 + z) sum_k x_k),
// where sum_k x_k is shared by the kCols rows (fp32 cancellation here costs ~7 of 24 bits, far
// below the bf16 output rounding). For larger M the exact q - z is formed once per weight and
// shared by the M rows instead. Accumulation is fp32 throughout; lanes combine by shuffles.
#include <cstdint>

#include "backend/cuda/kernels/float_io.cuh"
#include "backend/cuda/kernels/launch.h"
#include "backend/cuda/kernels/w4a16/int4_pairs.cuh"
#include "backend/cuda/kernels/w4a16/streaming_load.cuh"
#include "backend/cuda/kernels/w4a16/w4a16_configs.h"
#include "backend/cuda/kernels/w4a16/w4a16_launch.h"
#include "backend/cuda/runtime/cuda_check.h"

namespace brisk::cuda {
namespace {

constexpr int kLaneK = 32;  // K values per lane and step (one 16-byte load; kW4A16SmallMWarpK a warp)
constexpr int kWarpsPerBlock = 8;
constexpr int kThreads = 32 * kWarpsPerBlock;

template <int kRows>
__global__ void __launch_bounds__(kThreads) w4a16_small_m_kernel(W4A16Args a) {
  constexpr int kCols = w4a16_small_m_cols(kRows);
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

  for (int64_t k0 = k_begin + lane * kLaneK; k0 < k_end; k0 += kW4A16SmallMWarpK) {
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

template <int kRows>
void launch_rows(const W4A16Args& a, cudaStream_t stream) {
  constexpr int kCols = w4a16_small_m_cols(kRows);
  const int64_t num_warps = (a.n + kCols - 1) / kCols;
  const dim3 grid(static_cast<unsigned>((num_warps + kWarpsPerBlock - 1) / kWarpsPerBlock),
                  static_cast<unsigned>(a.num_splits));
  w4a16_small_m_kernel<kRows><<<grid, kThreads, 0, stream>>>(a);
}

}  // namespace

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

}  // namespace brisk::cuda
