// int4 weights to packed 16-bit pairs, as the W4A16 tensor-core kernels (w4a16_mma.cu and
// w4a16_wgmma.cu) feed them to the MMA, and to fp32 (decode8, the CUDA-core kernels): OR-ing two nibbles (one LOP3 with the
// mask 0x000F000F) into the mantissas of a magic pair gives (offset + q) exactly, offset 128 in
// bf16 and 1024 in f16; the zero point then enters as (offset + z).
#pragma once

#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "backend/cuda/kernels/float_io.cuh"

namespace brisk::cuda {

template <FloatType kType>
struct Int4Pairs;

template <>
struct Int4Pairs<FloatType::kBF16> {
  static constexpr uint32_t kMagic = 0x43004300u;  // bf16 128 | 128
  static constexpr uint32_t kOne = 0x3F803F80u;    // bf16 1 | 1
  static constexpr float kOffset = 128.0f;
  // 128 + z for a zero point z < 16 (z at fp32's unit place for 128: one integer instruction).
  __device__ static float offset_plus(uint32_t z) { return __uint_as_float(0x43000000u + (z << 16)); }
  __device__ static uint32_t splat(float v) {
    const __nv_bfloat162 h = __float2bfloat162_rn(v);
    return *reinterpret_cast<const uint32_t*>(&h);
  }
  // (q128 - z128) * s with packed z2 = splat(128 + z), s2 = splat(s): the difference is exact,
  // the product rounded once (twice where s was rounded to bf16 from another dtype first).
  __device__ static uint32_t dequant(uint32_t q, uint32_t z2, uint32_t s2) {
    const __nv_bfloat162 r = __hmul2(
        __hsub2(*reinterpret_cast<const __nv_bfloat162*>(&q), *reinterpret_cast<const __nv_bfloat162*>(&z2)),
        *reinterpret_cast<const __nv_bfloat162*>(&s2));
    return *reinterpret_cast<const uint32_t*>(&r);
  }
  // The same, rounded once whatever the scales' dtype: in fp32 as q128 * s - z128 * s (the
  // cancellation costs ~4 of fp32's 24 bits), since a scale rounded to bf16 first (f16
  // checkpoint scales) would bias a whole group.
  __device__ static uint32_t dequant_fp32(uint32_t q, float scale, float zero_scale) {
    const __nv_bfloat162 r = __floats2bfloat162_rn(fmaf(__uint_as_float(q << 16), scale, -zero_scale),
                                                   fmaf(__uint_as_float(q & 0xFFFF0000u), scale, -zero_scale));
    return *reinterpret_cast<const uint32_t*>(&r);
  }
};

template <>
struct Int4Pairs<FloatType::kF16> {
  static constexpr uint32_t kMagic = 0x64006400u;  // f16 1024 | 1024
  static constexpr uint32_t kOne = 0x3C003C00u;    // f16 1 | 1
  static constexpr float kOffset = 1024.0f;
  __device__ static float offset_plus(uint32_t z) { return __uint_as_float(0x44800000u + (z << 13)); }  // 1024 + z
  __device__ static uint32_t splat(float v) {
    const __half2 h = __float2half2_rn(v);
    return *reinterpret_cast<const uint32_t*>(&h);
  }
  // (q1024 - z1024) * s on packed pairs: the difference is exact, the product rounded once
  // (checkpoint scales are f16 already).
  __device__ static uint32_t dequant(uint32_t q, uint32_t z2, uint32_t s2) {
    const __half2 r = __hmul2(__hsub2(*reinterpret_cast<const __half2*>(&q), *reinterpret_cast<const __half2*>(&z2)),
                              *reinterpret_cast<const __half2*>(&s2));
    return *reinterpret_cast<const uint32_t*>(&r);
  }
};

// The low nibbles of v's two halves as a packed pair (offset + q): the mask and the magic OR in
// one LOP3 (left to itself the compiler makes two of them, a LOP3 taking only one immediate
// operand).
template <FloatType kType>
__device__ __forceinline__ uint32_t magic_pair(uint32_t v) {
  uint32_t r;
  asm("lop3.b32 %0, %1, %2, %3, 0xEA;" : "=r"(r) : "r"(v), "n"(0x000F000F), "r"(Int4Pairs<kType>::kMagic));
  return r;
}

// Nibbles i and i + 4 of word (i = 0..3) as a packed pair (offset + q).
template <FloatType kType>
__device__ __forceinline__ uint32_t int4_pair(uint32_t word, int i) {
  return magic_pair<kType>(word >> (4 * i));
}

// x values 0..7 (16 bytes, two per word) as the pairs (0, 4), (1, 5), (2, 6), (3, 7): the order
// in which the LOP3 above pulls nibbles i and i + 4 out of a weight word.
__device__ __forceinline__ uint4 pair_halves(uint4 v) {
  return make_uint4(__byte_perm(v.x, v.z, 0x5410), __byte_perm(v.x, v.z, 0x7632), __byte_perm(v.y, v.w, 0x5410),
                    __byte_perm(v.y, v.w, 0x7632));
}

// The 8 nibbles of a word (nibble i = K offset i) as fp32 128 + q (the CUDA-core kernels): OR-ing
// a nibble into the mantissa of bf16 128.0 gives 128 + q exactly, two values per 32-bit LOP3; a
// shift or mask turns each half into fp32.
__device__ __forceinline__ void decode8(uint32_t word, float (&f)[8]) {
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const uint32_t pair = ((word >> (4 * i)) & 0x000F000Fu) | 0x43004300u;  // bf16 128+q_i | 128+q_{i+4}
    f[i] = __uint_as_float(pair << 16);
    f[i + 4] = __uint_as_float(pair & 0xFFFF0000u);
  }
}

}  // namespace brisk::cuda
