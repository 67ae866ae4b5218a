#include "core/dtype.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

namespace brisk {
namespace {

TEST(DType, SizesAndNames) {
  EXPECT_EQ(dtype_bits(DType::kBF16), 16);
  EXPECT_EQ(dtype_bytes(DType::kF32, 3), 12u);
  EXPECT_EQ(dtype_bytes(DType::kI4, 3), 2u);
  EXPECT_EQ(dtype_name(DType::kBF16), "bf16");
}

TEST(DType, HalfRoundTripsEveryValue) {
  for (uint32_t bits = 0; bits < 65536; ++bits) {
    Half h{static_cast<uint16_t>(bits)};
    float f = half_to_float(h);
    if (std::isnan(f)) continue;
    EXPECT_EQ(float_to_half(f).bits, h.bits) << "half bits " << bits;
  }
}

TEST(DType, HalfRoundsToNearestEven) {
  EXPECT_EQ(half_to_float(float_to_half(1.0f)), 1.0f);
  EXPECT_EQ(half_to_float(float_to_half(65504.0f)), 65504.0f);
  EXPECT_TRUE(std::isinf(half_to_float(float_to_half(70000.0f))));
  // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: ties to even (1).
  EXPECT_EQ(half_to_float(float_to_half(1.0f + std::ldexp(1.0f, -11))), 1.0f);
  EXPECT_EQ(half_to_float(float_to_half(std::ldexp(1.0f, -24))), std::ldexp(1.0f, -24));
  EXPECT_EQ(half_to_float(float_to_half(std::ldexp(3.0f, -26))), std::ldexp(1.0f, -24));
}

TEST(DType, BFloat16RoundTripsAndRounds) {
  for (uint32_t bits = 0; bits < 65536; ++bits) {
    BFloat16 b{static_cast<uint16_t>(bits)};
    float f = bf16_to_float(b);
    if (std::isnan(f)) continue;
    EXPECT_EQ(float_to_bf16(f).bits, b.bits);
  }
  EXPECT_EQ(bf16_to_float(float_to_bf16(1.0f + std::ldexp(1.0f, -8))), 1.0f);  // tie to even
  EXPECT_EQ(bf16_to_float(float_to_bf16(1.0f + std::ldexp(3.0f, -9))), 1.0f + std::ldexp(1.0f, -7));
}

}  // namespace
}  // namespace brisk
