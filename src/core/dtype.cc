#include "core/dtype.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "core/error.h"

namespace brisk {

int dtype_bits(DType dtype) {
  switch (dtype) {
    case DType::kF32: case DType::kI32: case DType::kU32: return 32;
    case DType::kF16: case DType::kBF16: case DType::kI16: return 16;
    case DType::kF8E4M3: case DType::kF8E5M2: case DType::kI8: case DType::kU8:
    case DType::kBool: return 8;
    case DType::kI64: return 64;
    case DType::kI4: return 4;
  }
  throw_error(ErrorCode::kInternal, "unknown dtype {}", static_cast<int>(dtype));
}

size_t dtype_bytes(DType dtype, int64_t num_elements) {
  return (static_cast<size_t>(num_elements) * dtype_bits(dtype) + 7) / 8;
}

std::string_view dtype_name(DType dtype) {
  switch (dtype) {
    case DType::kF32: return "f32";
    case DType::kF16: return "f16";
    case DType::kBF16: return "bf16";
    case DType::kF8E4M3: return "f8e4m3";
    case DType::kF8E5M2: return "f8e5m2";
    case DType::kI64: return "i64";
    case DType::kI32: return "i32";
    case DType::kI16: return "i16";
    case DType::kI8: return "i8";
    case DType::kU8: return "u8";
    case DType::kU32: return "u32";
    case DType::kBool: return "bool";
    case DType::kI4: return "i4";
  }
  return "?";
}

bool is_floating(DType dtype) {
  return dtype == DType::kF32 || dtype == DType::kF16 || dtype == DType::kBF16 ||
         dtype == DType::kF8E4M3 || dtype == DType::kF8E5M2;
}

float bf16_to_float(BFloat16 value) {
  uint32_t bits = static_cast<uint32_t>(value.bits) << 16;
  float out;
  std::memcpy(&out, &bits, sizeof(out));
  return out;
}

BFloat16 float_to_bf16(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  if ((bits & 0x7fffffffu) > 0x7f800000u) return BFloat16{static_cast<uint16_t>((bits >> 16) | 0x40)};  // quiet NaN
  uint32_t rounding = 0x7fffu + ((bits >> 16) & 1u);
  return BFloat16{static_cast<uint16_t>((bits + rounding) >> 16)};
}

float half_to_float(Half value) {
  uint32_t sign = static_cast<uint32_t>(value.bits & 0x8000u) << 16;
  uint32_t exponent = (value.bits >> 10) & 0x1fu;
  uint32_t mantissa = value.bits & 0x3ffu;
  uint32_t bits;
  if (exponent == 0) {
    if (mantissa == 0) {
      bits = sign;
    } else {  // subnormal: normalise
      exponent = 127 - 15 + 1;
      while ((mantissa & 0x400u) == 0) {
        mantissa <<= 1;
        --exponent;
      }
      mantissa &= 0x3ffu;
      bits = sign | (exponent << 23) | (mantissa << 13);
    }
  } else if (exponent == 0x1f) {
    bits = sign | 0x7f800000u | (mantissa << 13);
  } else {
    bits = sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
  }
  float out;
  std::memcpy(&out, &bits, sizeof(out));
  return out;
}

Half float_to_half(float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  uint32_t abs = bits & 0x7fffffffu;
  if (abs > 0x7f800000u) return Half{static_cast<uint16_t>(sign | 0x7e00u)};
  if (abs >= 0x477ff000u) return Half{static_cast<uint16_t>(sign | 0x7c00u)};  // overflow -> inf
  if (abs < 0x38800000u) {  // subnormal or zero in half
    if (abs < 0x33000000u) return Half{sign};
    uint32_t exponent = abs >> 23;
    uint32_t mantissa = (abs & 0x7fffffu) | 0x800000u;
    uint32_t shift = 126 - exponent;  // value / 2^-24 = mantissa >> shift
    uint32_t half_mant = mantissa >> shift;
    uint32_t remainder = mantissa & ((1u << shift) - 1);
    uint32_t halfway = 1u << (shift - 1);
    if (remainder > halfway || (remainder == halfway && (half_mant & 1u))) ++half_mant;
    return Half{static_cast<uint16_t>(sign | half_mant)};
  }
  uint32_t rounded = abs + 0xfffu + ((abs >> 13) & 1u);
  return Half{static_cast<uint16_t>(sign | ((rounded - 0x38000000u) >> 13))};
}

float e4m3_to_float(uint8_t bits) {
  const float sign = (bits & 0x80u) ? -1.0f : 1.0f;
  const int exponent = (bits >> 3) & 0xf, mantissa = bits & 0x7;
  if (exponent == 0xf && mantissa == 0x7) return std::numeric_limits<float>::quiet_NaN();
  if (exponent == 0) return sign * std::ldexp(static_cast<float>(mantissa), -9);
  return sign * std::ldexp(static_cast<float>(8 + mantissa), exponent - 10);
}

uint8_t float_to_e4m3(float value) {
  if (std::isnan(value)) return 0x7f;
  const uint8_t sign = std::signbit(value) ? 0x80 : 0;
  const float a = std::fabs(value);
  if (a >= kE4M3Max) return sign | 0x7e;
  // The spacing of representable values at a's binade: 2^-9 below 2^-6 (subnormals), else 2^(e - 3)
  // for a in [2^e, 2^(e+1)). a / spacing rounded to nearest even is the code's magnitude in units
  // of the spacing; each step is exact in float.
  int e = 0;
  std::frexp(a, &e);  // a in [2^(e-1), 2^e)
  const int unit_exponent = std::max(e - 1, -6) - 3;
  const float units = std::nearbyint(std::ldexp(a, -unit_exponent));  // round half to even (default mode)
  const float rounded = std::ldexp(units, unit_exponent);
  if (rounded == 0.0f) return sign;
  if (rounded >= kE4M3Max) return sign | 0x7e;
  int re = 0;
  std::frexp(rounded, &re);
  if (re - 1 < -6) return sign | static_cast<uint8_t>(units);  // subnormal: mantissa = units
  const int biased = re - 1 + 7;
  const int mantissa = static_cast<int>(std::ldexp(rounded, -(re - 1) + 3)) - 8;
  return sign | static_cast<uint8_t>(biased << 3 | mantissa);
}

}  // namespace brisk
