// Rotate-half RoPE of one pair (x1 = x[i], x2 = x[i + head_dim / 2]) by the angle with cos c and
// sin s: y[i] = x1 c - x2 s, y[i + head_dim / 2] = x2 c + x1 s. Separately rounded products, as
// the CPU reference computes them (no FMA contraction), so that every CUDA path (rope_kv_append's
// kernels, the decode kernel's fused append) rounds the same values.
#pragma once

namespace brisk::cuda {

__device__ __forceinline__ float rope_first_half(float x1, float x2, float c, float s) {
  return __fsub_rn(__fmul_rn(x1, c), __fmul_rn(x2, s));
}
__device__ __forceinline__ float rope_second_half(float x1, float x2, float c, float s) {
  return __fadd_rn(__fmul_rn(x2, c), __fmul_rn(x1, s));
}

}  // namespace brisk::cuda
