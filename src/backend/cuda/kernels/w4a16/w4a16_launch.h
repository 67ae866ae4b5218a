// Launchers of the W4A16 kernels beyond launch.h's small-M kernel: the split-K reduction, the
// mma.sync kernel (w4a16_mma.cu) and the int4 layout kernels (int4_layout.cu). Arguments are
// launch.h's W4A16Args; the plans that fill them in are w4a16_plan.h's.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "backend/cuda/kernels/launch.h"

namespace brisk::cuda {

// The columns of y: n, or n / 2 with silu_gate (one for each gate / up pair of rows).
template <class Args>
__host__ __device__ inline int64_t w4a16_y_cols(const Args& a) { return a.silu_gate ? a.n / 2 : a.n; }

// y = sum of the num_splits partials (+ bias): the second kernel of a split-K launch.
void launch_w4a16_reduce(const W4A16Args& a, cudaStream_t stream);

// The mma.sync kernel for M <= kW4A16MmaMaxRows (w4a16_configs.h) as w4a16_mma_plan planned it
// (a.mma_config, k_per_split, num_splits): x f16 or bf16 with rows 16-byte aligned, k a multiple
// of 128, group_size a multiple of 32, scales and y of any float type. x_frag: scratch of
// w4a16_mma_x_frag_bytes(a) bytes, 16-byte aligned, for the configurations that first permute x
// into fragment order (none otherwise). tiles: qweight is in Int4Layout::kTiles16 (backend.h),
// else brisk's row layout.
void launch_w4a16_mma(const W4A16Args& a, bool tiles, void* x_frag, cudaStream_t stream);
// Whether the mma.sync kernel applies the scales to fp32 chunk sums (each 128-K chunk in one
// group: a power of two from 128); only then does it take a.silu_gate.
inline bool w4a16_mma_scales_after(int group_size) {
  return group_size % 128 == 0 && (group_size & (group_size - 1)) == 0;
}

// dst = src ([n, k] int4, brisk's row layout) in Int4Layout::kTiles16: n % 16 == 0, k % 128 == 0,
// both 16-byte aligned, not overlapping.
void launch_int4_rows_to_tiles(const uint8_t* src, uint8_t* dst, int64_t n, int64_t k, cudaStream_t stream);
// launch_dequantize_int4 (launch.h) for a qweight in either layout.
void launch_dequantize_int4(const DequantizeInt4Args& a, bool tiles, cudaStream_t stream);

}  // namespace brisk::cuda
