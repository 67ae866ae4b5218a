// The W4A16 kernels' weight loads: every int4 weight byte is read exactly once.
#pragma once

#include <cstdint>

namespace brisk::cuda {

// A 16-byte load that skips L1 (read-only, not kept).
__device__ __forceinline__ uint4 load_streaming(const uint8_t* ptr) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(ptr));
  return v;
}

}  // namespace brisk::cuda
