// The W4A16 kernels' weight loads (every int4 weight byte is read exactly once), with their
// scales and zero points.
#pragma once

#include <cstdint>

#include "backend/cuda/kernels/float_io.cuh"

namespace brisk::cuda {

// A 16-byte load that skips L1 (read-only, not kept).
__device__ __forceinline__ uint4 load_streaming(const uint8_t* ptr) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(ptr));
  return v;
}

// Scales and zero points through the read-only path, as volatile asm so that the compiler keeps
// them where they are issued (ahead, with the weights) instead of sinking them to their use,
// which would put one memory latency into every step.
__device__ __forceinline__ uint32_t load_u32_nc(const void* ptr) {
  uint32_t v;
  asm volatile("ld.global.nc.u32 %0, [%1];" : "=r"(v) : "l"(ptr));
  return v;
}
__device__ __forceinline__ uint32_t load_u16_nc(const void* ptr) {
  uint16_t v;
  asm volatile("ld.global.nc.u16 %0, [%1];" : "=h"(v) : "l"(ptr));
  return v;
}
__device__ __forceinline__ uint32_t load_u8_nc(const void* ptr) {
  uint32_t v;
  asm volatile("ld.global.nc.u8 %0, [%1];" : "=r"(v) : "l"(ptr));
  return v;
}

// Scale `index` of type kScale (raw bits, read-only path) and its value.
template <FloatType kScale>
__device__ __forceinline__ uint32_t load_scale(const void* scales, unsigned index) {
  if constexpr (kScale == FloatType::kF32) return load_u32_nc(static_cast<const uint32_t*>(scales) + index);
  return load_u16_nc(static_cast<const uint16_t*>(scales) + index);
}
template <FloatType kScale>
__device__ __forceinline__ float scale_value(uint32_t raw) {
  if constexpr (kScale == FloatType::kF32) return __uint_as_float(raw);
  if constexpr (kScale == FloatType::kBF16) return bf16_bits_to_float(static_cast<uint16_t>(raw));
  return half_bits_to_float(static_cast<uint16_t>(raw));
}

// Indices into the scales and zero points ([N, K / group_size], in 32 bits: gemm_w4a16 checks
// the range): a row's first index, made opaque to the compiler (which would otherwise recompute
// it for every load, measurably slower: docs/perf/w4a16.md), and a K position's group by a shift where
// group_size is a power of two (a division per load would cost more than the dequantization).
struct GroupIndex {
  unsigned group_size;
  bool pow2;
  int shift;
  __device__ explicit GroupIndex(int64_t size) {
    group_size = static_cast<unsigned>(size);
    pow2 = (group_size & (group_size - 1)) == 0;
    shift = __ffs(static_cast<int>(group_size)) - 1;
  }
  __device__ uint32_t row_start(int64_t row, int64_t k) const {
    uint32_t index = static_cast<uint32_t>(row * (k / group_size));
    asm volatile("" : "+r"(index));
    return index;
  }
  __device__ unsigned of(unsigned k_position) const { return pow2 ? k_position >> shift : k_position / group_size; }
};

// The zero point of symmetric weights (no zero points).
__device__ const uint8_t kSymmetricZero = 8;

// Zero points (read-only path): `index`, or 8 for symmetric weights, which read kSymmetricZero
// at stride 0. The stride is opaque to the compiler, so it stays a factor of the index instead of
// a predicate recomputed at every load.
struct ZeroPoints {
  const uint8_t* base;
  unsigned stride;
  __device__ explicit ZeroPoints(const uint8_t* zeros)
      : base(zeros != nullptr ? zeros : &kSymmetricZero), stride(zeros != nullptr ? 1u : 0u) {
    asm volatile("" : "+r"(stride));
  }
  __device__ uint32_t load(unsigned index) const { return load_u8_nc(base + index * stride); }
};

// 16 and 8 bytes from shared memory at a shared-space address (weights of a stage's copy).
__device__ __forceinline__ uint4 load_shared_u128(uint32_t address) {
  uint4 v;
  asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(address));
  return v;
}
__device__ __forceinline__ uint2 load_shared_u64(uint32_t address) {
  uint2 v;
  asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];" : "=r"(v.x), "=r"(v.y) : "r"(address));
  return v;
}

__device__ __forceinline__ uint32_t word_of(const uint4& v, int j) {
  return j == 0 ? v.x : (j == 1 ? v.y : (j == 2 ? v.z : v.w));
}

// A 1-d bulk copy (TMA, no tensor map) of `bytes` (a multiple of 16; src and dst 16-byte
// aligned) from global into shared memory at dst; the bytes complete on the mbarrier `bar`.
__device__ __forceinline__ void bulk_copy_to_shared(uint32_t dst, const void* src, uint32_t bytes, uint32_t bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];\n" ::"r"(dst),
               "l"(src), "r"(bytes), "r"(bar)
               : "memory");
}

}  // namespace brisk::cuda
