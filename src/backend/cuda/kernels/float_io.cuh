// Device-side loads and stores of f32 / f16 / bf16 elements as fp32, with the element type
// chosen at run time (FloatType). Conversions round to nearest even, as the CPU reference's
// float_to_bf16 / float_to_half do.
#pragma once

#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "backend/cuda/kernels/launch.h"

namespace brisk::cuda {

__device__ __forceinline__ float bf16_bits_to_float(uint16_t bits) {
  return __uint_as_float(static_cast<uint32_t>(bits) << 16);
}
__device__ __forceinline__ float half_bits_to_float(uint16_t bits) {
  return __half2float(__ushort_as_half(bits));
}
__device__ __forceinline__ uint16_t float_to_bf16_bits(float value) {
  return __bfloat16_as_ushort(__float2bfloat16_rn(value));
}
__device__ __forceinline__ uint16_t float_to_half_bits(float value) {
  return __half_as_ushort(__float2half_rn(value));
}

__device__ __forceinline__ float bits_to_float(uint16_t bits, FloatType type) {
  return type == FloatType::kF16 ? half_bits_to_float(bits) : bf16_bits_to_float(bits);
}
__device__ __forceinline__ uint16_t float_to_bits(float value, FloatType type) {
  return type == FloatType::kF16 ? float_to_half_bits(value) : float_to_bf16_bits(value);
}

// value as stored in type and read back (what the next reader of a rounded tensor sees).
__device__ __forceinline__ float round_to(float value, FloatType type) {
  return type == FloatType::kF32 ? value : bits_to_float(float_to_bits(value, type), type);
}

// Element i of base (an array of type) as fp32.
__device__ __forceinline__ float load_one(const void* base, FloatType type, int64_t i) {
  if (type == FloatType::kF32) return static_cast<const float*>(base)[i];
  return bits_to_float(static_cast<const uint16_t*>(base)[i], type);
}

__device__ __forceinline__ void store_one(void* base, FloatType type, int64_t i, float value) {
  if (type == FloatType::kF32) {
    static_cast<float*>(base)[i] = value;
  } else {
    static_cast<uint16_t*>(base)[i] = float_to_bits(value, type);
  }
}

// Elements [i, i + 8) with 16-byte accesses: i must be a multiple of 8 and base 16-byte aligned.
__device__ __forceinline__ void load8(const void* base, FloatType type, int64_t i, float (&v)[8]) {
  if (type == FloatType::kF32) {
    const float4* p = reinterpret_cast<const float4*>(static_cast<const float*>(base) + i);
    const float4 a = p[0];
    const float4 b = p[1];
    v[0] = a.x; v[1] = a.y; v[2] = a.z; v[3] = a.w;
    v[4] = b.x; v[5] = b.y; v[6] = b.z; v[7] = b.w;
    return;
  }
  const uint4 u = *reinterpret_cast<const uint4*>(static_cast<const uint16_t*>(base) + i);
  const uint32_t words[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    v[2 * j] = bits_to_float(static_cast<uint16_t>(words[j] & 0xFFFFu), type);
    v[2 * j + 1] = bits_to_float(static_cast<uint16_t>(words[j] >> 16), type);
  }
}

__device__ __forceinline__ void store8(void* base, FloatType type, int64_t i, const float (&v)[8]) {
  if (type == FloatType::kF32) {
    float4* p = reinterpret_cast<float4*>(static_cast<float*>(base) + i);
    p[0] = make_float4(v[0], v[1], v[2], v[3]);
    p[1] = make_float4(v[4], v[5], v[6], v[7]);
    return;
  }
  uint32_t words[4];
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    words[j] = static_cast<uint32_t>(float_to_bits(v[2 * j], type)) |
               (static_cast<uint32_t>(float_to_bits(v[2 * j + 1], type)) << 16);
  }
  *reinterpret_cast<uint4*>(static_cast<uint16_t*>(base) + i) =
      make_uint4(words[0], words[1], words[2], words[3]);
}

// Bytes per element of a FloatType.
__host__ __device__ __forceinline__ int float_type_bytes(FloatType type) {
  return type == FloatType::kF32 ? 4 : 2;
}

// Row r of a strided 2-D array, as a byte pointer.
__device__ __forceinline__ const void* row_ptr(const void* base, FloatType type, int64_t row,
                                               int64_t stride) {
  return static_cast<const char*>(base) + row * stride * float_type_bytes(type);
}
__device__ __forceinline__ void* row_ptr(void* base, FloatType type, int64_t row, int64_t stride) {
  return static_cast<char*>(base) + row * stride * float_type_bytes(type);
}

// Block-wide sum of one float per thread (blockDim.x a multiple of 32, at most 1024); every
// thread gets the result. scratch holds 32 floats; the call begins and ends with a barrier so
// scratch may be reused right after.
__device__ __forceinline__ float block_sum(float value, float* scratch) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) value += __shfl_xor_sync(0xFFFFFFFFu, value, offset);
  const int warp = threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  __syncthreads();
  if (lane == 0) scratch[warp] = value;
  __syncthreads();
  const int num_warps = blockDim.x / 32;
  value = lane < num_warps ? scratch[lane] : 0.0f;
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) value += __shfl_xor_sync(0xFFFFFFFFu, value, offset);
  __syncthreads();
  return value;
}

}  // namespace brisk::cuda
