// SwiGLU's activation, shared by the silu_mul kernel and the GEMM epilogues that fuse it.
#pragma once

namespace brisk::cuda {

__device__ __forceinline__ float silu_times(float gate, float up) {
  // expf, not __expf: parity with the CPU's std::exp matters more than a few cycles.
  return gate / (1.0f + expf(-gate)) * up;
}

}  // namespace brisk::cuda
