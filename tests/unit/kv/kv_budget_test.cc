#include "kv/kv_budget.h"

#include <gtest/gtest.h>

#include "brisk/status.h"

namespace brisk {
namespace {

constexpr uint64_t kGiB = uint64_t{1} << 30;
constexpr uint64_t kMiB = uint64_t{1} << 20;

std::string parse_error(std::string_view text) {
  try {
    KvMemorySpec::parse(text);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    return e.what();
  }
  ADD_FAILURE() << "'" << text << "' should not parse";
  return {};
}

TEST(KvMemorySpec, BareNumbersAreFractions) {
  const KvMemorySpec spec = KvMemorySpec::parse("0.9");
  EXPECT_TRUE(spec.is_fraction);
  EXPECT_DOUBLE_EQ(spec.fraction, 0.9);
  EXPECT_DOUBLE_EQ(KvMemorySpec::parse("1").fraction, 1.0);
  EXPECT_DOUBLE_EQ(KvMemorySpec::parse(" .5 ").fraction, 0.5);
}

TEST(KvMemorySpec, UnitsAreBinary) {
  for (const char* text : {"12GiB", "12G", "12gb", "12 GiB", "12g"}) {
    const KvMemorySpec spec = KvMemorySpec::parse(text);
    EXPECT_FALSE(spec.is_fraction) << text;
    EXPECT_EQ(spec.num_bytes, 12 * kGiB) << text;
  }
  EXPECT_EQ(KvMemorySpec::parse("1.5GiB").num_bytes, 3 * kGiB / 2);
  EXPECT_EQ(KvMemorySpec::parse("512MiB").num_bytes, 512 * kMiB);
  EXPECT_EQ(KvMemorySpec::parse("512M").num_bytes, 512 * kMiB);
  EXPECT_EQ(KvMemorySpec::parse("0.5G").num_bytes, kGiB / 2);  // a unit makes it absolute
}

TEST(KvMemorySpec, BadStringsNameTheOption) {
  for (const char* text : {"", "abc", "12", "1.01", "0", "-0.5", "12TB", "12 GiBs", "nan", "inf",
                           "0x1p3", "1e9", "G", "0GiB", "1..2"}) {
    const std::string message = parse_error(text);
    EXPECT_NE(message.find("--kv-cache-memory"), std::string::npos) << text << ": " << message;
  }
  EXPECT_NE(parse_error("12").find("fraction in (0, 1]"), std::string::npos);
  EXPECT_NE(parse_error("12TB").find("unknown unit 'tb'"), std::string::npos);
}

TEST(KvBudget, FractionOfFreeMemory) {
  const KvBudget budget =
      compute_kv_budget(KvMemorySpec::parse("0.5"), 10 * kGiB, /*bytes_per_block=*/2 * kMiB, 16);
  EXPECT_EQ(budget.num_blocks, 5 * 1024 / 2);
  EXPECT_EQ(budget.num_tokens, budget.num_blocks * 16);
  EXPECT_EQ(budget.num_bytes, 5 * kGiB);
  EXPECT_EQ(budget.describe(16), "KV cache: 5.00 GiB, 2560 blocks x 16 = 40960 tokens");
}

TEST(KvBudget, AbsoluteSizeRoundsDownToWholeBlocks) {
  const KvBudget budget = compute_kv_budget(KvMemorySpec::parse("1GiB"), 80 * kGiB, 3 * kMiB, 32);
  EXPECT_EQ(budget.num_blocks, 1024 / 3);
  EXPECT_EQ(budget.num_tokens, (1024 / 3) * 32);
  EXPECT_EQ(budget.num_bytes, (1024 / 3) * 3 * kMiB);
}

TEST(KvBudget, ImpossibleBudgetsAreClearErrors) {
  try {
    compute_kv_budget(KvMemorySpec::parse("12GiB"), 8 * kGiB, kMiB, 16);
    FAIL() << "more than the free memory must throw";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--kv-cache-memory asks for 12.00 GiB but only 8.00 GiB"),
              std::string::npos)
        << e.what();
  }
  try {
    compute_kv_budget(KvMemorySpec::parse("1MiB"), 8 * kGiB, 2 * kMiB, 16);
    FAIL() << "less than one block must throw";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kOutOfMemory);
    EXPECT_NE(std::string(e.what()).find("less than one KV block"), std::string::npos) << e.what();
  }
  EXPECT_THROW(compute_kv_budget(KvMemorySpec::parse("0.9"), 0, kMiB, 16), Error);
  EXPECT_THROW(compute_kv_budget(KvMemorySpec::parse("0.9"), kGiB, 0, 16), Error);
}

}  // namespace
}  // namespace brisk
