// Element types of tensors. Packed sub-byte types (int4) count bits, not bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace brisk {

enum class DType : uint8_t {
  kF32,
  kF16,
  kBF16,
  kF8E4M3,
  kF8E5M2,
  kI64,
  kI32,
  kI16,
  kI8,
  kU8,
  kU32,
  kBool,
  kI4,  // two 4-bit values per byte, low nibble first
};

// Bits per element (4 for kI4).
int dtype_bits(DType dtype);
// Bytes for num_elements elements, rounding packed types up to whole bytes.
size_t dtype_bytes(DType dtype, int64_t num_elements);
std::string_view dtype_name(DType dtype);
bool is_floating(DType dtype);

// Host-side 16-bit float storage types; conversions are exact bit manipulations
// (round-to-nearest-even on the way down), matching PyTorch.
struct BFloat16 {
  uint16_t bits;
};
struct Half {
  uint16_t bits;
};

float bf16_to_float(BFloat16 value);
BFloat16 float_to_bf16(float value);
float half_to_float(Half value);
Half float_to_half(float value);

// FP8 E4M3 as OCP defines it ("float8_e4m3fn"): 4 exponent bits (bias 7), 3 mantissa bits,
// subnormals, no infinities, 0x7F / 0xFF NaN, largest finite 448.
inline constexpr float kE4M3Max = 448.0f;
float e4m3_to_float(uint8_t bits);
// Round to nearest even, saturating: finite values past +-448 become +-448 (quantizers clamp
// before casting); NaN becomes 0x7F.
uint8_t float_to_e4m3(float value);

// Compile-time mapping from C++ element type to DType.
template <typename T> struct DTypeOf;
template <> struct DTypeOf<float> { static constexpr DType value = DType::kF32; };
template <> struct DTypeOf<Half> { static constexpr DType value = DType::kF16; };
template <> struct DTypeOf<BFloat16> { static constexpr DType value = DType::kBF16; };
template <> struct DTypeOf<int32_t> { static constexpr DType value = DType::kI32; };
template <> struct DTypeOf<int64_t> { static constexpr DType value = DType::kI64; };
template <> struct DTypeOf<uint8_t> { static constexpr DType value = DType::kU8; };
template <> struct DTypeOf<int8_t> { static constexpr DType value = DType::kI8; };
template <> struct DTypeOf<uint32_t> { static constexpr DType value = DType::kU32; };

// Converts one stored element to float (f32, f16, bf16 only).
inline float to_float(float v) { return v; }
inline float to_float(BFloat16 v) { return bf16_to_float(v); }
inline float to_float(Half v) { return half_to_float(v); }

template <typename T> T from_float(float v);
template <> inline float from_float<float>(float v) { return v; }
template <> inline BFloat16 from_float<BFloat16>(float v) { return float_to_bf16(v); }
template <> inline Half from_float<Half>(float v) { return float_to_half(v); }

}  // namespace brisk
