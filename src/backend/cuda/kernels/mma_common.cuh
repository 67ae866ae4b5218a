// Device helpers shared by the tensor-core attention kernels (decode_attention/,
// prefill_attention/): mma.sync m16n8k16 for bf16 / f16 with fp32 accumulators, rounding of
// softmax weights to the KV dtype, cp.async 16-byte copies with zero fill, ldmatrix, the
// XOR-swizzled row layout of K / V / Q tiles in shared memory, and quad and warp reductions.
#pragma once

#include <cstdint>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "backend/cuda/kernels/launch.h"

namespace brisk::cuda {

constexpr float kLog2e = 1.4426950408889634f;

template <FloatType kType>
struct KvTraits;
template <>
struct KvTraits<FloatType::kBF16> {
  // Packs (lo, hi) rounded to bf16 and returns the rounded values too.
  __device__ static uint32_t pack(float lo, float hi, float& lo_r, float& hi_r) {
    const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    lo_r = __low2float(v);
    hi_r = __high2float(v);
    return *reinterpret_cast<const uint32_t*>(&v);
  }
  __device__ static uint32_t pack(float lo, float hi) {
    const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&v);
  }
  __device__ static void mma(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
};
template <>
struct KvTraits<FloatType::kF16> {
  __device__ static uint32_t pack(float lo, float hi, float& lo_r, float& hi_r) {
    const __half2 v = __floats2half2_rn(lo, hi);
    lo_r = __low2float(v);
    hi_r = __high2float(v);
    return *reinterpret_cast<const uint32_t*>(&v);
  }
  __device__ static uint32_t pack(float lo, float hi) {
    const __half2 v = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<const uint32_t*>(&v);
  }
  __device__ static void mma(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
        "{%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
};

__device__ __forceinline__ uint32_t shared_address(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 16 bytes global -> shared; src_bytes 0 writes zeros and reads nothing.
__device__ __forceinline__ void cp_async_16(uint32_t dst, const void* src, int src_bytes) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
               "r"(src_bytes));
}
// The same with an L2 cache policy (l2_evict_first_policy).
__device__ __forceinline__ void cp_async_16(uint32_t dst, const void* src, int src_bytes, uint64_t policy) {
  asm volatile("cp.async.cg.shared.global.L2::cache_hint [%0], [%1], 16, %2, %3;\n" ::"r"(dst), "l"(src),
               "r"(src_bytes), "l"(policy));
}
// An L2 policy for data read once: its lines are the first to go.
__device__ __forceinline__ uint64_t l2_evict_first_policy() {
  uint64_t policy;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;\n" : "=l"(policy));
  return policy;
}
// 4 bytes global -> shared (src_bytes 0 to 4 read, the rest zeros).
__device__ __forceinline__ void cp_async_4(uint32_t dst, const void* src, int src_bytes) {
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(kPending) : "memory");
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], uint32_t address) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(address));
}

// Stores four 8x8 b16 matrices held as mma fragments (register i: matrix i), each transposed:
// memory row r of matrix i (at the address lane 8 i + r gives) takes the fragment's column r.
__device__ __forceinline__ void stmatrix_x4_trans(uint32_t address, const uint32_t (&r)[4]) {
  asm volatile("stmatrix.sync.aligned.m8n8.x4.trans.shared.b16 [%0], {%1,%2,%3,%4};\n" ::"r"(address), "r"(r[0]),
               "r"(r[1]), "r"(r[2]), "r"(r[3])
               : "memory");
}

// The transpose of an 8x8 b16 matrix held as an mma fragment (lane 4 g + t: row g, columns 2 t and
// 2 t + 1), in the same form.
__device__ __forceinline__ uint32_t movmatrix_trans(uint32_t v) {
  uint32_t out;
  asm("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;\n" : "=r"(out) : "r"(v));
  return out;
}

// Byte offset of 16-byte chunk `chunk` of row `row` in a [rows, kChunks] tile whose chunks are
// XOR-swizzled by row % 8, so that the 8 rows one ldmatrix reads hit 8 different bank groups.
template <int kChunks>
__device__ __forceinline__ uint32_t swizzled(int row, int chunk) {
  static_assert(kChunks >= 8, "rows of at least 8 chunks (head_dim >= 64)");
  return static_cast<uint32_t>((row * kChunks + (chunk ^ (row & 7))) * 16);
}

__device__ __forceinline__ float quad_max(float v) {
  v = fmaxf(v, __shfl_xor_sync(0xFFFFFFFFu, v, 1));
  return fmaxf(v, __shfl_xor_sync(0xFFFFFFFFu, v, 2));
}
__device__ __forceinline__ float quad_sum(float v) {
  v += __shfl_xor_sync(0xFFFFFFFFu, v, 1);
  return v + __shfl_xor_sync(0xFFFFFFFFu, v, 2);
}
// A 4 x 4 transpose across the lanes of a quad (lane t = lane % 4): on entry lane t holds
// v[j] = x[t][j], on return v[j] = x[j][t]. Two butterfly steps (the off-diagonal 2 x 2 blocks
// swap, then each block transposes), four shuffles; every lane of the warp takes part.
__device__ __forceinline__ void quad_transpose(uint32_t (&v)[4], int t) {
#pragma unroll
  for (int k = 0; k < 2; ++k) {
    const uint32_t recv = __shfl_xor_sync(0xFFFFFFFFu, (t & 2) ? v[k] : v[k + 2], 2);
    if (t & 2) {
      v[k] = recv;
    } else {
      v[k + 2] = recv;
    }
  }
#pragma unroll
  for (int c = 0; c < 2; ++c) {
    const uint32_t recv = __shfl_xor_sync(0xFFFFFFFFu, (t & 1) ? v[2 * c] : v[2 * c + 1], 1);
    if (t & 1) {
      v[2 * c] = recv;
    } else {
      v[2 * c + 1] = recv;
    }
  }
}
// atomicAdd with acquire-release semantics at GPU scope; returns the old value.
__device__ __forceinline__ int atomic_add_acq_rel(int* address, int value) {
  int old;
  asm volatile("atom.acq_rel.gpu.global.add.s32 %0, [%1], %2;\n" : "=r"(old) : "l"(address), "r"(value) : "memory");
  return old;
}
__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v = fmaxf(v, __shfl_xor_sync(0xFFFFFFFFu, v, offset));
  return v;
}
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xFFFFFFFFu, v, offset);
  return v;
}

}  // namespace brisk::cuda
