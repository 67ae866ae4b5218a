#include "core/dtype.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

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

// e4m3 against its definition: every code decodes and encodes back; any float encodes to the
// nearest code (ties to the even code), saturating at +-448.
TEST(DType, E4M3RoundTripsAndRounds) {
  std::vector<std::pair<float, uint8_t>> codes;  // finite values, each sign
  for (int c = 0; c < 256; ++c) {
    const float v = e4m3_to_float(static_cast<uint8_t>(c));
    if (std::isnan(v)) {
      EXPECT_TRUE(c == 0x7f || c == 0xff) << c;
      continue;
    }
    EXPECT_EQ(float_to_e4m3(v), c) << c;
    codes.push_back({v, static_cast<uint8_t>(c)});
  }
  EXPECT_EQ(e4m3_to_float(0x7e), 448.0f);
  EXPECT_EQ(e4m3_to_float(0x01), std::ldexp(1.0f, -9));
  EXPECT_EQ(e4m3_to_float(0x38), 1.0f);
  auto nearest = [&](float x) {
    float best = std::numeric_limits<float>::infinity();
    uint8_t code = 0;
    for (const auto& [v, c] : codes) {
      if (std::signbit(v) != std::signbit(x)) continue;
      const float d = std::fabs(v - x);
      if (d < best || (d == best && (c & 1) == 0)) best = d, code = c;
    }
    return code;
  };
  std::mt19937 rng(7);
  for (int i = 0; i < 20000; ++i) {
    const float x = std::ldexp(std::uniform_real_distribution<float>(-1.0f, 1.0f)(rng), static_cast<int>(rng() % 22) - 12);
    if (std::fabs(x) >= 448.0f) continue;
    ASSERT_EQ(float_to_e4m3(x), nearest(x)) << x;
  }
  for (int c = 0; c < 0x7e; ++c) {  // midpoints between neighbouring codes: ties to the even one
    const float mid = (e4m3_to_float(static_cast<uint8_t>(c)) + e4m3_to_float(static_cast<uint8_t>(c + 1))) / 2;
    const int even = c % 2 == 0 ? c : c + 1;
    EXPECT_EQ(float_to_e4m3(mid), even) << mid;
    EXPECT_EQ(float_to_e4m3(-mid), even | 0x80) << -mid;
  }
  EXPECT_EQ(float_to_e4m3(449.0f), 0x7e);
  EXPECT_EQ(float_to_e4m3(1e30f), 0x7e);
  EXPECT_EQ(float_to_e4m3(-std::numeric_limits<float>::infinity()), 0xfe);
  EXPECT_EQ(float_to_e4m3(std::nanf("")), 0x7f);
  EXPECT_EQ(float_to_e4m3(std::ldexp(1.0f, -10)), 0x00);  // half the smallest subnormal: ties to 0
  EXPECT_EQ(float_to_e4m3(std::ldexp(3.0f, -10)), 0x02);  // between 1 and 2 (x 2^-9): ties to 2
}

}  // namespace
}  // namespace brisk
