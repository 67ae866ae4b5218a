// The second kernel of the W4A16 split-K launches of the mma.sync and CUDA-core kernels: y = the
// sum of the num_splits fp32 partials [split, M, N] (+ bias, silu_gate's silu(gate) * up).
#include <cstdint>

#include "backend/cuda/kernels/float_io.cuh"
#include "backend/cuda/kernels/launch.h"
#include "backend/cuda/kernels/pdl.cuh"
#include "backend/cuda/kernels/silu.cuh"
#include "backend/cuda/kernels/w4a16/w4a16_launch.h"
#include "backend/cuda/runtime/cuda_check.h"

namespace brisk::cuda {
namespace {

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

}  // namespace

void launch_w4a16_reduce(const W4A16Args& a, cudaStream_t stream) {
  // A row of blocks for each row of y (the kernels that split take at most
  // kW4A16MmaMaxRows rows a pass), 256 outputs a block.
  if (a.m > 65535) check(cudaErrorInvalidValue, "w4a16 reduce: more rows than a grid's y", __FILE__, __LINE__);
  const dim3 grid(static_cast<unsigned>((w4a16_y_cols(a) + 255) / 256), static_cast<unsigned>(a.m));
  launch_pdl(w4a16_reduce_kernel, grid, dim3(256), 0, stream, a);
  BRISK_CUDA_CHECK(cudaGetLastError());
}

}  // namespace brisk::cuda
