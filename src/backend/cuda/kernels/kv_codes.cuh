// A quantized paged KV cache's codes on the device (launch.h: KvCodes): their row sizes, the
// quantization of a row as rope_kv_append writes it (the CPU reference's arithmetic:
// backend/cpu/kv_quant.cc, so the codes are bit-identical), and the conversions of packed codes
// to f16 pairs the attention kernels dequantize with.
#pragma once

#include <cstdint>

#include <cuda_fp16.h>

#include "backend/cuda/kernels/launch.h"

namespace brisk::cuda {

// Bytes of one (token, kv head) row of head_dim values.
template <KvCodes kCodes>
constexpr int kv_row_bytes(int head_dim) {
  return kCodes == KvCodes::kNone ? 2 * head_dim : kCodes == KvCodes::kInt4 ? head_dim / 2 : head_dim;
}
// Whether rows carry a scale and zero point (int8 / int4).
template <KvCodes kCodes>
constexpr bool kv_has_row_params() {
  return kCodes == KvCodes::kInt8 || kCodes == KvCodes::kInt4;
}

__device__ __forceinline__ uint32_t byte_perm(uint32_t a, uint32_t b, uint32_t selector) {
  return __byte_perm(a, b, selector);
}

// f16 pairs of 1024 + code: bytes 0 and 1 (hi false) or 2 and 3 of w, and nibble k of each
// 16-bit half of w (k = 0..3: bits 4k.. of bytes 0 and 2).
__device__ __forceinline__ uint32_t u8_pair_plus_1024(uint32_t w, bool hi) {
  return byte_perm(w, 0x6464u, hi ? 0x5342u : 0x5140u);
}
__device__ __forceinline__ uint32_t u4_pair_plus_1024(uint32_t w, int k) {
  return ((w >> (4 * k)) & 0x000F000Fu) | 0x64006400u;
}
// Nibble pair 1 of w (bits 4-7 of each half) as f16 64 + code, taken where it stands: in
// [64, 128) an f16's ulp is 1/16, so those mantissa bits count whole units (exact). With
// u4_pair_plus_1024(w, 0) and both on w >> 8, a word's four pairs cost one shift, not three.
__device__ __forceinline__ uint32_t u4_high_pair_plus_64(uint32_t w) { return (w & 0x00F000F0u) | 0x54005400u; }
// An e4m3 pair (the low or high 16 bits of w) as f16 (exact).
__device__ __forceinline__ uint32_t e4m3_pair_to_f16(uint32_t w, bool hi) {
  const uint16_t pair = static_cast<uint16_t>(hi ? w >> 16 : w);
  uint32_t out;
  asm("cvt.rn.f16x2.e4m3x2 %0, %1;\n" : "=r"(out) : "h"(pair));
  return out;
}

__device__ __forceinline__ __half2 as_half2(uint32_t w) { return *reinterpret_cast<const __half2*>(&w); }
__device__ __forceinline__ uint32_t as_u32(__half2 h) { return *reinterpret_cast<const uint32_t*>(&h); }
__device__ __forceinline__ uint32_t hsub2(uint32_t a, uint32_t b) { return as_u32(__hsub2(as_half2(a), as_half2(b))); }

// (m - (1024 + zero)) * scale for a pair of f16 (1024 + code) values m: zz holds 1024 + zero and
// ss the scale of each element's row. The difference is exact; the product rounds once to f16.
__device__ __forceinline__ uint32_t dequant_pair(uint32_t m, __half2 zz, __half2 ss) {
  return as_u32(__hmul2(__hsub2(as_half2(m), zz), ss));
}
// A row's (1024 + zero, scale) from its u8 zero and f16 scale bits.
__device__ __forceinline__ __half kv_zero_plus_1024(uint8_t zero) { return __float2half_rn(1024.0f + zero); }
__device__ __forceinline__ __half kv_scale(uint16_t bits) { return __ushort_as_half(bits); }

// One 32-bit word of a row's codes as f16 values in dim order: int8 / fp8 4 values (2 words),
// int4 8 values (4 words). Int8 / int4 (code - zero) * scale (zz: 1024 + zero, ss: the scale), fp8
// its e4m3 value; each rounded once.
template <KvCodes kCodes>
constexpr int kF16WordsPerCodeWord = kCodes == KvCodes::kInt4 ? 4 : 2;
template <KvCodes kCodes>
__device__ __forceinline__ void dequantize_word(uint32_t w, __half2 zz, __half2 ss, uint32_t* out) {
  if constexpr (kCodes == KvCodes::kInt8) {
    out[0] = dequant_pair(u8_pair_plus_1024(w, false), zz, ss);
    out[1] = dequant_pair(u8_pair_plus_1024(w, true), zz, ss);
  } else if constexpr (kCodes == KvCodes::kInt4) {
    uint32_t pairs[4];  // (dim k, dim 4 + k)
#pragma unroll
    for (int k = 0; k < 4; ++k) pairs[k] = dequant_pair(u4_pair_plus_1024(w, k), zz, ss);
    out[0] = byte_perm(pairs[0], pairs[1], 0x5410u);
    out[1] = byte_perm(pairs[2], pairs[3], 0x5410u);
    out[2] = byte_perm(pairs[0], pairs[1], 0x7632u);
    out[3] = byte_perm(pairs[2], pairs[3], 0x7632u);
  } else {
    out[0] = e4m3_pair_to_f16(w, false);
    out[1] = e4m3_pair_to_f16(w, true);
  }
}

// The row quantization of backend/cpu/kv_quant.cc for int8 / int4 (q_max 255 / 15): lo, hi the
// row's min and max with 0 included; the f16 scale (hi - lo) / q_max rounded up (so that q_max
// steps span the row), 1 for a row of zeros; zero = rint(-lo / scale) clamped.
struct RowQuant {
  float scale;
  uint16_t scale_bits;
  float zero;
  float q_max;
};
__device__ __forceinline__ RowQuant row_quant(float lo, float hi, float q_max) {
  RowQuant r;
  r.q_max = q_max;
  const float exact = fminf(__fdiv_rn(__fsub_rn(hi, lo), q_max), 65504.0f);
  __half scale = __float2half_ru(exact);
  if (__half2float(scale) == 0.0f) scale = __float2half_rn(1.0f);
  r.scale = __half2float(scale);
  r.scale_bits = __half_as_ushort(scale);
  r.zero = fminf(fmaxf(rintf(__fdiv_rn(-lo, r.scale)), 0.0f), q_max);
  return r;
}
__device__ __forceinline__ uint32_t quantize_value(float x, const RowQuant& r) {
  return static_cast<uint32_t>(fminf(fmaxf(__fadd_rn(rintf(__fdiv_rn(x, r.scale)), r.zero), 0.0f), r.q_max));
}
// e4m3 with saturation, rounding to nearest even (core/dtype.cc: float_to_e4m3).
__device__ __forceinline__ uint32_t e4m3_code(float x, float scale) {
  uint16_t pair;
  const float v = __fdiv_rn(x, scale);
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;\n" : "=h"(pair) : "f"(0.0f), "f"(v));
  return pair & 0xFFu;
}

}  // namespace brisk::cuda
