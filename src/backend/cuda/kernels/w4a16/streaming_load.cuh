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

// A 1-d bulk copy (TMA, no tensor map) of `bytes` (a multiple of 16; src and dst 16-byte
// aligned) from global into shared memory at dst; the bytes complete on the mbarrier `bar`.
__device__ __forceinline__ void bulk_copy_to_shared(uint32_t dst, const void* src, uint32_t bytes, uint32_t bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(dst),
               "l"(src), "r"(bytes), "r"(bar)
               : "memory");
}
// The same for bytes read exactly once (the weights): marked first to leave L2, so that they
// do not push out what is reused (x, scales, the next kernel's inputs).
__device__ __forceinline__ uint64_t l2_evict_first_policy() {
  uint64_t policy;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(policy));
  return policy;
}
__device__ __forceinline__ void bulk_copy_to_shared_once(uint32_t dst, const void* src, uint32_t bytes, uint32_t bar,
                                                         uint64_t policy) {
  asm volatile(
      "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;\n" ::"r"(dst),
      "l"(src), "r"(bytes), "r"(bar), "l"(policy)
      : "memory");
}
